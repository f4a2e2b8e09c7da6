"""Arm and gripper commands through MoveIt 2's Python API (moveit_py): free-space moves to a pose
above an object or a place, straight moves down to it and up again (a Cartesian planner, Pilz's LIN
by default), named states for the arm's rest pose and, for a hand without a GripperCommand
action, the gripper; MoveIt's error codes become our failure codes. Before each command the
planning scene gets the obstacles within the arm's reach from the scene graph, and a grasped
object is attached to the hand until it is let go.

moveit_py, moveit_msgs and shape_msgs are imported only when this backend is chosen; tests drive the
adapter with a double of MoveItPy's interface and of those message modules."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from geometry_msgs.msg import Pose, PoseStamped
from pydantic import Field

from planner.core.collision_scene import CollisionBox, CollisionWorld
from planner.core.errors import InputError
from planner.core.failures import FailureCode
from planner.core.files import StrictModel
from planner.core.geometry import Pose2D
from planner.core.robot_profile import ArmProfile, RobotProfile
from planner.core.skills import Command
from planner.core.types import Outcome


class MoveItSettings(StrictModel):
    node_name: str = Field(default="planner_moveit", description="MoveItPy's node; its parameters are keyed by it")
    params_files: list[str] = Field(default_factory=list, description="MoveIt parameter files for that node (robot "
                                    "description and semantic, kinematics, planning pipelines, controllers); "
                                    "empty: the --params-file files the executor was started with")
    hover_m: float = Field(default=0.10, gt=0, description="above an object before the grasp and after the lift")
    straight_pipeline: str = Field(default="pilz_industrial_motion_planner", description="MoveIt planning pipeline "
                                   "of the straight tool moves (down to grasp or put down, up after, along a "
                                   "surface); it must be in the MoveIt parameters. Empty: planned like other moves")
    straight_planner_id: str = Field(default="LIN", description="that pipeline's planner for a straight line")


STOP_POLL_S = 0.05   # how often a running trajectory looks at the stop
SWEEP_CLEARANCE_M = 0.02   # the tool this far above a surface it wipes

# moveit_msgs/MoveItErrorCodes: value → (its name, our failure code). The code drives replanning and
# the explainer's retrieval; a value not listed is a planning failure.
MOVEIT_ERRORS = {
    -1: ("PLANNING_FAILED", FailureCode.ARM_PLANNING_FAILED),
    -2: ("INVALID_MOTION_PLAN", FailureCode.ARM_PLANNING_FAILED),
    -3: ("MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE", FailureCode.WORLD_CHANGED),
    -4: ("CONTROL_FAILED", FailureCode.ARM_EXECUTION_FAILED),
    -5: ("UNABLE_TO_AQUIRE_SENSOR_DATA", FailureCode.ARM_PLANNING_FAILED),
    -6: ("TIMED_OUT", FailureCode.TIMEOUT),
    -7: ("PREEMPTED", FailureCode.CANCELED),
    -10: ("START_STATE_IN_COLLISION", FailureCode.ARM_IN_COLLISION),
    -12: ("GOAL_IN_COLLISION", FailureCode.ARM_GOAL_IN_COLLISION),
    -21: ("FRAME_TRANSFORM_FAILURE", FailureCode.LOCALIZATION_LOST),
    -31: ("NO_IK_SOLUTION", FailureCode.OUT_OF_REACH),
}


def to_base_frame(point: tuple[float, float, float], base: Pose2D) -> tuple[float, float, float]:
    """A map point in the frame of a planar base at `base` (x forward, z up)."""
    dx, dy = point[0] - base.x, point[1] - base.y
    cos, sin = math.cos(base.yaw), math.sin(base.yaw)
    return dx * cos + dy * sin, -dx * sin + dy * cos, point[2]


@dataclass(frozen=True)
class GripReading:
    """A GripperCommand action's result: where the fingers stopped and why."""
    position: float
    stalled: bool
    reached_goal: bool


class Gripper(Protocol):
    def move(self, position: float, max_effort: float, timeout_s: float, stop: threading.Event) -> GripReading:
        """Move the fingers to `position`; raises RuntimeError, with the reason, when the action fails."""
        ...


# The kinds of tool move, and whether each is a straight line rather than planned freely.
TOOL_MOVES = {"pose": False, "line": True}


