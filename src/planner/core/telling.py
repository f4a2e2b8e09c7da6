"""Changes people tell the robot, read into the knowledge graph (L3M+P's update step): the model
is shown the graph and asked for the triplets to remove and to add; with verification on, a change
the domain or the map cannot hold goes back to it with the errors, and a change still wrong after
the retries leaves the graph as it was and says why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import Field

from planner.core.asking import ask_validated
from planner.core.files import StrictModel
from planner.core.knowledge import TELLABLE, Change, apply_change, change_errors, knowledge, neighbourhood, triplet_errors
from planner.core.ports import Embedder, Policy
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
    context: Literal["full", "selected", "search"] = Field(
        default="full", description="what of the graph the model is shown: all of it; the neighbourhood of the "
                                    "kinds of things it first picks from the map's labels (selected); or of what a "
                                    "small query graph it writes matches in the map (search). Retrieval costs one "
                                    "more call and saves many tokens in a large home")
    match_threshold: float = Field(default=0.5, ge=0, le=1, description="search: how like a map label a thing's "
                                                                        "words must be (sentence embeddings)")
    depth: int = Field(default=1, ge=1, le=3, description="hops from the picked things (selected context)")


class LabelChoice(StrictModel):
    labels: list[str] = Field(max_length=8)


QUERY_PROMPT = """A person tells a home robot what changed in the home. Write the things the sentence speaks of
as a small graph: "things", each in the person's words (and the room, if said), and "relations" between them
as they are now (a thing "on" or "inside" a piece of furniture, by their positions in "things").
Answer with JSON."""


class QueryThing(StrictModel):
    words: str = Field(min_length=1, max_length=60)
    room: str = Field(default="", max_length=40)


class QueryRelation(StrictModel):
    thing: int = Field(ge=0)
    relation: Literal["on", "inside"]
    place: int = Field(ge=0)


class QueryGraph(StrictModel):
    """What a sentence speaks of, as the model writes it to be looked up in the knowledge graph."""
    things: list[QueryThing] = Field(min_length=1, max_length=6)
    relations: list[QueryRelation] = Field(default_factory=list, max_length=6)


QUERY_SCHEMA = {"type": "object", "properties": {
    "things": {"type": "array", "minItems": 1, "maxItems": 6, "items": {
        "type": "object", "properties": {"words": {"type": "string"}, "room": {"type": "string"}}, "required": ["words"]}},
    "relations": {"type": "array", "maxItems": 6, "items": {
        "type": "object", "properties": {"thing": {"type": "integer"}, "relation": {"enum": ["on", "inside"]},
                                         "place": {"type": "integer"}}, "required": ["thing", "relation", "place"]}}},
    "required": ["things"]}
MATCHES_PER_THING = 3  # map labels kept for each thing of the query


def search(query: QueryGraph, scene: SceneGraph, embedder: Embedder, threshold: float) -> set[str]:
    """The map ids a query graph points at: per thing, the entities of the labels most like its words
    (at least `threshold` similar, at most MATCHES_PER_THING labels), in its room when one is said;
    a relation narrows its two ends to the pairs that could stand in it (furniture for the place)."""
    things = [*scene.furniture(), *scene.objects()]
    labels = sorted({e.label for e in things})
    similarity = embedder.encode([t.words for t in query.things]) @ embedder.encode(
        [label.replace("_", " ") for label in labels]).T
    rooms = scene.rooms()
    matched: list[set[str]] = []
    for row, thing in enumerate(query.things):
        best = [labels[i] for i in np.argsort(-similarity[row])[:MATCHES_PER_THING] if similarity[row][i] >= threshold]
        room = next((r for r in rooms if thing.room and (thing.room.lower() in r.replace("_", " ") or
                                                          r.replace("_", " ") in thing.room.lower())), "")
        matched.append({e.id for e in things if e.label in best and (not room or e.room == room)})
    for relation in query.relations:
        if max(relation.thing, relation.place) < len(matched):
            matched[relation.place] = {i for i in matched[relation.place] if scene.entity(i).kind == "furniture"}
    return set().union(*matched)


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
         settings: TellSettings | None = None, embedder: Embedder | None = None) -> TellResult:
    """The sentence read into a change and, when it holds, applied to the scene graph at `stamp`."""
    settings = settings or TellSettings()
    return commit(read_change(sentence, scene, planner, policy, settings, embedder), scene, planner, stamp,
                  settings.verify)


def commit(result: TellResult, scene: SceneGraph, planner: SkillPlanner, stamp: float, verify: bool = True
           ) -> TellResult:
    """A change read on a copy of the graph, applied to `scene` if it still holds there (the world
    may have changed while the model read it)."""
    if result.change is None:
        return result
    if verify and (errors := change_errors(result.change, knowledge(planner, scene), scene)):
        result.errors = [f"the map changed meanwhile: {e}" for e in errors]
        return result
    result.done = apply_change(scene, result.change, stamp)
    result.applied = True
    return result


def _retrieve(sentence: str, scene: SceneGraph, settings: TellSettings, asking: Callable[[dict], Callable],
              embedder: Embedder | None) -> set[str]:
    """The map ids the sentence speaks of, as the configured retrieval finds them (one LLM call)."""
    messages = [{"role": "user", "content": sentence}]
    if settings.context == "selected":
        labels = sorted({e.label for e in [*scene.furniture(), *scene.objects()]})
        schema = {"type": "object", "properties": {"labels": {"type": "array", "items": {"enum": labels},
                                                              "maxItems": 8}}, "required": ["labels"]}
        choice = ask_validated(asking(schema), [{"role": "system", "content": SELECT_PROMPT.format(
            labels=", ".join(labels))}, *messages], LabelChoice.model_validate_json, settings.retries)
        return {e.id for e in [*scene.furniture(), *scene.objects()] if choice is not None and e.label in choice.labels}
    if embedder is None:
        raise ValueError("search retrieval needs an embedder")
    query = ask_validated(asking(QUERY_SCHEMA), [{"role": "system", "content": QUERY_PROMPT}, *messages],
                          QueryGraph.model_validate_json, settings.retries)
    return search(query, scene, embedder, settings.match_threshold) if query is not None else set()


def read_change(sentence: str, scene: SceneGraph, planner: SkillPlanner, policy: Policy, settings: TellSettings,
                embedder: Embedder | None = None) -> TellResult:
    """The change the model reads the sentence into, verified (unless off) but not applied; its
    errors when none holds after the retries."""
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
    picked = _retrieve(sentence, scene, settings, asking, embedder) if settings.context != "full" else set()
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
    return result
