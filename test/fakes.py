"""In-process helpers for fast tests of the planner core."""

from __future__ import annotations

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
