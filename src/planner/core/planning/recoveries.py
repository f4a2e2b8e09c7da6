"""What followed a failed skill in a task, mined into fixes other tasks can use, and the prompt
with which the planner's LLM composes one suggestion of several past cases."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from planner.core.calls import fix_text, parse_call
from planner.core.files import StrictModel
from planner.core.scene_graph import SceneGraph
from planner.core.types import FailureInfo, Recovery


@dataclass
class ActionRecord:
    """A skill or perception action the loop took, with its failure and the cases suggested then."""
    action: str
    failure: FailureInfo | None = None
    case_ids: list[str] = field(default_factory=list)
    suggestion: str = ""  # what those cases advised


def general_call(call: str, scene: SceneGraph) -> str:
    """A call with the map's ids turned into what they are, so a fix carries over to other
    homes: GOTO(table_2) -> GOTO(a table), PICK(bottle_1, left) -> PICK(the bottle, left)."""
    name, args = parse_call(call)

    def general(arg: str) -> str:
        if not scene.has(arg):
            return arg
        entity = scene.entity(arg)
        return {"room": arg, "furniture": f"a {entity.label}"}.get(entity.kind, f"the {entity.label}")

    return f"{name}({', '.join(general(a) for a in args)})"


def find_recoveries(acted: list[ActionRecord], success: bool, scene: SceneGraph) -> list[Recovery]:
    """For each failed skill: the calls that followed until the same skill succeeded on the same
    thing (recovered), failed on it again the same way (not recovered), or the task ended (as
    the task did: a way round the failure may have been found)."""
    recoveries = []
    for index, entry in enumerate(acted):
        if entry.failure is None:
            continue
        name, args = parse_call(entry.action)
        steps: list[str] = []
        recovered = success
        for later in acted[index + 1:]:
            steps.append(later.action)
            later_name, later_args = parse_call(later.action)
            if later_name == name and later_args[:1] == args[:1]:
                if later.failure is None or later.failure.code == entry.failure.code:
                    recovered = later.failure is None
                    break
        fix = ""
        if recovered and steps:
            fix = fix_text([general_call(s, scene) for s in steps])
        recoveries.append(Recovery(entry.failure, entry.case_ids, steps, recovered, fix))
    return recoveries


COMPOSE_PROMPT = """A robot's skill failed. Similar past failures and what was suggested then are listed.
Write one short suggestion (at most two sentences) for what the robot should do now, using what
fits this failure, and name the ids of the cases you used."""


def compose_messages(failure: FailureInfo, request: str, options: list[tuple[str, str, float]]) -> list[dict]:
    cases = "\n".join(f"- {case_id} (similarity {score:.2f}): {text}" for case_id, text, score in options)
    return [{"role": "system", "content": COMPOSE_PROMPT},
            {"role": "user", "content": f"Request: {request}\nFailed: {failure.skill} [{failure.code}]: "
                                        f"{failure.reason}\nPast cases:\n{cases}"}]


def compose_schema(case_ids: list[str]) -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["suggestion", "case_ids"],
            "properties": {"suggestion": {"type": "string", "maxLength": 400},
                           "case_ids": {"type": "array", "minItems": 1, "items": {"enum": case_ids}}}}


class ComposedSuggestion(StrictModel):
    suggestion: str = Field(min_length=1, max_length=400)
    case_ids: list[str] = Field(min_length=1)

