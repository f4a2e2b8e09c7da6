"""Finding the objects a request needs in an uncertain semantic map.

A natural-language query ("something to sit on that is not a couch") over the map's furniture
and objects gives `{inferred_query, query_achievable, relevant_objects, explanation}`: the items
whose labels are like the kinds of things the model names for the query, best first, those the
query's constraints rule out left out, none when nothing is alike enough. Four workflows:

- base: the kinds alone;
- self_reflection: the model checks its own answer against the map and corrects it, in one
  conversation that keeps every earlier round;
- multi_agent: a planner, a critic and a refiner, each with its own role and context;
- ensemble: several answers, each member told to read the map another way, and a chooser that
  sees the distinct answers unlabelled.
The three answer from the map; their answer's first id counts more when the kinds are matched.

Reflection may talk the model out of a right empty answer; an empty answer stays empty unless the
feedback names ids in the map that meet the query, and only those can be added to it.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from planner.core.asking import ask_validated
from planner.core.errors import PlannerError, PolicyError
from planner.core.planning.goal_reading import name_question
from planner.core.planning.grounding import BEFORE_VERBS, LABEL_SENSES, Grounder, Match, asks_with, words_in
from planner.core.planning.spelling import Speller
from planner.core.ports import Embedder, Policy, judged, yes_probability_of
from planner.core.query_constraints import QueryReading, read_query
from planner.core.scene_graph import Entity, SceneGraph, top_label
from planner.core.types import PolicyReply
from planner.core.voxeland import STRUCTURE_LABEL

Workflow = Literal["base", "self_reflection", "multi_agent", "ensemble"]
WORKFLOWS: tuple[str, ...] = ("base", "self_reflection", "multi_agent", "ensemble")
LABEL_FLOOR = 0.1  # labels less probable than this are left out of the map text
# Things whose fit is within this of the best are compared by size when a query asks for the biggest
# or smallest: a floor lamp and a table lamp are both lights, whichever kind the model named first
# (on 15 such development queries: 10 met, against 11 by fit alone and 8 by size alone).
SIZE_MARGIN = 0.1
FURNITURE_NEAR_M = 0.5
# Words that say a thing is wanted without naming it: a phrase with one is put to no name check.
INDEFINITE = frozenset("something somewhere anything anywhere thing things stuff".split())


class FinderSettings(BaseModel):
    """The `object_finder` section of the stack configuration."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    workflow: Workflow = Field(default="base", description="base | self_reflection | multi_agent | ensemble")
    iterations: int = Field(default=2, ge=1, description="feedback-and-refinement rounds of the reflection workflows")
    ensemble_size: int = Field(default=3, ge=2, description="answers the ensemble's chooser picks from")
    narrow_above: int = Field(default=40, ge=5, description="a map of more items than this is narrowed to the "
                              "items related to the query; a smaller one is shown whole, one prompt the server "
                              "keeps cached for every query")
    max_candidates: int = Field(default=12, ge=5, description="items a narrowed map keeps")
    max_answers: int = Field(default=5, ge=1, description="ids in an answer, at most")
    max_repairs: int = Field(default=2, ge=0, description="invalid replies answered with what was wrong")
    model_explains: bool = Field(default=False, description="the model adds a reason to each answer (~1-2 s more "
                                 "on a CPU); otherwise the explanation is the map's evidence for the ids chosen")
    kinds: int = Field(default=6, ge=0, description="the model names at most this many kinds of things that would "
                       "meet the query, without choosing from the map; the items whose labels are like one of them "
                       "are the answer, best first, and none alike enough is \"nothing fits\" (0, or no embedder: "
                       "the model chooses ids from the map, taken as they are)")
    kind_threshold: float = Field(default=0.6, ge=-1, le=1, description="an item fits when its fit to a kind named "
                                  "(the sentence-embedding similarity of a label and the kind, less kind_step for "
                                  "each kind named before it, times the label's share of the most likely label's "
                                  "probability to the power share_power) is at least this. Set per model by planner "
                                  "calibrate objects (calibration/MODEL.yaml); this default is for a model with none")
    kind_step: float = Field(default=0.05, ge=0, description="each kind named counts this less than the one before")
    kind_margin: float = Field(default=0.3, ge=0, description="a label is taken for a kind only within this similarity "
                               "of the label shown most like that kind: where there are desks, a desk is asked for, "
                               "not the chairs 0.6 like one")
    share_power: float = Field(default=0.5, ge=0, description="how much a label the map is less sure of counts less "
                               "(0: every label shown counts fully)")
    choice_weight: float = Field(default=0.1, ge=0, description="in the workflows that answer from the map "
                                 "(reflection, ensemble), the answer's first id counts this more in its fit")
    mend_typos: bool = Field(default=True, description="a typed query's typos are mended before it is read "
                             "(\"the rmeote\" -> \"the remote\"): a word neither the English word list nor the "
                             "map knows, one typo from a common word with its first letter")
    constraints: bool = Field(default=True, description="the room, what a thing stands on or in, the furniture "
                              "beside it and the kinds excluded that a query names are checked against the map, not "
                              "asked of the model; an answer that breaks one gives way to items of its label that "
                              "keep them")
    name_check: float = Field(default=0.6, ge=0, le=1, description="a phrase of the query that the sentence "
                              "embeddings hold only somewhat like a label of the map (from name_check_similarity "
                              "up to the grounder's threshold), or that the lexicon names it by in a rare sense, "
                              "names that label when the model's probability of yes to \"is it another name for "
                              "one?\" reaches this (a short call each); 1: never")
    name_check_similarity: float = Field(default=0.6, ge=0, le=1, description="... from this similarity")
    second_reading: bool = Field(default=True, description="before saying nothing fits, the model names the kinds "
                                 "again, asked in other words, and an item fits by its mean fit over the two "
                                 "readings (a second call on the queries the first reading finds nothing for: "
                                 "~1.4 s more with two copies of the embedded server, 2-4 s with one)")


def said_forms(name: list[str]) -> list[list[str]]:
    """The words of a name as a query may say it: as it is, or its last word plural."""
    return [name, [*name[:-1], f"{name[-1]}s"], [*name[:-1], f"{name[-1]}es"]] if name else []


