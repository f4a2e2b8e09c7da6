"""What a query for things in a map rules out, read from its words and grounded in the map: the
room it names ("the chair in the bedroom", "the bedroom chair"), what a thing stands on or in ("the mug on the
shelf"), the furniture it stands next to ("a chair next to the desk"), the kinds it excludes
("something to sit on that is not a stool"), that nothing is on it ("a desk with nothing on it") and
which of its kind it is by size ("the smallest cupboard").

A small model reads these badly (measured with the 1.5B on development homes: it answered a
chair "next to the bin" in 13 of 15 homes where none was, and its yes/no check of an answer
refused right answers to negated queries), while each is a fact of the map once its phrase is
grounded: the item's room, what it stands on, its footprint's distance to the neighbour, its most likely
label (a holder's or neighbour's kind read as the map's labels allow: the kinds it may well be).
So the model chooses what kind of thing is meant and these constraints are checked here. A
neighbour that grounds to no label of the map stands next to nothing, so nothing meets the query
(on development homes 13 of 17 such queries had no answer; the rest named a neighbour by a name
neither the embeddings nor the lexicon knew). Any other phrase that grounds to nothing constrains
nothing: an excluded kind the map lacks excludes nothing, and a holder may be a part of the home
the map has no label for ("on the floor").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from planner.core.planning.grounding import FUNCTION_WORDS, plain_room_name
from planner.core.scene_graph import Entity, SceneGraph, footprint_gap, may_be, top_label
from planner.core.voxeland import STRUCTURE_LABEL

NEXT_TO_M = 0.5  # footprints at most this far apart stand next to each other

ConstraintKind = Literal["room", "on_or_in", "next_to", "not", "bare", "extreme"]
_ARTICLE = r"(?:(?:the|a|an|any|my|some)\s+)?"
_PLACE_ARTICLE = r"(?:the|a|an|my|your|our|his|her|their)\s+"  # a place is said with one: "sit on that" names none
_PHRASE = r"([a-z][a-z0-9' -]*?)"  # with a number: "the dining room 2" of a map with two
_ENDS = r"\s*(?:[.?!;:)\]]|$|\b(?:please|that|which|with|in|on|and|but)\b)"
_PATTERNS: dict[ConstraintKind, re.Pattern] = {
    # One kind or a list: "not a stool", "but no bench or stool", "not a chair, a couch or a stool".
    "not": re.compile(r"\b(?:that is not|that isn't|which is not|not|except(?: for)?|but no|other than|apart from|"
                      rf"excluding|rather than)\s+([a-z][a-z' ,-]*?)(?={_ENDS})"),
    "next_to": re.compile(rf"\b(?:next to|beside|alongside|close to)\s+{_ARTICLE}{_PHRASE}(?=[,]|{_ENDS})"),
    # A room ("in the kitchen") or what holds the thing ("in the fridge", "on the shelf").
    "on_or_in": re.compile(rf"\b(?:on|in|inside|on top of)\s+{_PLACE_ARTICLE}{_PHRASE}(?=[,]|{_ENDS})"),
}
# What may rest nowhere on (or in) the item: "with nothing on it", "not covered in things", "an empty shelf".
_BARE: tuple[tuple[re.Pattern, frozenset[str]], ...] = (
    (re.compile(r"\b(?:with|that has|which has|having)\s+nothing\s+(on|in)(?:\s+top)?(?:\s+of)?(?:\s+(?:it|them))?\b"),
     frozenset()),
    (re.compile(r"\b(?:(?:that|which)\s+(?:is|are)\s+|that's\s+)?not\s+covered\s+(?:in|with|by)\s+"
                r"(?:things|stuff|anything|objects|items|clutter)\b"), frozenset({"on"})),
    (re.compile(r"\b(?:bare|uncluttered|clutter-free)\b"), frozenset({"on"})),
    # Not the verb: "somewhere to empty my pockets" asks for no empty thing.
    (re.compile(r"\bempty\b(?!\s+(?:my|your|his|her|our|their|the|this|that|these|those|it|them|out)\b)"),
     frozenset({"on", "in"})),
)
# A superlative compares sizes, which a small model reads from the map's numbers badly: the measure
# compared and whether the most (1) or the least (-1) of it is meant.
def _volume(entity: Entity) -> float:
    return entity.size[0] * entity.size[1] * entity.size[2]


def _height(entity: Entity) -> float:
    return entity.size[2]


_EXTREMES: dict[str, tuple[Callable[[Entity], float], int]] = {
    "biggest": (_volume, 1), "largest": (_volume, 1), "smallest": (_volume, -1), "tiniest": (_volume, -1),
    "tallest": (_height, 1), "shortest": (_height, -1)}
_EXTREME = re.compile(r"\b(" + "|".join(_EXTREMES) + r")\b")
_LISTED = re.compile(r"\s*(?:,|\bor\b|\bnor\b)\s*")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an|any|my|some)\s+")


@dataclass(frozen=True)
class Constraint:
    kind: ConstraintKind
    phrase: str                # the query's words for the room, neighbour or excluded kind
    targets: frozenset[str]    # the room's name, the labels the phrase grounds to, or (bare) "on" and/or "in"
    span: tuple[int, int]      # where the words of the constraint are in the query


@dataclass(frozen=True)
class QueryReading:
    query: str
    constraints: tuple[Constraint, ...]
    asides: tuple[tuple[int, int], ...] = ()  # where the query names a room, holder, neighbour or excluded kind

    @property
    def subject(self) -> str:
        """The query without the words about anything but the thing asked for, grounded or not:
        what names the thing itself ("the mug" of "the mug on the shelf, not the cup")."""
        return _without(self.query, self.asides)

    @property
    def wanted(self) -> str:
        """The query without the constraints checked here: what the model is asked the kinds of."""
        return _without(self.query, [constraint.span for constraint in self.constraints])

    @property
    def excluded(self) -> frozenset[str]:
        """The labels of the kinds the query excludes."""
        return frozenset().union(*(c.targets for c in self.constraints if c.kind == "not"))

    @property
    def superlative(self) -> str | None:
        """The word of a query that asks for the biggest, smallest, ... of something."""
        return next((c.phrase for c in self.constraints if c.kind == "extreme"), None)

    def size_order(self, items: list[Entity]) -> dict[str, float]:
        """For a query that asks for the biggest, smallest, ... of something: each item's place by
        that size, what the query asks for lowest (empty for any other query)."""
        if (word := self.superlative) is None:
            return {}
        measure, sign = _EXTREMES[word]
        return {entity.id: -sign * measure(entity) for entity in items}

    def outdone(self, items: list[Entity]) -> dict[str, str]:
        """Why each of the `items` is not what a superlative asks for: another of its most likely
        label among them is more so (compared among the items shown: a narrowed map's others are
        not there to be chosen)."""
        order, word = self.size_order(items), self.superlative
        if word is None:
            return {}
        most: dict[str, Entity] = {}  # label -> its item most what is asked
        for entity in sorted(items, key=lambda e: order[e.id]):
            most.setdefault(top_label(entity), entity)
        return {entity.id: f"{beyond.id} is a {word.removesuffix('est')}er {top_label(entity)} than {entity.id}"
                for entity in items if order[(beyond := most[top_label(entity)]).id] < order[entity.id]}

    def ruled_out(self, scene: SceneGraph, entity: Entity) -> str:
        """Why the item does not meet the constraints, or "" when it meets them all (a superlative
        compares items: `outdone`)."""
        for constraint in self.constraints:
            if constraint.kind == "room" and entity.room not in constraint.targets:
                return f"{entity.id} is in the {entity.room}, not the {constraint.phrase}"
            if constraint.kind == "on_or_in" and not any(
                    may_be(scene.entity(holder)) & constraint.targets for holder in _holders(scene, entity)):
                return f"{entity.id} is not on or in a {constraint.phrase}"
            if constraint.kind == "not" and top_label(entity) in constraint.targets:
                return f"{entity.id} is most likely a {top_label(entity)}, which the query excludes"
            if constraint.kind == "bare" and (resting := _resting(scene, entity, constraint.targets)):
                return f"{resting} is {' or '.join(sorted(constraint.targets))} {entity.id}"
            if constraint.kind == "next_to" and not constraint.targets:
                return f"the map has no {constraint.phrase} for anything to stand next to"
            if constraint.kind == "next_to" and not any(
                    other.id != entity.id and may_be(other) & constraint.targets
                    and footprint_gap(entity, other) <= NEXT_TO_M for other in _items(scene)):
                return f"no {constraint.phrase} stands within {NEXT_TO_M} m of {entity.id}"
        return ""


def _without(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The text with the spans cut out, its spaces and punctuation tidied (brackets left empty too)."""
    for start, end in sorted(spans, key=lambda span: -span[0]):
        text = text[:start] + " " + text[end:]
    text = re.sub(r"\(\s*\)|\[\s*\]", " ", text)
    return re.sub(r"\s+([,.?!:])", r"\1", re.sub(r"\s{2,}", " ", text)).strip(" ,:")


