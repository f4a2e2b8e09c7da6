"""Reading a request into checkable goals: the prompt, and the checks of the model's goals
against the request's words and the map (labels, rooms named for furniture, steps mistaken for
end states, a kind that contradicts the request)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Literal

from planner.core.ambiguity import THING_DETERMINERS, named_object_labels, pin_named_objects, room_furniture_name, words_of
from planner.core.errors import PolicyError, RequestImpossible
from planner.core.goals import PLACING_KINDS, Goal, GoalReply, furniture_meeting, goal_furniture, goal_met, goal_objects, goal_schema
from planner.core.planning.grounding import FUNCTION_WORDS, Grounding
from planner.core.planning.moved_things import MovedThing, moved_things
from planner.core.ports import Parser
from planner.core.scene_graph import SceneGraph

GOAL_PROMPT = """Turn the user's request into goals that can be checked in the world once the request is done.
Kinds of goal:
- holding: the robot ends holding an `object` ("lift the jar", "hold on to the scarf").
- bring_to_user: the robot brings an `object` to the user, who says me, I or my ("hand me the scarf"); a need the
  user states without naming a thing asks for the object in the map that best meets that need.
- object_on: an `object` ends on the furniture `target`, in `room` when the request names one ("set the jar on the
  workbench", "carry the scarf to the garage workbench", "move the jar out of the pantry onto the workbench"); target ""
  when the request names only the room it goes to ("carry the scarf to the garage").
- object_in: an `object` ends inside a `target` with a door or drawer ({openable}): "store the jar in the pantry".
- robot_in_room: the robot ends in `room` ("head over to the garage").
- is_open / is_closed: the furniture `target` ends open or closed ("shut the pantry").
- clear: nothing is left on the furniture `target` ("empty the workbench").
Goals describe only the end state, never steps on the way: for "walk to the pantry, fetch the jar and leave it on the
workbench" the goal is only the jar on the workbench. A request that says where an object must end has an object_on goal
for it, not holding or bring_to_user. A goal must not be true already; requests ask for a change.
Use only these labels. Objects: {objects}. Furniture: {furniture}. Rooms: {rooms}. The user is in the {user_room}.
The robot can go somewhere, pick, place, open and close; when nothing in the map can meet the request or it needs
another ability, say why: "hand me the canoe" when no canoe is listed -> {{"goals": [], "impossible": "there is no canoe
in the map"}}.
Examples: "fetch the scarf off the hook" -> {{"goals": [{{"kind": "holding", "object": "scarf"}}]}};
"walk to the hook, fetch the scarf and drop it on the garage bench" -> {{"goals": [{{"kind": "object_on", "object": "scarf",
"target": "bench", "room": "garage"}}]}} (the hook is where the scarf is now, not where it goes);
"pull the pantry drawer out" -> {{"goals": [{{"kind": "is_open", "target": "drawer", "room": ""}}]}};
"leave the jar on the workbench in the garage" -> {{"goals": [{{"kind": "object_on", "object": "jar", "target": "workbench", "room": "garage"}}]}}"""  # noqa: E501 (prompt text, word for word)



GOAL_CHECK_PROMPT = """A person asked a home robot: "{request}"
The robot read it as: when it is done, {reading}.
Is that what the person asked for: the things they meant (or, for a need, a thing that meets it), where they
meant, and nothing more? Answer with JSON: fits true or false."""

# Asked of each thing the model chose for a need ("I'm cold" read as a blanket). This narrow question
# separates better than the one about the whole reading: on 30 needs we worded (no suite's), each
# against its right things and 8 wrong ones, the 1.5B's probability of yes ranks a right thing above
# a wrong one 92% of the time, and a right thing first for 28 needs (docs/benchmarks.md has the figures).
NEED_CHECK_PROMPT = """A person says to a home robot: "{request}"
Would bringing them a {thing} give them what they want? Answer with JSON: fits true or false."""

# Asked of each thing the model took for one the request names by a word no label of the map
# contains ("the jumper" read as the sweater, or, in a home without one, "the pineapple" read as a
# book). On 24 other names and 24 near misses we worded (no suite's: "specs" for eyeglasses against
# "pear" for an apple), the 1.5B's probability of yes was at least 0.45 for 19 other names and 11
# near misses (at 0.6: 17 and 1, but a development home's "jumper" for a sweater scored 0.48); with
# the request around the question, or asking "is it the thing they mean", it separated less.
NAME_CHECK_PROMPT = """Is "{word}" another name for a {thing}? Answer with JSON: fits true or false."""


def need_question(request: str, label: str) -> str:
    """The need check's question: would bringing a thing of this label give what the request asks."""
    return NEED_CHECK_PROMPT.format(request=request, thing=_phrase(label))


def name_question(word: str, label: str) -> str:
    """The name check's question: is the word another name for a thing of this label."""
    return NAME_CHECK_PROMPT.format(word=word, thing=_phrase(label))


GOAL_DOUBT = """A check doubts that this is what the request asks: {reading}. Read the request again: which things
it means, where they must end, and nothing more; if nothing in the map meets it, say it is impossible."""

# Said after the doubt when the model chose a thing the request does not name.
SEARCH_FOUND = " A search of the map for what the request asks finds: {found}."
SEARCH_FOUND_NOTHING = " A search of the map finds nothing in it that meets the request."

# LLM+P found no plan: the reading itself may be wrong (a thing too heavy when a lighter one would do).
GOAL_NO_PLAN = """No sequence of the robot's skills reaches that reading in the map as it is now: {why}.{failure}
Read the request again: which things it means, where they must end, and nothing more; if nothing in the map meets
it, say it is impossible."""

# Answers by which a user confirms what the robot read.
YES_WORDS = frozenset({"yes", "yeah", "yep", "sure", "right", "correct", "ok", "okay", "exactly", "please"})


def reading_of(goals: list[Goal]) -> str:
    return "; ".join(str(goal) for goal in goals)


def confirmed(answer: str) -> bool:
    words = re.findall(r"[a-z']+", answer.lower())
    return bool(words) and words[0] in YES_WORDS and not {"no", "not", "nope", "wrong"} & set(words)


# Words with which users refer to themselves; a request without any asks for nothing to be brought to them.
USER_WORDS = frozenset({"i", "i'm", "im", "i've", "i'd", "me", "my", "mine", "we", "we're", "us", "our", "here"})


def mentions_user(request: str) -> bool:
    return bool(USER_WORDS & set(re.findall(r"[a-z']+", request.lower())))


def _named(label: str, said: set[str]) -> bool:
    """Whether words said name a label, even in part ("the water" names the water_bottle)."""
    return any(word in said or f"{word}s" in said for word in _phrase(label).split() if word not in FUNCTION_WORDS)


def thing_words(request: str) -> set[str]:
    """The request's words outside the places it names: "the tangerine on the end table" names no
    table_lamp (the 1.5B took one for the tangerine, and the word "table" hid it from the checks)."""
    text = words_of(request)
    for place in _places_after(request, TOWARDS | FROM):
        text = re.sub(rf" (?:{'|'.join(DETERMINERS)}) {re.escape(place)}(?= )", " ", text)
    return set(text.split())


def chosen_for_need(moved: list[MovedThing], request: str, goals: list[Goal]) -> list[str]:
    """Labels of the things to bring or take that a request asking to move no particular thing
    (`moved`: "I'm cold", "bring me something to eat") does not name: the model chose them to meet
    a need, which is a judgement to check. A particular thing called otherwise is `named_otherwise`'s."""
    if moved:
        return []
    said = thing_words(request)
    return list(dict.fromkeys(goal.object for goal in goals
                              if goal.kind in ("holding", "bring_to_user") and not _named(goal.object, said)))


# Words that say where something goes, and words that end the phrase naming the place.
TOWARDS = frozenset({"to", "onto", "on", "into", "in", "inside"})
FROM = frozenset({"from", "off"})
DETERMINERS = frozenset({"the", "my", "your", "our", "a", "an"})
# Verbs that send a thing somewhere: "put the vase from the cabinet in the dresser" (not "fetch the
# plate on the counter" nor "bring the vase on the bench to me", where "on the" says where it is now),
# and verbs that take one.
PUTTING = re.compile(r" (?:put|place|set|leave|move|store|carry|drop|stick) ")
TAKING = re.compile(r" (?:take|bring|get|fetch|grab|pick|hand|give) ")
SENDING = frozenset({"to", "onto", "into"})
HANDLING = frozenset({"open", "close", "shut", "clear", "empty", "off"})  # what furniture goals do to it
ROBOT_GOES = frozenset({"go", "head", "walk", "come", "way", "get", "run"})  # "make your way to the ..."
THING_GOES = frozenset({"should", "must", "to", "can", "will", "could", "would", "it", "they", "them"})  # "it should go to"
PLACE_ENDS = frozenset({"in", "on", "onto", "into", "inside", "to", "from", "at", "by", "near", "and", "then",
                        "please", "for", "with", "over"})
# Words that relate what follows to another thing ("in the bowl", "next to the lamp", "a vase for the
# flowers", "the bottle of water"): what follows is a place or company, not a thing asked about.
RELATING_WORDS = (PLACE_ENDS - {"and", "then", "please"}) | {"of", "beside", "under", "behind", "above", "below",
                                                             "off", "without"}


def destinations(request: str) -> list[str]:
    """The places a request sends something or the robot to, as said: "over to the chest of drawers
    in the kids' room" gives "chest of drawers" and "kids room"."""
    return _places_after(request, TOWARDS)


def source_places(request: str) -> list[str]:
    """The places a request takes things from, as said: "the book from the bedside table" gives
    "bedside table"."""
    return _places_after(request, FROM)


def _places_after(request: str, markers: frozenset[str], robot: bool | None = None) -> list[str]:
    """The places named after a marker word and a determiner ("to the ..."), clause by clause;
    with `robot` False, not where the robot is told to go ("go to the office and get the plant"),
    with `robot` True, only there."""
    return [phrase for words in clauses(request) for index, word in enumerate(words[:-2])
            if word in markers and words[index + 1] in DETERMINERS
            and (robot is None or _robot_sent(words, index) == robot) and (phrase := _place_from(words, index + 2))]


def _robot_sent(words: list[str], index: int) -> bool:
    """Whether the word at `index` sends the robot: "to" after a verb of going said to the robot
    ("go to", "would you go to", "make your way to"), not to a thing ("it should go to the shelf")."""
    if words[index] not in SENDING or index == 0 or words[index - 1] not in ROBOT_GOES:
        return False
    return index == 1 or words[index - 2] not in THING_GOES


USER_IS = r"\b(?:i m|im|i am|we re|we are)"  # "I'm in the kitchen" as words_of writes it


def user_room(request: str, scene: SceneGraph) -> str:
    """The room the user says they are in ("I'm in the kids' room, bring me ..."), else the robot's:
    a user asks the robot where it stands."""
    for words in clauses(request):
        text = " ".join(words)
        for room in scene.rooms():
            if re.search(rf"{USER_IS} (?:in|at) the {re.escape(_phrase(room))}\b", text):
                return room
    return scene.known_robot.room


def where_user_is(request: str) -> list[str]:
    """The places the user says they are in, as said ("I'm in the office, bring me ..." gives
    "office"): rooms, whatever the map calls them; one is at furniture, not in it."""
    return [place for words in clauses(request)
            for found in re.finditer(rf"{USER_IS} in the (.+)", " ".join(words))
            if (place := _place_from(found[1].split(), 0))]


def rooms_said(request: str, rooms: list[str], others: list[str]) -> list[str]:
    """The rooms of the map a request names, in the order said, but those said as `others` (where
    the user is, where the robot goes); "the kitchen 2" names that room alone, not the kitchen too."""
    words = words_of(request)
    found = [(words.index(f" {_phrase(room)} "), room) for room in rooms if f" {_phrase(room)} " in words
             and not any(_phrase(room) in place for place in others)]
    return [room for _, room in sorted(found) if not any(other != room and f" {_phrase(room)} " in f" {_phrase(other)} "
                                                          for _, other in found)]


def places_sent_to(request: str) -> list[str]:
    """The places, as said, a request sends a thing to: after "to", "onto" or "into" ("take the cup
    to the den"), or after any word of direction when it puts a thing ("put the cup in the den");
    not where it sends the robot."""
    towards = TOWARDS if PUTTING.search(words_of(request)) else SENDING
    return _places_after(request, towards, robot=False)


def robot_destinations(request: str) -> list[str]:
    """The places a request sends the robot to, as said: "go to the office and get the plant"."""
    return _places_after(request, SENDING, robot=True)


def room_sent_to(request: str, goal: Goal, scene: SceneGraph) -> str:
    """The room the request sends the thing of a placing goal to, "" when none: the last room it
    names, not as where the user is or where the robot goes, that none of the things the goal may
    mean is in now ("grab the mug in the kitchen" names where the mug is)."""
    others = where_user_is(request) + robot_destinations(request)
    now = {scene.entity(o).room for o in goal_objects(goal, scene)}
    return next((room for room in reversed(rooms_said(request, scene.rooms(), others)) if room not in now), "")


def room_places(request: str, furniture_labels: list[str], rooms: list[str]) -> list[str]:
    """The places a request names where only a room can be, as said, that are no room of the map:
    where the user says they are, where the robot is sent ("go into the den"), where a
    place that ends in "room" is or is sent to ("the desk in the children's room", "take it to the
    sitting room"), and where furniture a thing
    goes to stands ("put it on the counter in the scullery"). After furniture a thing comes from, "in
    the" may say where it goes ("put the plant from the piano in the cupboard")."""
    furniture_ends = {_phrase(label).split()[-1] for label in furniture_labels}
    places = where_user_is(request)
    for words in clauses(request):
        for index, word in enumerate(words[:-2]):
            if words[index + 1] not in DETERMINERS or not (place := _place_from(words, index + 2)):
                continue
            if _robot_sent(words, index) or word in SENDING and place.split()[-1] == "room" or word == "in" and (
                    place.split()[-1] == "room" or index > 0 and words[index - 1] in furniture_ends
                    and _sent_to_place_before(words, index - 1)):
                places.append(place)
    return [place for place in dict.fromkeys(places)
            if not any(place in (_phrase(room), f"{_phrase(room)} room") for room in rooms)
            and not any(names_furniture(place, label) for label in furniture_labels)]


def _sent_to_place_before(words: list[str], end: int) -> bool:
    """Whether the place said up to `end` is one a thing is sent to: "on the kitchen counter"."""
    start = next((i for i in range(end - 1, max(end - 5, 0) - 1, -1) if words[i] in DETERMINERS), None)
    return start is not None and start > 0 and words[start - 1] in SENDING | {"on"}


def clauses(request: str) -> list[list[str]]:
    """The request's words clause by clause: a place's name ends where its clause does ("I'm in the
    kitchen, bring me the candle" names the kitchen, not a "kitchen bring me the")."""
    return [words for clause in re.split(r"[,.;:!?]", request) if (words := words_of(clause).split())]


def _place_from(words: list[str], start: int) -> str:
    """The name of a place said from `start` on, up to four words ("chest of drawers")."""
    phrase = []
    for following in words[start:start + 4]:
        if following in PLACE_ENDS:
            break
        phrase.append(following)
    return " ".join(phrase)


def handled_furniture(request: str) -> list[str]:
    """The furniture a request opens, closes or clears, as said: "open up the chest of drawers",
    "tidy everything off the desk"."""
    return [phrase for words in clauses(request) for index, word in enumerate(words[:-2]) if word in HANDLING
            and (start := index + 1 + (words[index + 1] == "up")) < len(words) and words[start] in DETERMINERS
            and (phrase := _place_from(words, start + 1))]


def furniture_destinations(request: str, rooms: list[str], sent: bool = False) -> list[str]:
    """The places a request sends something to that are no room ("the kids room", "the garage"),
    nor where the robot goes ("go to the office and get the plant" puts no plant on a desk);
    `sent`: only those after "to", "onto" or "into"."""
    return [p for p in _places_after(request, SENDING if sent else TOWARDS, robot=False) if not room_said(p, rooms)]


def room_said(place: str, rooms: list[str]) -> bool:
    """Whether a place said is a room: one of the map's by name, or one the map may not have ("the kids room")."""
    return place.split()[-1] == "room" or any(place == _phrase(room) for room in rooms)


def sends_somewhere(request: str, rooms: list[str]) -> list[str] | None:
    """Where a request puts a thing: the furniture it names after a putting verb ("put the vase from
    the cabinet in the dresser") or after "to", "onto" or "into" ("bring it to the kitchen counter");
    None when it puts nothing anywhere ("fetch the plate on the counter", "bring the vase on the
    bench to me", where "on the" says where the thing is now)."""
    if PUTTING.search(words_of(request)):
        return furniture_destinations(request, rooms)
    return furniture_destinations(request, rooms, sent=True) or None


def destination_labels(request: str, scene: SceneGraph) -> list[str]:
    """Furniture labels the request names where it sends things ("the book from the desk onto the
    shelf" names the shelf), or, when it says no such place, anywhere."""
    words, places = words_of(request), furniture_destinations(request, scene.rooms())
    return sorted({f.label for f in scene.furniture()
                   if (any(says_label(place, f.label) for place in places) if places else says_label(words, f.label))})


def _room_named(room: str, said: set[str]) -> bool:
    return any(word in said for word in _phrase(room).split() if word != "room")


def named_otherwise(request: str, goals: list[Goal], scene: SceneGraph, moved: list[MovedThing]
                    ) -> dict[str, list[str]]:
    """What the goals name that the request calls by other words, a judgement to check (label or
    room -> the words it may be): an object the request does not name when it asks to move a thing
    (of those `moved`) by a word no label of the map contains, unless it is on furniture the
    request names ("the fruit on the kitchen table"); the furniture a thing goes to when the request
    names no furniture but says where it goes ("the worktop" for the counter); the room to go to
    when the request does not name it ("the lounge" for the living room); the furniture to open,
    close or clear that the request calls otherwise ("the cupboard" for the cabinet)."""
    said, things_said = set(words_of(request).split()), thing_words(request)
    places = destinations(request)
    furniture_places = furniture_destinations(request, scene.rooms())
    targets_named = destination_labels(request, scene)
    handled = handled_furniture(request)
    absent = unknown_things(moved, scene)
    kept_there = kept_on(scene, furniture_named(request, scene)) if absent else set()
    checks: dict[str, list[str]] = {}
    for goal in goals:
        if absent and goal.object and not _named(goal.object, things_said) and goal.object not in kept_there:
            checks[goal.object] = absent
        # Furniture is named by the whole of a place said, or its last words: "the end table" does not
        # name a dining table, nor "the low table" a side table, though "the table" does.
        if goal.kind in PLACING_KINDS and goal.target and furniture_places and not targets_named \
                and not any(names_furniture(place, goal.target) for place in furniture_places):
            checks[goal.target] = furniture_places[:1]
        if goal.kind == "robot_in_room" and places and not _room_named(goal.room, said):
            checks[goal.room] = places[:1]
        if goal.kind in FURNITURE_KINDS and handled and not any(names_furniture(place, goal.target) for place in handled):
            checks[goal.target] = handled[:1]
    return checks


def names_only_its_modifier(phrase: str, label: str) -> bool:
    """Whether a `label` is what a compound `phrase` names only by a word that qualifies its head:
    "the bedside table" is a table by a bed, not the bed (the 1.5B gave the bed 0.69 as another
    name for it), "the dining chair" no dining table; the head of "the chest of drawers" is the chest."""
    said = phrase.split()
    if "of" in said[1:]:
        at = said.index("of")
        head, qualifiers = said[at - 1], said[:at - 1] + said[at + 1:]
    else:
        head, qualifiers = said[-1], said[:-1]
    label_words = words_of(label).split()
    return head not in label_words and any(qualifier.startswith(word) for qualifier in qualifiers
                                           for word in label_words if len(word) > 2)


def final_goals(goals: list[Goal]) -> list[Goal]:
    """Drop goals that only describe a step on the way and contradict the final state: holding an
    object (or bringing it to the user) that must end on furniture, holding one that must end with
    the user, or being in a room other than where an object must end."""
    placed = [g for g in goals if g.kind in (*PLACING_KINDS, "bring_to_user")]
    put_down = {g.object for g in goals if g.kind in PLACING_KINDS}
    kept = []
    for goal in goals:
        if goal.kind == "holding" and any(p.object == goal.object for p in placed):
            continue
        if goal.kind == "bring_to_user" and goal.object in put_down:
            continue
        if goal.kind == "robot_in_room" and any(p.room and p.room != goal.room for p in placed):
            continue
        if goal not in kept:
            kept.append(goal)
    return kept


def _phrase(label: str) -> str:
    return label.replace("_", " ")


def rooms_named_for(furniture_label: str, words: str, rooms: list[str]) -> list[str]:
    """Rooms a request names for a piece of furniture: "the dining table", "the table in the kitchen"."""
    thing = _phrase(furniture_label)
    return [room for room in rooms if f" {room_furniture_name(room, furniture_label)} " in words
            or re.search(rf" {thing} (?:\w+ ){{0,2}}in the {_phrase(room)} ", words)]


def rooms_from_request(request: str, goals: list[Goal], scene: SceneGraph) -> list[Goal]:
    """Each goal's furniture in the room the request names for it. The model often gives the room
    the object is in now ("go to the bathroom, take the towel and put it on the bed"); a room that
    has no such furniture and that the request does not name for it means any room. A thing the
    request sends to a room, naming no furniture, goes on any furniture of that room."""
    words = words_of(request)
    named_furniture = furniture_destinations(request, scene.rooms())
    fixed = []
    for goal in goals:
        if goal.kind in PLACING_KINDS and not named_furniture and not (goal.target and says_label(words, goal.target)) \
                and (room := room_sent_to(request, goal, scene)):
            # "Take the scarf to the garage" read as the scarf on a bench, there or elsewhere: any furniture of
            # the room will do.
            fixed.append(goal.model_copy(update={"kind": "object_on", "target": "", "room": room}))
            continue
        if goal.target and goal.kind != "bring_to_user":
            named = rooms_named_for(goal.target, words, scene.rooms())
            if named and goal.room not in named:  # where it goes is usually named last
                goal = goal.model_copy(update={"room": named[-1]})
            elif not named and goal.room and not any(f.label == goal.target for f in scene.furniture(goal.room)):
                goal = goal.model_copy(update={"room": ""})
        fixed.append(goal)
    return fixed


def inside_from_request(request: str, goals: list[Goal], scene: SceneGraph) -> list[Goal]:
    """"Put the jar in the pantry" read as the jar on the pantry: an object the request puts in,
    into or inside furniture that opens goes inside it, also where the request calls that furniture
    otherwise ("put the mug in the cupboard" read as the mug on a cabinet). Small models repeat the
    kind they chose however often they are told, so the words decide."""
    words = words_of(request)
    said = set(words.split())
    openable = {f.label for f in scene.furniture() if f.state}
    # The first furniture the request sends a thing to, when it sends it in: the target in other words.
    places = furniture_destinations(request, scene.rooms())

    def put_in(phrase: str) -> bool:
        return re.search(rf" (?:in|into|inside) (?:the |a |an )?{re.escape(phrase)} ", words) is not None

    sent_in = bool(places) and put_in(places[0])

    def goes_in(goal: Goal) -> bool:
        return put_in(_phrase(goal.target)) or (sent_in and not _named(goal.target, said))

    return [goal.model_copy(update={"kind": "object_in"})
            if goal.kind == "object_on" and goal.target in openable and goes_in(goal) else goal for goal in goals]


# Goals about a piece of furniture itself, which a request names when it wants them.
FURNITURE_KINDS = ("is_open", "is_closed", "clear")

# All that is on a piece of furniture, taken off it: "tidy everything off the desk", "take all the things from
# the shelf", "clear off the counter". The determiner that follows starts the furniture's name.
CLEARING = re.compile(r" (?:(?:everything|all of it|each thing|every thing|all(?: of)?(?: the)? (?:things|stuff|items"
                      r"|objects)) (?:that is |that s |which is )?(?:off|from|on)|(?:clear|empty)(?: off| out)?) "
                      r"(?:the|my|your|our) ")


def says_label(text: str, label: str) -> bool:
    """Whether the words of `text` (a place said, or a request's `words_of`) hold the label's whole
    name: "the kitchen cabinet" says cabinet, "the end table" says no dining table."""
    return f" {_phrase(label)} " in f" {text} "


def calls_furniture(place: str, label: str) -> bool:
    """Whether a place said names furniture of this label, whole or by its last words ("the table"
    for a dining table)."""
    return _phrase(label) == place or _phrase(label).endswith(f" {place}")


def names_furniture(place: str, label: str) -> bool:
    """Whether a place said names furniture of this label: as `calls_furniture`, or with words of
    its own around the label's name ("the kitchen cabinet"); "the end table" names no dining table."""
    return calls_furniture(place, label) or says_label(place, label)


def furniture_called(place: str, request: str, scene: SceneGraph) -> list[tuple[str, str]]:
    """The furniture (label, room) a place said in the request may be: a label it names whole or by
    its last word ("the table" for a dining table), in the room the request names right after it
    ("the table in the dining room") when it names one, and there the one named for the room when
    several are (the dining table, not the side table); the room is "" when it names none."""
    after = re.search(rf" {re.escape(place)} (?:\w+ ){{0,2}}?in the (.*)", words_of(request))
    room = next((r for r in scene.rooms() if after and f" {after[1]}".startswith(f" {_phrase(r)} ")), "")
    called = sorted({(f.label, room) for f in scene.furniture(room or None)
                     if calls_furniture(place, f.label)})
    named_for_room = [(label, room) for label, room in called if room and _phrase(label) == room_furniture_name(room, place)]
    return named_for_room if len(called) > 1 and named_for_room else called


def cleared_from_request(request: str, goals: list[Goal], scene: SceneGraph) -> list[Goal]:
    """"Tidy everything off the table in the dining room" read as a book held: a request that takes
    everything off one piece of furniture (CLEARING), and sends nothing anywhere, asks for it clear;
    the model's goals for things and furniture the request does not name give way to that. Small models
    read such a request as one thing taken however often they are told, so the words decide."""
    if not goals or sends_somewhere(request, scene.rooms()) is not None:
        return goals
    words = words_of(request)
    found = [furniture_called(place, request, scene) for match in CLEARING.finditer(words)
             if (place := _place_from(words[match.end():].split(), 0))]
    cleared = [Goal(kind="clear", target=label, room=room) for called in found if len(called) == 1
               for label, room in called]
    if not cleared or any(goal.kind == "clear" and goal.target in {c.target for c in cleared} for goal in goals):
        return goals
    said, all_said = thing_words(request), set(words.split())
    # "Clear the table in the kitchen" read as a cabinet cleared: furniture the request does not name goes too.
    kept = [goal for goal in goals if (_named(goal.object, said) if goal.object else _named(goal.target, all_said))]
    return [*cleared, *(goal for goal in kept if goal not in cleared)]


def unknown_things(moved: list[MovedThing], scene: SceneGraph) -> list[str]:
    """The things `moved` said with a word that no label or room of the map contains ("the reading
    lamp", which no label has, though "lamp" is a table_lamp's; "the kitchen roll", which is no
    kitchen): what the user means may not be here."""
    known = {word for name in [*(o.label for o in scene.objects()), *(f.label for f in scene.furniture()),
                               *scene.rooms()] for word in words_of(name).split()}
    return [thing.said for thing in moved
            if any(not {word, word.rstrip("s")} & known for word in thing.said.split() if word not in FUNCTION_WORDS)]


# Verbs that move two things at once ("put the dish ... and the pencil ...").
JOINING_VERBS = "put|place|set|leave|move|store|carry|bring|take|get|fetch|grab"
# A thing's words after "the": "dish", "reading lamp", "bottle of water".
THING_WORDS = r"[a-z]+(?: [a-z]+)?(?: of [a-z]+)?"
# Where a thing is taken from, said after it: " from the counter", " on the kitchen table".
TAKEN_FROM = r"(?: (?:from|on|in|off) the [a-z]+(?: [a-z]+)?)?"


def things_asked_about(request: str, labels: set[str]) -> list[str]:
    """Object labels the request names as things, not as places or company: with a determiner (and
    a word of its own between), not after a word that relates it to another thing ("the mug and
    the plate", "first the basket, then the bowl"; not the bowl of "the apple in the bowl", nor the
    lamp of "the book next to the lamp"), in the order said."""
    words = words_of(request).split()
    found: dict[int, tuple[int, str]] = {}  # a determiner's place -> the longest name said after it
    for label in labels:
        name = words_of(label).split()
        for start in range(len(words)):
            if words[start] not in THING_DETERMINERS or start and words[start - 1] in RELATING_WORDS:
                continue
            for at in (start + 1, start + 2):
                said = words[at:at + len(name)]
                if said[:-1] == name[:-1] and said[-1:] in ([name[-1]], [name[-1] + "s"]):
                    # "the storage box" names a storage box, not a box too.
                    found[start] = max(found.get(start, (0, "")), (len(name) + (at == start + 1), label))
    return list(dict.fromkeys(label for _, (_, label) in sorted(found.items())))


# "Put the reading lamp and the bowl of soup on the bedside table": the verb, two things, and where both go.
JOINED_REQUEST = re.compile(
    rf"\b(?P<verb>(?:{JOINING_VERBS})(?: me)?) "
    rf"(?P<first>the {THING_WORDS}{TAKEN_FROM}) and "
    rf"(?P<second>the {THING_WORDS})(?P<rest>(?: (?:on|in|onto|into|to|over|off|from|back)\b[^.?!,]*)?)"
    r"(?=[.?!,]| please\b|$)", re.IGNORECASE)


def joined_halves(request: str) -> tuple[str, str] | None:
    """A request for two things joined by "and", as two requests for one thing each ("put the mug
    from the desk and the plate on the shelf": "put the mug from the desk on the shelf", "put the
    plate on the shelf"); None when it asks for no two things so."""
    if (match := JOINED_REQUEST.search(request)) is None:
        return None
    before, after = request[:match.start()], request[match.end():]
    return tuple(f"{before}{match['verb']} {match[thing]}{match['rest']}{after}"  # type: ignore[return-value]
                 for thing in ("first", "second"))

# "no throw", "does not have a throw", "there isn't any throw" (words_of writes "isn't" as "isn t").
SAID_MISSING = re.compile(r"(?: no| not have| n t have|n t have| is not| isn t| aren t)(?: an?| any)? "
                          r"([a-z]+(?: [a-z]+){0,2}?)(?= (?:in|here|at|on|to|for|that|which|available|anywhere|and|or) "
                          r"| *$)")


def missing_words(request: str, moved: list[MovedThing], why: str, scene: SceneGraph) -> list[str]:
    """Words of the request the map may lack: what the reason `why` says the home has not ("there
    is no throw here"), and things the request asks to move (`moved`) that no label has a word of."""
    said = words_of(request)
    reasons = [phrase for phrase in SAID_MISSING.findall(words_of(why)) if f" {phrase} " in said]
    return [word for word in dict.fromkeys([*reasons, *unknown_things(moved, scene)])
            if word.split()[-1] not in FUNCTION_WORDS]


def taken_not_placed(request: str, goals: list[Goal], scene: SceneGraph) -> list[Goal]:
    """"Grab the newspaper" read as the newspaper on the bed, "take the bowl on the end table" as the
    bowl on a desk: a placing goal in a request that puts nothing anywhere (`sends_somewhere`), nor
    to a room (`room_sent_to`), is the thing taken, brought to a user who speaks of
    themselves, when the request names no furniture for it to go to or asks for something taken
    ("I'm in the kitchen, bring me the candle on the table": the candle on a desk); with no verb of
    putting, sending or taking, "on the table" is where the thing should be ("make sure the orange
    is on the table"). Small models keep such a goal however often they are told, so the words decide."""
    if sends_somewhere(request, scene.rooms()) is not None:
        return goals
    words = words_of(request)
    # Taken, not put: "on the end table" after a verb of taking says where the thing is now.
    taken = bool(TAKING.search(words)) or (not any(says_label(words, f.label) for f in scene.furniture())
                                           and not furniture_destinations(request, scene.rooms()))
    where_user = user_room(request, scene)
    kept: list[Goal] = []
    for goal in goals:
        if goal.kind in PLACING_KINDS and taken and not room_sent_to(request, goal, scene):
            goal = wanted_goal(goal.object, request, where_user)
        if goal not in kept:
            kept.append(goal)
    return kept


def _instead(goal: Goal, request: str, scene: SceneGraph) -> str:
    """What to read for a placing goal the request cannot mean (the thing is there already, or the
    request names no furniture for it): the place the request sends it to when it says one other
    than where the thing is; else the thing brought to the user when the request is theirs, else held."""
    supports = {f.id: f.label for f in scene.furniture()}
    here = {_phrase(supports.get((scene.furniture_support(o.id) or ("", ""))[1], "")) for o in scene.objects()
            if goal.object in (o.label, o.id)}
    places = [place for place in sends_somewhere(request, scene.rooms()) or [] if place not in here]
    if places:
        return (f'the request sends the {_phrase(goal.object)} to "the {places[-1]}", not where it is now: the goal '
                f"has the furniture the request calls the {places[-1]} as its target")
    return f'if the request is to {"bring" if mentions_user(request) else "take"} the {goal.object}, the goal is ' \
           + _wanted(goal.object, request)


def wanted_goal(label: str, request: str, user_room: str = "") -> Goal:
    """The goal of a thing the request wants: brought to the user (in `user_room`) who speaks of
    themselves, else held."""
    return Goal(kind="bring_to_user", object=label, room=user_room) if mentions_user(request) \
        else Goal(kind="holding", object=label)


def _wanted(label: str, request: str) -> str:
    """wanted_goal written out (small models take up a goal written out far more often than one described)."""
    return f'{{"kind": "{wanted_goal(label, request).kind}", "object": "{label}"}}'


def moved_in_part(moved_said: list[MovedThing], request: str, labels: set[str]) -> tuple[list[str], list[str], list[str]]:
    """Each thing the request moves (of `moved_said`) by a plain name that names no label whole, as
    said ("grab the can of cola": can of cola), its words (can, cola), and the `labels` with one of
    them as a word of their own (a soda_can). A name with words before its noun ("the stuffed toy")
    says which kind it is, not that a label with the noun is meant (a toy car)."""
    plain = [thing for thing in moved_said if [w for w in thing.said.split() if w not in FUNCTION_WORDS] == [
        word for name in thing.words for word in name.split()]]
    phrases = [thing.said for thing in plain]
    moved = [word for thing in plain for word in thing.words]
    if not moved or named_object_labels(request, labels):
        return [], [], []
    singular = {word.removesuffix("s") for word in moved}
    return phrases, moved, sorted(label for label in labels if {*moved, *singular} & set(_phrase(label).split()))


def _moved_otherwise(moved_said: list[MovedThing], request: str, goals: list[Goal], labels: set[str]) -> list[str]:
    """What is wrong where the request moves a thing by a word of some `labels` and no goal's object
    has a word of the thing: "grab the can of cola" read as a clock held, and the robot said Done.
    ("the pot of tea" may still be a teapot)."""
    phrases, moved, partly_named = moved_in_part(moved_said, request, labels)
    if not goals or not partly_named or any(goal.object in partly_named or any(
            word in goal.object.replace("_", "") for word in moved if len(word) > 2) for goal in goals):
        return []
    return [f"the request asks for the {' and the '.join(phrases)}, which no goal's object is called; the map's "
            f"{', '.join(map(_phrase, partly_named))} {'is' if len(partly_named) == 1 else 'are'} called so: "
            f"if the {_phrase(partly_named[0])} must be {'brought to the user' if mentions_user(request) else 'taken'}, "
            f"the goal is {_wanted(partly_named[0], request)}"]


def moved_labels(moved: list[MovedThing], labels: list[str]) -> list[str]:
    """The `labels` that name a thing `moved` as said or by its noun: "grab the pillow", "pick up the
    table lamp", "fetch the red mug"."""
    names = {name for thing in moved for name in (thing.said, thing.words[0])}
    return [label for label in labels if _phrase(label) in names]


def to_other_furniture(facts: ReadingFacts, goals: list[Goal]) -> list[Goal]:
    """A reading whose every goal puts a thing the request names on the furniture where it is now,
    furniture the request sends things to, asks for other furniture of that label where the map has
    more ("both on the shelf", the two on one of three shelves), as a request asks for a change;
    else the goals as they are, as for a thing read apart, which may be meant to join another where
    it is."""
    if facts.part or not goals or not all(
            goal.kind in PLACING_KINDS and goal.target and _named(goal.object, facts.things_said)
            and any(names_furniture(place, goal.target) for place in facts.destinations_said) for goal in goals):
        return goals
    moved = []
    for goal in goals:
        here = furniture_meeting(goal, facts.scene)
        if len(here) != 1 or len(goal_furniture(facts.scene, goal)) < 2:
            return goals
        moved.append(goal.model_copy(update={"other_than": here.pop()}))
    return moved


def true_already(goals: list[Goal], scene: SceneGraph, things_said: set[str], destinations: list[str],
                 part: bool = False) -> list[Goal]:
    """The goals that hold now and are doubted for it, as a request asks for a change. Being back in
    this room at the end is a fair goal beside others; so is a thing the request names on furniture
    it sends it to, while other goals are still to be met ("the pillow and the kit on the desk", the
    pillow on a desk already), as they are where the request is `part` of one read a thing at a time.
    A place said in words no furniture of the map is called by ("the tv unit") is the furniture the
    things still to be moved go to."""
    met = [goal for goal in goals if goal_met(goal, scene)]
    others_to_meet = part or len(met) < len(goals)
    unmet_targets = {goal.target for goal in goals if goal.kind in PLACING_KINDS and goal not in met}
    place_called_otherwise = bool(destinations) and not any(names_furniture(place, f.label) for place in destinations
                                                            for f in scene.furniture())

    def sent_there(goal: Goal) -> bool:
        return any(names_furniture(place, goal.target) for place in destinations) \
            or place_called_otherwise and goal.target in unmet_targets

    return [goal for goal in met
            if not (goal.kind == "robot_in_room" and len(goals) > 1)
            and not (others_to_meet and goal.kind in PLACING_KINDS and _named(goal.object, things_said)
                     and sent_there(goal))]


def target_problems(goal: Goal, destinations_named: list[str], sources: list[str], destinations: list[str]
                    ) -> list[str]:
    """What is wrong with where a placing goal puts its thing: furniture other than the request
    names, or the place the request takes things from where it sends them elsewhere ("the fork from
    the dining table ... on the worktop" read as the fork on a dining table)."""
    if destinations_named:
        return [] if goal.target in destinations_named else [
            f"the request names no {goal.target}; it names {', '.join(destinations_named)}"]
    if not destinations or any(names_furniture(place, goal.target) for place in destinations):
        return []
    back = next((place for place in sources if names_furniture(place, goal.target)), "")
    return [f'the {back} is where the request takes things from; it sends them to "the {destinations[-1]}": the goal '
            f"has the furniture it calls the {destinations[-1]} as its target"] if back else []


def furniture_named(request: str, scene: SceneGraph) -> list[str]:
    """The labels of the map's furniture the request says."""
    words = words_of(request)
    return sorted({f.label for f in scene.furniture() if says_label(words, f.label)})


class ReadingFacts:
    """What the checks of a reading read off the request and the map, once per reading."""

    def __init__(self, request: str, scene: SceneGraph, part: bool, moved: list[MovedThing]):
        self.request, self.scene, self.part, self.moved = request, scene, part, moved
        self.words = words_of(request)
        self.furniture = scene.furniture()
        self.object_labels = {o.label for o in scene.objects()}
        self.known = (self.object_labels, {f.label for f in self.furniture}, set(scene.rooms()))
        self.named_furniture = furniture_named(request, scene)
        self.destinations_named = destination_labels(request, scene)
        self.destinations_said = furniture_destinations(request, scene.rooms())
        self.sources_said = source_places(request)
        # "Empty the table in the kitchen" names the kitchen's dining table, the one table there.
        self.handled = {called[0][0] for place in handled_furniture(request)
                        if len(called := furniture_called(place, request, scene)) == 1}
        self.named_objects = named_object_labels(request, self.object_labels)
        self.things_said = thing_words(request)


Check = Callable[[ReadingFacts, list[Goal]], list[str]]


def _unknown_names(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    return [f"{value!r} is not a known label or room" for goal in goals
            for value, allowed in zip((goal.object, goal.target, goal.room), facts.known) if value and value not in allowed]


def _furniture_not_there(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    found = []
    for goal in goals:
        if goal.target and not any(f.label == goal.target for f in facts.scene.furniture(goal.room or None)):
            rooms_with = sorted({f.room for f in facts.furniture if f.label == goal.target})
            found.append(f"there is no {goal.target}" + (f" in the {goal.room} (room is where the {goal.target} is; "
                                                         f"a {goal.target} is in the {', '.join(rooms_with)})"
                                                         if goal.room and rooms_with else ""))
    return found


def _target_not_as_said(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    return [problem for goal in goals if goal.kind in PLACING_KINDS
            for problem in target_problems(goal, facts.destinations_named, facts.sources_said, facts.destinations_said)]


def _no_place_named(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    return [f"the request names no {'room' if not goal.target else 'furniture'} for the {goal.object} to go to; "
            f"{_instead(goal, facts.request, facts.scene)}" for goal in goals
            if goal.kind in PLACING_KINDS and not goal_met(goal, facts.scene)
            and (not goal.target and goal.room != room_sent_to(facts.request, goal, facts.scene)
                 or goal.target and not facts.named_furniture and not facts.destinations_said)]


def _furniture_not_named(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    # "I'm freezing" read as an open fridge: a need is met by a thing brought, not by furniture.
    return [f"the request names no {_phrase(goal.target)}" + (
        "; a need the user states asks for the object that meets it, brought to them (bring_to_user)"
        if mentions_user(facts.request) else "") for goal in goals
        if goal.kind in FURNITURE_KINDS and goal.target not in facts.named_furniture and goal.target not in facts.handled]


def _brought_to_no_user(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    return ["bring_to_user is for requests to bring something to the user (me, I, my), and this request does not "
            "ask that; where it names furniture, use object_on"] \
        if any(goal.kind == "bring_to_user" for goal in goals) and not mentions_user(facts.request) else []


def _thing_left_out(facts: ReadingFacts, goals: list[Goal], moved: bool) -> list[str]:
    """The thing the request names in no goal, where it is one the request `moved` or not."""
    named = facts.named_objects
    if not goals or not named or any(goal.object in named for goal in goals) \
            or bool(moved_labels(facts.moved, named)) != moved:
        return []
    who = "brought to the user" if mentions_user(facts.request) else "taken"
    return [f"the request is about the {', '.join(map(_phrase, named))}, and no goal has "
            f"{'it' if len(named) == 1 else 'one of them'} as its object; if the {_phrase(named[0])} must be {who}, "
            f"the goal is {_wanted(named[0], facts.request)}"]


def _moved_thing_left_out(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    # "Grab the pillow" read as a clock held, through every repair, and the robot said Done.
    return _thing_left_out(facts, goals, moved=True)


def _talked_of_thing_left_out(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    # "I can't find my keys" read as an open fridge: the thing the user talks about is lost.
    return _thing_left_out(facts, goals, moved=False)


def _moved_as_not_said(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    return _moved_otherwise(facts.moved, facts.request, goals, facts.object_labels)


def moved_left_out(moved: list[MovedThing], goals: list[Goal]) -> list[str]:
    """The things `moved` that no goal moves: those no goal's object is named by, beyond as many as
    the goals have objects no thing said names (each may be one called otherwise: "the fruit" for
    the apple and the banana, "the brolly" for the umbrella)."""
    objects = list(dict.fromkeys(goal.object for goal in goals if goal.object))
    said = [(thing.said, set(thing.said.split())) for thing in moved]
    unnamed = [thing for thing, words in said if not any(_named(label, words) for label in objects)]
    called_otherwise = [label for label in objects if not any(_named(label, words) for _, words in said)]
    return unnamed[len(called_otherwise):]


def _one_of_several_left_out(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    things = things_asked_about(facts.request, facts.object_labels)
    if left_out := [label for label in things if not any(goal.object == label for goal in goals)]:
        if len(left_out) < len(things):  # none of them: the check of a thing left out, or the model's reason
            # "Put the mug and the plate on the shelf" read as the mug alone: half done, reported done.
            return [f"the request names the {' and the '.join(map(_phrase, things))}, and no goal has the "
                    f"{_phrase(left_out[0])}; each thing the request asks about needs a goal of its own"]
    elif goals and (left_out := moved_left_out(facts.moved, goals)):
        # The same, with a thing called by a word no label has ("the dish from the counter and the pencil").
        return [f"the request asks for the {' and the '.join(t.said for t in facts.moved)}, and no goal moves the "
                f"{left_out[0]}; each thing the request asks about needs a goal of its own"]
    return []


def kept_on(scene: SceneGraph, furniture_labels: list[str]) -> set[str]:
    """The labels of things on furniture of the labels a request names: "the fruit on the kitchen
    table" names what is kept there."""
    named_ids = {f.id for f in scene.furniture() if f.label in furniture_labels}
    return {o.label for o in scene.objects() if (scene.furniture_support(o.id) or ("", ""))[1] in named_ids}


def _only_furniture_named(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    kept_there = kept_on(facts.scene, facts.named_furniture)
    unnamed = [goal.object for goal in goals if goal.object and not _named(goal.object, facts.things_said)
               and goal.object not in kept_there]
    if not unnamed or not facts.named_furniture or facts.named_objects or mentions_user(facts.request) \
            or unknown_things(facts.moved, facts.scene):
        return []
    # "Tidy everything off the nightstand" read as a candle from elsewhere put on the nightstand.
    place = facts.named_furniture[0]
    return [f"the request names no {_phrase(unnamed[0])}, only the {_phrase(place)}; if it asks to take everything "
            f'off the {_phrase(place)}, the goal is {{"kind": "clear", "target": "{place}"}}']


def _room_left_out(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    # "The vase belongs in the study" read as the vase held: the request's place is left out ("the vase in
    # the hall", where a vase is, says which).
    if not goals or facts.part or any(goal.room or goal.target for goal in goals):
        return []
    things_are_in = {facts.scene.entity(o).room for goal in goals for o in goal_objects(goal, facts.scene)}
    rooms = [room for room in rooms_said(facts.request, facts.scene.rooms(), where_user_is(facts.request))
             if room not in things_are_in]
    return [f"the request names the {_phrase(rooms[0])}, and no goal has a room or furniture; if a thing must end "
            f'there, the goal is {{"kind": "object_on", "object": ..., "target": "", "room": "{rooms[0]}"}}'] if rooms else []


def _true_already(facts: ReadingFacts, goals: list[Goal]) -> list[str]:
    true_now = true_already(goals, facts.scene, facts.things_said, facts.destinations_said, facts.part)
    return [f"'{goal}' is true already" + (f", so {goal.target or 'the ' + _phrase(goal.room)} is not where the request "
                                           f"wants the {goal.object}; {_instead(goal, facts.request, facts.scene)}"
                                           if goal.kind in PLACING_KINDS else "") for goal in true_now] \
        + (["goals give the state the request asks for"] if true_now else [])


# The checks of a reading, each "wrong" (the model must give other goals) or a "doubt" (the model may
# insist: perhaps the request does mean it), in the order their findings are told to the model.
GOAL_CHECKS: tuple[tuple[str, Literal["wrong", "doubt"], Check], ...] = (
    ("unknown names", "wrong", _unknown_names),
    ("furniture not there", "wrong", _furniture_not_there),
    ("target not as said", "wrong", _target_not_as_said),
    ("brought to no user", "wrong", _brought_to_no_user),
    ("moved thing left out", "wrong", _moved_thing_left_out),
    ("moved as not said", "wrong", _moved_as_not_said),
    ("no place named", "doubt", _no_place_named),
    ("furniture not named", "doubt", _furniture_not_named),
    ("talked-of thing left out", "doubt", _talked_of_thing_left_out),
    ("one of several left out", "doubt", _one_of_several_left_out),
    ("only furniture named", "doubt", _only_furniture_named),
    ("room left out", "doubt", _room_left_out),
    ("true already", "doubt", _true_already),
)


def goal_problems(request: str, goals: list[Goal], scene: SceneGraph, part: bool = False,
                  moved: list[MovedThing] | None = None) -> tuple[list[str], list[str]]:
    """What is wrong with goals read from a request (unknown labels, furniture not where the goal
    says, a kind that contradicts the request's words), and what is only doubtful (a goal true
    already, a place the request does not name): the model may insist on doubtful goals. A `part`
    is one thing of a request for several, read apart from the others; `moved`, the things the
    request asks to move (`moved_things`)."""
    return judged_by_checks(ReadingFacts(request, scene, part, moved or []), goals)


def judged_by_checks(facts: ReadingFacts, goals: list[Goal]) -> tuple[list[str], list[str]]:
    """`goal_problems` of the request and map `facts` were read off."""
    found: dict[str, list[str]] = {"wrong": [], "doubt": []}
    for _, severity, check in GOAL_CHECKS:
        found[severity] += check(facts, goals)
    return found["wrong"], found["doubt"]


class GoalReader:
    """The goal step for one request in one map: the prompt and schema to ask with, the check of
    each reply (a ValueError says what to redo), and the verdict once the repairs are spent."""

    def __init__(self, request: str, scene: SceneGraph, grounding: Grounding | None = None, part: bool = False,
                 parser: Parser | None = None):
        self.said = request
        self.part = part  # one thing of a request for several, read apart
        self.grounding = grounding
        # The checks read the request in the map's words: "put it in the fridge" names the refrigerator.
        self.request = grounding.text if grounding is not None else request
        self.moved = moved_things(parser, self.request)  # none without a parser: the checks of things moved are off
        self.scene = scene
        self.facts = ReadingFacts(self.request, scene, part, self.moved)  # the same for every reply
        self.user_room = user_room(self.request, scene)
        self.object_labels = sorted({o.label for o in scene.objects()})
        self.furniture_labels = sorted({f.label for f in scene.furniture()})
        self.openable_labels = sorted({f.label for f in scene.furniture() if f.state})
        self.rooms = scene.rooms()
        self.doubted: list[Goal] = []  # the last reply's goals, when they were only doubted, not wrong
        self.impossible = ""  # why the model said the request cannot be done, once

    def messages(self) -> list[dict]:
        prompt = GOAL_PROMPT.format(objects=", ".join(self.object_labels), furniture=", ".join(self.furniture_labels),
                                    rooms=", ".join(self.rooms), user_room=self.user_room,
                                    openable=", ".join(self.openable_labels) or "none in this map")
        note = f"\n(In the map's labels: {self.grounding.note()})" if self.grounding and self.grounding.matches else ""
        return [{"role": "system", "content": prompt}, {"role": "user", "content": self.said + note}]

    def schema(self) -> dict:
        return goal_schema(self.object_labels, self.furniture_labels, self.openable_labels, self.rooms)

    def parse(self, text: str) -> list[Goal]:
        data = json.loads(text)
        if isinstance(data, dict) and data.get("goals") and isinstance(data.get("impossible"), str) \
                and self._said_missing(data["impossible"]):
            data["impossible"] = ""  # goals beside "there is no cabinet" in a home with one: the goals stand
        if isinstance(data, dict) and isinstance(data.get("goals"), list):
            data["goals"] = [self._placed_somewhere(goal) for goal in data["goals"]]
        reply = GoalReply.model_validate(data)
        if reply.impossible:
            self._check_impossible(reply.impossible)
        goals, problems, doubts = self._judged(reply.goals)
        self.doubted = goals if doubts and not problems else []
        if problems or doubts:
            raise ValueError("; ".join(dict.fromkeys([*problems, *doubts])))  # one line for goals alike
        return goals

    def _placed_somewhere(self, goal):
        """A goal of the reply that puts a thing on no furniture in no room names the thing and no
        place: it is the thing wanted, as a place made up where the request names none is
        (taken_not_placed); the checks doubt that where the request names a place. Sent back as
        incomplete instead, the small model gave it again until the repairs were spent."""
        if isinstance(goal, dict) and goal.get("kind") == "object_on" and goal.get("object") \
                and isinstance(goal["object"], str) and not goal.get("target") and not goal.get("room"):
            wanted = wanted_goal(goal["object"], self.request)
            return {"kind": wanted.kind, "object": wanted.object}
        return goal

    def _judged(self, goals: list[Goal]) -> tuple[list[Goal], list[str], list[str]]:
        """The goals of a reading, repaired where the request says more than they do, and what the
        checks find wrong and doubtful in them."""
        goals = final_goals([g.model_copy(update={"room": self.user_room}) if g.kind == "bring_to_user" else g
                             for g in goals])
        for repair in (taken_not_placed, rooms_from_request, inside_from_request, cleared_from_request,
                       pin_named_objects):
            goals = repair(self.request, goals, self.scene)
        goals = to_other_furniture(self.facts, goals)
        problems, doubts = judged_by_checks(self.facts, goals)
        return goals, problems, doubts

    def _check_impossible(self, why: str) -> None:
        """An 'impossible' is believed when said twice with a reason the map does not contradict."""
        if len(why.split()) < 3:
            raise ValueError("say in a few words why the request is impossible: what is missing")
        said_missing = self._said_missing(why) + self._there_after_all(why)
        if said_missing:
            raise ValueError(f"the map has a {', a '.join(map(_phrase, said_missing))}: look again at the "
                             "request and give goals")
        if self.impossible:
            raise RequestImpossible(why)
        self.impossible = why
        raise ValueError("look again at the labels: if something in the map can meet the request, give goals "
                         "with it; if not, answer impossible again")

    def _said_missing(self, why: str) -> list[str]:
        """What a reason says the home has not and the map has: "there is no fridge" in a home with a
        fridge is no reason, nor "no loaf" where the request's loaf is the map's bread ("no table in
        the bathroom" may be: the room is named)."""
        reason = words_of(why)
        # "There is no loaf" where the loaf was grounded as the bread says the same of the bread.
        other_names = {match.phrase: match.label for match in (self.grounding.matches if self.grounding else ())}
        return list(dict.fromkeys(
            [label for label in [*self.object_labels, *self.furniture_labels, *self.rooms]
             if f" no {_phrase(label)} " in reason and not rooms_named_for(label, reason, self.rooms)]
            + [label for phrase, label in other_names.items() if f" no {phrase} " in reason]))

    def _there_after_all(self, why: str) -> list[str]:
        """What a reason says a room has not, where the map has a thing of that kind in that room:
        "no cabinet in the kitchen" where the kitchen has a kitchen cabinet."""
        reason = words_of(why)
        return list(dict.fromkeys(
            entity.label for entity in [*self.scene.objects(), *self.scene.furniture()]
            if entity.room and re.search(rf" no (?:\w+ )?{re.escape(_phrase(entity.label).split()[-1])}s? (?:\w+ ){{0,2}}"
                                         rf"in the {re.escape(_phrase(entity.room))} ", reason)))

    def settle(self, goals: list[Goal] | None) -> list[Goal]:
        """The goals of a valid reply; when none came, what the model insisted on: doubted goals
        (perhaps there is indeed nothing to do), completed when they leave out things the request
        names, or an impossible request."""
        if goals is not None:
            return goals
        if self.doubted:
            return self._completed(self.doubted)
        if self.impossible:
            raise RequestImpossible(self.impossible)
        if wanted := self._taken_as_said():
            return wanted
        raise PolicyError("no valid goals after repairs")

    def _completed(self, goals: list[Goal]) -> list[Goal]:
        """Goals that send things to one place but leave out a thing the request names with them
        ("the duvet and the pillow on the desk" read as the duvet through every repair), with a
        goal sending it there too, when the checks then find nothing to doubt; else as they are."""
        placing = {(goal.kind, goal.target, goal.room) for goal in goals}
        if len(placing) != 1 or next(iter(placing))[0] not in PLACING_KINDS:
            return goals
        kind, target, room = next(iter(placing))
        left_out = [label for label in things_asked_about(self.request, set(self.object_labels))
                    if not any(goal.object == label for goal in goals)]
        if not left_out:
            return goals
        completed, problems, doubts = self._judged(
            goals + [Goal(kind=kind, object=label, target=target, room=room) for label in left_out])
        return goals if problems or doubts else completed

    def left_out(self, goals: list[Goal]) -> list[str]:
        return moved_left_out(self.moved, goals)

    def _taken_as_said(self) -> list[Goal]:
        """The things a request that puts nothing on furniture moves by their map labels ("grab the
        pillow"), each taken to the room it sends them to ("take the pillow to the bedroom"), else
        taken (or brought to a user who speaks of themselves): the reading its words give when the
        model's never passed the checks."""
        if sends_somewhere(self.request, self.rooms) is not None or any(
                thing.sent_to and not room_said(thing.sent_to, self.rooms) for thing in self.moved):
            return []  # "could the mug go on the shelf" puts it on furniture, which the words alone do not read
        goals = []
        for label in moved_labels(self.moved, named_object_labels(self.request, set(self.object_labels))):
            room = room_sent_to(self.request, Goal(kind="holding", object=label), self.scene)
            goals.append(Goal(kind="object_on", object=label, room=room) if room
                         else wanted_goal(label, self.request, self.user_room))
        return goals
