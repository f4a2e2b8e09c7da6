"""Executor node: runs a skill's commands in order through the configured backend, publishing
an event per command on /executor/feedback; the first failed command fails the skill. The
controller checks each command before it runs and confirms its effect after it. `say` commands
go to the speech node (/speech/say) whatever the backend. True on /emergency_stop cancels the
motion at once and refuses commands until False."""

from __future__ import annotations

import threading
from functools import partial

from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup

from planner.action import ExecuteCommands, Say
from planner.core.controller import CheckPhase
from planner.core.failures import FailureCode
from planner.core.skill_execution import run_commands
from planner.core.skills import Command
from planner.core.types import Outcome
from planner.msg import ExecutionEvent
from planner.ros.convert import command_from_msg, command_to_msg, stamp_now
from planner.ros.estop import EmergencyStopLatch
from planner.ros.executor_robot import RobotBackend
from planner.ros.executor_simulator import SimulatorBackend
from planner.ros.futures import CallFailed, Heartbeat
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import RELIABLE
from planner.srv import CheckCommand

# Backends by their config name (executor.backend).
BACKENDS = {"simulator": SimulatorBackend, "robot": RobotBackend}


class ExecutorNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("executor", config)
        group = ReentrantCallbackGroup()
        self.backend = BACKENDS[self.config.executor.backend](self, group)
        self.say_client = ActionClient(self, Say, "speech/say", callback_group=group)
        self.speech_alive = Heartbeat(self, "speech")
        self.feedback_pub = self.create_publisher(ExecutionEvent, "executor/feedback", RELIABLE)
        self.check_client = self.create_client(CheckCommand, "controller/check_command", callback_group=group)
        self.controller_alive = Heartbeat(self, "controller")
        self.unchecked_reported = False
        self.estop = EmergencyStopLatch(self, group, self._on_estop)
        # One stop per running goal: set by its cancel or by the emergency stop, the backend ends
        # the command at once, or never starts it.
        self.stops: dict[bytes, threading.Event] = {}
        self.stops_lock = threading.Lock()
        ActionServer(self, ExecuteCommands, "executor/execute_commands", self._execute, callback_group=group,
                     cancel_callback=self._cancel)

    def _on_estop(self, engaged: bool) -> None:
        if engaged:
            self._stop_commands()
            self.report("warn", "emergency stop: motion canceled; commands are refused until it is released")
        else:
            self.report("info", "emergency stop released")

    def _stop_commands(self) -> None:
        with self.stops_lock:
            for stop in self.stops.values():
                stop.set()

    def close(self) -> None:
        """Running commands are stopped as by the emergency stop, so that none goes on waiting for
        the robot after the node has gone."""
        self._stop_commands()
        super().close()

    def _cancel(self, goal_handle) -> CancelResponse:
        with self.stops_lock:
            stop = self.stops.get(bytes(goal_handle.goal_id.uuid))
        if stop is not None:
            stop.set()
        return CancelResponse.ACCEPT

    def _report(self, goal_handle, index: int, command: Command, state: str, outcome: Outcome) -> None:
        goal = goal_handle.request
        event = ExecutionEvent(stamp=stamp_now(self), execution_id=goal.execution_id, task_id=goal.task_id,
                               skill=goal.skill, command=command.name, index=index, total=len(goal.commands),
                               state=state, code=outcome.code, detail=outcome.detail)
        self.feedback_pub.publish(event)
        goal_handle.publish_feedback(ExecuteCommands.Feedback(event=event))

    def _execute(self, goal_handle):
        key = bytes(goal_handle.goal_id.uuid)
        with self.stops_lock:
            self.stops[key] = threading.Event()
        goal = goal_handle.request
        try:
            result = run_commands([command_from_msg(msg) for msg in goal.commands],
                                  StoppableRobot(self, self.stops[key]), ControllerChecks(self, goal),
                                  partial(self._report, goal_handle), lambda: goal_handle.is_cancel_requested)
        finally:
            with self.stops_lock:
                del self.stops[key]
        if result.ok:
            goal_handle.succeed()
        elif goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return ExecuteCommands.Result(success=result.ok, failed_index=result.failed_index, code=result.code,
                                      detail=result.detail)


class StoppableRobot:
    """The executor's robot for one goal: the backend (speech for `say`), refused while the
    emergency stop is on, ended at once when the goal's stop is set."""

    def __init__(self, node: ExecutorNode, stop: threading.Event):
        self.node = node
        self.stop = stop

    def run(self, command: Command) -> Outcome:
        if self.node.estop.settled():  # a restarted executor first hears a stop held elsewhere
            return Outcome(False, FailureCode.EMERGENCY_STOP, f"{command.name} not started")
        outcome = self._say(command) if command.name == "say" else self.node.backend.run(command, self.stop)
        if self.node.estop.engaged.is_set():
            return Outcome(False, FailureCode.EMERGENCY_STOP, f"{command.name} stopped")
        return outcome

    def _say(self, command: Command) -> Outcome:
        try:
            call = self.node.action_call(self.node.say_client, "speech/say", heartbeat=self.node.speech_alive)
            result = call.run(Say.Goal(text=command.text), command.timeout_s, stop=self.stop)
        except CallFailed as error:
            code = FailureCode.CANCELED if self.stop.is_set() else FailureCode.SPEECH_UNAVAILABLE
            return Outcome(False, code, str(error))
        return Outcome(result.success, "" if result.success else FailureCode.SPEECH_UNAVAILABLE, result.message)


CHECK_MARGIN_S = 5.0   # a check may take the controller's waits (for perception, for an effect) and this much more


class ControllerChecks:
    """The controller node's verdict on each command of one goal. Without a controller the command
    is refused (fail closed), or, with controller.required false, goes unchecked (said once)."""

    def __init__(self, node: ExecutorNode, goal):
        self.node = node
        self.goal = goal

    def check(self, phase: CheckPhase, command: Command) -> Outcome:
        node = self.node
        settings = node.config.controller
        wait = settings.perception_wait_s + settings.confirm_timeout_s + CHECK_MARGIN_S
        request = CheckCommand.Request(phase=phase, execution_id=self.goal.execution_id, skill=self.goal.skill,
                                       command=command_to_msg(command))
        try:
            reply = node.call(node.check_client, request, timeout_s=wait, clock=node.get_clock(),
                              heartbeat=node.controller_alive)
        except CallFailed as error:
            if node.config.controller.required:
                return Outcome(False, FailureCode.CONTROLLER_UNAVAILABLE,
                               f"{error}; without the controller's check no command runs (controller.required)")
            if not node.unchecked_reported:
                node.report("warn", f"commands run unchecked: {error}")
                node.unchecked_reported = True
            return Outcome(True)
        return Outcome(reply.ok, reply.code, reply.reason)


def main() -> int:
    return main_for(ExecutorNode)
