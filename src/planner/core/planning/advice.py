"""Advice on a failure from the explainer's past cases, made one by the model when several fit
about equally, and refused when it names what is no action or thing here."""

from __future__ import annotations

import re
from collections.abc import Callable

from planner.core.asking import LLMUsage
from planner.core.errors import PolicyError
from planner.core.failures import FailureCode
from planner.core.planning.action_space import ASK_USER, GIVE_UP, PERCEPTION_ACTIONS, SEARCH_MAP
from planner.core.planning.loop_state import MAP_IDS
from planner.core.planning.model_calls import ModelCalls
from planner.core.planning.recoveries import ComposedSuggestion, compose_messages, compose_schema
from planner.core.ports import Tools
from planner.core.scene_graph import SceneGraph
from planner.core.skills import SkillPlanner
from planner.core.types import FailureInfo, SuggestionInfo

# Names a suggestion may use: skills, planner actions, failure codes; any other call or CONSTANT_NAME is foreign.
_CALL_NAMES = re.compile(r"\b[A-Za-z][A-Za-z0-9_]*(?=\()|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")


def foreign_names(text: str, scene: SceneGraph, skills: SkillPlanner) -> list[str]:
    """What a case's suggestion names that is no skill or action here, no failure code and no id in
    this map: a case store anyone on the network can write to must not steer the robot."""
    known = {*skills.library.skills, *PERCEPTION_ACTIONS, *(call.split("(")[0] for call in (GIVE_UP, ASK_USER, SEARCH_MAP)),
             *(code.name for code in FailureCode)}
    names = [name for name in _CALL_NAMES.findall(text) if name not in known]
    return list(dict.fromkeys(names + [token for token in MAP_IDS.findall(text) if not scene.has(token)]))


class Advice:
    """What the explainer's past cases advise on a failure, as the loop tells it to the model."""

    def __init__(self, tools: Tools, skills: SkillPlanner, calls: ModelCalls, emit: Callable[[str, str], None]):
        self.tools, self.skills, self.calls, self._emit = tools, skills, calls, emit

    def for_failure(self, failure: FailureInfo, request: str, usage: LLMUsage) -> SuggestionInfo | None:
        """The past cases' advice on `failure`, one suggestion; None when there is none to give."""
        suggestion = self.tools.explain(failure)
        if suggestion is None:
            return None
        if suggestion.fit == "compose":
            suggestion = self._composed(failure, request, suggestion, usage)
        foreign = foreign_names(suggestion.text, self.tools.scene(), self.skills)
        if foreign:
            self._emit("error", f"suggestion of cases {', '.join(suggestion.case_ids)} ignored: it names "
                                f"{', '.join(foreign)}, which is no action or thing here")
            return None
        return suggestion

    def _composed(self, failure: FailureInfo, request: str, suggestion: SuggestionInfo, usage: LLMUsage) -> SuggestionInfo:
        """One suggestion made by the LLM of several cases that fit about equally; if it cannot,
        the best case's suggestion stands."""
        ids = [case_id for case_id, _, _ in suggestion.options]
        scores = dict(zip(suggestion.case_ids, suggestion.scores))

        def parse(text: str) -> ComposedSuggestion:
            reply = ComposedSuggestion.model_validate_json(text)
            unknown = [i for i in reply.case_ids if i not in ids]
            if unknown:
                raise ValueError(f"case_ids: {', '.join(unknown)} were not among the cases given ({', '.join(ids)})")
            return reply

        try:
            composed = self.calls.validated(compose_messages(failure, request, suggestion.options),
                                            compose_schema(ids), usage, parse)
        except PolicyError as error:
            self._emit("error", f"could not compose a suggestion from cases {', '.join(ids)}: {error}")
            composed = None
        if composed is None:
            return suggestion
        used = list(dict.fromkeys(composed.case_ids))
        return SuggestionInfo(composed.suggestion, used, [scores[i] for i in used], fit="compose",
                              options=suggestion.options)
