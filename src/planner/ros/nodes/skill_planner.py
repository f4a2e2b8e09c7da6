"""Skill planner node: parses SKILL(arg, ...), checks its preconditions against the current scene
graph, decomposes it into commands and has the executor run them. Refusals and failures are
published as execution events; the controller turns them into the failure message returned."""

from __future__ import annotations

import threading
import uuid

from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup

from planner.action import ExecuteCommands, ExecuteSkill
from planner.core.errors import InputError
from planner.core.failures import FailureCode
from planner.core.skills import SkillRefused
from planner.core.types import FailureInfo
from planner.msg import ExecutionEvent, FailureMessage
from planner.ros.convert import command_to_msg, failure_to_msg, scene_from_msg, stamp_now
from planner.ros.futures import ActionCall, CallFailed, call_service
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import RELIABLE
from planner.srv import GetSceneGraph
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
        self.scene_client = self.create_client(GetSceneGraph, "perception/get_scene_graph", callback_group=group)
        self.executor_client = ActionClient(self, ExecuteCommands, "executor/execute_commands", callback_group=group)
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

    def _controller_verdict(self, execution_id: str, fallback: FailureInfo, goal) -> FailureMessage:
        with self.failure_arrived:
            self.failure_arrived.wait_for(lambda: execution_id in self.failures, timeout=CONTROLLER_WAIT_S)
            verdict = self.failures.pop(execution_id, None)
        if verdict is None:
            self.report("warn", "no failure message from the controller; passing on the raw error")
            return failure_to_msg(fallback, stamp_now(self), execution_id, goal.task_id, goal.request)
        verdict.request = goal.request
        return verdict

    def _refuse(self, goal_handle, execution_id: str, code: str, detail: str):
        goal = goal_handle.request
        event = ExecutionEvent(stamp=stamp_now(self), execution_id=execution_id, task_id=goal.task_id, skill=goal.skill,
                               command="preconditions", state="refused", code=code, detail=detail)
        self.events_pub.publish(event)
        goal_handle.publish_feedback(ExecuteSkill.Feedback(event=event))
        failure = self._controller_verdict(execution_id, FailureInfo(goal.skill, "preconditions", code, detail), goal)
        goal_handle.abort()
        return ExecuteSkill.Result(success=False, message=f"{goal.skill} refused: {failure.reason}", failure=failure)

    def _execute(self, goal_handle):
        goal = goal_handle.request
        execution_id = uuid.uuid4().hex[:10]
        try:
            reply = call_service(self.scene_client, GetSceneGraph.Request(), timeout_s=5.0)
        except CallFailed as error:
            return self._refuse(goal_handle, execution_id, FailureCode.PERCEPTION_UNAVAILABLE, str(error))
        try:
            call, commands = self.planner.plan(goal.skill, scene_from_msg(reply.graph, reply.robot))
        except SkillRefused as refusal:
            return self._refuse(goal_handle, execution_id, refusal.code, refusal.reason)
        action = ActionCall(self.executor_client, "executor/execute_commands")
        self.calls[execution_id] = action
        request = ExecuteCommands.Goal(execution_id=execution_id, task_id=goal.task_id, skill=str(call),
                                       commands=[command_to_msg(c) for c in commands])
        try:
            result = action.run(request, self.config.tasks.skill_timeout_s,
                                feedback_callback=lambda fb: goal_handle.publish_feedback(ExecuteSkill.Feedback(event=fb.feedback.event)))
        except CallFailed as error:
            result = ExecuteCommands.Result(success=False, code=FailureCode.BACKEND_UNAVAILABLE, detail=str(error))
        finally:
            self.calls.pop(execution_id, None)
        if result.success:
            goal_handle.succeed()
            return ExecuteSkill.Result(success=True, message=f"{call} succeeded ({', '.join(c.name for c in commands)})")
        command = commands[result.failed_index].name if result.failed_index < len(commands) else ""
        failure = self._controller_verdict(execution_id, FailureInfo(str(call), command, result.code, result.detail), goal)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return ExecuteSkill.Result(success=False, message=f"{call} failed at {command}: {failure.reason}", failure=failure)


def main() -> int:
    return main_for(SkillPlannerNode)
