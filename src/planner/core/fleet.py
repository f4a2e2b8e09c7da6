"""Questions about a home answered by a fleet of robots: "Is there a mug in the kitchen?".

Each robot keeps what it has seen (room -> things, with when it last looked there) and answers
from that alone, with the embedded model or any policy; an aggregator turns the robots' answers
into one: a debate between the robots here, or a rule (the majority vote, the latest look) or a
central answer model (`planner.core.answer_model`). Exploration choices are made here too: the nearest room not yet
looked into, or the model's choice of where the most unseen things may be.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from planner.core.answer_model import AnswerModelSettings, Question, RobotAnswer, majority_vote
from planner.core.asking import CountingPolicy, LLMUsage, ask_validated, words
from planner.core.files import StrictModel
from planner.core.ports import JUDGEMENT_SCHEMA, Policy, judged, yes_probability_of
from planner.core.scene_graph import SceneGraph


class FleetSettings(StrictModel):
    robots: list[str] = Field(default_factory=list, description="namespaces of the robots whose scene graphs "
                              "answer /fleet/ask, e.g. [robot1, robot2]; empty: every robot whose scene graph appears")
    confidence: bool = Field(default=True, description="each robot's answer carries the model's probability of yes "
                             "(a tie goes to the surer side); false: ~2.5x faster on the embedded server")
    rule: Literal["latest_look", "vote"] = Field(
        default="latest_look", description="how the robots' answers become one without an answer model: latest_look, "
        "the answer of the robot that looked into the room last (the vote when none did); vote: the majority")
    answer_model: AnswerModelSettings | None = Field(default=None, description="a central answer model instead of "
                                                     "the rule; none: the rule")


def label_of(thing: str) -> str:
    """A thing as people say it, as a map label: `coffee mug` -> coffee_mug."""
    return thing.strip().lower().replace(" ", "_")


@dataclass
class RobotMemory:
    """What one robot has seen: when it last looked into each room, and each thing it saw there
    with when it last saw it."""
    robot: str
    looked: dict[str, float] = field(default_factory=dict)            # room -> last look (s)
    seen: dict[str, dict[str, float]] = field(default_factory=dict)   # room -> label -> last sighting (s)

    def look(self, room: str, labels: Sequence[str], time_s: float) -> None:
        self.looked[room] = time_s
        things = self.seen.setdefault(room, {})
        for label in labels:
            things[label] = time_s

    def saw(self, label: str, room: str) -> bool:
        return label in self.seen.get(room, {})

    def since(self, room: str, now_s: float) -> float | None:
        """Seconds since the robot last looked into `room`; None when it never did."""
        return None if room not in self.looked else now_s - self.looked[room]

    def describe(self, rooms: Sequence[str], now_s: float) -> str:
        """A line a room, in the order given: what the robot saw there and how long ago it looked."""
        lines = []
        for room in rooms:
            since = self.since(room, now_s)
            if since is None:
                lines.append(f"- {words(room)}: not looked into")
                continue
            lines.append(f"- {words(room)} (last looked {_ago(since)}): {self._things(room)}")
        return "\n".join(lines)

    def _things(self, room: str) -> str:
        return ", ".join(sorted(words(label) for label in self.seen.get(room, {}))) or "nothing"

    def seen_elsewhere(self, label: str, room: str) -> list[tuple[float, str]]:
        """(last sighting, room) of each room but `room` ('' for none) where the robot saw a thing of
        `label`, oldest first."""
        return sorted((things[label], other) for other, things in self.seen.items() if other != room and label in things)

    def recall(self, room: str, now_s: float) -> str:
        """What the robot saw in one room, as a sentence to put beside a question about it: a small
        model asked about a room finds it there, not in a list of every room."""
        since = self.since(room, now_s)
        if since is None:
            return f"You have not looked into the {words(room)}."
        return f"When you last looked into the {words(room)} ({_ago(since)}), you saw: {self._things(room)}."

    def elsewhere(self, question: Question, now_s: float) -> str:
        """Where else the robot saw a thing of the question's label, as a sentence ('' if nowhere)."""
        rooms = self.seen_elsewhere(question.label, question.room)
        if not rooms:
            return ""
        return f" You saw a {words(question.label)} in the " + " and the ".join(
            f"{words(room)} ({_ago(now_s - at)})" for at, room in reversed(rooms)) + "."