def kinds_asked(kinds: list[str], subject: str) -> list[str]:
    """The kinds the model named for a query that count: all of them, unless the first is a thing the
    query's `subject` (its words for the thing asked for) says, which then names what is wanted; the
    others are then taken only where the subject says them too. A query for a bare desk wants a desk,
    not the chair the model names after it."""
    said = words_in(subject)

    def in_query(kind: str) -> bool:
        name = words_in(kind)
        return bool(name) and any(said[i:i + len(name)] in said_forms(name) for i in range(len(said) - len(name) + 1))

    return [kind for kind in kinds if in_query(kind)] if kinds and in_query(kinds[0]) else kinds


# ---- the map as the model sees it ------------------------------------------------------------
def prompt_names(scene: SceneGraph, ids: list[str]) -> dict[str, str]:
    """The name each item goes by in the prompt: its id when that already says what the item is
    (table_3), otherwise its most likely label and a number (knife_2). Measured with the 1.5B: it
    described the knife and answered obj1, the counter's id; a name that starts with the label
    ties the answer to the line the model read."""
    names: dict[str, str] = {}
    taken = set(ids)
    for item in ids:
        label = re.sub(r"[^a-z0-9]+", "_", top_label(scene.entity(item)).lower()).strip("_") or "item"
        if label in item.lower():
            names[item] = item
            continue
        number = 1
        while f"{label}_{number}" in taken:
            number += 1
        names[item] = f"{label}_{number}"
        taken.add(names[item])
    return names


def shown_labels(entity: Entity) -> dict[str, float]:
    """The labels the model is shown for an item, with their probabilities."""
    return {label: p for label, p in entity.labels.items() if p >= LABEL_FLOOR and label != STRUCTURE_LABEL}


def describe_item(scene: SceneGraph, entity: Entity, show_room: bool, names: dict[str, str],
                  geometry: bool = True) -> str:
    """One line per item: name, top labels with probabilities, room, size, relations."""
    labels = ", ".join(f"{label} {p:.2f}" for label, p in shown_labels(entity).items()) or entity.label
    parts = [f"{names[entity.id]}: {labels}"]
    if show_room:
        parts.append(entity.room)
    if geometry:  # the size, not the position: relations say what is near what, in fewer tokens
        parts.append(f"size {'x'.join(f'{s:.2f}' for s in entity.size)}")
    if entity.status != "seen":
        parts.append(entity.status)
    if entity.kind == "furniture":  # the graph relates objects only; "a chair close to a table" needs this too
        reach = max(entity.size[0], entity.size[1]) / 2 + FURNITURE_NEAR_M
        near = [f for f in scene.furniture_near(entity.center[0], entity.center[1], reach) if f != entity.id]
        relations = [f"near {names.get(f, f)}" for f in near if f in names][:2]
    else:
        relations = [f"{relation} {names[target]}" for relation, target in scene.relation_edges(entity.id)
                     if target in names][:2]
    if relations:
        parts.append(", ".join(relations))
    return " | ".join(parts)


