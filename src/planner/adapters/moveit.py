"""Arm and gripper commands through MoveIt 2's Python API (moveit_py): pose goals for the arm's
tool link in the planning frame, named states for the gripper and the arm's rest pose, each
planned and executed in turn; MoveIt's error codes become our failure codes.

moveit_py is imported only when this backend is chosen; tests drive the adapter with a double
of MoveItPy's planning-component interface."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from pathlib import Path

from geometry_msgs.msg import PoseStamped
from pydantic import Field

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


class MoveItArms:
    """Runs arm and gripper commands: open_gripper; approach (hover above the object), grasp
    (down, close the gripper, and the fingers must have stopped on something), lift (up);
    place_approach (hover above the place), release (down, open); hand_out (the object held out at
    the person), wait_for_take (open once they hold it); sweep (over a surface and along it); retreat
    (the arm's rest state). look_at moves nothing (the camera is fixed to the body); verify_grasp
    reads the fingers again. Whether a hand holds something is read from its finger joints, never
    inferred from the close having succeeded: closing on an object stalls the fingers, which a
    position controller may even report as a failure, while closing on nothing succeeds."""

    def __init__(self, moveit, settings: MoveItSettings, robot: RobotProfile, robot_pose: Callable[[], Pose2D]):
        self.moveit = moveit
        self.settings = settings
        self.robot = robot
        self.robot_pose = robot_pose

    @classmethod
    def connect(cls, settings: MoveItSettings, robot: RobotProfile, robot_pose: Callable[[], Pose2D],
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
                   robot_pose)

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        """One manipulation command; `stop` set at any time stops the arm and what is left of it."""
        arm = self.robot.arms.get(command.arm)
        if arm is None:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"no MoveIt group is configured for the "
                                                                f"{command.arm or 'unnamed'} arm")
        hover = self.settings.hover_m
        steps = {
            "look_at": [], "verify_grasp": [("grip", arm.gripper_group, arm.closed_state)],
            "open_gripper": [("state", arm.gripper_group, arm.open_state)],
            "approach": [("pose", arm.group, hover)],
            "grasp": [("pose", arm.group, 0.0), ("close", arm.gripper_group, arm.closed_state),
                      ("grip", arm.gripper_group, arm.closed_state)],
            "lift": [("pose", arm.group, hover)],
            "place_approach": [("pose", arm.group, hover)],
            "release": [("pose", arm.group, 0.0), ("state", arm.gripper_group, arm.open_state)],
            "retreat": [("state", arm.group, arm.rest_state)],
            "hand_out": [("pose", arm.group, 0.0)],
            "wait_for_take": [("state", arm.gripper_group, arm.open_state)],
            "sweep": [("pose", arm.group, hover), ("pose", arm.group, SWEEP_CLEARANCE_M), ("pose", arm.group, hover)],
        }.get(command.name)
        if steps is None:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"MoveIt has no motion for {command.name!r}: "
                                                                f"opening doors and drawers needs a skill of the robot's own")
        for kind, group, value in steps:
            if stop.is_set():
                return Outcome(False, FailureCode.CANCELED, "canceled")
            outcome = self._grip(arm, command, value) if kind == "grip" else self._move(group, arm, command, kind,
                                                                                        value, stop)
            if not outcome.ok:
                return outcome
        return Outcome(True)

    def _grip(self, arm: ArmProfile, command: Command, closed) -> Outcome:
        """Whether the hand holds something: its fingers stopped short of their closed state."""
        closed = closed if isinstance(closed, dict) else self._named_state(arm.gripper_group, closed)
        with self.moveit.get_planning_scene_monitor().read_only() as scene:
            now = scene.current_state.joint_positions
        missing = [joint for joint in closed if joint not in now]
        if missing:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"MoveIt's robot state has no {', '.join(missing)}: "
                                                                f"check the gripper's joints in the robot profile")
        opening = max(abs(float(now[joint]) - float(position)) for joint, position in closed.items())
        if opening > arm.empty_grip_tolerance:
            return Outcome(True)
        what = command.object_id or "the object"
        code = FailureCode.GRASP_LOST if command.name == "verify_grasp" else FailureCode.GRASP_NOT_CONFIRMED
        return Outcome(False, code, f"the {arm.gripper_group} fingers closed on nothing ({opening * 1000:.1f} mm or "
                                    f"mrad from closed, at most {arm.empty_grip_tolerance * 1000:.1f} counts as empty): "
                                    f"{what} is not in the hand")

    def _named_state(self, group: str, name: str) -> dict[str, float]:
        """The joint positions of the SRDF's named state of a group."""
        from moveit.core.robot_state import RobotState

        model = self.moveit.get_robot_model()
        state = RobotState(model)
        state.set_to_default_values(group, name)
        joints = model.get_joint_model_group(group).active_joint_model_names
        return dict(zip(joints, (float(v) for v in state.get_joint_group_positions(group))))

    def pose_goal(self, arm: ArmProfile, point: tuple[float, float, float], above_m: float) -> PoseStamped:
        x, y, z = to_base_frame(point, self.robot_pose())
        goal = PoseStamped()
        goal.header.frame_id = self.robot.base_frame
        goal.pose.position.x, goal.pose.position.y, goal.pose.position.z = x, y, z + above_m
        q = goal.pose.orientation
        q.x, q.y, q.z, q.w = arm.grasp_xyzw
        return goal

    def _move(self, group: str, arm: ArmProfile, command: Command, kind: str, value,
              stop: threading.Event) -> Outcome:
        component = self.moveit.get_planning_component(group)
        component.set_start_state_to_current_state()
        if kind == "pose":
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
        plan = component.plan()
        if not plan:
            value = int(getattr(getattr(plan, "error_code", None), "val", -1))
            name, code = MOVEIT_ERRORS.get(value, (f"error {value}", FailureCode.ARM_PLANNING_FAILED))
            return Outcome(False, code, f"MoveIt could not plan {goal} ({name}, {value})")
        status = self._execute(plan.trajectory, stop)
        if status is not None and not status:  # Humble returns nothing; later an ExecutionStatus
            name = str(getattr(status, "status", status))
            if kind == "close" and name not in ("TIMED_OUT", "PREEMPTED") and not stop.is_set():
                return Outcome(True)   # fingers stalled on the object: the grip check that follows decides
            code = {"TIMED_OUT": FailureCode.TIMEOUT, "PREEMPTED": FailureCode.CANCELED}.get(name, FailureCode.ARM_EXECUTION_FAILED)
            return Outcome(False, code, f"moving {goal} ended {name}")
        return Outcome(True)

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
