"""Executor backend for the built-in simulator: commands become /sim/navigate and
/sim/manipulate goals, the stand-ins of Nav2's NavigateToPose and MoveIt 2 + gripper."""

from __future__ import annotations

import threading

from rclpy.action import ActionClient

from planner.action import Manipulate, Navigate
from planner.core.failures import FailureCode
from planner.core.skills import Command
from planner.core.types import Outcome
from planner.ros.convert import point_msg, pose_to_msg
from planner.ros.futures import CallFailed, CallKind, Heartbeat


class SimulatorBackend:
    def __init__(self, node, callback_group):
        self.navigate = ActionClient(node, Navigate, "sim/navigate", callback_group=callback_group)
        self.manipulate = ActionClient(node, Manipulate, "sim/manipulate", callback_group=callback_group)
        self.node = node
        self.clock = node.get_clock()
        self.simulator_alive = Heartbeat(node, "simulator")

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        """One command; `stop` set at any time, even before it started, cancels it."""
        if command.name == "navigate":
            call = self.node.action_call(self.navigate, "sim/navigate", self.clock, self.simulator_alive)
            goal = Navigate.Goal(goal=pose_to_msg(command.base_pose))
        else:
            call = self.node.action_call(self.manipulate, "sim/manipulate", self.clock, self.simulator_alive)
            goal = Manipulate.Goal(operation=command.name, arm=command.arm, object_id=command.object_id,
                                   target_id=command.target_id)
            if command.point is not None:
                goal.point = point_msg(command.point)
        try:
            result = call.run(goal, command.timeout_s, stop=stop)
        except CallFailed as error:
            code = (FailureCode.CANCELED if stop.is_set() else FailureCode.TIMEOUT if error.kind == CallKind.TIMEOUT
                    else FailureCode.ROBOT_UNAVAILABLE if error.kind == CallKind.UNAVAILABLE
                    else FailureCode.BACKEND_UNAVAILABLE)
            return Outcome(False, code, str(error))
        return Outcome(result.success, result.code, result.detail)
