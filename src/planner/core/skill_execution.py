"""One skill from its call to its verdict, the same on every transport:

    plan (parse, preconditions, decomposition into commands)
    → for each command: the controller's check before → the robot runs it → the check after
    → a refusal or the first failed command: the controller's verdict (a reason and context)

The in-process robot (planner.sim.in_process) is every port itself, over the simulator and its
scene graph. Over ROS the skill planner node calls `execute_skill`, its commands port being the
executor node's action, which calls `run_commands` with the robot backend and the controller
node's /controller/check_command; the controller node judges failures with `describe_failure`.
The skill planner node plans under its scene mirror's lock and calls `run_planned` after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from planner.core.controller import CheckPhase, ExecutionEventInfo
from planner.core.failures import FailureCode
from planner.core.scene_graph import SceneGraph
from planner.core.skills import Command, SkillCall, SkillPlanner, SkillRefused
from planner.core.types import FailureInfo, Outcome, SkillResult


@dataclass(frozen=True)
class CommandsResult:
    """How a skill's commands came out: all done, or the first that failed and why."""
    ok: bool
    failed_index: int = 0
    code: str = ""
    detail: str = ""


class Robot(Protocol):
    def run(self, command: Command) -> Outcome:
        """Carry out one command on the robot; ok once it reports done."""


class Checks(Protocol):
    def check(self, phase: CheckPhase, command: Command) -> Outcome:
        """The controller's verdict on a command before it runs or after it ran."""


# Told of each command as it starts ("started", ok) and ends ("succeeded"/"failed", its outcome).
CommandReport = Callable[[int, Command, str, Outcome], None]


def run_commands(commands: list[Command], robot: Robot, checks: Checks, report: CommandReport | None = None,
                 canceled: Callable[[], bool] = lambda: False) -> CommandsResult:
    """The commands in order, each checked before and after; the first failure ends the skill."""
    for index, command in enumerate(commands):
        if canceled():
            return CommandsResult(False, index, FailureCode.CANCELED, "canceled")
        if report:
            report(index, command, "started", Outcome(True))
        outcome = checks.check("before", command)
        if outcome.ok:
            outcome = robot.run(command)
            if outcome.ok:
                outcome = checks.check("after", command)
        if report:
            report(index, command, "succeeded" if outcome.ok else "failed", outcome)
        if not outcome.ok:
            return CommandsResult(False, index, outcome.code, outcome.detail)
    return CommandsResult(True)


# Runs a planned skill's commands: run_commands in process, the executor's action over ROS.
CommandsPort = Callable[[SkillCall, list[Command]], CommandsResult]
# The controller's verdict on a refused skill or a failed command.
Judge = Callable[[ExecutionEventInfo], FailureInfo]


def execute_skill(skills: SkillPlanner, text: str, scene: SceneGraph, commands_port: CommandsPort, judge: Judge,
                  execution_id: str = "", task_id: str = "") -> SkillResult:
    """A skill call planned against `scene`, its commands run, a refusal or failure judged."""
    try:
        call, commands = skills.plan(text, scene)
    except SkillRefused as refusal:
        return refuse(text, refusal.code, refusal.reason, judge, execution_id, task_id)
    return run_planned(call, commands, commands_port, judge, execution_id, task_id)


def run_planned(call: SkillCall, commands: list[Command], commands_port: CommandsPort, judge: Judge,
                execution_id: str = "", task_id: str = "") -> SkillResult:
    """A planned skill's commands run, the first failure judged."""
    result = commands_port(call, commands)
    if result.ok:
        return SkillResult(True, f"{call} succeeded ({', '.join(c.name for c in commands)})")
    command = commands[result.failed_index].name if result.failed_index < len(commands) else ""
    failure = judge(ExecutionEventInfo(execution_id, task_id, str(call), command, result.failed_index, len(commands),
                                       "failed", result.code, result.detail))
    return SkillResult(False, f"{call} failed at {command}: {failure.reason}", failure)


def refuse(text: str, code: str, detail: str, judge: Judge, execution_id: str = "", task_id: str = "") -> SkillResult:
    """A skill that cannot start (its preconditions, or no world to check them against)."""
    failure = judge(ExecutionEventInfo(execution_id, task_id, text, "preconditions", 0, 0, "refused", code, detail))
    return SkillResult(False, f"{text} refused: {failure.reason}", failure)
