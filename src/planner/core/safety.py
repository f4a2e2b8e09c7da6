"""Hazard rules: what the robot refuses to do whatever the plan, e.g. a knife handed to a person, a
cleaver put in a bed or a spoon put in the microwave. They are rules over kinds of things (sharp,
metal, a bed), not over labels: a label is read as the kinds it names through its words, the head
of a compound word (a teaspoon is a spoon) and, with a lexicon, what its senses are a kind of (a
cleaver is a knife is an edge tool). Labels are folded to Latin letters first, so a look-alike
letter (Cyrillic "і" in "knіfe") does not hide a word. The rules are checked on every command that
puts or hands a thing to a place or a person, by code, never left to the LLM: on the skill
planner's decomposition and again by the controller on each command the executor runs, so a raw
command is held to them too."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from confusable_homoglyphs import confusables
from pydantic import Field

from planner.core.files import StrictModel
from planner.core.ports import Lexicon
from planner.core.scene_graph import Entity, SceneGraph
from planner.core.scene_store import NODE_KINDS

# A compound word names a kind of its last part ("teaspoon", "butterknife") when both parts are words
# of their own; shorter parts are too often the end of an unrelated word ("pecan", "toucan").
COMPOUND_PART_MIN = 4
LABELS_KEPT = 4096   # labels whose kinds are remembered; a map's labels come and go with detections


@lru_cache(maxsize=4096)
def folded(label: str) -> str:
    """The label in lower-case Latin letters where another script's letter only looks like one."""
    text = unicodedata.normalize("NFKC", label).casefold()
    found = confusables.is_confusable(text, greedy=True, preferred_aliases=["latin", "common"]) or []
    for char in found:
        latin = next((glyph["c"] for glyph in char["homoglyphs"] if glyph["c"].isascii() and glyph["c"].isalnum()), None)
        if latin is not None:
            text = text.replace(char["character"], latin.lower())
    return text


def label_words(label: str) -> set[str]:
    """A label's words, singular too: 'kitchen_knives' -> {'kitchen', 'knife', 'knive', 'knives'}."""
    words = set(re.findall(r"[a-z0-9]+", folded(label)))
    singular = {word[:-1] for word in words if word.endswith("s")}
    singular |= {word[:-3] + "fe" for word in words if word.endswith("ves")}
    return words | singular


def names_term(words: set[str], phrase: str, term: str) -> bool:
    """Does a label (its `words`, its words joined by spaces) name `term`: the word itself, the last
    part of a compound word, or a phrase of several words?"""
    if " " in term:
        return f" {term} " in f" {phrase} "
    return term in words or (len(term) >= COMPOUND_PART_MIN and any(
        word.endswith(term) and len(word) - len(term) >= COMPOUND_PART_MIN - 1 for word in words))


class ThingKinds:
    """The kinds a label names, from the skill library's `thing_kinds` (kind -> words and phrases)
    and, with a lexicon, every sense of theirs the label's senses are a kind of."""

    def __init__(self, kinds: dict[str, list[str]], lexicon: Lexicon | None = None):
        self.kinds = kinds
        self.lexicon = lexicon
        self._senses: dict[str, frozenset[str]] | None = None
        self._labels: dict[str, frozenset[str]] = {}

    def _kind_senses(self) -> dict[str, frozenset[str]]:
        if self._senses is None and self.lexicon is not None:
            self._senses = {kind: frozenset().union(*(self._meant(term, first=1) for term in terms))
                            for kind, terms in self.kinds.items()}
        return self._senses or {}

    def _meant(self, phrase: str, first: int | None = None) -> frozenset[str]:
        """A phrase's usual senses (`first`: the most used of them), or all of them when none is
        usual (WordNet has seen no "teaspoon" in its tagged texts). A term is read in its first
        sense only: a pot is a cooking pot, though WordNet has a toilet among its usual senses."""
        assert self.lexicon is not None
        return self.lexicon.senses(phrase, first) or self.lexicon.senses(phrase, first, every=True)

    def of_label(self, label: str, kind: str = "") -> frozenset[str]:
        """The kinds the label names, and `kind` (the thing's place in the graph) when given."""
        if label not in self._labels:
            if len(self._labels) >= LABELS_KEPT:
                self._labels.pop(next(iter(self._labels)))
            self._labels[label] = self._read(label)
        return self._labels[label] | {kind} if kind else self._labels[label]

    def _read(self, label: str) -> frozenset[str]:
        words = label_words(label)
        phrase = " ".join(re.findall(r"[a-z0-9]+", folded(label)))
        found = {kind for kind, terms in self.kinds.items() if any(names_term(words, phrase, term) for term in terms)}
        if self.lexicon is not None:
            meant = frozenset().union(*(self._meant(part) for part in {phrase, *phrase.split()}))
            meant |= self.lexicon.broader(meant)
            found |= {kind for kind, senses in self._kind_senses().items() if senses & meant}
        return frozenset(found)

    def first_sense_is_a(self, word: str, kind: str) -> bool:
        """Whether the word, in its most used sense, names a kind of `kind` (a son, a person); never
        without a lexicon. Only the first sense: a fan or a monitor is a person in some other."""
        if self.lexicon is None:
            return False
        meant = self._meant(word, first=1)
        return bool((meant | self.lexicon.broader(meant)) & self._meant(kind, first=1))

    def of(self, entity: Entity) -> frozenset[str]:
        """The entity's kinds: its place in the graph (object, furniture, person, room) and those its
        label names."""
        return self.of_label(entity.label, entity.kind)


