"""In-process helpers for fast tests of the planner core."""

from __future__ import annotations

from planner.backends.sim_robot import SimulatedRobot
from planner.backends.simulation import load_scenario
from planner.core.react import SuggestionInfo


class FixedSuggestion:
    """An explainer double that always suggests the same (the real one is tested in test_explainer)."""

    def suggest(self, failure, request) -> SuggestionInfo:
        return SuggestionInfo("Re-check the map and go where the object is now.", ["case-1"], [0.9])


def InProcessRobot(scenario_path, skill_planner) -> SimulatedRobot:
    loaded = load_scenario(scenario_path)
    return SimulatedRobot(loaded.world, loaded.scenario.events, skill_planner, FixedSuggestion(), loaded.scenario.request)
