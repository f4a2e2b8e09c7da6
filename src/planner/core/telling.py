"""Changes people tell the robot, read into the knowledge graph (L3M+P's update step): the model
is shown the graph and asked for the triplets to remove and to add; with verification on, a change
the domain or the map cannot hold goes back to it with the errors, and a change still wrong after
the retries leaves the graph as it was and says why."""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import Field

from planner.core.asking import LABELS_OFFERED, CountingPolicy, LLMUsage, ask_validated, choose_one, label_options
from planner.core.files import StrictModel
from planner.core.knowledge import TELLABLE, Change, Triplet, apply_change, change_errors, knowledge, neighbourhood, triplet_errors
from planner.core.planning.grounding import FUNCTION_WORDS, MAX_PHRASE_WORDS, Grounder, words_in
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
    context: Literal["full", "selected", "search", "grounded"] = Field(
        default="full", description="what of the graph the model is shown: all of it; the neighbourhood of the "
                                    "kinds of things it first picks from the map's labels (selected); or of what a "
                                    "small query graph it writes matches in the map (search). Retrieval costs one "
                                    "more call and saves many tokens in a large home. grounded: the model says the "
                                    "change in the person's words, and when each thing it names fits one thing in "
                                    "the map the change is made from that, in one call; else as search")
    match_threshold: float = Field(default=0.5, ge=0, le=1, description="search: how like a map label a thing's "
                                                                        "words must be (sentence embeddings)")
    depth: int = Field(default=1, ge=1, le=3, description="hops from the picked things (selected context)")
    recent_s: float = Field(default=30.0, ge=0, description="a change to what the robot saw this recently is "
                                                            "flagged and not applied (0: never)")
    per_minute: int = Field(default=10, ge=1, le=600, description="changes read in any minute; more are refused "
                            "at once, before the model is asked (each may take three model calls)")


class RateLimit:
    """At most `per_minute` admissions in any 60 s. Thread-safe."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self.clock = clock
        self._admitted: deque[float] = deque()
        self._lock = threading.Lock()

    def admit(self) -> bool:
        now = self.clock()
        with self._lock:
            while self._admitted and now - self._admitted[0] >= 60.0:
                self._admitted.popleft()
            if len(self._admitted) >= self.per_minute:
                return False
            self._admitted.append(now)
            return True


class LabelChoice(StrictModel):
    labels: list[str] = Field(max_length=8)


QUERY_PROMPT = """A person tells a home robot what changed in the home. Write the things the sentence speaks of
as a small graph: "things", each in the person's words (and the room, if said), and "relations" between them
as they are now (a thing "on" or "inside" a piece of furniture, by their positions in "things").
Answer with JSON."""

WORDS_PROMPT = """A person tells a home robot what changed in the home. Say what changed, in the person's words,
as JSON: "change" is "moved" (a thing was put somewhere), "opened" or "closed" (the door or drawer of a piece
of furniture); "thing" is what moved, or the furniture opened or closed; "thing_was_on" is where the thing was
before, if the sentence says; "place" is the furniture the thing is on or in now, and "place_room" its room, if
said.
For example, "The kids took the red ball from the windowsill and put it in the toy chest in the playroom" is
{"change": "moved", "thing": "red ball", "thing_was_on": "windowsill", "place": "toy chest",
"place_room": "playroom"}."""


class QueryThing(StrictModel):
    words: str = Field(min_length=1, max_length=60)
    room: str = Field(default="", max_length=40)
    # Said only in a grounded reading (a ToldChange).
    was_on: str = Field(default="", max_length=60, description="where it was before, in the person's words")
    now: Literal["", "open", "closed"] = ""


class QueryRelation(StrictModel):
    thing: int = Field(ge=0)
    relation: Literal["on", "inside"]
    place: int = Field(ge=0)


class QueryGraph(StrictModel):
    """What a sentence speaks of, as the model writes it to be looked up in the knowledge graph."""
    things: list[QueryThing] = Field(min_length=1, max_length=6)
    relations: list[QueryRelation] = Field(default_factory=list, max_length=6)


class ToldChange(StrictModel):
    """One change as the model reads it in the person's words, to be found in the map (grounded reading)."""
    change: Literal["moved", "opened", "closed"]
    thing: str = Field(min_length=1, max_length=60)
    thing_was_on: str = Field(default="", max_length=60)
    place: str = Field(default="", max_length=60)
    place_room: str = Field(default="", max_length=40)

    def query(self) -> QueryGraph:
        """As a query graph: the thing (where it was) and, for a move, the furniture it went to."""
        if self.change != "moved":
            return QueryGraph(things=[QueryThing(words=self.thing, room=self.place_room,
                                                 now="open" if self.change == "opened" else "closed")])
        if not self.place:
            raise ValueError("a moved thing needs the place it is in or on now")
        return QueryGraph(things=[QueryThing(words=self.thing, was_on=self.thing_was_on),
                                  QueryThing(words=self.place, room=self.place_room)],
                          # On or in: the sentence and the furniture decide (grounded_change).
                          relations=[QueryRelation(thing=0, relation="on", place=1)])


