"""Requests that name one thing when the map holds several ("pick up the cup" with three cups):
which goals are ambiguous, the question to the user, and how an answer picks a candidate.

A goal is ambiguous when the request uses a definite article for its object ("the cup"), more
than one object of that kind is in the map (its label, or a compound label whose head it is: an
electric_fan is a fan), and the places the request mentions (rooms, furniture) do not single one
out. "A cup" is never ambiguous: any will do. Without an answer
the nearest candidate the robot can take is taken, which is what a person standing by the robot
most likely means.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.core.goals import PLACING_KINDS, Goal
from planner.core.scene_graph import SceneGraph

# "one" is left out: "the one on the counter" names a place, not a number.
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5,
            "two": 2, "three": 3, "four": 4, "five": 5, "last": -1}


@dataclass
class Question:
    goal: int                 # index of the goal it settles
    label: str
    candidates: list[str]     # object ids, those the robot can take first, nearest to the robot first among them
    places: list[str]         # where each candidate is, in the same order
    can_take: int = 0         # how many of the candidates the robot can take, when not all
    kinds: list[str] = field(default_factory=list)  # each candidate's label where it is not `label`, else ""

    def called(self, index: int, one: str = "one") -> str:
        """How a candidate is called: "the one" (or the `one` given) of the label asked about, else
        by its own label."""
        kind = self.kinds[index] if index < len(self.kinds) else ""
        return f"the {kind.replace('_', ' ') if kind else one}"

    @property
    def text(self) -> str:
        options = "; ".join(f"{n}) {self.called(n - 1)} {place}" for n, place in enumerate(self.places, 1))
        return f"Which {self.label} do you mean? {options}"


def words_of(text: str) -> str:
    """Lower-case words with a space on either side, for whole-word phrase matching."""
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "


def room_furniture_name(room: str, furniture_label: str) -> str:
    """How people name a piece of furniture by its room: the dining table, the kitchen counter."""
    return f"{room.replace('_', ' ').split()[0]} {furniture_label.replace('_', ' ')}"


def _place(scene: SceneGraph, object_id: str) -> tuple[str, list[str]]:
    """How to describe where an object is, and the words that name that place."""
    entity = scene.entity(object_id)
    room = entity.room.replace("_", " ")
    support = scene.support(object_id)
    if support:
        label = scene.entity(support[1]).label
        furniture = label.replace("_", " ")
        # "The water from the table" is the one on the dining table, not the one in the cabinet.
        head = [furniture.split()[-1]] if " " in furniture else []
        return (f"{support[0]} the {furniture} in the {room}",
                [furniture, *head, room, support[1], room_furniture_name(entity.room, label)])
    return f"in the {room}", [room]


def most_named(words: str, names: dict[str, list[str]]) -> list[str]:
    """The candidates whose place the words name most fully: "the dining table" names the table
    in the dining room, and "table" every table. Empty when the words name no candidate's place."""
    counts = {c: sum(f" {words_of(name).strip()} " in words for name in place if name) for c, place in names.items()}
    most = max(counts.values(), default=0)
    return [c for c, count in counts.items() if most and count == most]


# Words before a thing's name that make it a thing ("the keys", "my glasses", "a cup").
THING_DETERMINERS = ("the", "a", "an", "my", "your", "our", "some", "this", "that", "these", "those")


def named_object_labels(request: str, labels: set[str]) -> list[str]:
    """Object labels the request names with a determiner ("the keys", "my glasses", "a cup"), so
    that a label that is also a common word ("can you help me") does not count."""
    words = words_of(request)
    return sorted(label for label in labels
                  if re.search(rf" (?:{'|'.join(THING_DETERMINERS)}) (?:[a-z]+ )?"
                               rf"{re.escape(words_of(label).strip())}s? ", words))


