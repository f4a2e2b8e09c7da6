"""The built-in simulator's world: ground truth of a household, the robot of a robot profile (a
base, its arms, a head camera), and an external agent that can move things. Plain Python; the simulator node serves
it over ROS actions and topics, taking the durations computed here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
from pydantic import Field, model_validator
from shapely.geometry import LineString, Polygon

from planner.core.errors import InputError
from planner.core.failures import FailureCode
from planner.core.files import StrictModel, exactly_one, load_model
from planner.core.frames import planar, rigid, transform_point
from planner.core.geometry import Pose2D, footprint_contains, free_spot, horizontal_distance, in_field_of_view
from planner.core.robot_profile import RobotProfile
from planner.core.scene_graph import Detection, DetectionFrame, SensorFrame
from planner.core.types import Outcome
from planner.core.world import World, load_world, person_box


class SimulatorSettings(StrictModel):
    time_scale: float = Field(default=4.0, gt=0, description="simulated seconds per wall second")
    state_rate_hz: float = Field(default=5.0, gt=0)

OBJECT_FOUND_TOLERANCE_M = 0.15     # the arm finds an object this close to where it was sent
PLACE_EDGE_INSET_M = 0.15           # objects are put down this far inside the surface edge
GRIPPER_FORWARD_M = 0.35            # a held object rides this far in front of the base...
GRIPPER_HEIGHT_M = 1.0              # ...at this height
PERSON_REACH_M = 0.4                # a person reaches this far towards what they are handed
MANIPULATION_SECONDS = {"look_around": 8.0, "look_at": 0.5, "open_gripper": 0.5, "approach": 2.0, "grasp": 1.5,
                        "verify_grasp": 0.2, "lift": 1.0, "place_approach": 2.0, "release": 1.0, "retreat": 1.5,
                        "open": 3.0, "close": 2.0, "hand_out": 2.0, "wait_for_take": 1.5, "sweep": 6.0}
HEADING_ONLY = frozenset({"look_around", "look_at"})   # commands without an arm
ADDED_COMMAND_SECONDS = 2.0         # simulated time a command a skill library adds takes
SIMULATED_COMMANDS = frozenset(MANIPULATION_SECONDS) | {"navigate", "say"}   # what the simulator does itself
# A command a skill library adds: (world, arm, object, target, point) -> what came of it (planner.sim.added_commands).
AddedCommand = Callable[["SimulatedWorld", str, str, str, "tuple[float, float, float] | None"], Outcome]


def command_seconds(name: str) -> float:
    """Simulated time an arm, gripper or head command takes."""
    return MANIPULATION_SECONDS.get(name, ADDED_COMMAND_SECONDS)


class CommandStarted(StrictModel):
    command: str
    object: str = Field(default="", description="the object (or furniture) the command acts on; empty: any")


class Trigger(StrictModel):
    """When an event happens: at the start, when the robot arrives in a room, or when a command
    starts (e.g. the arm begins to approach an object: someone takes it just then)."""
    at_start: bool = False
    arrived_in_room: str = ""
    command_started: CommandStarted | None = None

    @model_validator(mode="after")
    def _one(self):
        return exactly_one(self, "at_start", "arrived_in_room", "command_started")


class MoveObject(StrictModel):
    object: str
    onto: str


class BlockPath(StrictModel):
    polygon: list[tuple[float, float]] = Field(default_factory=list, description="the blocked area; empty: "
                                                                                 "whatever route comes next")
    attempts: int = Field(default=0, ge=0, description="navigations it blocks before it clears; 0: for good")

    @model_validator(mode="after")
    def _area(self):
        if self.polygon and len(self.polygon) < 3:
            raise ValueError("polygon: needs at least 3 points")
        if not self.polygon and not self.attempts:
            raise ValueError("attempts: a block without a polygon must say how many navigations it blocks")
        return self


class AbortNavigation(StrictModel):
    after_fraction: float = Field(default=0.5, gt=0, lt=1, description="share of the route driven before it aborts")


class SlipGrasp(StrictModel):
    object: str = Field(default="", description="the object that slips at its next lift; empty: any")


class WornGripper(StrictModel):
    """A gripper whose pads are worn: everything it lifts slips out, for the rest of the run."""
    arm: str


class Occlude(StrictModel):
    object: str
    duration_s: float = Field(default=20.0, gt=0, description="simulated seconds the camera cannot see it")


class DropDetections(StrictModel):
    duration_s: float = Field(default=20.0, gt=0, description="simulated seconds the camera sends nothing")


class HangCommand(StrictModel):
    """The next manipulation command never finishes (a driver that stopped answering)."""
    command: str = Field(default="", description="only this command; empty: the next one")


class ScenarioEvent(StrictModel):
    trigger: Trigger
    move_object: MoveObject | None = None
    block_path: BlockPath | None = None
    abort_navigation: AbortNavigation | None = None
    slip_grasp: SlipGrasp | None = None
    worn_gripper: WornGripper | None = None
    occlude: Occlude | None = None
    drop_detections: DropDetections | None = None
    hang_command: HangCommand | None = None

    @model_validator(mode="after")
    def _one_effect(self):
        return exactly_one(self, *EFFECTS)


EFFECTS = ("move_object", "block_path", "abort_navigation", "slip_grasp", "worn_gripper", "occlude", "drop_detections",
           "hang_command")


class Scenario(StrictModel):
    world: str
    request: str = Field(default="", description="the request the scenario is written for (the demo's default)")
    events: list[ScenarioEvent] = Field(default_factory=list)


def event_problems(events: list[ScenarioEvent], world: World) -> list[str]:
    """Events naming things the world does not have, as `events[i].field: problem`."""
    furniture = {f.id for f in world.furniture}
    objects = {o.id for o in world.objects}
    rooms = {r.name for r in world.rooms}
    problems = []
    for index, event in enumerate(events):
        checks = [("trigger.arrived_in_room", event.trigger.arrived_in_room, rooms, "room")]
        if event.trigger.command_started:
            checks.append(("trigger.command_started.object", event.trigger.command_started.object,
                           objects | furniture, "object or furniture"))
        if event.move_object:
            checks += [("move_object.object", event.move_object.object, objects, "object"),
                       ("move_object.onto", event.move_object.onto, furniture, "furniture")]
        for effect in ("slip_grasp", "occlude"):
            if getattr(event, effect):
                checks.append((f"{effect}.object", getattr(event, effect).object, objects, "object"))
        problems += [f"events[{index}].{where}: unknown {kind} {value!r}" for where, value, known, kind in checks
                     if value and value not in known]
    return problems


@dataclass
class LoadedScenario:
    scenario: Scenario
    world: World


def load_scenario(path: str | Path) -> LoadedScenario:
    path = Path(path)
    scenario = load_model(path, Scenario)
    world = load_world((path.parent / scenario.world).resolve())
    problems = event_problems(scenario.events, world)
    if problems:
        raise InputError(f"{path}: " + "; ".join(problems))
    return LoadedScenario(scenario, world)


# A command the simulator will never finish: the executor's timeout ends it.
HANG = "NO_RESPONSE"


@dataclass
class Route:
    waypoints: list[tuple[float, float]]
    goal: Pose2D
    abort_at: float | None = None     # distance driven before the navigation aborts (a fault)

    @property
    def length(self) -> float:
        return sum(math.dist(a, b) for a, b in zip(self.waypoints, self.waypoints[1:]))

    @property
    def drive_length(self) -> float:
        return self.length if self.abort_at is None else self.abort_at

    def pose_at(self, travelled: float) -> Pose2D:
        for a, b in zip(self.waypoints, self.waypoints[1:]):
            segment = math.dist(a, b)
            if travelled <= segment and segment > 0:
                t = travelled / segment
                return Pose2D(a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), math.atan2(b[1] - a[1], b[0] - a[0]))
            travelled -= segment
        return self.goal


@dataclass
class Blockage:
    area: Polygon | None            # None: whatever route comes next
    attempts: int                   # 0: for good


@dataclass
class SimulatedWorld:
    world: World
    profile: RobotProfile           # the simulated robot
    events: list[ScenarioEvent] = field(default_factory=list)
    robot: Pose2D = field(init=False)
    positions: dict[str, tuple[float, float, float]] = field(init=False)
    support: dict[str, str | None] = field(init=False)
    inside: set[str] = field(init=False)
    held: dict[str, str] = field(init=False)
    open_state: dict[str, bool] = field(init=False)
    blocked: list[Blockage] = field(default_factory=list)
    log: list[str] = field(default_factory=list)   # every scenario event that happened, in order
    now: float = 0.0                # simulated seconds, set by whoever runs the world
    added_commands: dict[str, AddedCommand] = field(default_factory=dict)   # by name, from the skill library

    def __post_init__(self):
        x, y, yaw = self.world.robot.pose
        self.robot = Pose2D(x, y, yaw)
        self.positions = {o.id: self.world.object_center(o) for o in self.world.objects}
        self.support = {o.id: o.placed_on for o in self.world.objects}
        self.inside = {o.id for o in self.world.objects if o.inside}
        wrong = [f"events[{index}].worn_gripper.arm: {problem}" for index, event in enumerate(self.events)
                 if event.worn_gripper and (problem := self.profile.arm_problem(event.worn_gripper.arm))]
        if wrong:
            raise InputError(f"scenario events for robot {self.profile.name!r}: " + "; ".join(wrong))
        self.held = {arm: "" for arm in self.profile.arms}
        self.open_state = {f.id: f.open for f in self.world.furniture if f.openable}
        self._sizes = {o.id: o.size for o in self.world.objects}
        self._labels = {o.id: o.label for o in self.world.objects}
        self._furniture = {f.id: f for f in self.world.furniture}
        self._mass = {o.id: o.mass_kg for o in self.world.objects}
        self._people = {p.id: p for p in self.world.people}
        self.given: dict[str, str] = {}     # object -> the person it was handed to
        self.wiped: list[str] = []          # surfaces swept, in order
        self._doors = nx.Graph()
        for door in self.world.doors:
            self._doors.add_edge(*door.rooms, position=door.position)
        self._abort_next: float | None = None
        self._slipping: list[str] = []          # objects (or "" for any) that slip at their next lift
        self._worn: set[str] = set()            # arms that lose whatever they lift
        self._hang_next: list[str] = []         # commands (or "" for any) that will never finish
        self._occluded: dict[str, float] = {}   # object -> simulated time it is visible again
        self._dropout_until = -math.inf
        self._taken_from: dict[str, tuple[str, tuple[float, float]]] = {}   # where a held object was picked
        self._fire(lambda trigger: trigger.at_start)

    # ---- robot and camera -----------------------------------------------------------------
    @property
    def robot_room(self) -> str:
        return self.world.room_at(self.robot.x, self.robot.y) or ""

    def gripper_point(self) -> tuple[float, float, float]:
        return (self.robot.x + GRIPPER_FORWARD_M * math.cos(self.robot.yaw),
                self.robot.y + GRIPPER_FORWARD_M * math.sin(self.robot.yaw), GRIPPER_HEIGHT_M)

    def enclosed_in(self, object_id: str) -> str:
        """The closed furniture an object is inside, else ""."""
        support = self.support.get(object_id)
        return support if object_id in self.inside and support and not self.open_state.get(support, True) else ""

    def camera_frame(self, stamp: float) -> DetectionFrame | None:
        """What the head camera sees: objects in the robot's room within range and field of view,
        doors and drawers with their state; None while detections drop out."""
        if stamp < self._dropout_until:
            return None
        camera = self.profile.camera
        room = self.robot_room

        def visible(center) -> bool:
            return (self.world.room_at(center[0], center[1]) == room
                    and in_field_of_view(self.robot, camera.fov_deg, camera.range_m, center[0], center[1]))

        detections = [Detection({self._labels[object_id]: 0.9, "object": 0.1}, center, self._sizes[object_id])
                      for object_id, center in sorted(self.positions.items())
                      if visible(center) and not self.enclosed_in(object_id)
                      and self._occluded.get(object_id, -math.inf) <= stamp]
        detections += [Detection({item.label: 1.0}, item.center, item.size,
                                 state="open" if self.open_state[item.id] else "closed")
                       for item in self.world.furniture if item.openable and visible(item.center)]
        detections += [Detection({"person": 0.95, "object": 0.05}, *person_box(person))
                       for person in self.world.people if visible(person_box(person)[0])]
        return DetectionFrame(self.robot, camera.fov_deg, camera.range_m, stamp, detections)

    def camera_view(self, stamp: float) -> SensorFrame | None:
        """The same detections as a camera sends them: in its own frame, mounted on the base."""
        seen = self.camera_frame(stamp)
        if seen is None:
            return None
        camera = self.profile.camera
        camera_pose = planar(self.robot) @ rigid(camera.mount_xyz, camera.mount_rpy)
        to_camera = np.linalg.inv(camera_pose)
        # Boxes keep the map's axes, seen turned from the camera, as a 3D detector reports them.
        detections = [Detection(d.labels, transform_point(to_camera, d.center), d.size, to_camera[:3, :3], d.state)
                      for d in seen.detections]
        return SensorFrame(camera.frame_id, np.eye(4), camera.fov_deg, camera.range_m, stamp, detections)

    # ---- navigation -------------------------------------------------------------------------
    def plan_route(self, goal: Pose2D) -> Route | Outcome:
        start_room, goal_room = self.robot_room, self.world.room_at(goal.x, goal.y)
        if goal_room is None:
            return Outcome(False, FailureCode.GOAL_OUTSIDE_MAP, f"goal ({goal.x:.2f}, {goal.y:.2f}) is not inside any room")
        waypoints = [(self.robot.x, self.robot.y)]
        if start_room != goal_room:
            try:
                rooms = nx.shortest_path(self._doors, start_room, goal_room)
            except (nx.NetworkXNoPath, nx.NodeNotFound):
                return Outcome(False, FailureCode.NO_PATH, f"no door leads from {start_room} to {goal_room}")
            waypoints += [tuple(self._doors.edges[a, b]["position"]) for a, b in zip(rooms, rooms[1:])]
        waypoints.append((goal.x, goal.y))
        path = LineString(waypoints)
        for block in self.blocked:
            if block.area is None or path.intersects(block.area):
                where = (f" near ({block.area.centroid.x:.1f}, {block.area.centroid.y:.1f})" if block.area is not None
                         else f" {path.length / 2:.1f} m along the route")
                if block.attempts:
                    block.attempts -= 1
                    if not block.attempts:
                        self.blocked.remove(block)
                return Outcome(False, FailureCode.PATH_BLOCKED, f"the way to ({goal.x:.2f}, {goal.y:.2f}) is blocked{where}")
        for item in self.world.furniture:
            if footprint_contains(item.center, item.size, goal.x, goal.y):
                return Outcome(False, FailureCode.GOAL_IN_COLLISION, f"the goal pose is inside {item.id}")
        route = Route(waypoints, goal)
        if self._abort_next is not None:
            route.abort_at, self._abort_next = route.length * self._abort_next, None
        return route

    def set_robot_pose(self, pose: Pose2D) -> None:
        self.robot = pose
        self.carry_held_objects()

    def arrive(self, goal: Pose2D) -> list[str]:
        """End of a navigation: the robot is at its goal; scenario events of that moment happen."""
        self.set_robot_pose(goal)
        return self._fire(lambda trigger: trigger.arrived_in_room == self.robot_room)

    def abort(self, route: Route) -> Outcome:
        """A navigation that gave up part of the way (Nav2's controller could not make progress)."""
        self.set_robot_pose(route.pose_at(route.drive_length))
        return Outcome(False, FailureCode.NAVIGATION_ABORTED, f"the controller gave up {route.length - route.drive_length:.1f} m "
                                                    f"before ({route.goal.x:.2f}, {route.goal.y:.2f}); the robot "
                                                    f"stopped in the {self.robot_room}")

    def start_command(self, operation: str, object_id: str) -> list[str]:
        """A command begins (navigate, or a manipulation); scenario events waiting for it happen."""
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
        self.log += fired
        return fired

    def _apply(self, event: ScenarioEvent) -> str:
        if event.move_object:
            return self.move_object(event.move_object.object, event.move_object.onto).detail
        if event.block_path:
            block = event.block_path
            self.blocked.append(Blockage(Polygon(block.polygon) if block.polygon else None, block.attempts))
            return f"path blocked {'at ' + str(block.polygon) if block.polygon else 'ahead'}" + \
                (f" for {block.attempts} attempt(s)" if block.attempts else "")
        if event.abort_navigation:
            self._abort_next = event.abort_navigation.after_fraction
            return f"the next navigation will abort after {event.abort_navigation.after_fraction:.0%} of its route"
        if event.slip_grasp:
            self._slipping.append(event.slip_grasp.object)
            return f"{event.slip_grasp.object or 'the next object'} will slip from the gripper when lifted"
        if event.worn_gripper:
            self._worn.add(event.worn_gripper.arm)
            return f"the {event.worn_gripper.arm} gripper is worn: whatever it lifts slips out"
        if event.occlude:
            self._occluded[event.occlude.object] = self.now + event.occlude.duration_s
            return f"{event.occlude.object} is hidden from the camera for {event.occlude.duration_s:.0f} s"
        if event.drop_detections:
            self._dropout_until = self.now + event.drop_detections.duration_s
            return f"the camera sends no detections for {event.drop_detections.duration_s:.0f} s"
        self._hang_next.append(event.hang_command.command)
        return f"the next {event.hang_command.command or 'manipulation'} command will not finish"

    # ---- the external agent -----------------------------------------------------------------
    def move_object(self, object_id: str, onto: str) -> Outcome:
        if object_id not in self.positions:
            return Outcome(False, FailureCode.UNKNOWN_OBJECT, f"no object {object_id!r}")
        if onto not in self._furniture:
            return Outcome(False, FailureCode.UNKNOWN_FURNITURE, f"no furniture {onto!r}")
        if object_id in self.held.values():
            return Outcome(False, FailureCode.OBJECT_HELD, f"{object_id} is in the robot's gripper")
        self._put_on(object_id, onto, self._free_spot(object_id, onto))
        return Outcome(True, detail=f"external agent moved {object_id} onto {onto}")

    def _free_spot(self, object_id: str, onto: str) -> tuple[float, float]:
        """A point on the surface away from what already stands there."""
        surface = self._furniture[onto]
        return free_spot(surface.center, surface.size,
                         [p for o, p in self.positions.items() if self.support.get(o) == onto and o != object_id])

    def _put_on(self, object_id: str, onto: str, xy: tuple[float, float]) -> None:
        """Things put on furniture whose door or drawer is open go inside it, else on top."""
        surface = self._furniture[onto]
        inside = self.open_state.get(onto, False)
        floor = surface.inner_floor_z if inside else surface.top_z
        self.positions[object_id] = (xy[0], xy[1], floor + self._sizes[object_id][2] / 2)
        self.support[object_id] = onto
        if inside:
            self.inside.add(object_id)
        else:
            self.inside.discard(object_id)

    # ---- manipulation -----------------------------------------------------------------------
    def manipulate(self, operation: str, arm: str, object_id: str, target_id: str,
                   point: tuple[float, float, float] | None) -> Outcome:
        added = self.added_commands.get(operation)
        if operation not in MANIPULATION_SECONDS and added is None:
            return Outcome(False, FailureCode.UNKNOWN_OPERATION, f"unknown manipulation {operation!r}")
        if (arm or added is None) and arm not in self.held and operation not in HEADING_ONLY:
            return Outcome(False, FailureCode.UNKNOWN_ARM, f"no arm {arm!r}")
        for command in ("", operation):
            if command in self._hang_next:
                self._hang_next.remove(command)
                return Outcome(False, HANG, f"the {operation} command did not answer")
        if added is not None:
            return added(self, arm, object_id, target_id, point)
        handler = getattr(self, f"_{operation}")
        return handler(arm, object_id, target_id, point)

    def object_at_expected_place(self, arm: str, object_id: str, point) -> Outcome:
        """Whether `arm` can take the object where the command expects it: there, within reach, not shut in."""
        if object_id not in self.positions:
            return Outcome(False, FailureCode.UNKNOWN_OBJECT, f"no object {object_id!r}")
        actual = self.positions[object_id]
        if point is not None and math.dist(actual, point) > OBJECT_FOUND_TOLERANCE_M:
            expected_on = self._furniture_under(point)
            return Outcome(False, FailureCode.OBJECT_NOT_FOUND,
                           f"{object_id} is not at ({point[0]:.2f}, {point[1]:.2f}, {point[2]:.2f})"
                           + (f" on {expected_on}" if expected_on else ""))
        if horizontal_distance((self.robot.x, self.robot.y), actual) > self.profile.reach_m:
            return Outcome(False, FailureCode.OUT_OF_REACH, f"{object_id} is beyond the {arm} arm's reach")
        closed = self.enclosed_in(object_id)
        if closed:
            return Outcome(False, FailureCode.CONTAINER_CLOSED, f"{object_id} is inside {closed}, which is closed")
        return Outcome(True)

    def _furniture_under(self, point) -> str:
        return next((f.id for f in self.world.furniture if footprint_contains(f.center, f.size, point[0], point[1])), "")

    def within_reach(self, arm: str, furniture_id: str) -> Outcome:
        """Whether `arm` reaches the nearest edge of the furniture from where the robot stands."""
        surface = self._furniture.get(furniture_id)
        if surface is None:
            return Outcome(False, FailureCode.UNKNOWN_FURNITURE, f"no furniture {furniture_id!r}")
        edge = horizontal_distance((self.robot.x, self.robot.y), surface.center) - min(surface.size[:2]) / 2
        if edge > self.profile.reach_m:
            return Outcome(False, FailureCode.OUT_OF_REACH, f"{furniture_id} is beyond the {arm} arm's reach")
        return Outcome(True)

    def _approach(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm]:
            return Outcome(False, FailureCode.ARM_OCCUPIED, f"the {arm} arm holds {self.held[arm]}")
        return self.object_at_expected_place(arm, object_id, point)

    def _grasp(self, arm, object_id, target_id, point) -> Outcome:
        found = self.object_at_expected_place(arm, object_id, point)
        if not found.ok:
            return found
        self.held[arm] = object_id
        self._taken_from[object_id] = self.support[object_id], self.positions[object_id][:2]
        self.support[object_id] = None
        self.inside.discard(object_id)
        self.positions[object_id] = self.gripper_point()
        return Outcome(True, detail=f"{object_id} in the {arm} gripper")

    def _lift(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, FailureCode.GRASP_LOST, f"the {arm} gripper is not holding {object_id}")
        slipping = next((s for s in ("", object_id) if s in self._slipping), None)
        if slipping is not None or arm in self._worn:
            if slipping is not None:
                self._slipping.remove(slipping)
            source = self._drop_back(arm, object_id)
            return Outcome(False, FailureCode.GRASP_LOST, f"{object_id} slipped from the {arm} gripper while lifting "
                                                f"and fell back onto {source}")
        if self._mass[object_id] > self.profile.payload_kg:  # the arm stalls: it lets go
            self._drop_back(arm, object_id)
            return Outcome(False, FailureCode.TOO_HEAVY, f"{object_id} ({self._mass[object_id]:.1f} kg) is beyond the {arm} "
                                               f"arm's {self.profile.payload_kg:.1f} kg; it was put back")
        return Outcome(True)

    def _drop_back(self, arm: str, object_id: str) -> str:
        """The gripper lets go while lifting: the object lands where it was taken from (returned)."""
        self.held[arm] = ""
        source, xy = self._taken_from[object_id]
        self._put_on(object_id, source, xy)
        return source

    def _place_approach(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, FailureCode.GRASP_LOST, f"the {arm} gripper is not holding {object_id}")
        return self.within_reach(arm, target_id)

    def _release(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, FailureCode.GRASP_LOST, f"the {arm} gripper is not holding {object_id}")
        surface = self._furniture[target_id]
        # Put it down on the near side of the surface, inside its edge.
        half_x = max(surface.size[0] / 2 - PLACE_EDGE_INSET_M, 0.0)
        half_y = max(surface.size[1] / 2 - PLACE_EDGE_INSET_M, 0.0)
        x = min(max(self.robot.x, surface.center[0] - half_x), surface.center[0] + half_x)
        y = min(max(self.robot.y, surface.center[1] - half_y), surface.center[1] + half_y)
        self.held[arm] = ""
        self._put_on(object_id, target_id, (x, y))
        return Outcome(True, detail=f"{object_id} {'in' if object_id in self.inside else 'on'} {target_id}")

    def _retreat(self, arm, object_id, target_id, point) -> Outcome:
        return Outcome(True)

    def _look_around(self, arm, object_id, target_id, point) -> Outcome:
        return Outcome(True, detail=f"looked around the {self.robot_room}")

    def _look_at(self, arm, object_id, target_id, point) -> Outcome:
        if target_id not in self.positions and target_id not in self._furniture and target_id not in self._people:
            return Outcome(False, FailureCode.UNKNOWN_OBJECT, f"nothing called {target_id!r} to look at")
        return Outcome(True)

    def _open_gripper(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm]:
            return Outcome(False, FailureCode.ARM_OCCUPIED, f"the {arm} gripper holds {self.held[arm]}; opening it would drop it")
        return Outcome(True)

    def _verify_grasp(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, FailureCode.GRASP_NOT_CONFIRMED, f"the {arm} gripper is not holding {object_id}")
        return Outcome(True)

    def _hand_out(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm] != object_id:
            return Outcome(False, FailureCode.GRASP_LOST, f"the {arm} gripper is not holding {object_id}")
        person = self._people.get(target_id)
        if person is None:
            return Outcome(False, FailureCode.PERSON_NOT_FOUND, f"nobody called {target_id!r} is here")
        if horizontal_distance((self.robot.x, self.robot.y), person.position) > self.profile.reach_m + PERSON_REACH_M:
            return Outcome(False, FailureCode.OUT_OF_REACH, f"{target_id} is beyond the {arm} arm's reach")
        return Outcome(True)

    def _wait_for_take(self, arm, object_id, target_id, point) -> Outcome:
        """The person takes the object held out to them: it goes with them, off the robot."""
        handed = self._hand_out(arm, object_id, target_id, point)
        if not handed.ok:
            return handed
        self.held[arm] = ""
        self.given[object_id] = target_id
        x, y = self._people[target_id].position
        self.positions[object_id] = (x, y, GRIPPER_HEIGHT_M)
        return Outcome(True, detail=f"{target_id} took {object_id}")

    def _sweep(self, arm, object_id, target_id, point) -> Outcome:
        if self.held[arm]:
            return Outcome(False, FailureCode.ARM_OCCUPIED, f"the {arm} arm holds {self.held[arm]}")
        reach = self.within_reach(arm, target_id)
        if not reach.ok:
            return reach
        self.wiped.append(target_id)
        return Outcome(True, detail=f"{target_id} wiped")

    def _articulate(self, arm, target_id, opened: bool) -> Outcome:
        if target_id not in self.open_state:
            return Outcome(False, FailureCode.NOT_OPENABLE, f"{target_id} has no door or drawer")
        if self.held[arm]:
            return Outcome(False, FailureCode.ARM_OCCUPIED, f"the {arm} arm holds {self.held[arm]}")
        reach = self.within_reach(arm, target_id)
        if not reach.ok:
            return reach
        self.open_state[target_id] = opened
        return Outcome(True, detail=f"{target_id} {'open' if opened else 'closed'}")

    def _open(self, arm, object_id, target_id, point) -> Outcome:
        return self._articulate(arm, target_id, True)

    def _close(self, arm, object_id, target_id, point) -> Outcome:
        return self._articulate(arm, target_id, False)

    def carry_held_objects(self) -> None:
        for object_id in self.held.values():
            if object_id:
                self.positions[object_id] = self.gripper_point()

    # ---- checks -----------------------------------------------------------------------------
    def object_on(self, object_id: str) -> str | None:
        return self.support.get(object_id)
