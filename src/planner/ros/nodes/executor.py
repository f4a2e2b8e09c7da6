"""Executor node: runs a skill's commands in order through the configured backend, publishing
an event per command on /executor/feedback; the first failed command fails the skill. The
controller checks each command before it runs and confirms its effect after it. `say` commands
go to the speech node (/speech/say) whatever the backend. True on /emergency_stop cancels the
motion at once and refuses commands until False."""

from __future__ import annotations

import threading

from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from std_msgs.msg import Bool

from planner.action import ExecuteCommands, Say
from planner.core.failures import FailureCode
from planner.core.types import Outcome
from planner.msg import ExecutionEvent
from planner.ros.convert import command_from_msg, stamp_now
from planner.ros.executor_robot import RobotBackend
from planner.ros.executor_simulator import SimulatorBackend
from planner.ros.futures import ActionCall, CallFailed, call_service
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import ESTOP_TOPIC, RELIABLE
from planner.srv import CheckCommand

# Backends by their config name (executor.backend).
BACKENDS = {"simulator": SimulatorBackend, "robot": RobotBackend}


class ExecutorNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("executor", config)
        group = ReentrantCallbackGroup()
        self.backend = BACKENDS[self.config.executor.backend](self, group)
        self.say_client = ActionClient(self, Say, "speech/say", callback_group=group)
        self.feedback_pub = self.create_publisher(ExecutionEvent, "executor/feedback", RELIABLE)
        self.check_client = self.create_client(CheckCommand, "controller/check_command", callback_group=group)
        self.unchecked_reported = False
        self.estop = threading.Event()
        # One stop per running goal: set by its cancel or by the emergency stop, the backend ends
        # the command at once, or never starts it.
        self.stops: dict[bytes, threading.Event] = {}
        self.stops_lock = threading.Lock()
        self.create_subscription(Bool, ESTOP_TOPIC, self._on_estop, RELIABLE, callback_group=group)
        ActionServer(self, ExecuteCommands, "executor/execute_commands", self._execute, callback_group=group,
                     cancel_callback=self._cancel)

    def _on_estop(self, msg: Bool) -> None:
        if msg.data and not self.estop.is_set():
            self.estop.set()
            with self.stops_lock:
                for stop in self.stops.values():
                    stop.set()
            self.report("warn", "emergency stop: motion canceled; commands are refused until it is released")
        elif not msg.data and self.estop.is_set():
            self.estop.clear()
            self.report("info", "emergency stop released")

    def _cancel(self, goal_handle) -> CancelResponse:
        with self.stops_lock:
            stop = self.stops.get(bytes(goal_handle.goal_id.uuid))
        if stop is not None:
            stop.set()
        return CancelResponse.ACCEPT

    def _event(self, goal, index: int, command: str, state: str, code: str = "", detail: str = "") -> ExecutionEvent:
        event = ExecutionEvent(stamp=stamp_now(self), execution_id=goal.execution_id, task_id=goal.task_id,
                               skill=goal.skill, command=command, index=index, total=len(goal.commands),
                               state=state, code=code, detail=detail)
        self.feedback_pub.publish(event)
        return event

    def _check(self, goal, phase: str, msg) -> Outcome:
        """The controller's verdict; without a controller the command goes unchecked (said once)."""
        wait = self.config.controller.confirm_timeout_s + 5.0
        try:
            reply = call_service(self.check_client, CheckCommand.Request(
                phase=phase, execution_id=goal.execution_id, skill=goal.skill, command=msg), timeout_s=wait)
        except CallFailed as error:
            if not self.unchecked_reported:
                self.report("warn", f"commands run unchecked: {error}")
                self.unchecked_reported = True
            return Outcome(True)
        return Outcome(reply.ok, reply.code, reply.reason)

    def _run(self, goal, msg, stop: threading.Event) -> Outcome:
        if self.estop.is_set():
            return Outcome(False, FailureCode.EMERGENCY_STOP, f"{msg.name} not started")
        before = self._check(goal, "before", msg)
        if not before.ok:
            return before
        command = command_from_msg(msg)
        outcome = self._say(command, stop) if command.name == "say" else self.backend.run(command, stop)
        if self.estop.is_set():
            return Outcome(False, FailureCode.EMERGENCY_STOP, f"{msg.name} stopped")
        return self._check(goal, "after", msg) if outcome.ok else outcome

    def _say(self, command, stop: threading.Event) -> Outcome:
        try:
            result = ActionCall(self.say_client, "speech/say").run(Say.Goal(text=command.text), command.timeout_s,
                                                                    stop=stop)
        except CallFailed as error:
            return Outcome(False, FailureCode.CANCELED if stop.is_set() else FailureCode.SPEECH_UNAVAILABLE, str(error))
        return Outcome(result.success, "" if result.success else FailureCode.SPEECH_UNAVAILABLE, result.message)

    def _execute(self, goal_handle):
        key = bytes(goal_handle.goal_id.uuid)
        with self.stops_lock:
            self.stops[key] = threading.Event()
        try:
            return self._commands(goal_handle, self.stops[key])
        finally:
            with self.stops_lock:
                del self.stops[key]

    def _commands(self, goal_handle, stop: threading.Event):
        goal = goal_handle.request
        result = ExecuteCommands.Result(success=True)
        for index, msg in enumerate(goal.commands):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                return ExecuteCommands.Result(success=False, failed_index=index, code=FailureCode.CANCELED, detail="canceled")
            goal_handle.publish_feedback(ExecuteCommands.Feedback(event=self._event(goal, index, msg.name, "started")))
            outcome = self._run(goal, msg, stop)
            state = "succeeded" if outcome.ok else "failed"
            goal_handle.publish_feedback(ExecuteCommands.Feedback(
                event=self._event(goal, index, msg.name, state, outcome.code, outcome.detail)))
            if not outcome.ok:
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
