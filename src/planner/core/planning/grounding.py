"""The request in the map's words: each phrase that names something the map has by another name
("the fridge" for a refrigerator, "the couch" for a sofa, "my phone" for a cell_phone) is
found by meaning (sentence embeddings) and written with the map's label, so the model is told
which label the user means and the word-level checks of its goals see the same names as the map.

A phrase is grounded when it is close enough to one label and clearly closer to it than to any
other label of this map; words the map already uses are left as they are. "Close enough" is
strict because a wrong grounding misleads the model and the checks alike while a missed one only
leaves the request as said: with all-MiniLM-L6-v2, other names for the same thing score 0.84-0.96
(couch: sofa, fridge: refrigerator, tv: television) but a kind of thing scores up to ~0.75 with
one of its members (fruit: banana 0.73, a drink: water 0.62). A phrase that is part of a label's
name (milk: milk_carton, phone: cell_phone) names it at a lower similarity, unless the request makes
it part of another compound (a bedside table is no coffee_table) or it is part of two labels' names
(a table, where the map has a side_table and a dining_table).

Where sentence embeddings know little, a lexicon does: a phrase that a dictionary of senses
(WordNet) holds to be a name of exactly one label or room of the map ("chest of drawers":
dresser, "sitting room": living room), or else a kind of exactly one ("pullover": sweater, "biro":
pen; never the other way, "fruit" is no orange), names it whatever its similarity. A phrase that
names one only in a sense WordNet has not seen used ("jumper": a sweater, and also a dress, a
coverall and five more) is a candidate that another check must accept, as a loose similarity is.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from planner.core.ports import Embedder, Lexicon

# Words that never begin or end a name: a phrase "the fridge" is grounded as "fridge".
FUNCTION_WORDS = frozenset("""a an the this that these those to of in into on onto from off at by for with and or
then it its me my mine you your i i'm im we us our please could would can will you'd go get put take bring
pick up give hand move place leave set is are be been there here some any all both one other next near
want need like have has do does just now again also over out down back""".split())
MAX_PHRASE_WORDS = 3
JOINING_WORDS = frozenset({"and", "or", "then"})  # no thing's name spans them ("the room and grab")
# A word after which the next is a verb, and words a verb takes before its object: "drop" in "drop the
# keys" is no cough drop, whatever senses a lexicon gives the word.
BEFORE_VERBS = frozenset("i i'm im you we they he she to please let's lets".split())
OBJECT_OPENERS = frozenset("the a an my your our his her their this that these those some any it them me him us".split())
SUBJECT_PRONOUNS = frozenset("i you we they he she".split())
LABEL_SENSES = 3  # a label is read in its first senses only: WordNet orders them most used first
# The embeddings overrule the lexicon where they hold the phrase this close to another label, and closer
# by the margin than to the lexicon's: near grounding's own threshold.
LEXICON_OVERRULED, LEXICON_OVERRULED_MARGIN = 0.7, 0.1
CACHED_VECTORS = 4096
ROOM_NUMBER = re.compile(r"(?: \d+)+$")  # "master bedroom 2": the second of the map's master bedrooms


WORD = re.compile(r"[a-z0-9']+")


def asks_with(words: list[str], start: int, end: int) -> bool:
    """Whether words[start:end] are the verb a question opens with, before its subject and with no
    article before them: "can you ...", "where can I ...", never "the can you opened"."""
    return end < len(words) and words[end] in SUBJECT_PRONOUNS and (start == 0 or words[start - 1] not in OBJECT_OPENERS)


def words_in(text: str) -> list[str]:
    """The text's words, lower case, as phrases are matched and written back."""
    return WORD.findall(text.lower())


def with_words_replaced(text: str, spans: list[tuple[int, int, str]]) -> str:
    """The text in lower case with each span of words (by their index in `words_in`) written as
    its name; the punctuation between other words stays, so clauses stay apart."""
    lower = text.lower()
    places = [m.span() for m in WORD.finditer(lower)]
    for start, end, name in sorted(spans, reverse=True):
        lower = lower[:places[start][0]] + name + lower[places[end - 1][1]:]
    return lower


def _noun_phrase(words: list[str], start: int, end: int, names: Iterable[str], in_rooms: set[int]) -> bool:
    """Whether words[start:end] are said as a whole noun phrase: after a function or room word and
    before a function word or the end, and no part of a longer name of the map."""
    before, after = words[start - 1] if start else "", words[end] if end < len(words) else ""
    return not (not before or before in BEFORE_VERBS or after in OBJECT_OPENERS  # a verb, not a noun
                # part of a longer name: "the pot plant", "the home office", "the chest of drawers"'s "chest"
                or before not in FUNCTION_WORDS and start - 1 not in in_rooms or after == "of"
                or after and after not in FUNCTION_WORDS
                or any(all(word in name.split() for word in words[start:end]) for name in names))


