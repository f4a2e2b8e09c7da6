"""Controller node: watches /executor/feedback and turns every failed command or refused skill
into a failure message with a reason and context on /controller/failure."""

from __future__ import annotations

import threading

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

from planner.core.controller import describe_failure, object_of
from planner.msg import ExecutionEvent, FailureMessage, RobotState, SceneGraph as SceneGraphMsg
from planner.nodes.common import (LATCHED, RELIABLE, PlannerNode, event_from_msg, failure_to_msg, main_for,
                                  scene_from_msg, stamp_now)


class ControllerNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("controller", config)
        group = MutuallyExclusiveCallbackGroup()
        self.lock = threading.Lock()
        self.graph: SceneGraphMsg | None = None
        self.robot: RobotState | None = None
        self.failure_pub = self.create_publisher(FailureMessage, "/controller/failure", RELIABLE)
        self.create_subscription(SceneGraphMsg, "/scene_graph", self._on_graph, LATCHED, callback_group=group)
        self.create_subscription(RobotState, "/robot/state", self._on_robot, RELIABLE, callback_group=group)
        self.create_subscription(ExecutionEvent, "/executor/feedback", self._on_event, RELIABLE, callback_group=group)

    def _on_graph(self, msg: SceneGraphMsg) -> None:
        self.graph = msg

    def _on_robot(self, msg: RobotState) -> None:
        self.robot = msg

    def _on_event(self, msg: ExecutionEvent) -> None:
        if msg.state not in ("failed", "refused"):
            return
        event = event_from_msg(msg)
        scene = scene_from_msg(self.graph, self.robot) if self.graph is not None else None
        failure = describe_failure(event, scene, object_of(msg.skill, scene))
        self.failure_pub.publish(failure_to_msg(failure, stamp_now(self), msg.execution_id, msg.task_id))
        self.get_logger().info(f"{failure.skill} failed [{failure.code}]: {failure.reason}")


def main() -> int:
    return main_for(ControllerNode)