class HazardRule(StrictModel):
    """A command that puts or hands a `thing` to a `near` is refused."""
    thing: list[str] = Field(min_length=1, description="kinds of the thing moved (sharp; or object)")
    near: list[str] = Field(min_length=1, description="kinds of where it goes (person, bed, microwave)")
    reason: str = Field(min_length=1, description="said to the planner and the user when a call is refused")


class Hazards:
    """The skill library's hazard rules over the kinds its `thing_kinds` and a lexicon give labels."""

    def __init__(self, rules: list[HazardRule], kinds: ThingKinds):
        self.rules = rules
        self.kinds = kinds

    def refusal(self, object_id: str, target_id: str, scene: SceneGraph) -> str | None:
        """The reason to refuse moving `object_id` to `target_id`; None when no rule forbids it."""
        if not (scene.has(object_id) and scene.has(target_id)):
            return None
        return self.refusal_of_kinds(self.kinds.of(scene.entity(object_id)), self.kinds.of(scene.entity(target_id)))

    def refusal_of_kinds(self, thing: frozenset[str], near: frozenset[str]) -> str | None:
        """The reason to refuse moving a thing of the kinds `thing` to one of the kinds `near`."""
        return next((rule.reason for rule in self.rules if thing & set(rule.thing) and near & set(rule.near)), None)


class AimedHazard(StrictModel):
    """A request that aims an action at someone ("throw the cup at the person") is refused before any
    model reads it: no goal of the robot's can stand for it, and a goal that leaves it out ("the
    robot holds the cup") would end "Done."."""
    actions: list[str] = Field(min_length=1, description="the start of each form of the verbs: throw (throws, "
                               "throwing, thrown), and irregular forms of their own (threw)")
    at: list[str] = Field(min_length=1, description="words for people that name no kind: me, him, someone")
    reason: str = Field(min_length=1)

    def aimed(self, request: str, someone: Callable[[str], bool]) -> bool:
        """An action word, then in the same clause "at" and a word for a person: one of `at`, or
        one `someone` holds to name a person (a son, a guest: a kind of person)."""
        actions = "|".join(re.escape(action) for action in self.actions)
        targets = re.finditer(rf"\b(?:{actions})[a-z]*\b[^.;!?]*?\bat\s+(?:(?:the|a|an|my|our|that|this|your|his|"
                              rf"her|their)\s+)?([a-z]+)", folded(request))
        return any(target.group(1) in self.at or someone(target.group(1)) for target in targets)


def rule_terms_known(rules: list[HazardRule], kinds: dict[str, list[str]]) -> list[str]:
    """Problems of the rules: each kind they name must be a thing kind or an entity kind."""
    known = set(kinds) | set(NODE_KINDS)
    return [f"hazards[{index}].{field}: {term!r} is no kind in thing_kinds nor one of {', '.join(NODE_KINDS)}"
            for index, rule in enumerate(rules) for field in ("thing", "near")
            for term in getattr(rule, field) if term not in known]
