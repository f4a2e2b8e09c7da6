"""A hand driven through its controller's control_msgs/GripperCommand action (ros2_controllers'
gripper action controller, or a robot's own driver): one goal per open or close, waited on from the
executor's worker thread; the result's finger position and stall flag come back as read."""

from __future__ import annotations

import threading

from rclpy.action import ActionClient

from planner.adapters.moveit import GripReading
from planner.ros.futures import ActionCall


class GripperCommandClient:
    def __init__(self, node, action: str, callback_group):
        from control_msgs.action import GripperCommand

        self._type = GripperCommand
        self._call = ActionCall(ActionClient(node, GripperCommand, action, callback_group=callback_group), action,
                                clock=node.get_clock())

    def move(self, position: float, max_effort: float, timeout_s: float, stop: threading.Event) -> GripReading:
        goal = self._type.Goal()
        goal.command.position, goal.command.max_effort = float(position), float(max_effort)
        result = self._call.run(goal, timeout_s, stop=stop)
        return GripReading(float(result.position), bool(result.stalled), bool(result.reached_goal))