class MoveItArms:
    """Runs arm and gripper commands: open_gripper; approach (hover above the object), grasp
    (straight down, close the gripper: the fingers must have stopped on something), lift (straight
    up); place_approach (hover above the place), release (straight down, open); hand_out (the object
    held out at the person), wait_for_take (open once they hold it); sweep (over a surface, down to it
    and up); retreat (the arm's rest state). look_at moves nothing (the camera is fixed to the body);
    verify_grasp reads the fingers again. Whether a hand holds something is read from its fingers,
    never inferred from the close having succeeded: closing on an object stalls the fingers, which a
    position controller may even report as a failure, while closing on nothing succeeds.
    `obstacles` gives, by id, what the arm could hit now and the box of the object a command handles
    (it raises RuntimeError when that is not known); `grippers`, by arm, the hands driven through a GripperCommand action."""

    def __init__(self, moveit, settings: MoveItSettings, robot: RobotProfile, robot_pose: Callable[[], Pose2D],
                 obstacles: Callable[[str], dict[str, CollisionBox]], grippers: dict[str, Gripper] | None = None):
        self.moveit = moveit
        self.settings = settings
        self.robot = robot
        self.robot_pose = robot_pose
        self.obstacles = obstacles
        self.grippers = grippers or {}
        self.collision = CollisionWorld.empty()

    @classmethod
    def connect(cls, settings: MoveItSettings, robot: RobotProfile, robot_pose: Callable[[], Pose2D],
                obstacles: Callable[[str], dict[str, CollisionBox]], grippers: dict[str, Gripper],
                namespace: str = "", params_files: list[Path] | None = None) -> MoveItArms:
        """MoveItPy for the robot, in the executor's namespace, configured from `params_files` (MoveItPy's
        own default when none: the process's --params-file arguments); raises InputError when the profile
        lacks an arm's MoveIt names or a parameter file is missing."""
        missing = [f"arms.{name}.{field}" for name, arm in robot.arms.items() for field in arm.missing_moveit_names()]
        if missing:
            raise InputError(f"robot profile {robot.name!r}: {', '.join(missing)}: needed by the MoveIt executor backend")
        absent = [str(path) for path in params_files or [] if not path.is_file()]
        if absent:
            raise InputError(f"executor.moveit.params_files: {', '.join(absent)} not found")
        from moveit.planning import MoveItPy

        options = {"launch_params_filepaths": [str(path) for path in params_files]} if params_files else {}
        return cls(MoveItPy(node_name=settings.node_name, name_space=namespace.strip("/"), **options), settings, robot,
                   robot_pose, obstacles, grippers)

    def steps(self, name: str) -> list[tuple] | None:
        """The motions of a command, in order: (kind, height above its point) for tool moves, (kind,)
        for the rest; None for a command this backend cannot do."""
        hover = self.settings.hover_m
        return {
            "look_at": [], "verify_grasp": [("verify",)], "open_gripper": [("open",)],
            "approach": [("pose", hover)], "grasp": [("line", 0.0), ("close",)], "lift": [("line", hover)],
            "place_approach": [("pose", hover)], "release": [("line", 0.0), ("open",)], "retreat": [("rest",)],
            "hand_out": [("pose", 0.0)], "wait_for_take": [("open",)],
            "sweep": [("pose", hover), ("line", SWEEP_CLEARANCE_M), ("line", hover)],
        }.get(name)

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        """One manipulation command; `stop` set at any time stops the arm and what is left of it."""
        arm = self.robot.arms.get(command.arm)
        if arm is None:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"no MoveIt group is configured for the "
                                                                f"{command.arm or 'unnamed'} arm")
        steps = self.steps(command.name)
        if steps is None:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"MoveIt has no motion for {command.name!r}")
        # A tool move below the hover height touches what the command is about.
        touches = any(step[0] in TOOL_MOVES and step[1] < self.settings.hover_m for step in steps)
        try:
            obstacles = self.obstacles(command.object_id) if any(step[0] in (*TOOL_MOVES, "rest") for step in steps) else {}
        except RuntimeError as error:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"the arm does not move without knowing what it "
                                                                f"could hit: {error}")
        self._update_world(obstacles, {command.object_id, command.target_id} if touches else set())
        for step in steps:
            if stop.is_set():
                return Outcome(False, FailureCode.CANCELED, "canceled")
            kind = step[0]
            if kind in TOOL_MOVES:
                outcome = self._move(arm, command, kind, step[1], stop)
            elif kind == "rest":
                outcome = self._move(arm, command, kind, arm.rest_state, stop)
            elif kind == "open":
                outcome = self._open(arm, command, stop)
            else:
                outcome = self._grip(arm, command, stop, closing=kind == "close")
                if kind == "close" and outcome.ok and command.object_id in obstacles:
                    self._attach(arm, obstacles[command.object_id])
                elif kind == "verify" and outcome.code == FailureCode.GRASP_LOST:
                    self._detach(arm)
            if not outcome.ok:
                return outcome
        return Outcome(True)

    # ---- the planning scene --------------------------------------------------------------------
    def _update_world(self, obstacles: dict[str, CollisionBox], touched: set[str]) -> None:
        added, removed = self.collision.plan(obstacles, touched)
        if not added and not removed:
            return
        from moveit_msgs.msg import CollisionObject

        with self.moveit.get_planning_scene_monitor().read_write() as scene:
            for box in added:
                scene.apply_collision_object(self._box_msg(box))
            for box_id in removed:
                scene.apply_collision_object(CollisionObject(id=box_id, operation=CollisionObject.REMOVE))
        self.collision.applied(added, removed)

    def _box_msg(self, box: CollisionBox):
        """The box in the base frame, where this side's goals are too: MoveIt need not know the map."""
        from moveit_msgs.msg import CollisionObject
        from shape_msgs.msg import SolidPrimitive

        base = self.robot_pose()
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = to_base_frame(box.center, base)
        pose.orientation.z, pose.orientation.w = math.sin(-base.yaw / 2), math.cos(-base.yaw / 2)
        message = CollisionObject(id=box.id, operation=CollisionObject.ADD,
                                  primitives=[SolidPrimitive(type=SolidPrimitive.BOX, dimensions=list(box.size))],
                                  primitive_poses=[pose])
        message.header.frame_id = self.robot.base_frame
        return message

    def _attach(self, arm: ArmProfile, box: CollisionBox) -> None:
        """The grasped object goes with the hand; the hand's own links may touch it."""
        from moveit_msgs.msg import AttachedCollisionObject

        links = (self.moveit.get_robot_model().get_joint_model_group(arm.gripper_group).link_model_names
                 if arm.gripper_group else [])
        attached = AttachedCollisionObject(link_name=arm.tool_link, object=self._box_msg(box),
                                           touch_links=sorted({arm.tool_link, *links}))
        with self.moveit.get_planning_scene_monitor().read_write() as scene:
            scene.process_attached_collision_object(attached)
        self.collision.attach(arm.tool_link, box.id)

    def _detach(self, arm: ArmProfile) -> None:
        """The hand lets go: MoveIt puts the object back into the world where it is."""
        object_id = self.collision.detach(arm.tool_link)
        if object_id:
            from moveit_msgs.msg import AttachedCollisionObject, CollisionObject

            released = AttachedCollisionObject(link_name=arm.tool_link,
                                               object=CollisionObject(id=object_id, operation=CollisionObject.REMOVE))
            with self.moveit.get_planning_scene_monitor().read_write() as scene:
                scene.process_attached_collision_object(released)

    # ---- the gripper ---------------------------------------------------------------------------
    def _open(self, arm: ArmProfile, command: Command, stop: threading.Event) -> Outcome:
        gripper = self.grippers.get(command.arm)
        if arm.gripper_action is None or gripper is None:
            outcome = self._move(arm, command, "state", arm.open_state, stop)
        else:
            try:
                gripper.move(arm.gripper_action.open_position, arm.gripper_action.max_effort, command.timeout_s, stop)
                outcome = Outcome(True)
            except RuntimeError as error:
                outcome = self._gripper_failed(error, stop)
        if outcome.ok:
            self._detach(arm)
        return outcome

    def _grip(self, arm: ArmProfile, command: Command, stop: threading.Event, closing: bool) -> Outcome:
        """Close the hand (or, verifying, read it: a GripperCommand hand is closed again) and say whether
        it holds something: its fingers stopped short of their closed state."""
        gripper = self.grippers.get(command.arm)
        if arm.gripper_action is not None and gripper is not None:
            try:
                reading = gripper.move(arm.gripper_action.closed_position, arm.gripper_action.max_effort,
                                       command.timeout_s, stop)
            except RuntimeError as error:
                return self._gripper_failed(error, stop)
            opening = abs(reading.position - arm.gripper_action.closed_position)
            how = f"the gripper {'stalled' if reading.stalled else 'stopped'} at {reading.position:g}"
        else:
            if closing:
                outcome = self._move(arm, command, "close", arm.closed_state, stop)
                if not outcome.ok:
                    return outcome
            closed = arm.closed_state if isinstance(arm.closed_state, dict) \
                else self._named_state(arm.gripper_group, arm.closed_state)
            with self.moveit.get_planning_scene_monitor().read_only() as scene:
                now = scene.current_state.joint_positions
            missing = [joint for joint in closed if joint not in now]
            if missing:
                return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"MoveIt's robot state has no "
                                                                    f"{', '.join(missing)}: check the gripper's "
                                                                    f"joints in the robot profile")
            opening = max(abs(float(now[joint]) - float(position)) for joint, position in closed.items())
            how = f"the {arm.gripper_group} fingers stopped"
        if arm.holds_something(opening):
            return Outcome(True)
        what = command.object_id or "the object"
        code = FailureCode.GRASP_NOT_CONFIRMED if closing else FailureCode.GRASP_LOST
        return Outcome(False, code, f"{how} {opening * 1000:.1f} mm or mrad from closed, on nothing (at most "
                                    f"{arm.empty_grip_tolerance * 1000:.1f} counts as empty): {what} is not in the hand")

    @staticmethod
    def _gripper_failed(error: RuntimeError, stop: threading.Event) -> Outcome:
        code = FailureCode.CANCELED if stop.is_set() else FailureCode.ARM_EXECUTION_FAILED
        return Outcome(False, code, f"the gripper: {error}")

    def _named_state(self, group: str, name: str) -> dict[str, float]:
        """The joint positions of the SRDF's named state of a group."""
        from moveit.core.robot_state import RobotState

        model = self.moveit.get_robot_model()
        state = RobotState(model)
        state.set_to_default_values(group, name)
        joints = model.get_joint_model_group(group).active_joint_model_names
        return dict(zip(joints, (float(v) for v in state.get_joint_group_positions(group))))

    # ---- arm motions ---------------------------------------------------------------------------
    def pose_goal(self, arm: ArmProfile, point: tuple[float, float, float], above_m: float) -> PoseStamped:
        x, y, z = to_base_frame(point, self.robot_pose())
        goal = PoseStamped()
        goal.header.frame_id = self.robot.base_frame
        goal.pose.position.x, goal.pose.position.y, goal.pose.position.z = x, y, z + above_m
        q = goal.pose.orientation
        q.x, q.y, q.z, q.w = arm.grasp_xyzw
        return goal

    def _move(self, arm: ArmProfile, command: Command, kind: str, value, stop: threading.Event) -> Outcome:
        """One planned and executed motion: the tool to `value` m above the command's point ("pose",
        "line": straight), or the arm ("rest") or the gripper ("state", "close") to a named state or
        joint positions."""
        group = arm.group if kind in (*TOOL_MOVES, "rest") else arm.gripper_group
        component = self.moveit.get_planning_component(group)
        component.set_start_state_to_current_state()
        if kind in TOOL_MOVES:
            if command.point is None:
                return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"{command.name} has no point to move to")
            component.set_goal_state(pose_stamped_msg=self.pose_goal(arm, command.point, value), pose_link=arm.tool_link)
            goal = f"{arm.tool_link} to {command.object_id or command.target_id or 'the point'}"
        elif isinstance(value, dict):
            component.set_goal_state(robot_state=self._joint_state(value))
            goal = f"{group} to {', '.join(f'{joint} {position:g}' for joint, position in value.items())}"
        else:
            component.set_goal_state(configuration_name=value)
            goal = f"{group} to {value!r}"
        straight = TOOL_MOVES.get(kind, False) and bool(self.settings.straight_pipeline)
        plan = component.plan(single_plan_parameters=self._straight_parameters()) if straight else component.plan()
        if not plan:
            value = int(getattr(getattr(plan, "error_code", None), "val", -1))
            name, code = MOVEIT_ERRORS.get(value, (f"error {value}", FailureCode.ARM_PLANNING_FAILED))
            how = f"in a straight line with {self.settings.straight_pipeline}'s {self.settings.straight_planner_id} " \
                  f"(executor.moveit.straight_pipeline) " if straight else ""
            return Outcome(False, code, f"MoveIt could not plan {goal} {how}({name}, {value})")
        status = self._execute(plan.trajectory, stop)
        if status is not None and not status:  # Humble returns nothing; later an ExecutionStatus
            name = str(getattr(status, "status", status))
            if kind == "close" and name not in ("TIMED_OUT", "PREEMPTED") and not stop.is_set():
                return Outcome(True)   # fingers stalled on the object: the grip check that follows decides
            code = {"TIMED_OUT": FailureCode.TIMEOUT, "PREEMPTED": FailureCode.CANCELED}.get(name, FailureCode.ARM_EXECUTION_FAILED)
            return Outcome(False, code, f"moving {goal} ended {name}")
        return Outcome(True)

    def _straight_parameters(self):
        from moveit.planning import PlanRequestParameters

        parameters = PlanRequestParameters(self.moveit)
        parameters.planning_pipeline = self.settings.straight_pipeline
        parameters.planner_id = self.settings.straight_planner_id
        return parameters

    def _joint_state(self, positions: dict[str, float]):
        """A goal state with these joints where the profile puts them (robots whose SRDF names no states)."""
        from moveit.core.robot_state import RobotState

        state = RobotState(self.moveit.get_robot_model())
        state.joint_positions = positions
        state.update()
        return state

    def _execute(self, trajectory, stop: threading.Event):
        """Execute (it blocks), stopping the trajectory as soon as `stop` is set."""
        finished = threading.Event()

        def watch() -> None:
            while not finished.wait(STOP_POLL_S):
                if stop.is_set():
                    self.moveit.get_trajectory_execution_manager().stop_execution()
                    return
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            return self.moveit.execute(trajectory, controllers=[])
        finally:
            finished.set()
            watcher.join()
