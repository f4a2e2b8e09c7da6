"""Executor backend for a real robot: navigate and look_around commands go to Nav2, arm and gripper commands to
MoveIt 2. The base pose that arm goals are expressed from comes from /robot/state."""

from __future__ import annotations

import threading

from planner.adapters.moveit import MoveItArms
from planner.adapters.nav2 import Nav2Navigation
from planner.core.failures import FailureCode
from planner.core.geometry import Pose2D
from planner.core.skills import Command
from planner.core.types import Outcome
from planner.msg import RobotState
from planner.ros.convert import pose_from_msg
from planner.ros.qos import RELIABLE
from planner.wiring import load_robot


class RobotBackend:
    def __init__(self, node, callback_group):
        settings = node.config.executor
        robot = load_robot(node.config)
        self._pose: Pose2D | None = None
        self._lock = threading.Lock()
        node.create_subscription(RobotState, "robot/state", self._on_state, RELIABLE, callback_group=callback_group)
        try:
            self.navigation = Nav2Navigation.connect(frame_id=robot.map_frame, **settings.nav2.model_dump())
            self.arms = MoveItArms.connect(settings.moveit, robot, self.robot_pose, node.get_namespace(),
                                           [node.config.path(path) for path in settings.moveit.params_files])
        except ImportError as error:
            raise ValueError(f"executor.backend robot needs Nav2's nav2_simple_commander and MoveIt 2's moveit_py "
                             f"(a ROS 2 install with both): {error}") from error

    def _on_state(self, msg: RobotState) -> None:
        with self._lock:
            self._pose = pose_from_msg(msg.base_pose)

    def robot_pose(self) -> Pose2D:
        with self._lock:
            if self._pose is None:
                raise RuntimeError("no /robot/state yet: arm goals need the base pose")
            return self._pose

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        if command.name in ("navigate", "look_around"):
            return self.navigation.run(command, stop)
        try:
            return self.arms.run(command, stop)
        except RuntimeError as error:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, str(error))
