"""Executor backend for the built-in simulator: commands become /sim/navigate and
/sim/manipulate goals, the stand-ins of Nav2's NavigateToPose and MoveIt 2 + gripper; a command
the simulator cannot carry out (neither its own nor added with `simulated_by`) goes to the node
serving `skills/<command>`, as on a robot."""

from __future__ import annotations

import threading

from rclpy.action import ActionClient

from planner.action import Manipulate, Navigate
from planner.core.skills import Command, load_skill_library
from planner.core.types import Outcome
from planner.ros.convert import pose_to_msg
from planner.ros.futures import CallFailed, Heartbeat, failed_call_code
from planner.ros.skill_actions import SkillActions, manipulate_goal
from planner.sim.added_commands import not_simulated


class SimulatorBackend:
    def __init__(self, node, callback_group):
        self.navigate = ActionClient(node, Navigate, "sim/navigate", callback_group=callback_group)
        self.manipulate = ActionClient(node, Manipulate, "sim/manipulate", callback_group=callback_group)
        self.node = node
        self.clock = node.get_clock()
        self.simulator_alive = Heartbeat(node, "simulator")
        self.served_elsewhere = set(not_simulated(load_skill_library(node.config.path(node.config.skills))))
        self.skill_actions = SkillActions(node, callback_group)

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        """One command; `stop` set at any time, even before it started, cancels it."""
        if command.name in self.served_elsewhere:
            return self.skill_actions.run(command, stop)
        if command.name == "navigate":
            call = self.node.action_call(self.navigate, "sim/navigate", self.clock, self.simulator_alive)
            goal = Navigate.Goal(goal=pose_to_msg(command.base_pose))
        else:
            call = self.node.action_call(self.manipulate, "sim/manipulate", self.clock, self.simulator_alive)
            goal = manipulate_goal(command)
        try:
            result = call.run(goal, command.timeout_s, stop=stop)
        except CallFailed as error:
            return Outcome(False, failed_call_code(error, stop.is_set()), str(error))
        return Outcome(result.success, result.code, result.detail)
