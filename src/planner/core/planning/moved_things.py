"""The particular things a request asks to move, read off its parse rather than off fixed
wordings: what a verb of moving acts on ("fetch the towel", "mind fetching the drying rack",
"could you fetch me the brolly"), what a clause sends somewhere ("could the mug and the cup go on
the shelf", "the cushion belongs in the bathroom", "make sure the orange is on the table"), a thing
said first and moved as "it" ("the telephone, can you get hold of it"), and the things joined to
any of these by "and" or "or". Only things said with a definite word count ("the", "my"): "bring
me a bag" asks for any bag, a need. A thing the user moves themselves ("I put my keys somewhere")
is no thing the robot is asked to move."""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.ports import Parser, Word

MOVING_VERBS = frozenset("put take bring get fetch grab pick move place hand carry set leave store drop give".split())
# Where a clause sends its subject: "go on the shelf", "belongs in the bathroom".
SENT_TO = frozenset({"to", "onto", "on", "into", "in", "inside"})
TAKEN_FROM = frozenset({"from", "off"})
DEFINITE = frozenset("the my your our his her their this that these those".split())
OTHERS_ACTING = frozenset("i we he she they".split())  # subjects that make a verb someone else's act, not the robot's
PRONOUNS_MOVED = frozenset({"it", "them"})
NOMINAL = frozenset({"NOUN", "PROPN"})
OBJECT_DEPS = frozenset({"dobj", "advmod", "npadvmod", "oprd", "attr"})  # an unknown word after "the" may be tagged so
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})


@dataclass(frozen=True)
class MovedThing:
    """A thing as said ("drying rack", "bottle of water", "first aid box"), the words that name
    what it is (its head noun and what an "of" after it holds: "rack"; "bottle", "water"), and
    where a clause of which it is the subject sends it, as said ("could the mug go on the shelf":
    shelf; "" for a thing a verb moves, whose destination the reading's own checks read)."""

    said: str
    words: tuple[str, ...]
    sent_to: str = ""


def moved_things(parser: Parser | None, text: str) -> list[MovedThing]:
    """The particular things `text` asks to move, in the order said; none without a parser."""
    if parser is None:
        return []
    words = parser.parse([text])[0]
    return list(dict.fromkeys(_thing(words, i, _sent_to(words, i)) for i in _moved(words)))


def _children(words: list[Word], i: int) -> list[int]:
    return [j for j, word in enumerate(words) if word.head == i and j != i]


def _nominal(words: list[Word], i: int) -> bool:
    """A noun, or a word said after a determiner, whatever the tagger made of it ("the brolly")."""
    return words[i].pos in NOMINAL or any(words[j].dep in ("det", "poss") for j in _children(words, i))


def _definite(words: list[Word], i: int) -> bool:
    return any(words[j].dep in ("det", "poss") and words[j].text.lower() in DEFINITE for j in _children(words, i))


def _robot_does(words: list[Word], verb: int) -> bool:
    """Whether the verb asks the robot to act: no subject, "you", or a name it is called by, not the user's own act."""
    return not any(words[j].dep in SUBJECT_DEPS and words[j].text.lower() in OTHERS_ACTING
                   for j in _children(words, verb))


def _moved(words: list[Word]) -> list[int]:
    """Where the things moved are: objects of a verb of moving the robot is to do, subjects of a
    clause that sends them somewhere, what a moved "it" stands for, and the things joined to them."""
    found: list[int] = []
    for i, word in enumerate(words):
        head = words[word.head]
        moving = head.lemma in MOVING_VERBS and _robot_does(words, word.head)
        if word.text.lower() in PRONOUNS_MOVED and (moving or _says_hold_of(words, word.head)):
            found += _said_before(words, i)
        elif not _nominal(words, i) or _holds_pronoun(words, i):
            continue
        elif moving and word.dep in OBJECT_DEPS or word.dep in SUBJECT_DEPS and not moving and _place_sent_to(
                words, word.head) is not None:
            found.append(i)
    with_joined = [j for i in found for j in (i, *_joined(words, i))]
    return [i for i in sorted(set(with_joined)) if _definite(words, i) or _joined_to_definite(words, i, with_joined)]


def _place_sent_to(words: list[Word], verb: int) -> int | None:
    """The place a verb sends its subject to: the noun after its "on", "in", "to" ("go on the shelf")."""
    return next((k for j in _children(words, verb) if words[j].dep == "prep" and words[j].text.lower() in SENT_TO
                 for k in _children(words, j) if words[k].dep == "pobj"), None)