def memory_from_scene(robot: str, scene: SceneGraph) -> RobotMemory:
    """A robot's memory from its scene graph: the things it sees where they are now (not those it
    found missing), and a room as looked into when it last saw anything there."""
    memory = RobotMemory(robot)
    for room in scene.rooms():
        entities = [*scene.furniture(room), *scene.objects(room)]
        if entities:
            memory.looked[room] = max(e.last_seen for e in entities)
        for obj in scene.objects(room):
            if obj.status == "seen":
                things = memory.seen.setdefault(room, {})
                things[obj.label] = max(things.get(obj.label, 0.0), obj.last_seen)
    return memory


def evidence(memory: RobotMemory, question: Question, now_s: float) -> str:
    """What a robot's answer rests on, in words."""
    since = memory.since(question.room, now_s)
    room, thing = words(question.room), words(question.label)
    if since is None:
        return f"never looked into the {room}"
    if memory.saw(question.label, question.room):
        return f"saw a {thing} in the {room} {_ago(now_s - memory.seen[question.room][question.label])}"
    return f"looked into the {room} {_ago(since)} and saw no {thing}"


@dataclass(frozen=True)
class Sighting:
    robot: str
    room: str
    ago_s: float


def sightings(memories: Sequence[RobotMemory], label: str, now_s: float) -> list[Sighting]:
    """Where the robots saw a thing of `label`, the newest sighting first."""
    found = [Sighting(m.robot, room, now_s - at) for m in memories for at, room in m.seen_elsewhere(label, room="")]
    return sorted(found, key=lambda s: s.ago_s)


def sightings_text(label: str, found: Sequence[Sighting], who: bool = True) -> str:
    """"robot_2 saw a mug in the bedroom 3 min ago; ..."; without `who`, one robot's: "saw a mug ..."."""
    if not found:
        return f"No robot has seen a {words(label)}." if who else f"saw no {words(label)} anywhere"
    return "; ".join(f"{s.robot + ' ' if who else ''}saw a {words(label)} in the {words(s.room)} {_ago(s.ago_s)}"
                     for s in found) + ("." if who else "")


QUESTION_PATTERN = re.compile(r"^(?:is|are) there (?:an?|any|some|the)?\s*(?P<thing>.+?) (?:in|inside|at) (?:the )?"
                              r"(?P<room>.+?)\s*\??$", re.IGNORECASE)
WHERE_PATTERN = re.compile(r"^where (?:is|are) (?:an?|any|some|the|my|our)?\s*(?P<thing>.+?)\s*\??$", re.IGNORECASE)


def read_question(text: str, rooms: Sequence[str]) -> Question:
    """"Is there a mug in the kitchen?" -> Question(mug, kitchen); the room must be one of `rooms`
    (as named in the map or in words). "Where is the mug?" -> Question(mug, ""), a question about
    where it was seen. Raises ValueError saying what could not be read."""
    where = WHERE_PATTERN.match(text.strip())
    if where:
        return Question(label_of(where["thing"]), "")
    match = QUESTION_PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"{text!r}: ask as 'Is there a THING in the ROOM?' or 'Where is the THING?'")
    said = match["room"].strip().lower()
    by_words = {words(room).lower(): room for room in rooms} | {room.lower(): room for room in rooms}
    if said not in by_words:
        raise ValueError(f"{text!r}: no room {said!r} in the map; there are {', '.join(sorted(map(words, rooms)))}")
    return Question(label_of(match["thing"]), by_words[said])


def _ago(seconds: float) -> str:
    minutes = round(seconds / 60)
    return "just now" if minutes < 1 else f"{minutes} min ago"


MISSED = ("You may have missed things in a room (your camera sees part of it at a time, not inside closed "
          "cupboards), and people move things after you look.")
ANSWER_SYSTEM = (
    "You are {robot}, one of several robots that share a home with people. Room by room, this is what you "
    "saw when you last looked, and when that was:\n{memory}\n" + MISSED +
    " Answer from what you saw and from where such things are usually kept.")