WORDS_SCHEMA = {"type": "object", "properties": {
    "change": {"enum": ["moved", "opened", "closed"]}, "thing": {"type": "string"},
    "thing_was_on": {"type": "string"}, "place": {"type": "string"}, "place_room": {"type": "string"}},
    "required": ["change", "thing", "place"]}
QUERY_SCHEMA = {"type": "object", "properties": {
    "things": {"type": "array", "minItems": 1, "maxItems": 6, "items": {
        "type": "object", "properties": {"words": {"type": "string"}, "room": {"type": "string"}},
        "required": ["words"]}},
    "relations": {"type": "array", "maxItems": 6, "items": {
        "type": "object", "properties": {"thing": {"type": "integer"}, "relation": {"enum": ["on", "inside"]},
                                         "place": {"type": "integer"}}, "required": ["thing", "relation", "place"]}}},
    "required": ["things"]}
MATCHES_PER_THING = 3  # map labels kept for each thing of the query
# Labels this close in similarity to the best one for a thing's words are as likely meant: its
# things are put to the model with the best label's ("ipad" is a little nearer apple than tablet).
LABEL_MARGIN = 0.1


Choose = Callable[[str, dict[str, str]], "str | None"]  # (the words, {option: as shown}) -> the option meant


def _readable(name: str) -> str:
    return name.replace("_", " ")


def matches(query: QueryGraph, scene: SceneGraph, embedder: Embedder, threshold: float,
            choose: Choose | None = None) -> list[list[tuple[float, set[str]]]]:
    """Per thing of the query, the map ids it may be, one set per label from the most like its words
    to the least, with the label's similarity (at least `threshold`, at most MATCHES_PER_THING
    labels; 1 for a label the words name or `choose` picks): in its room when one
    is said, on what it was on when that is said, and furniture when a relation puts something on it.
    A room said by a name the map does not use is found by meaning, or, given `choose`, by the model
    among the map's rooms (sentence embeddings put "home office" nearer a living room than a study);
    words like no label enough go to `choose` among the labels most like them, "none" allowed."""
    things = [*scene.furniture(), *scene.objects()]
    labels = sorted({e.label for e in things})
    rooms = scene.rooms()
    said = [t.words for t in query.things] + [t.was_on for t in query.things] + [t.room for t in query.things]
    vectors = embedder.encode(said)
    label_similarity = vectors @ embedder.encode([_readable(label) for label in labels]).T
    room_similarity = vectors @ embedder.encode([_readable(room) for room in rooms]).T if rooms else None
    count = len(query.things)
    places = {r.place for r in query.relations if max(r.thing, r.place) < count}

    def best_labels(row: int, words: str = "") -> dict[str, float]:
        order = np.argsort(-label_similarity[row])
        close = {labels[i]: float(label_similarity[row][i]) for i in order[:MATCHES_PER_THING]
                 if label_similarity[row][i] >= threshold}
        if close or choose is None or not words:  # where a thing was only narrows: no call for it
            return close
        picked = choose(words, label_options(labels[i] for i in order[:LABELS_OFFERED]))
        return {picked: 1.0} if picked in labels else {}

    def named_room(words: str) -> str:
        return next((r for r in rooms if words and (words.lower() in _readable(r) or _readable(r) in words.lower())),
                    "")

    def room_of(row: int, words: str, ask: bool = False) -> str:
        if not words or room_similarity is None:
            return ""
        if named := named_room(words):
            return named
        if ask and choose is not None:
            return choose(words, {room: _readable(room) for room in rooms}) or ""
        best = int(np.argmax(room_similarity[row]))
        return rooms[best] if room_similarity[row][best] >= threshold else ""

    def kept_on(index: int, support_labels: set[str], was_in: str) -> list:
        supports = {f.id for f in scene.furniture() if f.label in support_labels}
        return [e for e in things if (index not in places or e.kind == "furniture")
                and (not supports or (e.kind == "object" and (scene.furniture_support(e.id) or ("", ""))[1] in supports))
                and (not was_in or e.room == was_in)]  # "the magazine from the living room"

    found = []
    for index, thing in enumerate(query.things):
        room = room_of(2 * count + index, thing.room, ask=True)
        # Where it was may be a room ("the magazine from the living room"): by its name, or by meaning
        # when no furniture is like the words.
        meant = best_labels(index, thing.words)
        was_in = named_room(thing.was_on)
        was_on = best_labels(count + index) if thing.was_on and not was_in else {}
        was_in = was_in or (room_of(count + index, thing.was_on) if thing.was_on and not was_on else "")
        # Where it was, by the label most like the words that holds such a thing: "the plate from the
        # cupboard" is the one in a cabinet before the one in a dresser.
        kept = next((k for k in (kept_on(index, {label}, was_in) for label in was_on) if any(e.label in meant for e in k)),
                    kept_on(index, set(), was_in))
        # The room a person names may be where the thing went rather than where it is.
        kept = [e for e in kept if e.room == room] or kept if room else kept
        found.append([(similarity, {e.id for e in kept if e.label == label}) for label, similarity in meant.items()])
    return found