def plain_room_name(room: str) -> str:
    """A room's name without the number that tells it from others of its kind: "lounge" for lounge_2."""
    return ROOM_NUMBER.sub("", room.replace("_", " "))


def room_kinds(lexicon: Lexicon, rooms: Sequence[str]) -> dict[str, frozenset[str]]:
    """Each room's kinds of room: the senses WordNet holds its plain name (or that name's last word)
    to be, and every sense those are a kind of."""
    kinds = {}
    for room in rooms:
        name = plain_room_name(room)
        senses = _room_senses(lexicon, name) or _room_senses(lexicon, name.split()[-1])
        kinds[room] = senses | lexicon.broader(senses)
    return kinds


def rooms_of_kind(lexicon: Lexicon, phrase: str, kinds: dict[str, frozenset[str]]) -> list[str]:
    """The rooms (of `room_kinds`) that `phrase` names by their kind, those whose name has its words
    first, then the plainest names: each room WordNet holds to be what the phrase names as a room,
    or a kind of it ("the bathroom": a washroom; "the bedroom": the master bedroom 2, by its name
    without the number). Never the other way: "the guest room" is not any bedroom; "the room" names
    none."""
    said = _room_senses(lexicon, phrase)
    if not said:
        return []
    named = [room for room, of_room in kinds.items() if said & of_room]
    return sorted(named, key=lambda room: (not set(phrase.split()) <= set(room.split("_")),
                                           plain_room_name(room) != room.replace("_", " "), len(room.split("_")), room))


def _room_senses(lexicon: Lexicon, phrase: str) -> frozenset[str]:
    """The senses of `phrase`, any of them, that are a kind of room ("room" itself is none)."""
    room = lexicon.senses("room", first=1)
    return frozenset(sense for sense in lexicon.senses(phrase, every=True) if lexicon.broader(frozenset({sense})) & room)


@dataclass(frozen=True)
class Match:
    phrase: str
    label: str
    similarity: float
    rare_sense: bool = False  # found by the lexicon in a sense not usually meant: only a check makes it sure


@dataclass(frozen=True)
class Grounding:
    request: str
    text: str                 # the request in lower case, grounded phrases written as map labels (spaces for _)
    matches: tuple[Match, ...]

    def note(self) -> str:
        """What the model is told: "(fridge = refrigerator; couch = sofa)", or nothing."""
        return "; ".join(f"{m.phrase} = {m.label}" for m in self.matches)

    def written(self, place: str) -> str:
        """The phrase of the text that a place read with apostrophes as spaces is: "children's room"
        for "children s room"; the place itself when none is."""
        said = words_in(self.text)
        return next((" ".join(said[start:end]) for start in range(len(said))
                     for end in range(start + 1, min(start + MAX_PHRASE_WORDS, len(said)) + 1)
                     if " ".join(said[start:end]).replace("'", " ").split() == place.split()), place)

    def with_match(self, match: Match) -> Grounding:
        """This grounding and the phrase of `match` written as its label too (a phrase found by other
        means than its similarity)."""
        words = words_in(self.text)
        phrase = match.phrase.split()
        start = next((i for i in range(len(words) - len(phrase) + 1) if words[i:i + len(phrase)] == phrase), None)
        if start is None:
            return self
        text = with_words_replaced(self.text, [(start, start + len(phrase), match.label.replace("_", " "))])
        return Grounding(self.request, text, (*self.matches, match))