ANSWER_USER = '{recall}\n{question} Reply {{"fits": true}} for yes, {{"fits": false}} for no.'


class FleetAnswerer:
    """Each robot's answer to a question, from its own memory only. With `confidence` the model's
    probability of yes is read from its token probabilities (a robot's answers then carry how sure
    it was); without, a yes is 1 and a no 0. The embedded llama.cpp server re-reads the whole
    prompt when asked for token probabilities, so there each answer takes ~2.5 s instead of ~1 s,
    the robot's memory being a prompt prefix it otherwise keeps from the last question."""

    def __init__(self, policy: Policy, rooms: Sequence[str], confidence: bool = False):
        self.policy = CountingPolicy(policy)
        self.rooms = list(rooms)
        self.confidence = confidence

    @property
    def usage(self) -> LLMUsage:
        return self.policy.usage

    def system(self, memory: RobotMemory, now_s: float) -> str:
        return ANSWER_SYSTEM.format(robot=memory.robot, memory=memory.describe(self.rooms, now_s))

    def answer(self, memory: RobotMemory, question: Question, now_s: float) -> RobotAnswer:
        """Raises PolicyError when the server fails, ValueError when its reply is not a yes/no."""
        messages = [{"role": "system", "content": self.system(memory, now_s)},
                    {"role": "user", "content": ANSWER_USER.format(recall=memory.recall(question.room, now_s),
                                                                   question=question.text)}]
        p_yes = self.yes_probability(messages)
        return RobotAnswer(memory.robot, p_yes >= 0.5, p_yes, question.room in memory.looked,
                           memory.since(question.room, now_s), memory.saw(question.label, question.room),
                           bool(memory.seen_elsewhere(question.label, question.room)))

    def yes_probability(self, messages: list[dict]) -> float:
        model = self.policy.policy
        reply = judged(model, messages) if self.confidence else model.complete(messages, JUDGEMENT_SCHEMA)
        self.usage.add(reply)
        return yes_probability_of(reply)


class DebateTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    say: str = Field(min_length=1)


TURN_CHARS = 200        # a robot's turn is at most this long, so one long reply cannot crowd the others out
# A server that enforces the schema stops a turn at its length (the embedded one does, and a turn is then
# a few seconds); from one that does not, a longer turn is cut.
DEBATE_TURN_SCHEMA = {"type": "object", "properties": {"say": {"type": "string", "maxLength": TURN_CHARS}},
                      "required": ["say"]}
DEBATE_SYSTEM = (
    "You are {robot}, one of several robots that share a home with people. {recall}{elsewhere} " + MISSED +
    "\nThe robots are asked: {question} Your first answer was {first}. The others may have answered otherwise; "
    "talk it over with them and try to agree on what is true.")
DEBATE_TURN = ("{history}\nYour turn ({robot}). In one sentence, say what you think and why, "
               'as {{"say": "..."}}.')
DEBATE_FINAL = '{history}\nThe talk is over. {question} Give your final answer: {{"fits": true}} for yes, {{"fits": false}} for no.'


@dataclass
class DebateResult:
    answer: bool
    finals: list[RobotAnswer]
    transcript: list[tuple[str, str]]


