"""The built-in simulator's world: ground truth of a household, a robot base with two arms, a
head camera, and an external agent that can move things. Plain Python; the simulator node serves
it over ROS actions and topics, taking the durations computed here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from shapely.geometry import LineString, Polygon

from planner.core.files import exactly_one, load_model
from planner.core.geometry import Pose2D, footprint_contains, horizontal_distance, in_field_of_view
from planner.core.frames import planar, rigid, transform_point
from planner.core.scene_graph import Detection, DetectionFrame, SensorFrame
from planner.core.world import World, load_world

OBJECT_FOUND_TOLERANCE_M = 0.15     # the arm finds an object this close to where it was sent
PLACE_EDGE_INSET_M = 0.15           # objects are put down this far inside the surface edge
GRIPPER_FORWARD_M = 0.35            # a held object rides this far in front of the base...
GRIPPER_HEIGHT_M = 1.0              # ...at this height
MANIPULATION_SECONDS = {"approach": 2.0, "grasp": 1.5, "lift": 1.0, "place_approach": 2.0,
                        "release": 1.0, "retreat": 1.5}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CommandStarted(_Strict):
    command: str
    object: str = ""


class Trigger(_Strict):
    """When an event happens: the robot arrives in a room, or a command starts (e.g. the arm
    begins to approach an object: someone takes it just then)."""
    arrived_in_room: str = ""
    command_started: CommandStarted | None = None

    @model_validator(mode="after")
    def _one(self):
        return exactly_one(self, "arrived_in_room", "command_started")


class MoveObject(_Strict):
    object: str
    onto: str


class BlockPath(_Strict):
    polygon: list[tuple[float, float]] = Field(min_length=3)


class ScenarioEvent(_Strict):
    trigger: Trigger
    move_object: MoveObject | None = None
    block_path: BlockPath | None = None

    @model_validator(mode="after")
    def _one_effect(self):
        return exactly_one(self, "move_object", "block_path")


class Scenario(_Strict):
    world: str
    request: str = Field(default="", description="the request the scenario is written for (the demo's default)")
    events: list[ScenarioEvent] = Field(default_factory=list)


@dataclass
class LoadedScenario:
    scenario: Scenario
    world: World


def load_scenario(path: str | Path) -> LoadedScenario:
    path = Path(path)
    scenario = load_model(path, Scenario)
    world = load_world((path.parent / scenario.world).resolve())
    known = {f.id for f in world.furniture}
    objects = {o.id for o in world.objects}
    for index, event in enumerate(scenario.events):
        if event.move_object and (event.move_object.object not in objects or event.move_object.onto not in known):
            raise ValueError(f"{path}: events[{index}].move_object: unknown object or furniture "
                             f"({event.move_object.object!r} onto {event.move_object.onto!r})")
    return LoadedScenario(scenario, world)


@dataclass
class Outcome:
    success: bool
    code: str = ""
    detail: str = ""


@dataclass
class Route:
    waypoints: list[tuple[float, float]]
    goal: Pose2D

    @property
    def length(self) -> float:
        return sum(math.dist(a, b) for a, b in zip(self.waypoints, self.waypoints[1:]))

    def pose_at(self, travelled: float) -> Pose2D:
        for a, b in zip(self.waypoints, self.waypoints[1:]):
            segment = math.dist(a, b)
            if travelled <= segment and segment > 0:
                t = travelled / segment
                return Pose2D(a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), math.atan2(b[1] - a[1], b[0] - a[0]))
            travelled -= segment
        return self.goal


@dataclass
class SimulatedWorld:
    world: World
    events: list[ScenarioEvent] = field(default_factory=list)
    robot: Pose2D = field(init=False)
    positions: dict[str, tuple[float, float, float]] = field(init=False)
    support: dict[str, str | None] = field(init=False)
    held: dict[str, str] = field(init=False)
    blocked: list[Polygon] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def __post_init__(self):
        x, y, yaw = self.world.robot.pose
        self.robot = Pose2D(x, y, yaw)
        self.positions = {o.id: self.world.object_center(o) for o in self.world.objects}
        self.support = {o.id: o.placed_on for o in self.world.objects}
        self.held = {arm: "" for arm in self.world.robot.arms}
        self._sizes = {o.id: o.size for o in self.world.objects}
        self._labels = {o.id: o.label for o in self.world.objects}
        self._doors = nx.Graph()
        for door in self.world.doors:
            self._doors.add_edge(*door.rooms, position=door.position)

    # ---- robot and camera -----------------------------------------------------------------
    @property
    def robot_room(self) -> str:
        return self.world.room_at(self.robot.x, self.robot.y) or ""

    def gripper_point(self) -> tuple[float, float, float]:
        return (self.robot.x + GRIPPER_FORWARD_M * math.cos(self.robot.yaw),
                self.robot.y + GRIPPER_FORWARD_M * math.sin(self.robot.yaw), GRIPPER_HEIGHT_M)

    def camera_frame(self, stamp: float) -> DetectionFrame:
        """What the head camera sees: objects in the robot's room within range and field of view."""
        camera = self.world.robot.camera
        room = self.robot_room
        detections = []
        for object_id, center in sorted(self.positions.items()):
            if self.world.room_at(center[0], center[1]) != room:
                continue
            if not in_field_of_view(self.robot, camera.fov_deg, camera.range_m, center[0], center[1]):
                continue
            detections.append(Detection({self._labels[object_id]: 0.9, "object": 0.1}, center, self._sizes[object_id]))
        return DetectionFrame(self.robot, camera.fov_deg, camera.range_m, stamp, detections)

    def camera_view(self, stamp: float) -> SensorFrame:
        """The same detections as a camera sends them: in its own frame, mounted on the base."""
        camera = self.world.robot.camera
        camera_pose = planar(self.robot) @ rigid(camera.mount_xyz, camera.mount_rpy)
        to_camera = np.linalg.inv(camera_pose)
        seen = self.camera_frame(stamp)
        # Boxes keep the map's axes, seen turned from the camera, as a 3D detector reports them.
        detections = [Detection(d.labels, transform_point(to_camera, d.center), d.size, to_camera[:3, :3])
                      for d in seen.detections]
        return SensorFrame(camera.frame_id, np.eye(4), camera.fov_deg, camera.range_m, stamp, detections)

    # ---- navigation -------------------------------------------------------------------------
    def plan_route(self, goal: Pose2D) -> Route | Outcome:
        start_room, goal_room = self.robot_room, self.world.room_at(goal.x, goal.y)
        if goal_room is None:
            return Outcome(False, "GOAL_OUTSIDE_MAP", f"goal ({goal.x:.2f}, {goal.y:.2f}) is not inside any room")
        waypoints = [(self.robot.x, self.robot.y)]
        if start_room != goal_room:
            try:
                rooms = nx.shortest_path(self._doors, start_room, goal_room)
            except (nx.NetworkXNoPath, nx.NodeNotFound):
                return Outcome(False, "NO_PATH", f"no door leads from {start_room} to {goal_room}")
            waypoints += [tuple(self._doors.edges[a, b]["position"]) for a, b in zip(rooms, rooms[1:])]
        waypoints.append((goal.x, goal.y))
        path = LineString(waypoints)
        for area in self.blocked:
            if path.intersects(area):
                return Outcome(False, "PATH_BLOCKED", f"the way to ({goal.x:.2f}, {goal.y:.2f}) is blocked near "
                                                      f"({area.centroid.x:.1f}, {area.centroid.y:.1f})")
        for item in self.world.furniture:
            if footprint_contains(item.center, item.size, goal.x, goal.y):
                return Outcome(False, "GOAL_IN_COLLISION", f"the goal pose is inside {item.id}")
        return Route(waypoints, goal)

    def set_robot_pose(self, pose: Pose2D) -> None:
        self.robot = pose
        self.carry_held_objects()

    def arrive(self, goal: Pose2D) -> list[str]:
        """End of a navigation: the robot is at its goal; scenario events of that moment happen."""
        self.set_robot_pose(goal)
        return self._fire(lambda trigger: trigger.arrived_in_room == self.robot_room)

    def start_command(self, operation: str, object_id: str) -> list[str]:
        """A manipulation command begins; scenario events waiting for it happen."""
        return self._fire(lambda t: t.command_started is not None and t.command_started.command == operation
                          and t.command_started.object in ("", object_id))

    def _fire(self, matches) -> list[str]:
        fired, remaining = [], []
        for event in self.events:
            if matches(event.trigger):
                fired.append(self._apply(event))
            else:
                remaining.append(event)
        self.events = remaining
        return fired

    def _apply(self, event: ScenarioEvent) -> str:
        if event.move_object:
            return self.move_object(event.move_object.object, event.move_object.onto).detail
        self.blocked.append(Polygon(event.block_path.polygon))
        return f"path blocked at {event.block_path.polygon}"

    # ---- the external agent -----------------------------------------------------------------
    def move_object(self, object_id: str, onto: str) -> Outcome:
        if object_id not in self.positions:
            return Outcome(False, "UNKNOWN_OBJECT", f"no object {object_id!r}")
        if onto not in {f.id for f in self.world.furniture}:
            return Outcome(False, "UNKNOWN_FURNITURE", f"no furniture {onto!r}")
        if object_id in self.held.values():
            return Outcome(False, "OBJECT_HELD", f"{object_id} is in the robot's gripper")
        self._put_on(object_id, onto, self._free_spot(object_id, onto))
        message = f"external agent moved {object_id} onto {onto}"
        self.log.append(message)
        return Outcome(True, detail=message)

    def _free_spot(self, object_id: str, onto: str) -> tuple[float, float]:
        """A point on the surface away from what already stands there."""
        surface = self.world.furniture_by_id(onto)
        others = [p for o, p in self.positions.items() if self.support.get(o) == onto and o != object_id]
        candidates = [(surface.center[0] + dx * surface.size[0] / 4, surface.center[1] + dy * surface.size[1] / 4)
                      for dx, dy in [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)]]
        return max(candidates, key=lambda c: min((math.dist(c, p[:2]) for p in others), default=1.0))

    def _put_on(self, object_id: str, onto: str, xy: tuple[float, float]) -> None:
        surface = self.world.furniture_by_id(onto)
        self.positions[object_id] = (xy[0], xy[1], surface.top_z + self._sizes[object_id][2] / 2)
        self.support[object_id] = onto

    # ---- manipulation -----------------------------------------------------------------------
    def manipulate(self, operation: str, arm: str, object_id: str, target_id: str,
                   point: tuple[float, float, float] | None) -> Outcome:
        if operation not in MANIPULATION_SECONDS:
            return Outcome(False, "UNKNOWN_OPERATION", f"unknown manipulation {operation!r}")
        if arm not in self.held:
            return Outcome(False, "UNKNOWN_ARM", f"no arm {arm!r}")
        handler = getattr(self, f"_{operation}")
        return handler(arm, object_id, target_id, point)

    def _object_at_expected_place(self, arm: str, object_id: str, point) -> Outcome:
        if object_id not in self.positions:
            return Outcome(False, "UNKNOWN_OBJECT", f"no object {object_id!r}")
        actual = self.positions[object_id]
        if point is not None and math.dist(actual, point) > OBJECT_FOUND_TOLERANCE_M:
            expected_on = self._furniture_under(point)
            return Outcome(False, "OBJECT_NOT_FOUND",
                           f"{object_id} is not at ({point[0]:.2f}, {point[1]:.2f}, {point[2]:.2f})"
                           + (f" on {expected_on}" if expected_on else ""))
        if horizontal_distance((self.robot.x, self.robot.y), actual) > self.world.robot.reach_m:
            return Outcome(False, "OUT_OF_REACH", f"{object_id} is beyond the {arm} arm's reach")
        return Outcome(True)

    def _furniture_under(self, point) -> str:
        return next((f.id for f in self.world.furniture if footprint_contains(f.center, f.size, point[0], point[1])), "")

    def _approach(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm]:
            return Outcome(False, "ARM_OCCUPIED", f"the {arm} arm holds {self.held[arm]}")
        return self._object_at_expected_place(arm, object_id, point)

    def _grasp(self, arm, object_id, target_id, point) -> Outcome:
        found = self._object_at_expected_place(arm, object_id, point)
        if not found.success:
            return found
        self.held[arm] = object_id
        self.support[object_id] = None
        self.positions[object_id] = self.gripper_point()
        return Outcome(True, detail=f"{object_id} in the {arm} gripper")

    def _lift(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, "GRASP_LOST", f"the {arm} gripper is not holding {object_id}")
        return Outcome(True)

    def _place_approach(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, "GRASP_LOST", f"the {arm} gripper is not holding {object_id}")
        surface = next((f for f in self.world.furniture if f.id == target_id), None)
        if surface is None:
            return Outcome(False, "UNKNOWN_FURNITURE", f"no furniture {target_id!r}")
        edge = horizontal_distance((self.robot.x, self.robot.y), surface.center) - min(surface.size[:2]) / 2
        if edge > self.world.robot.reach_m:
            return Outcome(False, "OUT_OF_REACH", f"{target_id} is beyond the {arm} arm's reach")
        return Outcome(True)

    def _release(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, "GRASP_LOST", f"the {arm} gripper is not holding {object_id}")
        surface = self.world.furniture_by_id(target_id)
        # Put it down on the near side of the surface, inside its edge.
        half_x = max(surface.size[0] / 2 - PLACE_EDGE_INSET_M, 0.0)
        half_y = max(surface.size[1] / 2 - PLACE_EDGE_INSET_M, 0.0)
        x = min(max(self.robot.x, surface.center[0] - half_x), surface.center[0] + half_x)
        y = min(max(self.robot.y, surface.center[1] - half_y), surface.center[1] + half_y)
        self.held[arm] = ""
        self._put_on(object_id, target_id, (x, y))
        return Outcome(True, detail=f"{object_id} on {target_id}")

    def _retreat(self, arm, object_id, target_id, point) -> Outcome:
        return Outcome(True)

    def carry_held_objects(self) -> None:
        for object_id in self.held.values():
            if object_id:
                self.positions[object_id] = self.gripper_point()

    # ---- checks -----------------------------------------------------------------------------
    def object_on(self, object_id: str) -> str | None:
        return self.support.get(object_id)

