"""A plan scored against the plans that worked for similar requests before it runs (in ReAct, its
first steps), said in the trace and, when it is unlike them and the config says so, put to the
user; and a plan that worked kept for later checks."""

from __future__ import annotations

from collections.abc import Callable

from planner.core.calls import parse_call
from planner.core.plan_check import PlanCheckSettings
from planner.core.planning.goal_reading import confirmed
from planner.core.planning.loop_state import Ending, LoopState
from planner.core.planning.recoveries import ActionRecord
from planner.core.planning.scene_plans import call_sentence
from planner.core.ports import Tools
from planner.core.scene_graph import SceneGraph
from planner.core.skills import SkillPlanner
from planner.core.types import EpisodeOutcome


class PlanChecking:
    def __init__(self, tools: Tools, skills: SkillPlanner, settings: PlanCheckSettings, emit: Callable[[str, str], None]):
        self.tools, self.skills, self.settings, self._emit = tools, skills, settings, emit

    def check(self, state: LoopState, calls: list[str], scene: SceneGraph, first_steps: bool = False) -> Ending | None:
        """The plan (`first_steps`: the first steps ReAct has chosen) scored against those that
        worked for similar requests: said in the trace and, when it is unlike them and the config
        says so, put to the user. An Ending when they decline."""
        if self.settings.mode == "off" or len(calls) < self.settings.min_steps:
            return None
        verdict = self.tools.check_plan(state.request, [call_sentence(call, scene) for call in calls], first_steps)
        if verdict is None:
            return None
        state.verdict = state.verdict or verdict
        said = f"the first {len(calls)} steps: {verdict.describe()}" if first_steps else verdict.describe()
        self._emit("warning" if verdict.low else "check", said)
        if not verdict.low or self.settings.mode != "confirm":
            return None
        answer = self.tools.ask(f"{said[0].upper()}{said[1:]}. Shall I carry {'on' if first_steps else 'it out'}?",
                                self.settings.confirm_timeout_s)
        if answer is not None and confirmed(answer):
            return None
        return Ending(EpisodeOutcome.CANCELED, "the plan was unlike those that worked before and the user did not "
                                               "confirm it", len(state.acted))

    def check_first_steps(self, state: LoopState, action: str) -> Ending | None:
        """ReAct chooses a step at a time, so there is no plan to check before the robot moves: the
        skills that worked so far and the one chosen now are checked once, when they are as many
        as the check's shortest plan."""
        if state.first_steps_checked or parse_call(action)[0] not in self.skills.library.skills:
            return None
        steps = [*self._skills_done(state.acted), action]
        if len(steps) < self.settings.min_steps:
            return None
        state.first_steps_checked = True
        return self.check(state, steps, self.tools.scene(), first_steps=True)

    def _skills_done(self, acted: list[ActionRecord]) -> list[str]:
        """The skills that worked, in order: the task's plan as carried out."""
        return [record.action for record in acted
                if record.failure is None and parse_call(record.action)[0] in self.skills.library.skills]

    def record(self, request: str, acted: list[ActionRecord]) -> None:
        """The skills that worked, in order, kept for checking later plans."""
        if self.settings.mode == "off":
            return
        scene = self.tools.scene()
        if skills := self._skills_done(acted):
            self.tools.record_plan(request, [call_sentence(call, scene) for call in skills])