class LabelSimilarity:
    """How like a query an item's labels are, by sentence embeddings of the labels' words (each
    label embedded once). It narrows a large map to the items most related to the query, plus the
    furniture those items stand on or beside, so the prompt does not grow with the map; and it
    vetoes answers whose labels the query is nothing like."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self._labels: dict[str, np.ndarray] = {}

    def _label_vectors(self, labels: set[str]) -> None:
        new = sorted(labels - self._labels.keys())
        if new:
            for label, vector in zip(new, self.embedder.encode([label.replace("_", " ") for label in new])):
                self._labels[label] = vector

    def fits(self, items: dict[str, dict[str, float]], kinds: list[str], named: dict[str, float], step: float,
             power: float, margin: float) -> dict[str, tuple[float, str]]:
        """How well each item (its labels shown, with their probabilities) is one of the `kinds`, the
        first counting most, or a label the query itself names (`named`: label -> how surely; as a
        kind named before the first), and the label and kind that say so. A label is taken for a
        kind only within `margin` of the label shown most like that kind: where the map has desks,
        "desk" names them, not the chairs (0.6 like a desk to the embeddings). The kinds, free text
        that differs from query to query, are embedded each time rather than kept."""
        labels = sorted({label for shown in items.values() for label in shown})
        if not labels or not kinds:
            return {item: (-1.0, "") for item in items}
        self._label_vectors(set(labels))
        row = {label: number for number, label in enumerate(labels)}
        kind_vectors = self.embedder.encode([kind.replace("_", " ") for kind in kinds])
        similarity = np.stack([self._labels[label] for label in labels]) @ kind_vectors.T  # labels x kinds
        floors = similarity.max(axis=0) - margin
        fits: dict[str, tuple[float, str]] = {}
        for item, shown in items.items():
            top = max(shown.values())
            best, why = -1.0, ""
            for label, p in shown.items():
                share = (p / top) ** power
                # The query's own words come before the first kind the model names.
                if label in named and (named[label] + step) * share > best:
                    best, why = (named[label] + step) * share, f"{label} named"
                for rank, kind in enumerate(kinds):
                    alike = float(similarity[row[label], rank])
                    fit = (alike - step * rank) * share
                    if alike >= floors[rank] and fit > best:
                        best, why = fit, f"{label} ~ {kind}"
            fits[item] = (best, why)
        return fits

    def select(self, scene: SceneGraph, items: list[Entity], query: str, limit: int) -> list[str]:
        if len(items) <= limit:
            return [e.id for e in items]
        self._label_vectors({label for e in items for label in e.labels})
        query_vector = self.embedder.encode([query])[0]
        similarity = {label: float(vector @ query_vector) for label, vector in self._labels.items()}
        # An uncertain label still counts: a 30% chair may be the seat asked for.
        score = {e.id: max(similarity[label] for label in e.labels) for e in items}
        ranked = sorted(score, key=lambda i: (-score[i], i))
        chosen = ranked[:max(1, limit * 3 // 4)]
        context = [t for i in chosen for _, t in scene.relation_edges(i) if t in score and t not in chosen]
        for item in [*dict.fromkeys(context), *ranked[len(chosen):]]:
            if len(chosen) >= limit:
                break
            if item not in chosen:
                chosen.append(item)
        return chosen


# ---- replies --------------------------------------------------------------------------------
class FindReply(BaseModel):
    """An answer as the model writes it. The keys are short and "achievable" is not asked for
    (it is whether any id is given): on a CPU every token of the reply is ~80 ms."""
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    inferred_query: str = Field(default="", alias="query")
    relevant_objects: list[str] = Field(default_factory=list, alias="ids")
    explanation: str = Field(default="", alias="why")

    @property
    def query_achievable(self) -> bool:
        return bool(self.relevant_objects)


class FeedbackReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    verdict: Literal["correct", "revise"]
    problems: str = ""
    evidence: list[str] = Field(default_factory=list)


class KindsReply(BaseModel):
    """What the person needs and the kinds of things that would meet it, as the model names them."""
    model_config = ConfigDict(extra="ignore")
    need: str = ""
    kinds: list[str] = Field(min_length=1)

    def named(self) -> list[str]:
        return list(dict.fromkeys(k.strip().lower() for k in self.kinds if k.strip()))


def kinds_schema(count: int) -> dict:
    return {"type": "object", "properties": {
        "need": {"type": "string", "maxLength": 50},
        "kinds": {"type": "array", "items": {"type": "string", "maxLength": 30}, "minItems": 1, "maxItems": count}},
        "required": ["need", "kinds"]}


class ChoiceReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    choice: int
    reason: str = ""


def answer_schema(ids: list[str], max_answers: int, explain: bool) -> dict:
    properties = {"query": {"type": "string", "maxLength": 60},
                  "ids": {"type": "array", "items": {"type": "string", "enum": ids}, "maxItems": max_answers},
                  **({"why": {"type": "string", "maxLength": 160}} if explain else {})}
    return {"type": "object", "properties": properties, "required": list(properties)}


def feedback_schema(ids: list[str], max_answers: int) -> dict:
    return {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["correct", "revise"]},
        "problems": {"type": "string", "maxLength": 120},
        "evidence": {"type": "array", "items": {"type": "string", "enum": ids}, "maxItems": max_answers}},
        "required": ["verdict", "problems", "evidence"]}


def choice_schema(count: int) -> dict:
    return {"type": "object", "properties": {
        "choice": {"type": "integer", "enum": list(range(1, count + 1))},
        "reason": {"type": "string", "maxLength": 200}},
        "required": ["choice", "reason"]}


def _unknown_ids(ids: list[str], known: set[str]) -> None:
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(f"{', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} not in the map; "
                         "use only the ids listed")


def parse_answer(text: str, known: set[str], max_answers: int) -> FindReply:
    reply = FindReply.model_validate_json(text)
    _unknown_ids(reply.relevant_objects, known)
    return reply.model_copy(update={"relevant_objects": list(dict.fromkeys(reply.relevant_objects))[:max_answers]})


def parse_feedback(text: str, known: set[str]) -> FeedbackReply:
    reply = FeedbackReply.model_validate_json(text)
    _unknown_ids(reply.evidence, known)
    return reply


# ---- prompts --------------------------------------------------------------------------------
MAP_PROMPT = """You help a home robot pick the things in its semantic map that a person's query asks for.
Each line of the map below is one item: its id, its most likely labels with their probabilities
(the mapping is uncertain), {room_note}its size in metres (width x depth x height), and what it
stands on, is in or is near.

Answer with JSON:
- query: the thing the person wants, in two or three words (e.g. "a ladder", "a hot meal");
- ids: the items that meet it, best first (at most {max_answers}); empty if none does{why}
Read negations ("anything but a ladder") and conditions ("below the window") strictly. Judge what
an item is from its labels and probabilities, its size and what it is near.