def _holders(scene: SceneGraph, entity: Entity) -> set[str]:
    """What the item is on or in, and the furniture that bears it through the things stacked under
    it: scissors on a newspaper in the bookcase are in the bookcase."""
    holders = {holder for relation, holder in scene.relation_edges(entity.id) if relation in ("on", "in")}
    bearer = scene.furniture_support(entity.id) if entity.kind == "object" else None
    return holders | ({bearer[1]} if bearer else set())


def _resting(scene: SceneGraph, entity: Entity, relations: frozenset[str]) -> str | None:
    """A thing that rests on or in the item (as `relations` says). A thing stacked on another rests
    on it, and the bottom one on the item, so the graph's edges into the item are all it takes."""
    return next((thing.id for relation in sorted(relations)
                 for thing in scene.find(kind="object", relation=relation, reference=entity.id)), None)


def _items(scene: SceneGraph) -> list[Entity]:
    return [*scene.furniture(), *scene.objects()]


def _room_named(phrase: str, rooms: list[str]) -> str | None:
    """The map's room the phrase names: its name, or its name without a number ("the bedroom" for
    bedroom_2 when the map has one bedroom)."""
    said = phrase.replace("-", " ").strip()
    exact = [room for room in rooms if room.replace("_", " ") == said]
    if exact:
        return exact[0]
    numbered = [room for room in rooms if plain_room_name(room) == said]
    return numbered[0] if len(numbered) == 1 else None


