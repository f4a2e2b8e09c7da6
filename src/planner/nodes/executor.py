"""Executor node: runs a skill's commands in order through the configured backend, publishing
an event per command on /executor/feedback; the first failed command fails the skill."""

from __future__ import annotations

from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup

from planner.action import ExecuteCommands
from planner.backends.executor_robot import RobotBackend
from planner.backends.executor_sim import SimulatorBackend
from planner.core.geometry import Pose2D
from planner.core.skills import Command
from planner.msg import ExecutionEvent
from planner.nodes.common import RELIABLE, PlannerNode, main_for, stamp_now


def command_from_msg(msg) -> Command:
    point = (msg.point.x, msg.point.y, msg.point.z)
    return Command(name=msg.name, arm=msg.arm, object_id=msg.object_id, target_id=msg.target_id,
                   base_pose=Pose2D(msg.base_pose.x, msg.base_pose.y, msg.base_pose.theta) if msg.name == "navigate" else None,
                   point=point if any(point) else None, timeout_s=msg.timeout_s or 60.0)


# Backends by their config name (executor.backend).
BACKENDS = {"simulator": SimulatorBackend, "robot": RobotBackend}


class ExecutorNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("executor", config)
        group = ReentrantCallbackGroup()
        self.backend = BACKENDS[self.config.executor.backend](self, group)
        self.feedback_pub = self.create_publisher(ExecutionEvent, "/executor/feedback", RELIABLE)
        ActionServer(self, ExecuteCommands, "/executor/execute_commands", self._execute, callback_group=group,
                     cancel_callback=self._cancel)

    def _cancel(self, goal_handle) -> CancelResponse:
        self.backend.cancel()
        return CancelResponse.ACCEPT

    def _event(self, goal, index: int, command: str, state: str, code: str = "", detail: str = "") -> ExecutionEvent:
        event = ExecutionEvent(stamp=stamp_now(self), execution_id=goal.execution_id, task_id=goal.task_id,
                               skill=goal.skill, command=command, index=index, total=len(goal.commands),
                               state=state, code=code, detail=detail)
        self.feedback_pub.publish(event)
        return event

    def _execute(self, goal_handle):
        goal = goal_handle.request
        result = ExecuteCommands.Result(success=True)
        for index, msg in enumerate(goal.commands):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                return ExecuteCommands.Result(success=False, failed_index=index, code="CANCELED", detail="canceled")
            goal_handle.publish_feedback(ExecuteCommands.Feedback(event=self._event(goal, index, msg.name, "started")))
            outcome = self.backend.run(command_from_msg(msg))
            state = "succeeded" if outcome.success else "failed"
            goal_handle.publish_feedback(ExecuteCommands.Feedback(
                event=self._event(goal, index, msg.name, state, outcome.code, outcome.detail)))
            if not outcome.success:
                result = ExecuteCommands.Result(success=False, failed_index=index, code=outcome.code, detail=outcome.detail)
                if goal_handle.is_cancel_requested:
                    goal_handle.canceled()
                else:
                    goal_handle.abort()
                return result
        goal_handle.succeed()
        return result


def main() -> int:
    return main_for(ExecutorNode)