def _sent_to(words: list[Word], i: int) -> str:
    """Where a clause with the thing at `i` (or the thing it is joined to) as its subject sends it."""
    while words[i].dep == "conj" and words[i].head != i:
        i = words[i].head
    place = _place_sent_to(words, words[i].head) if words[i].dep in SUBJECT_DEPS else None
    return "" if place is None else _thing(words, place).said


def _holds_pronoun(words: list[Word], i: int) -> bool:
    """"hold" of "get hold of it": a noun that moves what its "of" holds, here a pronoun."""
    return any(words[j].text.lower() == "of" and any(words[k].text.lower() in PRONOUNS_MOVED
                                                     for k in _children(words, j)) for j in _children(words, i))


def _says_hold_of(words: list[Word], of: int) -> bool:
    """Whether `of` is the "of" of a noun of a verb of moving: "get hold of it"."""
    if words[of].text.lower() != "of":
        return False
    noun = words[of].head
    return words[words[noun].head].lemma in MOVING_VERBS and _robot_does(words, words[noun].head)


def _said_before(words: list[Word], pronoun: int) -> list[int]:
    """The thing a moved "it" stands for: the nearest thing said before it that no preposition
    takes, when there is one ("the cushion belongs in the bathroom, can you bring it there", "open
    the fridge, take out the milk and put it on the table")."""
    return next(([i] for i in reversed(range(pronoun)) if _nominal(words, i) and words[i].dep not in ("pobj", "compound")
                 and words[i].pos != "PRON" and _definite(words, i)), [])


def _joined(words: list[Word], i: int) -> list[int]:
    """The nouns joined to the one at `i` by "and" or "or", each joined to the one before. The parse
    often joins the next thing to the verb ("put the pillow and the drum"), or to the place the
    first is taken from ("the cap from the bench and the book": the book, not a second place)."""
    verb = [words[i].head] if words[i].dep in OBJECT_DEPS else []
    taken_from = [k for at in [i, *verb] for j in _children(words, at)
                  if words[j].dep == "prep" and words[j].text.lower() in TAKEN_FROM
                  for k in _children(words, j) if words[k].dep == "pobj"]
    if words[i].head != i and words[words[i].head].dep == "prep" and words[words[i].head].text.lower() in TAKEN_FROM:
        taken_from = []  # the place itself: what joins it is another place
    joined = [j for at in [i, *verb, *taken_from] for j in _children(words, at)
              if words[j].dep == "conj" and _nominal(words, j) and (at == i or _definite(words, j))]
    return [k for j in joined for k in (j, *_joined(words, j))]


def _joined_to_definite(words: list[Word], i: int, found: list[int]) -> bool:
    """A thing joined without a determiner of its own to one said with a definite one ("the fork and knife")."""
    return not any(words[j].dep == "det" for j in _children(words, i)) and any(
        words[i].head == j and _definite(words, j) for j in found)


def _thing(words: list[Word], i: int, sent_to: str = "") -> MovedThing:
    """The thing at `i` with the words before it that finish its name (not its determiner) and an
    "of" after it with what that holds: "the first-aid box", "the bottle of water"."""
    before = [j for j in _subtree(words, i) if j < i and words[j].dep not in ("det", "poss", "predet", "punct")
              and words[j].pos not in ("PUNCT", "DET")]
    filler = [k for j in _children(words, i) if words[j].text.lower() == "of"
              for k in _children(words, j) if words[k].dep == "pobj" and _nominal(words, k)]
    said = [*(words[j].text for j in before), words[i].text,
            *("of " + " ".join(words[j].text for j in [*_subtree(words, k), k]) for k in filler[:1])]
    return MovedThing(_plain(" ".join(said)), tuple(_plain(words[j].text) for j in [i, *filler[:1]]), sent_to)


def _subtree(words: list[Word], i: int) -> list[int]:
    """The words under `i` before it that stay within its own phrase (no clause or phrase hung on it)."""
    inside = [j for j in _children(words, i) if j < i and words[j].dep not in ("relcl", "prep", "acl", "conj", "cc", "punct")]
    return sorted(k for j in inside for k in (j, *_subtree(words, j)))


def _plain(text: str) -> str:
    """Lower case, a label's underscores and a hyphen as spaces: "first aid box", "water bottle"."""
    return " ".join(text.lower().replace("_", " ").replace("-", " ").split())
