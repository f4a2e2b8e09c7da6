"""Executor backend for a real robot: navigate and look_around commands go to Nav2, arm and gripper commands to
MoveIt 2 (with the obstacles within the arm's reach from perception's scene graph) and, for hands
that have one, their GripperCommand action; a command with no motion here goes to the robot's own
node serving `skills/<command>` (planner.ros.skill_actions). With no simulator to say it, this backend also publishes
/robot/state: the base pose from TF (map → the profile's base frame), what each hand holds (from the
commands that succeeded: a grasp succeeds only on fingers that stopped on something), whether a
command runs; perception places the pose in its rooms."""

from __future__ import annotations

import importlib
import threading

from planner.adapters.moveit import MoveItArms
from planner.adapters.nav2 import Nav2Navigation
from planner.core.collision_scene import CollisionBox, obstacles_within_reach
from planner.core.failures import FailureCode
from planner.core.frames import FrameError, to_planar
from planner.core.geometry import Pose2D
from planner.core.robot_state import HeldObjects
from planner.core.scene_graph import RobotSnapshot
from planner.core.skills import Command, load_skill_library
from planner.core.types import Outcome
from planner.msg import RobotState
from planner.ros.convert import robot_to_msg
from planner.ros.gripper import GripperCommandClient
from planner.ros.qos import RELIABLE
from planner.ros.scene_mirror import SceneMirror
from planner.ros.skill_actions import SkillActions
from planner.ros.tf_frames import TfLookup
from planner.wiring import load_robot

LATEST = 0.0  # a TF lookup at time 0 takes the latest transform
# What this backend imports: (how a user knows it, module).
REQUIRED = (("tf2_ros", "tf2_ros"), ("Nav2's nav2_simple_commander", "nav2_simple_commander.robot_navigator"),
            ("MoveIt 2's moveit_py", "moveit.planning"), ("moveit_msgs", "moveit_msgs.msg"),
            ("shape_msgs", "shape_msgs.msg"))
GRIPPER_ACTION = ("control_msgs (for arms.*.gripper_action)", "control_msgs.action")


def importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


class RobotBackend:
    def __init__(self, node, callback_group):
        settings = node.config.executor
        self.node, self.robot = node, load_robot(node.config)
        needs = (*REQUIRED, GRIPPER_ACTION) if any(arm.gripper_action for arm in self.robot.arms.values()) else REQUIRED
        missing = [name for name, module in needs if not importable(module)]
        if missing:
            raise ValueError(f"executor.backend robot needs {', '.join(missing)} (a ROS 2 install with Nav2 and "
                             f"MoveIt 2)")
        self.tf = TfLookup(node, self.robot.map_frame)
        self.held = HeldObjects(self.robot.arm_names, load_skill_library(node.config.path(node.config.skills)))
        self.busy = threading.Event()
        self.state = node.create_publisher(RobotState, "robot/state", RELIABLE)
        node.create_timer(1.0 / settings.state_rate_hz, self.publish_state, callback_group=callback_group)
        self.navigation = Nav2Navigation.connect(frame_id=self.robot.map_frame, **settings.nav2.model_dump())
        self.scene = SceneMirror(node, callback_group)
        grippers = {name: GripperCommandClient(node, arm.gripper_action.action, callback_group)
                    for name, arm in self.robot.arms.items() if arm.gripper_action}
        self.skill_actions = SkillActions(node, callback_group)
        self.arms = MoveItArms.connect(settings.moveit, self.robot, self.robot_pose, self.obstacles, grippers,
                                       node.get_namespace(),
                                       [node.config.path(path) for path in settings.moveit.params_files])

    def robot_pose(self) -> Pose2D:
        try:
            return to_planar(self.tf(self.robot.base_frame, LATEST))
        except FrameError as error:
            raise RuntimeError(f"no base pose in {self.robot.map_frame}: {error}") from None

    def obstacles(self, handled: str) -> dict[str, CollisionBox]:
        """What the arm could hit now and the object it handles, from perception's scene graph;
        RuntimeError when perception does not answer."""
        with self.scene.current() as scene:
            return obstacles_within_reach(scene, self.robot_pose(), self.robot.reach_m, handled)

    def publish_state(self) -> None:
        try:
            pose = self.robot_pose()
        except RuntimeError as error:
            self.node.get_logger().warning(f"no /robot/state: {error}", throttle_duration_sec=5.0)
            return
        snapshot = RobotSnapshot(pose, "", self.robot.arm_names, self.held.held(), self.busy.is_set())
        self.state.publish(robot_to_msg(snapshot, self.node.get_clock().now().to_msg(), self.robot.map_frame))

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        self.busy.set()
        try:
            if command.name in ("navigate", "look_around"):
                outcome = self.navigation.run(command, stop)
            elif self.arms.steps(command.name) is None:
                outcome = self.skill_actions.run(command, stop)
            else:
                try:
                    outcome = self.arms.run(command, stop)
                except RuntimeError as error:
                    outcome = Outcome(False, FailureCode.BACKEND_UNAVAILABLE, str(error))
        finally:
            self.busy.clear()
        if outcome.ok:
            self.held.record(command)
        elif outcome.code == FailureCode.GRASP_LOST:
            self.held.emptied(command.arm)
        return outcome