def search(query: QueryGraph, scene: SceneGraph, embedder: Embedder, threshold: float) -> set[str]:
    """The map ids a query graph points at: every id any of its things may be."""
    return {i for thing in matches(query, scene, embedder, threshold) for _, ids in thing for i in ids}


def named(sentence: str, scene: SceneGraph, embedder: Embedder) -> set[str]:
    """The map's rooms and furniture labels a sentence names, in the map's words or in others the
    stack's grounding finds ("lounge" for a living_room, "chest of drawers" for a dresser)."""
    names = [*sorted({f.label for f in scene.furniture()}), *scene.rooms()]
    text = " " + " ".join(words_in(Grounder(embedder).ground(sentence, names).text)) + " "
    return {name for name in names if f" {_readable(name)} " in text}


def _narrowed(candidates: set[str], scene: SceneGraph, said: set[str]) -> set[str]:
    """The candidates, narrowed to those in a room or on furniture the sentence names when that
    leaves exactly one."""
    if len(candidates) > 1:
        narrowed = {i for i in candidates if scene.entity(i).room in said
                    or (support := scene.furniture_support(i)) and scene.entity(support[1]).label in said}
        return narrowed if len(narrowed) == 1 else candidates
    return candidates


def said_after(sentence: str, words: str, preposition: str) -> str:
    """What is said right after a thing's words and a preposition: the room of "the cupboard in the
    office", where the thing was in "the plate from the cupboard" - which a small model often leaves
    out of its reading; '' when nothing is."""
    found = re.search(re.escape(words.lower()) + rf"\s+{preposition}\s+(?:the|my|our|your)\s+([a-z' ]+)",
                      sentence.lower())
    if not found or not words.strip():
        return ""
    said = []
    for word in found[1].split()[:MAX_PHRASE_WORDS]:
        if word in FUNCTION_WORDS:
            break
        said.append(word)
    return " ".join(said)


INSIDE_WORDS = {"in": True, "into": True, "inside": True, "on": False, "onto": False, "top of": False}


def said_inside(sentence: str, place: str) -> bool | None:
    """Whether the sentence puts a thing in the place ("in the dresser", "into", "inside") or on it
    ("on", "onto", "on top of"): the preposition a person said, which a small model often reads
    wrong. None when the place's words are not in the sentence after one of them."""
    found = re.search(r"\b(" + "|".join(sorted(INSIDE_WORDS, key=len, reverse=True)) + r")\s+(?:(?:the|a|an|my|our|"
                      r"his|her|their|your)\s+)?" + re.escape(place.lower()), sentence.lower())
    return INSIDE_WORDS[found[1]] if found and place.strip() else None