Map ({shown}):
{map}"""

QUERY_PROMPT = "Query: {query}"

SELF_FEEDBACK_PROMPT = """Check that answer against the map, item by item: does each listed id meet every
part of the query (including negations and conditions), is a better item left out, and is the
order right? If the answer is empty, is there really no item that meets the query?
Answer with JSON: verdict "correct" or "revise"; problems: what is wrong, briefly; evidence: the
ids in the map that show the problem (items to add, or wrongly listed ones)."""

REFINE_PROMPT = "Give the corrected answer, in the first JSON form."

PLANNER_ROLE = """You are the planner agent. Work out what the person needs and propose the items of
the map that meet it."""

CRITIC_ROLE = """You are the critic agent. Another agent answered the query below. Check its answer
against the map, item by item: does each listed id meet every part of the query (including
negations and conditions), is a better item left out, is the order right? If the answer is empty,
is there really no item that meets it? Do not change a right answer.
Answer with JSON: verdict "correct" or "revise"; problems: what is wrong, briefly; evidence: the
ids in the map that show the problem."""

REFINER_ROLE = """You are the refinement agent. Given the query, a proposed answer and a critic's
feedback, give the final answer. Follow the feedback only where the map supports it."""

MEMBER_LENSES = ("",
                 "\nAn item may be what its second label says: weigh every label before you answer.",
                 "\nBe strict: list only the items that surely meet every part of the query.")

# Without the map: a large map need not be narrowed first (the narrowing lost right answers), and the
# prompt is the same for every query, so the server keeps it cached.
KINDS_PROMPT = """A person asks a home robot to find something. Say what the person needs (need: a few
words), then name the kinds of household things or furniture that are that, the most fitting first,
each by its common name in one to three words (kinds: at most {kinds}). A request that names a thing
needs that very thing: give its name and its other names. A need or a problem needs what a person
would use for it: name those things, never the problem, a body part or a place. Leave out any kind
the request excludes and anything the thing is only near, on or in.
Examples: "my specs, please" -> need: "glasses"; kinds: glasses, spectacles, reading glasses.
"the shelf wobbles" -> need: "a tool to tighten screws"; kinds: screwdriver, drill.
Answer with JSON."""
# Worded apart from KINDS_PROMPT, with other examples, so that it errs elsewhere: the 1.5B read
# "any <group> except ..." as a tool to clean it after KINDS_PROMPT's "a tool to tighten screws".
SECOND_KINDS_PROMPT = """A home robot is asked to find something. Which things in a home would it show the person?
Say in a few words what is asked for (need), then name the kinds of household things or furniture, the
best first, each in one to three words (kinds: at most {kinds}).
- A request that names a thing, by any name, asks for that very thing: name it and its other names.
- A group asks for its members: "any garden tool" -> shovel, rake, hoe.
- A wish or a problem asks for what a person would use for it: "my plants are dry" -> watering can, hose.
Name things found in a home, never a room, a place, a body part or the problem itself. Leave out what the
request excludes and anything the thing is only near, on or in.
Answer with JSON."""
REQUEST_PROMPT = "Request: {query}"
# Worked readings shown to KINDS_PROMPT as earlier turns of the conversation. On development homes
# the 1.5B followed them where it did not follow the examples in the instructions: it read fewer
# plain names as needs ("the worktop": a tool to clean it) and fewer groups as a tool (Top-1 71.7 ->
# 73.5, and 69.6 -> 72.6 on the confirmation homes). They are the same for every query, so the
# server keeps them cached with the instructions.
KINDS_EXAMPLE_TURNS: tuple[dict[str, str], ...] = tuple(
    turn for request, need, kinds in (
        ("Where is the stepladder in the garage?", "a stepladder", ["stepladder", "ladder", "step stool"]),
        ("any garden tool except a rake", "a garden tool", ["shovel", "hoe", "trowel", "shears"]),
        ("the pancakes need flipping", "a tool to turn food in a pan", ["spatula", "turner", "tongs"]),
        ("the duvet, please", "a duvet", ["duvet", "comforter", "quilt"]))
    for turn in ({"role": "user", "content": REQUEST_PROMPT.format(query=request)},
                 {"role": "assistant", "content": json.dumps({"need": need, "kinds": kinds})}))

CHOOSER_ROLE = """Several answers were given to the query below. Choose the one that best meets the
query, judged against the map. Answer with JSON: choice (the answer's number) and a short reason."""


def _answer_text(answer: FindReply) -> str:
    return json.dumps(answer.model_dump(by_alias=True), ensure_ascii=False)


# ---- workflows ------------------------------------------------------------------------------
@dataclass
class FoundObjects:
    inferred_query: str
    query_achievable: bool
    relevant_objects: list[str]
    explanation: str
    workflow: str
    candidates: int            # items the model saw
    map_items: int             # furniture and objects in the map
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    rounds: list[dict] = field(default_factory=list)   # each agent's reply, in order
    unchecked: list[str] = field(default_factory=list)  # the model's ids, before the constraints and the kinds
    error: str = ""            # set when no valid answer came back
    evidence: FitEvidence | None = None   # a calibrating finder's fit evidence (planner calibrate)


class NameChecks:
    """The model's yes/no on whether a phrase of one query is another name for a label of the map,
    for phrases the embeddings hold only somewhat like it ("cupboard": a cabinet, 0.74) or the
    lexicon names it by only in a rare sense ("settee": a sofa): grounded either way, a wrong
    reading rules things out or in that the query did not. Called by the grounder as its `accept`;
    each pair is asked once and the calls are counted for the query's answer."""

    def __init__(self, policy: Policy, threshold: float):
        self.policy, self.threshold = policy, threshold
        self.asked: dict[tuple[str, str], float | None] = {}  # (phrase, label) -> probability of yes
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        self.errors: list[str] = []

    def __call__(self, match: Match) -> bool:
        """Whether the model holds the match's phrase another name for its label (asked once)."""
        key = (match.phrase, match.label)
        if key not in self.asked:
            try:
                reply = judged(self.policy, [{"role": "user", "content": name_question(match.phrase, match.label)}])
                self.calls += 1
                self.prompt_tokens += reply.prompt_tokens
                self.completion_tokens += reply.completion_tokens
                self.asked[key] = yes_probability_of(reply)
            except (PolicyError, ValueError) as error:  # no answer names nothing: the phrase stays unread
                self.errors.append(f"{match.phrase} = {match.label}: {error}")
                self.asked[key] = None
        return self.confirmed(match)

    def confirmed(self, match: Match) -> bool:
        """Whether the model was asked about the match and said yes."""
        p_yes = self.asked.get((match.phrase, match.label))
        return p_yes is not None and p_yes >= self.threshold

    def report(self) -> dict[str, float | None]:
        """Each pair asked and the model's probability of yes (None: no answer), for the answer's rounds."""
        return {f"{phrase} = {label}": None if p is None else round(p, 2) for (phrase, label), p in self.asked.items()}


@dataclass
class FitEvidence:
    """What the kinds readings said of how well each item fits, and what else the answer depends on:
    enough to give the answer at any threshold, as calibration does."""
    readings: list[dict[str, tuple[float, str]]]   # first and second reading: id -> (fit, why)
    ruled_out: dict[str, str]                      # id -> the constraint of the query it breaks
    size_order: dict[str, float]                   # id -> its place by the size a superlative asks for
    first: str | None = None                       # the id a workflow that answered from the map put first

    def nothing_fits(self, threshold: float) -> bool:
        """No item the query allows fits the first reading."""
        return not any(fit >= threshold for item, (fit, _) in self.readings[0].items() if item not in self.ruled_out)

    def fits(self, threshold: float, settings: FinderSettings) -> dict[str, tuple[float, str]]:
        """Each allowed item's fit: the first reading's, or its mean with the second when nothing fitted
        the first (and there is a second)."""
        every = self.readings[0]
        if len(self.readings) > 1 and settings.second_reading and self.nothing_fits(threshold):
            again = self.readings[1]
            every = {item: ((fit + again[item][0]) / 2, why if fit >= again[item][0] else again[item][1])
                     for item, (fit, why) in every.items()}
        return {item: (fit + (settings.choice_weight if item == self.first else 0.0), why)
                for item, (fit, why) in every.items() if item not in self.ruled_out}

    def answer(self, threshold: float, settings: FinderSettings) -> list[str]:
        """The ids that fit, best first (by size among those about as good as the best, when the query
        asks for the biggest or smallest); none: nothing fits."""
        fits = self.fits(threshold, settings)
        kept = sorted((item for item, (fit, _) in fits.items() if fit >= threshold), key=lambda item: -fits[item][0])
        if self.size_order and kept:  # "the smallest light": of the things that fit about as well as the best
            top = fits[kept[0]][0]
            kept.sort(key=lambda item: (fits[item][0] < top - SIZE_MARGIN, self.size_order[item]))
        return kept[:settings.max_answers]

    def as_record(self) -> dict:
        return {"readings": [{item: round(fit, 4) for item, (fit, _) in reading.items()} for reading in self.readings],
                "ruled_out": sorted(self.ruled_out), "size_order": self.size_order, "first": self.first}

    @classmethod
    def from_record(cls, record: dict) -> FitEvidence:
        return cls([{item: (fit, "") for item, fit in reading.items()} for reading in record["readings"]],
                   dict.fromkeys(record["ruled_out"], ""), record["size_order"], record["first"])


class FinderError(PlannerError, RuntimeError):
    """No valid answer after the allowed repairs."""


class ObjectFinder:
    def __init__(self, policy: Policy, settings: FinderSettings | None = None,
                 embedder: Embedder | None = None, grounder: Grounder | None = None, calibrating: bool = False):
        """`grounder` grounds the neighbours and excluded kinds a query names in the map's labels;
        without it only a label's own name does. A `calibrating` finder reads the kinds twice for
        every query and returns the fit evidence with each answer."""
        self.calibrating = calibrating
        self.policy = policy
        self.settings = settings or FinderSettings()
        self.similarity = LabelSimilarity(embedder) if embedder is not None else None
        self.grounder = grounder
        self.speller = Speller(grounder.is_noun if grounder else None)

    def _labels_named(self, phrase: str, labels: list[str], checks: NameChecks | None = None) -> set[str]:
        return self._and_kinds(self._labels_said(phrase, labels, checks), labels)

    def _and_kinds(self, named: set[str], labels: list[str]) -> set[str]:
        """The `named` labels and the labels the lexicon holds to be other names or kinds of one of
        them in their usual senses: a closet is a wardrobe, a trash can a bin."""
        lexicon = self.grounder.lexicon if self.grounder is not None else None
        if lexicon is None or not named:
            return named
        senses = frozenset().union(*(lexicon.senses(label, LABEL_SENSES) for label in named))
        return named | {label for label in labels if label not in named and (own := lexicon.senses(label, LABEL_SENSES))
                        and (own & senses or lexicon.broader(own) & senses)}

    def _labels_said(self, phrase: str, labels: list[str], checks: NameChecks | None = None) -> set[str]:
        """The labels a phrase of the query names: its own name, another name of it (grounded, or
        alike and put to the name `checks`), or else the label its last words name, as a compound
        names a kind of its last noun ("the writing desk" is a desk, "the bar stool" a stool; the
        grounder leaves these alone, since the label's name is already said)."""
        said = phrase.replace("-", " ")
        forms = (said, said.removesuffix("s"))
        names = {label: label.replace("_", " ") for label in labels}
        own = {label for label, name in names.items() if name in forms}
        if own:
            return own
        grounded = ({match.label for match in self._grounded(f"the {said}", labels, checks).matches}
                    if self.grounder is not None else set())
        return grounded or {label for label, name in names.items() if any(f" {form}".endswith(f" {name}") for form in forms)}

    def _grounded(self, text: str, labels: list[str], checks: NameChecks | None, rooms: Sequence[str] = ()):
        """The grounder's reading of the text in the labels' words (the `rooms` named in it left as
        they are), a phrase less alike to a label than it must be read as that label when the
        model's name `checks` say so."""
        assert self.grounder is not None
        if checks is None:
            return self.grounder.ground(text, labels, rooms)
        words = words_in(text)

        def as_name(match: Match) -> bool:  # not "to sit", "I dry" (verbs) or "something to cut" (a need)
            said = match.phrase.split()
            return not INDEFINITE & set(said) and any(
                words[start:start + len(said)] == said and (start == 0 or words[start - 1] not in BEFORE_VERBS)
                for start in range(len(words) - len(said) + 1)) and checks(match)

        return self.grounder.ground(text, labels, rooms, self.settings.name_check_similarity, as_name)

    def _subject_names(self, subject: str, labels: list[str], checks: NameChecks | None = None,
                       rooms: Sequence[str] = ()) -> dict[str, float]:
        """The labels the words for the thing asked for name, and how surely: a label's own name or
        its plural (1.0), or another name of it the grounder finds by meaning or the lexicon (its
        similarity; "the easy chair" is an armchair, not a chair), or one alike that the name `checks`
        accept (1.0, as a lexicon's name). Each word names one label, the
        longest name said first: "paper towels" are no towels. Measured with the 1.5B on
        development homes: asked for kinds, it read some plain names as needs ("the smallest
        table": a sponge to clean it) and left out the very thing named ("my toy": plaything, game
        piece); the map's own words for it do not depend on that reading."""
        grounding = self._grounded(subject, labels, checks, rooms) if self.grounder is not None else None
        # A name the model confirms counts as the label's own, as one the lexicon gives does.
        surely = ({match.label: 1.0 if checks is not None and checks.confirmed(match) else match.similarity
                   for match in grounding.matches} if grounding else {})
        words = words_in(grounding.text if grounding else subject)
        taken: set[int] = set()
        named: dict[str, float] = {}
        for label in sorted(labels, key=lambda label: -label.count("_")):
            name = label.split("_")
            forms = said_forms(name)
            for start in range(len(words) - len(name) + 1):
                span = set(range(start, start + len(name)))
                if (not span & taken and words[start:start + len(name)] in forms
                        and not asks_with(words, start, start + len(name))):
                    taken |= span
                    named[label] = surely.get(label, 1.0)
        # Another name or a kind of the thing named is that thing: "the wardrobe" may be a closet.
        return {**dict.fromkeys(self._and_kinds(set(named), labels), min(named.values(), default=1.0)), **named}

    # -- one call ---------------------------------------------------------------------------
    def _ask(self, run: _Run, role: str, messages: list[dict], schema: dict, parse: Callable[[str], BaseModel]):
        """One validated reply, its calls and tokens counted in `run`."""
        def call(current: list[dict]) -> PolicyReply:
            reply = self.policy.complete(current, schema)
            run.calls += 1
            run.prompt_tokens += reply.prompt_tokens
            run.completion_tokens += reply.completion_tokens
            return reply

        problems: list[str] = []
        value = ask_validated(call, messages, parse, self.settings.max_repairs,
                              lambda problem, text: problems.append(problem))
        run.rounds.append({"role": role, "reply": value.model_dump() if value is not None else None,
                           **({"invalid": problems} if problems else {})})
        if value is None:
            raise FinderError(f"{role}: no valid reply after {self.settings.max_repairs} repairs "
                              f"({problems[-1] if problems else 'no reply'})")
        return value

    # -- entry point ------------------------------------------------------------------------
    def prepare(self, scene: SceneGraph, query: str, workflow: str | None = None) -> Prepared:
        """What the model will be shown, read from the scene, and the query's phrases grounded in
        it; the name checks of that grounding ask the model, so a scene others change is best given
        as a copy."""
        workflow = workflow or self.settings.workflow
        if workflow not in WORKFLOWS:
            raise ValueError(f"unknown workflow {workflow!r}; one of {', '.join(WORKFLOWS)}")
        if not query.strip():
            raise ValueError("the query is empty")
        items = [*scene.furniture(), *scene.objects()]
        # Without an embedder every item is shown, however many; the kinds alone are matched with every item.
        narrow = len(items) > self.settings.narrow_above and not (workflow == "base" and self._by_kinds())
        ids = (self.similarity.select(scene, items, query, self.settings.max_candidates)
               if narrow and self.similarity is not None else [e.id for e in items])
        show_room = len(scene.rooms()) > 1
        names = prompt_names(scene, ids)
        lines = {i: describe_item(scene, scene.entity(i), show_room, names) for i in ids}
        evidence = {i: describe_item(scene, scene.entity(i), show_room, names, geometry=False) for i in ids}
        query = query.strip()
        typos: dict[str, str] = {}
        if self.settings.mend_typos:  # before anything reads it: "excpet" hides a negation, "kithcen" a room
            query, typos = self.speller.mended(query, [*{label for e in items for label in e.labels},
                                                       *scene.rooms()])
        checks = NameChecks(self.policy, self.settings.name_check) if self.settings.name_check < 1 else None
        # Not an excluded kind: it is often a sibling of what is asked ("any cup except a mug"), and the
        # model's yes to "is a mug another name for a cup?" read kinship (on development and confirmation
        # homes such checks won 1 query and lost 3); its words stay for the kinds' reading.
        reading = (read_query(query, scene, lambda phrase, labels: self._labels_named(phrase, labels, checks),
                              self._labels_named) if self.settings.constraints else QueryReading(query, ()))
        # Only the kinds' matching uses them: without it, no embedding of the query's phrases.
        named = (self._subject_names(reading.subject, sorted({label for e in items for label in shown_labels(e)}),
                                     checks, scene.rooms()) if self._by_kinds() else {})
        # What the query excludes it does not ask for, whatever its other words say: "somewhere to keep
        # clothes that is not a wardrobe" names no wardrobe, though "clothes" may be read as one; and no
        # item fits by an excluded label: a fridge the map thinks may be a cabinet is no "storage unit
        # except a cabinet" (an item most likely excluded is ruled out whole).
        named = {label: surely for label, surely in named.items() if label not in reading.excluded}
        shown = [scene.entity(i) for i in ids]
        labels = {e.id: shown_labels(e) or {e.label: 1.0} for e in shown}
        labels = {item: {label: p for label, p in every.items() if label not in reading.excluded} or every
                  for item, every in labels.items()}
        ruled_out = {e.id: reason for e in shown if (reason := reading.ruled_out(scene, e))}
        ruled_out |= reading.outdone([e for e in shown if e.id not in ruled_out])  # "the biggest box in the kitchen"
        return Prepared(query, workflow, ids, names, lines, evidence, len(items), show_room, reading, ruled_out,
                        {i: top_label(scene.entity(i)) for i in ids},
                        labels, reading.size_order(shown), named, typos, checks)

    def run(self, prepared: Prepared) -> FoundObjects:
        run = _Run(prepared, self.settings)
        started = time.monotonic()
        unchecked = FindReply()
        try:
            unchecked = getattr(self, f"_{prepared.workflow}")(run)
            answer, error = self._matched(run, self._constrained(run, unchecked)), ""
        except FinderError as failure:
            answer, error = FindReply(), str(failure)
        return FoundObjects(answer.inferred_query, answer.query_achievable,
                            [run.id_of[name] for name in answer.relevant_objects],
                            run.explanation(answer), prepared.workflow, len(prepared.ids), prepared.map_items, run.calls,
                            run.prompt_tokens, run.completion_tokens, time.monotonic() - started, run.rounds,
                            [run.id_of[name] for name in unchecked.relevant_objects], error, run.evidence)

    def find(self, scene: SceneGraph, query: str, workflow: str | None = None) -> FoundObjects:
        return self.run(self.prepare(scene, query, workflow))

    def _answer(self, run: _Run, role: str, messages: list[dict]) -> FindReply:
        return self._ask(run, role, messages, run.answer_schema,
                         lambda text: parse_answer(text, run.known, self.settings.max_answers))

    def _feedback(self, run: _Run, role: str, messages: list[dict]) -> FeedbackReply:
        return self._ask(run, role, messages, run.feedback_schema, lambda text: parse_feedback(text, run.known))

    def _constrained(self, run: _Run, answer: FindReply) -> FindReply:
        """The answer's items that keep the query's constraints; one that breaks them gives way to
        the items of its most likely label that keep them: the model chose what kind of thing is
        meant, the map says which of them is in that room, next to that furniture."""
        prepared = run.prepared
        if not prepared.reading.constraints:
            return answer
        kept: list[str] = []
        for name in answer.relevant_objects:
            item = run.id_of[name]
            if item not in prepared.ruled_out:
                kept.append(name)
                continue
            run.ruled_out.append(prepared.ruled_out[item])
            kept += [prepared.names[other] for other in prepared.ids if other not in prepared.ruled_out
                     and prepared.top_labels[other] == prepared.top_labels[item]]
        kept = list(dict.fromkeys(kept))
        if prepared.size_order:  # the biggest of each kind chosen, and of those the biggest first
            kept.sort(key=lambda name: prepared.size_order[run.id_of[name]])
        kept = kept[:self.settings.max_answers]
        run.rounds.append({"role": "constraints", "reply": {
            "constraints": [f"{c.kind} {c.phrase}: {', '.join(sorted(c.targets))}" for c in prepared.reading.constraints],
            "ruled_out": run.ruled_out, "ids": kept}})
        return answer.model_copy(update={"relevant_objects": kept})

    def _matched(self, run: _Run, answer: FindReply) -> FindReply:
        """The items that meet the query, by the kinds of things the model names for it. A small model
        asked for ids lists the closest items even when none fits (measured: 0 empty answers in 300 on
        maps where 31% of the queries had none), and its yes/no on one item told right from wrong
        badly; asked what kinds of things would meet the query, without choosing from the map, it
        names them well, and whether an item's labels are like one of them is a question the
        sentence embeddings answer. So the answer is the items whose fit reaches `kind_threshold`,
        best first; none: nothing fits (with `second_reading`, only when no item's mean fit over a
        second reading, asked in other words, reaches it either). A workflow that answered from the
        map (reflection) has its first id count `choice_weight` more. A finder that is `calibrating`
        always reads twice and keeps the evidence, so that the answer can be given at any threshold."""
        prepared, settings, similarity = run.prepared, self.settings, self.similarity
        if not settings.kinds or similarity is None:
            return answer
        def read(role: str, prompt: str, examples: Sequence[dict[str, str]] = ()
                 ) -> tuple[KindsReply, dict[str, tuple[float, str]]]:
            messages = [{"role": "system", "content": prompt.format(kinds=settings.kinds)}, *examples,
                        {"role": "user", "content": REQUEST_PROMPT.format(query=prepared.reading.wanted)}]
            reply = self._ask(run, role, messages, kinds_schema(settings.kinds), KindsReply.model_validate_json)
            return reply, similarity.fits(prepared.labels, kinds_asked(reply.named(), prepared.reading.subject),
                                          prepared.named, settings.kind_step,
                                          settings.share_power, settings.kind_margin)

        reply, first_reading = read("kinds", KINDS_PROMPT, KINDS_EXAMPLE_TURNS)
        first = run.id_of[answer.relevant_objects[0]] if answer.relevant_objects else None
        evidence = FitEvidence([first_reading], prepared.ruled_out, prepared.size_order, first)
        if settings.second_reading and (self.calibrating or evidence.nothing_fits(settings.kind_threshold)):
            # Nothing fits one reading; an item both readings hold fairly like what is asked may
            # (development homes: the 1.5B named a lifter for carrying shopping, then a basket).
            evidence.readings.append(read("kinds again", SECOND_KINDS_PROMPT)[1])
        if self.calibrating:
            run.evidence = evidence
        fits = evidence.fits(settings.kind_threshold, settings)
        for item in prepared.ruled_out:
            # What the user is told when nothing fits: an item one reading took for what is asked.
            if (any(reading.get(item, (-1.0, ""))[0] >= settings.kind_threshold for reading in evidence.readings)
                    and prepared.ruled_out[item] not in run.ruled_out):
                run.ruled_out.append(prepared.ruled_out[item])
        kept = evidence.answer(settings.kind_threshold, settings)
        best = sorted(fits, key=lambda item: -fits[item][0])[:3]
        run.rounds.append({"role": "fit", "reply": {
            prepared.names[item]: {"fit": round(fits[item][0], 3), "label": fits[item][1]} for item in best}})
        return answer.model_copy(update={"relevant_objects": [prepared.names[item] for item in kept],
                                         "inferred_query": answer.inferred_query or reply.need})

    def _base(self, run: _Run) -> FindReply:
        if self._by_kinds():  # the kinds choose; the model's pick from the map did not help them (development homes)
            return FindReply()
        return self._answer(run, "answer", run.messages(QUERY_PROMPT.format(query=run.query)))

    def _by_kinds(self) -> bool:
        return bool(self.settings.kinds) and self.similarity is not None

    def _self_reflection(self, run: _Run) -> FindReply:
        messages = run.messages(QUERY_PROMPT.format(query=run.query))
        answer = self._answer(run, "answer", messages)
        for _ in range(self.settings.iterations):
            messages = [*messages, {"role": "assistant", "content": _answer_text(answer)},
                        {"role": "user", "content": SELF_FEEDBACK_PROMPT}]
            feedback = self._feedback(run, "feedback", messages)
            if not _worth_revising(answer, feedback):
                break
            messages = [*messages, {"role": "assistant", "content": json.dumps(feedback.model_dump())},
                        {"role": "user", "content": REFINE_PROMPT}]
            refined = _guarded(answer, feedback, self._answer(run, "refinement", messages))
            if _unchanged(answer, refined):
                break
            answer = refined
        return answer

    def _multi_agent(self, run: _Run) -> FindReply:
        answer = self._answer(run, "planner", run.messages(f"{PLANNER_ROLE}\n\n{QUERY_PROMPT.format(query=run.query)}"))
        earlier: list[str] = []  # what the critic and refiner said in earlier rounds
        for _ in range(self.settings.iterations):
            history = ("\nEarlier rounds:\n" + "\n".join(earlier)) if earlier else ""
            shown = f"{QUERY_PROMPT.format(query=run.query)}\nProposed answer: {_answer_text(answer)}{history}"
            feedback = self._feedback(run, "critic", run.messages(f"{CRITIC_ROLE}\n\n{shown}"))
            if not _worth_revising(answer, feedback):
                break
            refined = self._answer(run, "refiner", run.messages(
                f"{REFINER_ROLE}\n\n{shown}\nFeedback: {json.dumps(feedback.model_dump())}"))
            earlier.append(f"answer {_answer_text(answer)}; feedback {feedback.problems!r}")
            refined = _guarded(answer, feedback, refined)
            if _unchanged(answer, refined):
                break
            answer = refined
        return answer

    def _ensemble(self, run: _Run) -> FindReply:
        answers = []
        for member in range(self.settings.ensemble_size):
            # Members differ in how they are told to read the map, not in the map text, whose
            # prompt the server then reads once for all of them.
            lens = MEMBER_LENSES[member % len(MEMBER_LENSES)]
            answers.append(self._answer(run, f"member {member + 1}",
                                        run.messages(f"{QUERY_PROMPT.format(query=run.query)}{lens}")))
        distinct = list({json.dumps(a.relevant_objects): a for a in answers}.values())
        if len(distinct) == 1:
            return distinct[0]
        random.Random(run.query).shuffle(distinct)  # the chooser cannot tell which member said what
        listed = "\n".join(f"Answer {n}: {_answer_text(a)}" for n, a in enumerate(distinct, 1))
        choice = self._ask(run, "chooser", run.messages(
            f"{CHOOSER_ROLE}\n\n{QUERY_PROMPT.format(query=run.query)}\n{listed}"),
            choice_schema(len(distinct)), lambda text: _parse_choice(text, len(distinct)))
        return distinct[choice.choice - 1]


def _parse_choice(text: str, count: int) -> ChoiceReply:
    reply = ChoiceReply.model_validate_json(text)
    if not 1 <= reply.choice <= count:
        raise ValueError(f"choice must be between 1 and {count}")
    return reply


def _worth_revising(answer: FindReply, feedback: FeedbackReply) -> bool:
    """Revise only on a 'revise' verdict; an empty answer only when the feedback names items."""
    if feedback.verdict == "correct":
        return False
    return bool(answer.relevant_objects) or bool(feedback.evidence)


def _unchanged(before: FindReply, after: FindReply) -> bool:
    """A refinement that kept the same ids ends the loop: checking the same answer again brought
    back the same feedback (measured with the 1.5B: two identical critic rounds, 2 of 5 calls)."""
    return before.relevant_objects == after.relevant_objects


def _guarded(before: FindReply, feedback: FeedbackReply, after: FindReply) -> FindReply:
    """An empty answer can only gain the items the feedback gave as evidence."""
    if before.relevant_objects:
        return after
    kept = [i for i in after.relevant_objects if i in feedback.evidence]
    if not kept:
        return before
    return after.model_copy(update={"relevant_objects": kept})


@dataclass(frozen=True)
class Prepared:
    query: str
    workflow: str
    ids: list[str]            # the items shown, in the order shown
    names: dict[str, str]     # id -> the name the model sees it by
    lines: dict[str, str]     # id -> its line of the map text
    evidence: dict[str, str]  # id -> that line without the size, to explain an answer
    map_items: int            # furniture and objects in the whole map
    show_room: bool
    reading: QueryReading     # the room, holder, neighbour and kinds excluded the query names, grounded in the map
    ruled_out: dict[str, str]  # id -> why it breaks one of them
    top_labels: dict[str, str]  # id -> its most likely label
    labels: dict[str, dict[str, float]]  # id -> the labels shown it may fit by (none excluded), with their probabilities
    size_order: dict[str, float]  # id -> its place by the size a superlative asks for, lowest first (empty: none)
    named: dict[str, float]   # label -> how surely the query's own words name it ("my tub": bathtub)
    typos: dict[str, str] = field(default_factory=dict)  # words of the query mended: as typed -> as meant
    name_checks: NameChecks | None = None  # the model's yes/no on phrases grounded by it


class _Run:
    """One query being answered: the schemas and the running counts."""

    def __init__(self, prepared: Prepared, settings: FinderSettings):
        self.prepared, self.settings = prepared, settings
        self.query, self.ids = prepared.query, prepared.ids
        shown = [prepared.names[i] for i in prepared.ids]
        self.id_of = {name: i for i, name in prepared.names.items()}
        self.known = set(shown)
        self.answer_schema = answer_schema(shown, settings.max_answers, settings.model_explains)
        self.feedback_schema = feedback_schema(shown, settings.max_answers)
        checks = prepared.name_checks
        self.calls, self.prompt_tokens, self.completion_tokens = ((checks.calls, checks.prompt_tokens,
                                                                  checks.completion_tokens) if checks else (0, 0, 0))
        self.rounds: list[dict] = [{"role": "typos", "reply": prepared.typos}] if prepared.typos else []
        if checks is not None and checks.asked:
            self.rounds.append({"role": "name checks", "reply": checks.report(),
                                **({"invalid": checks.errors} if checks.errors else {})})
        self.ruled_out: list[str] = []  # why items the model chose break the query's constraints
        self.evidence: FitEvidence | None = None   # kept by a calibrating finder
        self._system = self._system_prompt()

    def _system_prompt(self) -> str:
        prepared, ids = self.prepared, self.prepared.ids
        shown = (f"all {len(ids)} items" if len(ids) == prepared.map_items
                 else f"the {len(ids)} items most related to the query, of {prepared.map_items}")
        return MAP_PROMPT.format(room_note="its room, " if prepared.show_room else "", shown=shown,
                                 map="\n".join(prepared.lines[i] for i in ids), max_answers=self.settings.max_answers,
                                 why=";\n- why: the reason, in one short sentence." if self.settings.model_explains else ".")

    def explanation(self, answer: FindReply) -> str:
        """The model's reason, or else what the map says of each item chosen, with the map's ids."""
        if answer.explanation:
            return self.with_ids(answer.explanation)
        if not answer.relevant_objects:
            because = f" ({'; '.join(self.ruled_out)})" if self.ruled_out else ""
            return f"none of the {len(self.ids)} items shown meets the query{because}"
        return "; ".join(self.with_ids(self.prepared.evidence[self.id_of[name]]) for name in answer.relevant_objects)

    def with_ids(self, text: str) -> str:
        """Text the model wrote, with the names it saw replaced by the map's ids."""
        renamed = {name: i for name, i in self.id_of.items() if name != i}
        if not renamed:
            return text
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(renamed, key=len, reverse=True))) + r")\b")
        return pattern.sub(lambda match: renamed[match.group(1)], text)

    def messages(self, user: str) -> list[dict]:
        return [{"role": "system", "content": self._system}, {"role": "user", "content": user}]