def _rooms_said_before_things(text: str, rooms: list[str], labels: list[str], taken: list[tuple[int, int]]
                              ) -> list[Constraint]:
    """The rooms of the map said before a thing's name, as where it is ("the bathroom towel", "the
    bedroom 2 lamp"), unless the room's words begin a label's name said there ("the kitchen
    cabinet" is a kind of cabinet, wherever it stands)."""
    said_as = {room.replace("_", " "): room for room in rooms}
    for room in rooms:  # "the bedroom lamp" where the map has one bedroom, bedroom_2
        plain = plain_room_name(room)
        if _room_named(plain, rooms) == room:
            said_as.setdefault(plain, room)
    names = [label.replace("_", " ") for label in labels]
    found: list[Constraint] = []
    for said in sorted(said_as, key=len, reverse=True):
        for match in re.finditer(rf"\b(?:the|a|an|my|our|your|this|that)\s+({re.escape(said)})\s+([a-z][a-z'-]*)", text):
            start, end = match.span(1)
            if (match.group(2) in FUNCTION_WORDS or match.group(2) == "room"
                    or any(s < end and start < e for s, e in [*taken, *(c.span for c in found)])
                    or any(name.startswith(f"{said} ") and re.match(rf"{re.escape(name)}s?\b", text[start:]) for name in names)):
                continue
            found.append(Constraint("room", said, frozenset({said_as[said]}), (start, end)))
    return found


def read_query(query: str, scene: SceneGraph, labels_named: Callable[[str, list[str]], set[str]],
               excluded_named: Callable[[str, list[str]], set[str]] | None = None) -> QueryReading:
    """The constraints of `query` that ground in the map; `labels_named(phrase, labels)` gives the
    labels of the map a phrase names (none when it is not sure), and `excluded_named`, if given,
    those an excluded kind's phrase names."""
    text = query.lower()
    rooms = scene.rooms()
    # Every label the map gives: a neighbour that is nothing's most likely label is next to nothing.
    labels = sorted({label for e in _items(scene) for label in e.labels if label != STRUCTURE_LABEL})
    constraints = [Constraint("bare", match.group(0), relations or frozenset({match.group(1)}), match.span())
                   for pattern, relations in _BARE for match in pattern.finditer(text)]
    bare = [constraint.span for constraint in constraints]
    constraints += [Constraint("extreme", match.group(1), frozenset(), match.span()) for match in _EXTREME.finditer(text)][:1]
    asides = []
    for said_kind, pattern in _PATTERNS.items():
        for match in pattern.finditer(text):
            kind = said_kind
            if any(start < match.end() and match.start() < end for start, end in bare):
                continue  # "not covered in things" excludes no kind of thing
            if kind != "not" and re.search(r"\b(?:not|n't|except|but)\s*$", text[:match.start()]):
                continue  # "a chair that is not in the kitchen" asks for one anywhere else: left to the model
            phrases = [_LEADING_ARTICLE.sub("", part.strip()) for part in _LISTED.split(match.group(1))]
            phrases = [phrase for phrase in phrases if phrase]
            if not phrases:
                continue
            end = match.start(1) + len(match.group(1).rstrip(" ,"))  # a list's last comma stays in the query
            asides.append((match.start(), end))
            room = _room_named(phrases[0], rooms) if kind == "on_or_in" else None
            naming = excluded_named if kind == "not" and excluded_named is not None else labels_named
            named = [{room}] if room is not None else [naming(phrase, labels) for phrase in phrases]
            kind = "room" if room is not None else kind
            targets = frozenset().union(*named)
            if targets or kind == "next_to":  # a neighbour the map has none of: next to nothing
                # "But no sweater or blanket" in a home without sweaters excludes the blanket; as the
                # sweater may be there under a name not grounded, the words stay for the model to read.
                span = (match.start(), end if all(named) else match.start())
                constraints.append(Constraint(kind, " or ".join(phrases), targets, span))
    for constraint in _rooms_said_before_things(text, rooms, labels, [*bare, *asides]):
        constraints.append(constraint)
        asides.append(constraint.span)
    return QueryReading(query, tuple(constraints), tuple(asides))
