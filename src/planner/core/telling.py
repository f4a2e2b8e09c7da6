"""Changes people tell the robot, read into the knowledge graph (L3M+P's update step): the model
is shown the graph and asked for the triplets to remove and to add; with verification on, a change
the domain or the map cannot hold goes back to it with the errors, and a change still wrong after
the retries leaves the graph as it was and says why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from planner.core.asking import ask_validated
from planner.core.files import StrictModel
from planner.core.knowledge import TELLABLE, Change, apply_change, change_errors, knowledge, neighbourhood, triplet_errors
from planner.core.ports import Policy
from planner.core.scene_graph import SceneGraph
from planner.core.skills import SkillPlanner

TELL_PROMPT = """You keep a home robot's memory of the home as triplets (subject, relation, object).
Relations: on (a thing stands on or in a piece of furniture), inside (a thing is behind the door of, or in a
drawer of, furniture; it is then also on that furniture), is_open (a piece of furniture's door or drawer is
open; its object is true).
Things in the home: {things}
The memory holds:
{graph}
A person tells the robot what changed. Answer with JSON: "remove", the triplets that are no longer true,
and "add", the triplets that are true now. Use only the ids above."""


SELECT_PROMPT = """A person tells a home robot what changed in the home. Which kinds of things and furniture does
it speak of (what moved, where it went, what was opened or closed)? Choose from: {labels}.
Answer with JSON: "labels"."""


class TellSettings(StrictModel):
    verify: bool = Field(default=True, description="check a change against the domain and the map before "
                                                   "applying it, and ask again with the errors")
    retries: int = Field(default=2, ge=0, description="replies asked again after a change fails the checks")
    context: Literal["full", "selected"] = Field(
        default="full", description="what of the graph the model is shown: all of it, or the neighbourhood of the "
                                    "kinds of things it first picks from the map's labels (one more call, far "
                                    "fewer tokens in a large home)")
    depth: int = Field(default=1, ge=1, le=3, description="hops from the picked things (selected context)")


class LabelChoice(StrictModel):
    labels: list[str] = Field(max_length=8)


@dataclass
class TellResult:
    applied: bool
    sentence: str
    done: list[str] = field(default_factory=list)    # what changed in the scene graph, in words
    errors: list[str] = field(default_factory=list)  # why nothing changed
    change: Change | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def change_schema(ids: list[str]) -> dict:
    """JSON schema of a change: triplets over the tellable relations and the map's ids."""
    triplet = {"type": "object", "properties": {"subject": {"enum": ids}, "relation": {"enum": list(TELLABLE)},
                                                "object": {"anyOf": [{"enum": ids}, {"const": True}]}},
               "required": ["subject", "relation", "object"], "additionalProperties": False}
    return {"type": "object", "properties": {"remove": {"type": "array", "items": triplet, "maxItems": 12},
                                             "add": {"type": "array", "items": triplet, "maxItems": 12}},
            "required": ["remove", "add"], "additionalProperties": False}


def tell(sentence: str, scene: SceneGraph, planner: SkillPlanner, policy: Policy, stamp: float,
         settings: TellSettings | None = None) -> TellResult:
    """The sentence read into a change and, when it holds, applied to the scene graph at `stamp`."""
    settings = settings or TellSettings()
    result = TellResult(False, sentence)

    def asking(schema: dict):
        def call(messages: list[dict]):
            reply = policy.complete(messages, schema)
            result.llm_calls += 1
            result.prompt_tokens += reply.prompt_tokens
            result.completion_tokens += reply.completion_tokens
            return reply
        return call

    graph = knowledge(planner, scene)
    things = [*scene.furniture(), *scene.objects()]
    shown = graph
    if settings.context == "selected":
        labels = sorted({e.label for e in things})
        schema = {"type": "object", "properties": {"labels": {"type": "array", "items": {"enum": labels},
                                                              "maxItems": 8}}, "required": ["labels"]}
        choice = ask_validated(asking(schema), [{"role": "system", "content": SELECT_PROMPT.format(
            labels=", ".join(labels))}, {"role": "user", "content": sentence}], LabelChoice.model_validate_json,
            settings.retries)
        picked = {e.id for e in things if choice is not None and e.label in choice.labels}
        if picked:  # nothing picked: the whole graph, rather than an update lost
            shown = neighbourhood(graph, picked, settings.depth)
            named = picked | {x for t in shown for x in (t.subject, t.object) if isinstance(x, str)}
            things = [e for e in things if e.id in named]
    prompt = TELL_PROMPT.format(things=", ".join(f"{e.id} ({e.label}, {e.room})" for e in things),
                                graph="\n".join(map(str, shown)))
    problems: list[str] = []

    def parse(text: str) -> Change:
        change = Change.model_validate_json(text)
        problems[:] = change_errors(change, graph, scene)
        if settings.verify and problems:
            raise ValueError("; ".join(problems))
        return change

    change = ask_validated(asking(change_schema([e.id for e in things])),
                           [{"role": "system", "content": prompt}, {"role": "user", "content": sentence}],
                           parse, settings.retries)
    if change is None:
        result.errors = problems or ["no readable change after the retries"]
        return result
    if problems:
        # Unverified: applied as given, except triplets no scene graph can hold (an id not in the map,
        # a relation between the wrong kinds of things).
        change = Change(remove=[t for t in change.remove if not triplet_errors(t, scene)],
                        add=[t for t in change.add if not triplet_errors(t, scene)])
    result.change = change
    result.done = apply_change(scene, change, stamp)
    result.applied = True
    return result
