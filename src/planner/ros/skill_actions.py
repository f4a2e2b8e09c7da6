"""Commands a robot's own node carries out: a command the executor's backend has no motion for
(one a skill library adds, or opening a door on a robot without a MoveIt motion for it) is sent as
a planner/action/Manipulate goal to the action `skills/<command>` in the executor's namespace, the
way PlanSys2 hands actions to their performers; whoever serves it moves the robot and answers
success, a FailureCode and a detail (docs/add-a-skill.md)."""

from __future__ import annotations

import threading

from rclpy.action import ActionClient

from planner.action import Manipulate
from planner.core.skills import Command
from planner.core.types import Outcome
from planner.ros.convert import point_msg
from planner.ros.futures import ActionCall, CallFailed, CallKind, failed_call_code


def skill_action(command: str) -> str:
    return f"skills/{command}"


def manipulate_goal(command: Command) -> Manipulate.Goal:
    goal = Manipulate.Goal(operation=command.name, arm=command.arm, object_id=command.object_id,
                           target_id=command.target_id)
    if command.point is not None:
        goal.point = point_msg(command.point)
    return goal


class SkillActions:
    def __init__(self, node, callback_group):
        self.node = node
        self.callback_group = callback_group
        self.clients: dict[str, ActionClient] = {}

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        """One command on the node serving its action; `stop` set at any time cancels it."""
        action = skill_action(command.name)
        if command.name not in self.clients:
            self.clients[command.name] = ActionClient(self.node, Manipulate, action, callback_group=self.callback_group)
        call = ActionCall(self.clients[command.name], action, self.node.get_clock())
        try:
            result = call.run(manipulate_goal(command), command.timeout_s, stop=stop)
        except CallFailed as error:
            detail = str(error)
            if error.kind == CallKind.UNAVAILABLE and call.goal_handle is None:
                detail = f"no node of this robot serves {command.name}: {detail} (docs/add-a-skill.md)"
            return Outcome(False, failed_call_code(error, stop.is_set()), detail)
        return Outcome(result.success, result.code, result.detail)