def describe_candidate(scene: SceneGraph, node_id: str) -> str:
    """"cabinet_2: a cabinet in the study" or "mug_1: a mug on counter_1 in the kitchen"."""
    entity = scene.entity(node_id)
    support = scene.furniture_support(node_id) if entity.kind == "object" else None
    where = f" {'in' if support[0] == 'in' else 'on'} {support[1]}" if support else ""
    return f"{node_id}: a {_readable(entity.label)}{where} in the {_readable(entity.room)}"


def grounded_change(sentence: str, query: QueryGraph, scene: SceneGraph, graph: list[Triplet], embedder: Embedder,
                    threshold: float, choose: Choose | None = None) -> Change | None:
    """The change the query graph states, when each thing it names is found in the map: the only
    one of the label most like its words, or the one of them in a room or on furniture the sentence
    names, or the one `choose` picks among them. A thing put on or in furniture leaves where it was
    (one place per thing), in furniture with a door or drawer it is inside unless the sentence puts
    it on. None when a thing fits
    nothing or stays undecided, or the graph states no change."""
    said = named(sentence, scene, embedder)
    # A place's room ("the cupboard in the office"; after the thing moved, the words are its place),
    # and where a moved thing was ("the plate from the cupboard"), when the model left them out.
    places = {r.place for r in query.relations}
    moved = {r.thing for r in query.relations}
    query = query.model_copy(update={"things": [
        thing.model_copy(update={"room": thing.room or said_after(sentence, thing.words, "in")})
        if index in places or thing.now else
        thing.model_copy(update={"was_on": thing.was_on or said_after(sentence, thing.words, "from")})
        if index in moved else thing for index, thing in enumerate(query.things)]})
    # What a moved thing is said by comes before its new place: "the plate (from the desk) ... in the
    # bedroom" does not say the plate was in the bedroom.
    place_of = {r.thing: query.things[r.place].words.lower() for r in query.relations if r.place < len(query.things)}
    ids: list[str | None] = []
    for index, (query_thing, found) in enumerate(zip(query.things, matches(query, scene, embedder, threshold, choose))):
        until = sentence.lower().rfind(place_of.get(index) or "\0")
        said_of_it = named(sentence[:until], scene, embedder) if until > 0 else said
        held = [(similarity, ids) for similarity, ids in found if ids]
        likely = set().union(*(ids for similarity, ids in held if similarity >= held[0][0] - LABEL_MARGIN)) if held \
            else set()
        candidates = sorted(_narrowed(likely, scene, said_of_it))
        ids.append(candidates[0] if len(candidates) == 1 else
                   choose(query_thing.words, {c: describe_candidate(scene, c) for c in candidates})
                   if candidates and choose is not None else None)
    remove: list[Triplet] = []
    add: list[Triplet] = []
    for relation in query.relations:
        if max(relation.thing, relation.place) >= len(ids):
            return None
        thing, place = ids[relation.thing], ids[relation.place]
        if thing is None or place is None or scene.entity(thing).kind != "object":
            return None
        remove += [t for t in graph if t.subject == thing and t.relation in ("on", "inside")]
        add.append(Triplet(subject=thing, relation="on", object=place))
        # Furniture with a door holds what is put to it inside unless "on" is said: the model's word
        # on it is no better than chance when the sentence has neither ("moved the plate to the cupboard").
        if said_inside(sentence, query.things[relation.place].words) is not False and scene.entity(place).state:
            add.append(Triplet(subject=thing, relation="inside", object=place))
    for thing_said, node in zip(query.things, ids):
        if thing_said.now and node is not None and scene.entity(node).state:
            fact = Triplet(subject=node, relation="is_open")
            is_open = any(t.key() == fact.key() for t in graph)
            if thing_said.now == "open" and not is_open:
                add.append(fact)
            elif thing_said.now == "closed" and is_open:
                remove.append(fact)
    return Change(remove=remove, add=add) if remove or add else None


@dataclass
class TellResult:
    applied: bool
    sentence: str
    done: list[str] = field(default_factory=list)    # what changed in the scene graph, in words
    errors: list[str] = field(default_factory=list)  # why nothing changed
    change: Change | None = None
    usage: LLMUsage = field(default_factory=LLMUsage)

    @property
    def llm_calls(self) -> int:
        return self.usage.calls

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens


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
                  settings.verify, settings.recent_s)


