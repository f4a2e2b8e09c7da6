"""Controller node: checks each command for the executor (/controller/check_command: before it,
the world still as planned; after it, its effect seen by perception, waited for up to
controller.confirm_timeout_s), and turns every failed command or refused skill on
/executor/feedback into a failure message with a reason and context on /controller/failure. The
world is its scene mirror of perception's graph (planner.ros.scene_mirror)."""

from __future__ import annotations

import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup

from planner.core.controller import check_command, describe_failure
from planner.core.failures import FailureCode
from planner.core.types import Outcome
from planner.msg import ExecutionEvent, FailureMessage
from planner.ros.convert import command_from_msg, event_from_msg, failure_to_msg, seconds, stamp_now
from planner.ros.futures import CallFailed, Heartbeat
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import RELIABLE
from planner.ros.scene_mirror import SceneMirror
from planner.srv import CheckCommand
from planner.wiring import load_skill_planner


class ControllerNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("controller", config)
        events = MutuallyExclusiveCallbackGroup()
        checks = ReentrantCallbackGroup()
        self.mirror = SceneMirror(self, checks)
        self.hazards = load_skill_planner(self.config).hazards
        self.perception_alive = Heartbeat(self, "perception")
        self.failure_pub = self.create_publisher(FailureMessage, "controller/failure", RELIABLE)
        self.create_subscription(ExecutionEvent, "executor/feedback", self._on_event, RELIABLE, callback_group=events)
        self.create_service(CheckCommand, "controller/check_command", self._check, callback_group=checks)

    def _check(self, request, response):
        """The command against the world as perception has it; after a command, again as it
        changes, until its effect shows or controller.confirm_timeout_s passes."""
        command = command_from_msg(request.command)
        timeout_s = self.config.controller.confirm_timeout_s if request.phase == "after" else 0.0
        try:
            problem = self._perception_problem()
            verdict = Outcome(False, FailureCode.PERCEPTION_UNAVAILABLE, problem) if problem else self.mirror.wait_until(
                lambda scene: check_command(request.phase, command, scene, self.hazards), timeout_s,
                until=lambda outcome: outcome.ok)
        except CallFailed as error:
            verdict = Outcome(False, FailureCode.PERCEPTION_UNAVAILABLE, str(error))
        response.ok, response.code, response.reason = verdict.ok, verdict.code, verdict.detail
        return response

    def _perception_problem(self) -> str:
        """Why no command may run on perception's picture, or '': its process not heard, or no camera
        frame fused into the picture, within controller.perception_wait_s (waited for that long)."""
        wait_s = self.config.controller.perception_wait_s
        deadline = time.monotonic() + wait_s
        if not self.perception_alive.alive_within(wait_s):
            return "perception is not running: no command runs on a picture of the world nobody keeps"
        if not self.mirror.wait_for_look(seconds(stamp_now(self)) - wait_s, max(deadline - time.monotonic(), 0.0)):
            return (f"perception's picture is stale: no camera frame in the last {wait_s:g} s; no command runs on "
                    "a picture of the world nobody keeps current")
        return ""

    def _on_event(self, msg: ExecutionEvent) -> None:
        if msg.state not in ("failed", "refused"):
            return
        event = event_from_msg(msg)
        try:
            with self.mirror.current() as scene:
                failure = describe_failure(event, scene)
        except CallFailed as error:
            self.report("warn", f"failure described without the scene: {error}")
            failure = describe_failure(event, None)
        self.failure_pub.publish(failure_to_msg(failure, stamp_now(self), msg.execution_id, msg.task_id))
        self.get_logger().info(f"{failure.skill} failed [{failure.code}]: {failure.reason}")


def main() -> int:
    return main_for(ControllerNode)
