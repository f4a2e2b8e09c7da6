"""In-process helpers for fast tests of the planner core."""

from __future__ import annotations

import yaml

from conftest import CONFIG, DATA
from planner.adapters.llm import ScriptedPolicy
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.task_planner import TaskPlanner
from planner.core.types import SuggestionInfo
from planner.sim.in_process import SimulatedRobot
from planner.sim.simulated_world import load_scenario


class FixedSuggestion:
    """An explainer double that always suggests the same (the real one is tested in test_explainer)."""

    def suggest(self, failure, request) -> SuggestionInfo:
        return SuggestionInfo("Re-check the map and go where the object is now.", ["case-1"], [0.9])


def InProcessRobot(scenario_path, skill_planner) -> SimulatedRobot:
    loaded = load_scenario(scenario_path)
    return SimulatedRobot(loaded.world, loaded.scenario.events, skill_planner, FixedSuggestion(), loaded.scenario.request)


# The RoBee paper's example: the bottle is moved while the robot reaches for it.
KITCHEN_SCENARIO = CONFIG / "scenarios" / "kitchen_bottle_moved.yaml"
KITCHEN_REQUEST = "Go to the table in the kitchen, pick up the bottle, and place it on the table in the bedroom"


def kitchen_plan() -> list:
    """The recorded replies that carry out the kitchen request, a replan included."""
    return yaml.safe_load((DATA / "scripted_kitchen.yaml").read_text())


def run_kitchen_request(replies, skill_planner, **settings):
    """The kitchen request planned with these replies in process: result, trace, robot, policy."""
    robot = InProcessRobot(KITCHEN_SCENARIO, skill_planner)
    policy = ScriptedPolicy(replies)
    trace = []
    planner = TaskPlanner(policy, robot, skill_planner, PlannerSettings(confirm_timeout_s=0, **settings),
                          on_step=lambda step: trace.append((step.kind, step.text)))
    return planner.run(KITCHEN_REQUEST), trace, robot, policy