def commit(result: TellResult, scene: SceneGraph, planner: SkillPlanner, stamp: float, verify: bool = True,
           recent_s: float = 0.0) -> TellResult:
    """A change read on a copy of the graph, applied to `scene` if it still holds there (the world
    may have changed while the model read it) and touches nothing the robot saw in the last
    `recent_s` seconds: what it saw that recently is flagged, not overwritten."""
    if result.change is None:
        return result
    if verify and (errors := change_errors(result.change, knowledge(planner, scene), scene)):
        result.errors = [f"the map changed meanwhile: {e}" for e in errors]
        return result
    touched = sorted({t.subject for t in [*result.change.remove, *result.change.add] if scene.has(t.subject)})
    seen = [(node, stamp - scene.entity(node).last_seen) for node in touched
            if scene.entity(node).last_seen > scene.entity(node).told and stamp - scene.entity(node).last_seen < recent_s]
    if seen:
        result.errors = [f"flagged: the robot saw {node} {age:.0f} s ago ({'; '.join(scene.relations(node)) or 'there'}),"
                         " which the change contradicts; not applied" for node, age in seen]
        return result
    result.done = apply_change(scene, result.change, stamp)
    result.applied = True
    return result


def _retrieve(sentence: str, scene: SceneGraph, settings: TellSettings, asking: Callable[[dict], Callable],
              embedder: Embedder | None) -> tuple[set[str], QueryGraph | None]:
    """The map ids the sentence speaks of, as the configured retrieval finds them (one LLM call),
    and the query graph the model wrote for a search."""
    messages = [{"role": "user", "content": sentence}]
    if settings.context == "selected":
        labels = sorted({e.label for e in [*scene.furniture(), *scene.objects()]})
        schema = {"type": "object", "properties": {"labels": {"type": "array", "items": {"enum": labels},
                                                              "maxItems": 8}}, "required": ["labels"]}
        choice = ask_validated(asking(schema), [{"role": "system", "content": SELECT_PROMPT.format(
            labels=", ".join(labels))}, *messages], LabelChoice.model_validate_json, settings.retries)
        return {e.id for e in [*scene.furniture(), *scene.objects()]
                if choice is not None and e.label in choice.labels}, None
    if embedder is None:
        raise ValueError(f"{settings.context} retrieval needs an embedder")
    if settings.context == "grounded":
        query = ask_validated(asking(WORDS_SCHEMA), [{"role": "system", "content": WORDS_PROMPT}, *messages],
                              lambda text: ToldChange.model_validate_json(text).query(), settings.retries)
    else:
        query = ask_validated(asking(QUERY_SCHEMA), [{"role": "system", "content": QUERY_PROMPT}, *messages],
                              QueryGraph.model_validate_json, settings.retries)
    return (search(query, scene, embedder, settings.match_threshold), query) if query is not None else (set(), None)


def read_change(sentence: str, scene: SceneGraph, planner: SkillPlanner, policy: Policy, settings: TellSettings,
                embedder: Embedder | None = None, usage: LLMUsage | None = None) -> TellResult:
    """The change the model reads the sentence into, verified (unless off) but not applied; its
    errors when none holds after the retries. Its model calls count in `usage` when given."""
    result = TellResult(False, sentence, usage=usage if usage is not None else LLMUsage())
    asking = CountingPolicy(policy, result.usage).asking

    graph = knowledge(planner, scene)
    things = [*scene.furniture(), *scene.objects()]
    shown = graph
    picked, query = _retrieve(sentence, scene, settings, asking, embedder) if settings.context != "full" \
        else (set(), None)
    if settings.context == "grounded" and query is not None and embedder is not None:
        def choose(words: str, options: dict[str, str]) -> str | None:
            return choose_one(lambda messages, schema: asking(schema)(messages), sentence, words, options,
                              settings.retries)
        grounded = grounded_change(sentence, query, scene, graph, embedder, settings.match_threshold, choose)
        if grounded is not None and not (settings.verify and change_errors(grounded, graph, scene)):
            result.change = grounded
            return result
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