class Debate:
    """The robots talk in turns for `rounds` rounds, each from its own memory and first answer,
    then each answers again; the final answer is the majority of those."""

    def __init__(self, policy: Policy, rooms: Sequence[str], rounds: int = 2, max_repairs: int = 1,
                 confidence: bool = False):
        self.answerer = FleetAnswerer(policy, rooms, confidence)
        self.rounds = rounds
        self.max_repairs = max_repairs

    @property
    def usage(self) -> LLMUsage:
        return self.answerer.usage

    def decide(self, question: Question, memories: Sequence[RobotMemory], first: Sequence[RobotAnswer],
               now_s: float) -> DebateResult:
        """`first[i]` is `memories[i]`'s answer (a malicious robot's already inverted). Raises
        PolicyError when the server fails."""
        transcript: list[tuple[str, str]] = []
        # Each robot talks from what it knows of the room asked about and where else it saw the thing:
        # its whole memory would be re-read at every turn, robots taking turns on one server.
        systems = [DEBATE_SYSTEM.format(robot=m.robot, recall=m.recall(question.room, now_s),
                                        elsewhere=m.elsewhere(question, now_s), question=question.text,
                                        first="yes" if a.yes else "no")
                   for m, a in zip(memories, first)]
        for _ in range(self.rounds):
            for memory, system in zip(memories, systems):
                prompt = DEBATE_TURN.format(history=_history(transcript), robot=memory.robot)
                turn = ask_validated(self.answerer.policy.asking(DEBATE_TURN_SCHEMA),
                                     [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                                     DebateTurn.model_validate_json, self.max_repairs)
                transcript.append((memory.robot, turn.say.strip()[:TURN_CHARS] if turn else "(says nothing)"))
        finals = []
        for system, answer in zip(systems, first):
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": DEBATE_FINAL.format(history=_history(transcript),
                                                                        question=question.text)}]
            try:
                p_yes = self.answerer.yes_probability(messages)
            except ValueError:       # no readable final answer: the robot keeps its first one
                finals.append(answer)
                continue
            finals.append(replace(answer, yes=p_yes >= 0.5, p_yes=p_yes))
        return DebateResult(majority_vote(finals), finals, transcript)


def _history(transcript: list[tuple[str, str]]) -> str:
    if not transcript:
        return "Nobody has spoken yet."
    return "What was said so far:\n" + "\n".join(f"{robot}: {text}" for robot, text in transcript)


class RoomChoice(BaseModel):
    model_config = ConfigDict(extra="ignore")
    room: str


EXPLORE_SYSTEM = (
    "You are {robot}, a home robot looking around a home to see as many different things as you can in "
    "the time you have. Where you have looked and what you saw:\n{memory}")
EXPLORE_USER = ("You are in the {here}. Rooms you can drive to next, with the seconds it takes:\n{options}\n"
                "Which room will show you the most things you have not seen yet? Reply {{\"room\": \"...\"}}.")


class NearestUnlooked:
    """Coverage: the nearest room not yet looked into; once all were, the one looked into longest ago."""

    def next_room(self, memory: RobotMemory, here: str, travel_s: dict[str, float], now_s: float) -> str | None:
        if not travel_s:
            return None
        unlooked = [room for room in travel_s if room not in memory.looked]
        if unlooked:
            return min(unlooked, key=lambda room: (travel_s[room], room))
        return min(travel_s, key=lambda room: (memory.looked[room], travel_s[room], room))


class ModelGuided:
    """The model picks the room where it expects the most things not yet seen (as an LLM-guided
    explorer would); a reply that names no reachable room falls back to coverage."""

    def __init__(self, policy: Policy, rooms: Sequence[str], max_repairs: int = 1):
        self.policy = CountingPolicy(policy)
        self.rooms = list(rooms)
        self.max_repairs = max_repairs
        self.fallback = NearestUnlooked()

    def next_room(self, memory: RobotMemory, here: str, travel_s: dict[str, float], now_s: float) -> str | None:
        if not travel_s:
            return None
        by_words = {words(room): room for room in travel_s}
        schema = {"type": "object", "properties": {"room": {"type": "string", "enum": sorted(by_words)}},
                  "required": ["room"]}

        def parse(text: str) -> str:
            said = RoomChoice.model_validate_json(text).room.strip().lower()
            if said not in by_words:
                raise ValueError(f"room: {said!r} is not one of the rooms listed")
            return by_words[said]

        options = "\n".join(f"- {words(room)}: {seconds:.0f} s" for room, seconds in sorted(travel_s.items()))
        messages = [{"role": "system", "content": EXPLORE_SYSTEM.format(
                        robot=memory.robot, memory=memory.describe(self.rooms, now_s))},
                    {"role": "user", "content": EXPLORE_USER.format(here=words(here), options=options)}]
        choice = ask_validated(self.policy.asking(schema), messages, parse, self.max_repairs)
        return choice if choice is not None else self.fallback.next_room(memory, here, travel_s, now_s)