class Grounder:
    def __init__(self, embedder: Embedder, threshold: float = 0.8, part_threshold: float = 0.6,
                 margin: float = 0.05, lexicon: Lexicon | None = None):
        self.embedder = embedder
        self.lexicon = lexicon
        self.threshold = threshold
        self.part_threshold = min(part_threshold, threshold)
        self.margin = margin
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def _encode(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors. Labels recur and every phrase of each request is new, so only the
        latest `CACHED_VECTORS` are kept: a node that grounds requests for months does not grow."""
        new = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        vectors = {**{t: self._vectors[t] for t in texts if t in self._vectors},
                   **dict(zip(new, self.embedder.encode(new) if new else []))}
        for text in dict.fromkeys(texts):
            self._vectors[text] = vectors[text]
            self._vectors.move_to_end(text)
        while len(self._vectors) > CACHED_VECTORS:
            self._vectors.popitem(last=False)
        return np.array([vectors[t] for t in texts])

    def is_noun(self, word: str) -> bool:
        """Whether the lexicon knows the word as a noun (a word a typo check must leave alone)."""
        return self.lexicon is not None and bool(self.lexicon.senses(word, every=True))

    def narrowest(self, labels: list[str]) -> list[str]:
        """The labels no other of them is a kind of, to the lexicon in their usual senses: a word that
        may name a remote or an object names the remote (every remote is an object)."""
        if self.lexicon is None:
            return labels
        lexicon = self.lexicon
        senses = {label: lexicon.senses(label, LABEL_SENSES) for label in labels}
        broader = {label: lexicon.broader(own) for label, own in senses.items()}
        return [label for label in labels
                if not any(other != label and senses[label] & broader[other] for other in labels)]

    def nearest(self, phrase: str, labels: list[str], count: int) -> list[Match]:
        """The `count` labels most like the phrase, the most like first."""
        similarity = (self._encode([phrase]) @ self._encode([label.replace("_", " ") for label in labels]).T)[0]
        return [Match(phrase, labels[i], round(float(similarity[i]), 2)) for i in np.argsort(-similarity)[:count]]

    @staticmethod
    def _other_compound(words: list[str], span: tuple[int, int], name: str, in_rooms: set[int]) -> bool:
        """Whether the phrase is part of a compound the label is not: "table" in "bedside table" is no
        coffee table, "phone" in "phone charger" no cell phone. A room word beside it ("kitchen table")
        says where, not what."""
        start, end = span
        beside = [i for i in (start - 1, end) if 0 <= i < len(words)]
        return any(words[i] not in FUNCTION_WORDS and i not in in_rooms and words[i] not in name.split() for i in beside)

    def ground(self, request: str, labels: list[str], rooms: Sequence[str] = (), loose: float | None = None,
               accept: Callable[[Match], bool] | None = None) -> Grounding:
        """`labels`: what phrases may be grounded to; `rooms`: names left alone wherever they are
        said ("the bedroom" is no bed). With `loose`, a phrase from that similarity up to the usual
        thresholds is grounded only when `accept` says so (a check by other means); the best
        candidates are asked first, and a phrase refused leaves its words to the others."""
        words = words_in(request)
        names = {label: label.replace("_", " ") for label in dict.fromkeys(labels)}
        room_names = {room: room.replace("_", " ") for room in rooms}
        all_names = {**names, **room_names}
        said = " " + " ".join(words) + " "
        unnamed = [label for label, name in names.items() if f" {name} " not in said]
        unsaid_rooms = [room for room, name in room_names.items() if f" {name} " not in said]
        in_rooms: set[int] = set()
        for room in rooms:
            room_words = room.replace("_", " ").split()
            for start in range(len(words) - len(room_words) + 1):
                if words[start:start + len(room_words)] == room_words:
                    # "The laundry room" is the room the map calls laundry.
                    end = start + len(room_words) + (words[start + len(room_words):][:1] == ["room"])
                    in_rooms |= set(range(start, end))
        spans = [(start, end) for start in range(len(words)) for end in range(start + 1, min(start + MAX_PHRASE_WORDS,
                                                                                             len(words)) + 1)
                 if words[start] not in FUNCTION_WORDS and words[end - 1] not in FUNCTION_WORDS
                 and not in_rooms & set(range(start, end)) and not JOINING_WORDS & set(words[start:end])]
        spans = [s for s in spans if " ".join(words[s[0]:s[1]]) not in names.values()]
        if not spans or not (unnamed or self.lexicon is not None and unsaid_rooms):
            return Grounding(request, request, ())
        similarity = np.zeros((len(spans), 0))
        if unnamed:
            phrases = [" ".join(words[start:end]) for start, end in spans]
            similarity = self._encode(phrases) @ self._encode([names[label] for label in labels]).T
        candidates = [(1.0, spans[row], label, not rare, rare) for row, label, rare in self._same_named(
            words, spans, all_names, [*unnamed, *unsaid_rooms], in_rooms)
            if label not in names or not self._elsewhere(similarity[row], labels, label)]
        candidates += [(1.0, spans[row], room, True, False)
                       for row, room in self._rooms_by_kind(words, spans, unsaid_rooms, in_rooms)]
        for row, span in enumerate(spans if unnamed else ()):
            order = np.argsort(-similarity[row])
            best = labels[order[0]]
            second = similarity[row][order[1]] if len(order) > 1 else -1.0
            phrase_words = words[span[0]:span[1]]
            part_of = [label for label in unnamed if all(word in names[label].split() for word in phrase_words)]
            part_of_name = best in part_of
            # "The table" where the map has a side table and a dining table is either: the model chooses.
            if part_of_name and (len(part_of) > 1 or self._other_compound(words, span, names[best], in_rooms)):
                continue
            needed = self.part_threshold if part_of_name else self.threshold
            score = float(similarity[row][order[0]])
            if best in unnamed and score >= min(needed, loose or needed) and score - second >= self.margin:
                candidates.append((score, span, best, score >= needed, False))
        return self._written(request, words, candidates, all_names, accept)

    def _same_named(self, words: list[str], spans: list[tuple[int, int]], names: dict[str, str], targets: list[str],
                    in_rooms: set[int]) -> list[tuple[int, str, bool]]:
        """The spans (by their index) that the lexicon holds a name of exactly one of the `targets` in
        one of its first senses (a label means what it usually does: a "counter" is no sideboard), or
        else a kind of exactly one, in a sense the phrase is usually meant in or else (marked rare) in
        any, when
        read as a whole noun phrase (after a function or room word, before a function word or the end)
        and no part of any name of the map (a "pot" where a cooking pot stands is that, not the toilet
        WordNet also calls a pot)."""
        if self.lexicon is None or not targets:
            return []
        target_senses = {target: self.lexicon.senses(target, LABEL_SENSES) for target in targets}
        found = []
        for row, (start, end) in enumerate(spans):
            if not _noun_phrase(words, start, end, names.values(), in_rooms):
                continue
            phrase = " ".join(words[start:end])
            for rare in (False, True):
                senses = self.lexicon.senses(phrase, every=rare)
                same = [target for target, target_sense in target_senses.items() if senses & target_sense]
                if not same:  # "the pullover" where the map has a sweater, "the biro" a pen: a kind of the label
                    kinds = self.lexicon.kinds(phrase, every=rare)
                    same = [target for target, target_sense in target_senses.items() if kinds & target_sense]
                if same:
                    break
            if len(same) == 1:
                found.append((row, same[0], rare))
        return found

    def _rooms_by_kind(self, words: list[str], spans: list[tuple[int, int]], rooms: list[str], in_rooms: set[int]) -> list[tuple[int, str]]:
        """The spans (by their index) that name rooms of the map by their kind, each with the room
        it names likeliest (`rooms_of_kind`); read as whole noun phrases, as `_same_named` reads them,
        though things are often named for rooms ("the bathroom" where a bathroom sink stands is a room)."""
        if self.lexicon is None or not rooms:
            return []
        kinds = room_kinds(self.lexicon, rooms)
        return [(row, named[0]) for row, (start, end) in enumerate(spans)
                if _noun_phrase(words, start, end, (), in_rooms)
                and (named := rooms_of_kind(self.lexicon, " ".join(words[start:end]), kinds))]

    @staticmethod
    def _elsewhere(similarity: np.ndarray, labels: list[str], label: str) -> bool:
        """Whether the embeddings hold the phrase close to another label and clearly closer than to
        `label`: "cupboard" is a closet to WordNet and a cabinet to the embeddings (0.74), and in a
        kitchen it is the cabinet."""
        own = max(float(similarity[i]) for i, name in enumerate(labels) if name == label)
        other = max((float(similarity[i]) for i, name in enumerate(labels) if name != label), default=-1.0)
        return other >= LEXICON_OVERRULED and other - own >= LEXICON_OVERRULED_MARGIN

    @staticmethod
    def _written(request: str, words: list[str], candidates: list[tuple[float, tuple[int, int], str, bool, bool]],
                 names: dict[str, str], accept: Callable[[Match], bool] | None) -> Grounding:
        """The request with the best candidates written as their labels, a longer phrase before the
        words in it; a candidate that is not `sure` only when `accept` says so."""
        taken: set[int] = set()
        matches: list[tuple[tuple[int, int], Match]] = []
        for score, (start, end), label, sure, rare in sorted(candidates, key=lambda c: (-c[0], c[1][0] - c[1][1], c[1])):
            match = Match(" ".join(words[start:end]), label, round(score, 2), rare)
            if taken & set(range(start, end)) or not (sure or (accept is not None and accept(match))):
                continue
            taken |= set(range(start, end))
            matches.append(((start, end), match))
        text = with_words_replaced(request, [(start, end, names[match.label]) for (start, end), match in matches])
        return Grounding(request, text if matches else request,
                         tuple(m for _, m in sorted(matches, key=lambda m: m[0])))
