"""Controller node: checks each command for the executor (/controller/check_command: before it,
the world still as planned; after it, its effect seen by perception, waited for up to
controller.confirm_timeout_s), and turns every failed command or refused skill on
/executor/feedback into a failure message with a reason and context on /controller/failure."""

from __future__ import annotations

import threading
import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup

from planner.core.controller import check_after, check_before, describe_failure, object_of
from planner.core.failures import FailureCode
from planner.msg import ExecutionEvent, FailureMessage, RobotState
from planner.msg import SceneGraph as SceneGraphMsg
from planner.ros.convert import command_from_msg, event_from_msg, failure_to_msg, scene_from_msg, stamp_now
from planner.ros.futures import CallFailed, call_service
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import LATCHED, RELIABLE
from planner.srv import CheckCommand, GetSceneGraph

CONFIRM_POLL_S = 0.1


class ControllerNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("controller", config)
        group = MutuallyExclusiveCallbackGroup()
        checks = ReentrantCallbackGroup()
        self.lock = threading.Lock()
        self.graph: SceneGraphMsg | None = None
        self.robot: RobotState | None = None
        self.failure_pub = self.create_publisher(FailureMessage, "controller/failure", RELIABLE)
        self.create_subscription(SceneGraphMsg, "scene_graph", self._on_graph, LATCHED, callback_group=group)
        self.create_subscription(RobotState, "robot/state", self._on_robot, RELIABLE, callback_group=group)
        self.create_subscription(ExecutionEvent, "executor/feedback", self._on_event, RELIABLE, callback_group=group)
        self.scene_client = self.create_client(GetSceneGraph, "perception/get_scene_graph", callback_group=checks)
        self.create_service(CheckCommand, "controller/check_command", self._check, callback_group=checks)

    def _on_graph(self, msg: SceneGraphMsg) -> None:
        self.graph = msg

    def _on_robot(self, msg: RobotState) -> None:
        self.robot = msg

    def _check(self, request, response):
        """The world as perception has it now, asked fresh from perception (the latched graph lags)."""
        command = command_from_msg(request.command)
        check = check_before if request.phase == "before" else check_after
        deadline = time.monotonic() + (self.config.controller.confirm_timeout_s if request.phase == "after" else 0.0)
        while True:
            try:
                reply = call_service(self.scene_client, GetSceneGraph.Request(), timeout_s=2.0)
            except CallFailed as error:
                response.ok, response.code, response.reason = False, FailureCode.PERCEPTION_UNAVAILABLE, str(error)
                return response
            verdict = check(command, scene_from_msg(reply.graph, reply.robot))
            if verdict.ok or time.monotonic() >= deadline:
                response.ok, response.code, response.reason = verdict.ok, verdict.code, verdict.detail
                return response
            time.sleep(CONFIRM_POLL_S)

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
