"""Skill planner node: parses SKILL(arg, ...), checks its preconditions against the current scene
graph, decomposes it into commands and has the executor run them. Refusals and failures are
published as execution events; the controller turns them into the failure message returned."""

from __future__ import annotations

import threading
import uuid
from functools import partial

from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup

from planner.action import ExecuteCommands, ExecuteSkill
from planner.core.controller import ExecutionEventInfo
from planner.core.errors import InputError
from planner.core.failures import FailureCode
from planner.core.skill_execution import CommandsResult, refuse, run_planned
from planner.core.skills import Command, SkillCall, SkillRefused
from planner.core.types import FailureInfo
from planner.msg import ExecutionEvent, FailureMessage
from planner.ros.convert import command_to_msg, event_to_msg, failure_from_msg, failure_to_msg, stamp_now
from planner.ros.futures import ActionCall, CallFailed, CallKind, Heartbeat
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import RELIABLE
from planner.ros.scene_mirror import SceneMirror
from planner.wiring import load_skill_planner

CONTROLLER_WAIT_S = 3.0


class SkillPlannerNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("skill_planner", config)
        try:
            self.planner = load_skill_planner(self.config)
        except InputError as error:
            self.report("error", f"skill library rejected: {error}")
            raise
        group = ReentrantCallbackGroup()
        self.mirror = SceneMirror(self, group)
        self.executor_client = ActionClient(self, ExecuteCommands, "executor/execute_commands", callback_group=group)
        self.executor_alive = Heartbeat(self, "executor")
        self.events_pub = self.create_publisher(ExecutionEvent, "executor/feedback", RELIABLE)
        self.failures: dict[str, FailureMessage] = {}
        self.failure_arrived = threading.Condition()
        self.create_subscription(FailureMessage, "controller/failure", self._on_failure, RELIABLE, callback_group=group)
        self.calls: dict[str, ActionCall] = {}
        ActionServer(self, ExecuteSkill, "skill_planner/execute_skill", self._execute, callback_group=group,
                     cancel_callback=self._cancel)

    def _on_failure(self, msg: FailureMessage) -> None:
        with self.failure_arrived:
            self.failures[msg.execution_id] = msg
            self.failure_arrived.notify_all()

    def _cancel(self, goal_handle) -> CancelResponse:
        for call in self.calls.values():
            call.cancel()
        return CancelResponse.ACCEPT

    def _verdict(self, event: ExecutionEventInfo, goal_handle) -> FailureInfo:
        """The controller's failure message for the event; a refusal is published here (the
        executor publishes failed commands)."""
        if event.state == "refused":
            msg = event_to_msg(event, stamp_now(self))
            self.events_pub.publish(msg)
            goal_handle.publish_feedback(ExecuteSkill.Feedback(event=msg))
        if event.code == FailureCode.EXECUTOR_UNAVAILABLE:  # nobody published it: no verdict will come
            return FailureInfo(event.skill, event.command, event.code, event.detail)
        with self.failure_arrived:
            self.failure_arrived.wait_for(lambda: event.execution_id in self.failures, timeout=CONTROLLER_WAIT_S)
            verdict = self.failures.pop(event.execution_id, None)
        if verdict is None:
            self.report("warn", "no failure message from the controller; passing on the raw error")
            return FailureInfo(event.skill, event.command, event.code, event.detail)
        return failure_from_msg(verdict)

    def _run_commands(self, goal_handle, execution_id: str, call: SkillCall, commands: list[Command]) -> CommandsResult:
        goal = goal_handle.request
        action = self.action_call(self.executor_client, "executor/execute_commands", self.get_clock(), self.executor_alive)
        self.calls[execution_id] = action
        request = ExecuteCommands.Goal(execution_id=execution_id, task_id=goal.task_id, skill=str(call),
                                       commands=[command_to_msg(c) for c in commands])
        try:
            result = action.run(request, self.config.tasks.skill_timeout_s,
                                feedback_callback=lambda fb: goal_handle.publish_feedback(ExecuteSkill.Feedback(event=fb.feedback.event)))
        except CallFailed as error:
            code = FailureCode.EXECUTOR_UNAVAILABLE if error.kind == CallKind.UNAVAILABLE else FailureCode.BACKEND_UNAVAILABLE
            return CommandsResult(False, 0, code, str(error))
        finally:
            self.calls.pop(execution_id, None)
        return CommandsResult(result.success, result.failed_index, result.code, result.detail)

    def _execute(self, goal_handle):
        goal = goal_handle.request
        execution_id = uuid.uuid4().hex[:10]
        judge = partial(self._verdict, goal_handle=goal_handle)
        try:
            with self.mirror.current() as scene:
                call, commands = self.planner.plan(goal.skill, scene)
        except CallFailed as error:
            result = refuse(goal.skill, FailureCode.PERCEPTION_UNAVAILABLE, str(error), judge, execution_id, goal.task_id)
        except SkillRefused as refusal:
            result = refuse(goal.skill, refusal.code, refusal.reason, judge, execution_id, goal.task_id)
        else:
            result = run_planned(call, commands, partial(self._run_commands, goal_handle, execution_id), judge,
                                 execution_id, goal.task_id)
        if result.success:
            goal_handle.succeed()
            return ExecuteSkill.Result(success=True, message=result.message)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        failure = failure_to_msg(result.failure, stamp_now(self), execution_id, goal.task_id, goal.request)
        return ExecuteSkill.Result(success=False, message=result.message, failure=failure)


def main() -> int:
    return main_for(SkillPlannerNode)