def named_candidates(request: str, goal: Goal, scene: SceneGraph) -> list[str]:
    """The objects a goal's label may mean (of that label, or of a compound label whose head it is),
    narrowed by the places the request names, nearest first."""
    words = words_of(request)
    label = words_of(goal.object).strip()
    candidates = [o.id for o in scene.objects() if of_kind(o.label, goal.object) and o.status != "missing"]
    places = {c: _place(scene, c) for c in candidates}
    # Where the object is comes right after it ("the mug from the desk in the office and bring it
    # to the counter"); where it must end up does not say which one is meant.
    mention = re.search(rf" {re.escape(label)}s? ", words)
    source = " " + re.split(r" (?:and|to|then|into|onto) ", words[mention.end() - 1:])[0] + " " if mention else " "
    target = {goal.target.replace("_", " "), goal.room.replace("_", " ")} if goal.kind in PLACING_KINDS else set()
    names = {c: [n for n in places[c][1] if n not in target] for c in candidates}
    return scene.nearest_to_robot(most_named(source, names) or most_named(words, names) or candidates)


def of_kind(label: str, kind: str) -> bool:
    """Whether a label names a thing of the kind another label names: itself, or a compound whose
    head it is (an electric_fan is a fan, a table_lamp a lamp)."""
    return label == kind or label.endswith(f"_{kind}")


def pin_named_objects(request: str, goals: list[Goal], scene: SceneGraph) -> list[Goal]:
    """Goals whose request singles out one of several objects ("the mug from the desk") keep that
    one: another mug already on the counter must not count as done. The place the request names
    wins over an id the model chose ("the plate in the fridge" read as the plate on the counter).
    Where the place leaves several and the request does not call the thing "the <label>", for
    which the user is asked which one, any of those will do, and the nearest is kept ("a glass in
    the dining room"; "the novel from the desk", read as a book, with books on two desks)."""
    pinned = []
    for goal in goals:
        of_label = sum(o.label == goal.object for o in scene.objects()) if goal.object else 0
        if of_label > 1:
            named = named_candidates(request, goal, scene)
            if len(named) == 1 or (len(named) < of_label and goal.object_id not in named
                                   and not called_definitely(request, goal.object)):
                goal = goal.model_copy(update={"object_id": named[0]})
        pinned.append(goal)
    return pinned


def called_definitely(request: str, label: str) -> bool:
    """Whether the request calls a thing "the <label>" (or "the red <label>"): one particular one."""
    return re.search(rf" the (?:[a-z]+ )?{re.escape(words_of(label).strip())}s? ", words_of(request)) is not None


def ambiguous_goals(request: str, goals: list[Goal], scene: SceneGraph,
                    can_take: Callable[[str], bool] = lambda _: True) -> list[Question]:
    """A question for each goal whose thing the request singles out among several of its label;
    the candidates the robot `can_take` (its arms reach from beside their furniture) come first."""
    questions = []
    for index, goal in enumerate(goals):
        if not goal.object or goal.object_id or not called_definitely(request, goal.object):
            continue
        candidates = named_candidates(request, goal, scene)
        if len(candidates) > 1:
            taken = [c for c in candidates if can_take(c)]
            candidates = taken + [c for c in candidates if c not in taken]
            labels = [scene.entity(c).label for c in candidates]
            questions.append(Question(index, goal.object, candidates, [_place(scene, c)[0] for c in candidates],
                                      len(taken) if len(taken) < len(candidates) else 0,
                                      [label if label != goal.object else "" for label in labels]))
    return questions


def chosen_candidate(answer: str, question: Question, scene: SceneGraph) -> str | None:
    """The candidate an answer picks ("the second", "2", "the one on the counter", "cup_3"), or
    None when it picks none or several."""
    words = words_of(answer)
    ids = set(re.findall(r"[a-z0-9_]+", answer.lower()))
    exact = [c for c in question.candidates if c in ids]
    if len(exact) == 1:
        return exact[0]
    numbers = {n for word, n in ORDINALS.items() if f" {word} " in words and n <= len(question.candidates)}
    if len(numbers) == 1:
        return question.candidates[numbers.pop() - 1 if -1 not in numbers else -1]
    # "on the table in the kitchen" beats a table in the hall.
    # "The electric one", "the electric fan": a candidate's own label names it too.
    picked = most_named(words, {c: [*_place(scene, c)[1], words_of(scene.entity(c).label).strip()]
                                for c in question.candidates})
    return picked[0] if len(picked) == 1 else None
