"""The task planner: an LLM as the policy of a ReAct loop.

Each step the model sees the request, the goals, the robot state and a compact history, and
answers `{"thought": ..., "action": ...}` where the action is one of the actions valid now:
perception calls and skills grounded in what the robot has perceived. Perception results,
skill outcomes, failure reasons and explainer suggestions come back as observations. The task
ends when the goals hold in the world state, when the model gives up, on cancel, or when the
step budget is spent.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from planner.core.ambiguity import (Question, ambiguous_goals, chosen_candidate, named_object_labels,
                                    pin_named_objects, room_furniture_name, words_of)
from planner.core.asking import ask_validated
from planner.core.goals import (PLACING_KINDS, Goal, GoalReply, goal_furniture, goal_lacks, goal_met, goal_objects,
                                goal_schema, goal_status)
from planner.core.calls import format_call, parse_call
from planner.core.scene_graph import SceneGraph
from planner.core.skills import SkillCall, SkillPlanner

GIVE_UP = "GIVE_UP()"
ASK_USER = "ASK_USER()"
SEARCH_MAP = "search_map()"
PERCEPTION_ACTIONS = ("get_rooms", "get_objects_in_room", "get_object", "find_objects", "get_robot_state",
                      "search_map")

SYSTEM_PROMPT = """You control a household service robot. You plan one step at a time.
Each step, answer with JSON: a short "thought" on what to do next and why, then an "action" from the valid actions.
Perception actions ask the robot's map: get_rooms(), get_objects_in_room(room), get_object(id), find_objects(label), get_robot_state().
Skills move the robot:
{skills}
The robot must be next to a piece of furniture to PICK from it, PLACE on it, OPEN or CLOSE it.
Things inside a closed fridge, cabinet or drawer can be picked only after OPEN. To bring something to the user,
hold it and go to the room where the user is.
Example: to put cup_1 (on desk_1 in the office) on shelf_2 in the hall: GOTO(desk_1), PICK(cup_1, right), GOTO(shelf_2), PLACE(cup_1, shelf_2, right).
Objects may not be where the map says: after a failure, read the reason and the suggestion, look at the map again, and adapt.
Use ids exactly as the observations give them (e.g. table_1). GIVE_UP() only when the request is impossible.
ASK_USER() puts your "question" to the user, once per task, when the request is unclear and the map cannot tell.
search_map() looks through the whole map for what your "query" asks in plain words ("something to drink")."""

GOAL_PROMPT = """Turn the user's request into goals that can be checked in the world once the request is done.
Kinds of goal:
- holding: the robot ends holding an `object` ("pick up the cup", "take the apple", "grab the keys").
- bring_to_user: the robot brings an `object` to the user, who says me, I or my ("bring me the book", and needs:
  "I'm thirsty" -> something to drink, "I'm hungry" -> something to eat, "I'm cold" -> something warm).
- object_on: an `object` ends on the furniture `target`, in `room` when the request names one ("put the cup on the
  table", "bring the book to the bedroom table", "take the milk out of the fridge and put it on the table").
- object_in: an `object` ends inside a `target` with a door or drawer ({openable}): "put the milk in the fridge".
- robot_in_room: the robot ends in `room` ("go to the kitchen").
- is_open / is_closed: the furniture `target` ends open or closed ("open the fridge").
- clear: nothing is left on the furniture `target` ("clear the table", "tidy the desk").
Goals describe only the end state, never steps on the way: for "go to the table, take the cup and put it on the
shelf" the goal is only the cup on the shelf. A request that says where an object must end has an object_on goal for it,
not holding or bring_to_user. A goal must not be true already; requests ask for a change.
Use only these labels. Objects: {objects}. Furniture: {furniture}. Rooms: {rooms}. The user is in the {user_room}.
The robot can go somewhere, pick, place, open and close; when nothing in the map can meet the request or it needs
another ability, say why: "bring me the piano" when no piano is listed -> {{"goals": [], "impossible": "there is no piano
in the map"}}.
Examples: "take the book from the desk" -> {{"goals": [{{"kind": "holding", "object": "book"}}]}};
"go to the shelf, take the vase and bring it to the hall desk" -> {{"goals": [{{"kind": "object_on", "object": "vase",
"target": "desk", "room": "hall"}}]}} (the shelf is where the vase is now, not where it goes);
"open the drawer" -> {{"goals": [{{"kind": "is_open", "target": "drawer", "room": ""}}]}};
"put the apple on the desk in the office" -> {{"goals": [{{"kind": "object_on", "object": "apple", "target": "desk", "room": "office"}}]}}"""


# What the robot tells the user at the end of a task.
SPOKEN_OUTCOME = {"succeeded": "Done.", "impossible": "I cannot do that: {summary}",
                  "budget_exhausted": "I could not finish the task.", "canceled": "Stopped.",
                  "error": "Something went wrong: {summary}"}


# ---- what the loop talks to ------------------------------------------------------------------
@dataclass
class Observation:
    text: str
    entities: list[str] = field(default_factory=list)


@dataclass
class FailureInfo:
    skill: str
    command: str
    code: str
    reason: str
    context: dict = field(default_factory=dict)


@dataclass
class SkillResult:
    success: bool
    message: str
    failure: FailureInfo | None = None


@dataclass
class SuggestionInfo:
    text: str
    case_ids: list[str]
    scores: list[float]
    # template: one case clearly fits and `text` is its suggestion; compose: several fit about
    # equally and the planner's LLM makes one suggestion of `options` (case id, suggestion,
    # score); none: no case is similar enough.
    fit: Literal["template", "compose", "none"] = "template"
    options: list[tuple[str, str, float]] = field(default_factory=list)


@dataclass
class Recovery:
    """What followed a failed skill in a task: the calls up to the same skill succeeding on the
    same thing, whether it did, and that fix in words another task can use."""
    failure: FailureInfo
    case_ids: list[str]      # the cases whose suggestion the planner got, first the one it followed
    steps: list[str]
    recovered: bool
    fix: str = ""


class Tools(Protocol):
    """The robot as the planner sees it; the task planner node implements it over ROS."""

    def scene(self) -> SceneGraph: ...

    def perceive(self, name: str, args: list[str], focus: frozenset[str] = frozenset()) -> Observation:
        """A perception action; `focus`: object labels the task is about, listed first when a
        room is crowded."""

    def execute_skill(self, call: str) -> SkillResult: ...

    def explain(self, failure: FailureInfo) -> SuggestionInfo | None: ...

    def learn(self, request: str, recoveries: list[Recovery]) -> None:
        """Tell the explainer how the replans after failures went."""

    def ask(self, question: str, timeout_s: float) -> str | None:
        """Put a question to the user; their answer, or None when none came in time."""

    def say(self, text: str) -> None:
        """Tell the user something (spoken where the robot can speak)."""


@dataclass
class PolicyReply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    source: str = ""        # which model and server answered


class PolicyError(RuntimeError):
    """The policy could not answer (server unreachable, out of replies, ...)."""


class RequestImpossible(Exception):
    """The model found, and confirmed when asked again, that the request cannot be done."""


class Policy(Protocol):
    def complete(self, messages: list[dict], schema: dict) -> PolicyReply: ...


class ScriptedPolicy:
    """Replies given in advance, in order: for deterministic tests and replays of recorded runs."""

    def __init__(self, replies: list[str | dict]):
        self._replies = [r if isinstance(r, str) else json.dumps(r) for r in replies]
        self._lock = threading.Lock()
        self.prompts: list[list[dict]] = []

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        with self._lock:
            self.prompts.append(messages)
            if not self._replies:
                raise PolicyError("the scripted policy has no replies left")
            return PolicyReply(self._replies.pop(0))


# ---- configuration and results ---------------------------------------------------------------
class PlannerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step_budget: int = Field(default=30, ge=1)
    max_repairs: int = Field(default=2, ge=0, description="retries of a reply that fails validation")
    history_steps: int = Field(default=12, ge=1, description="most recent actions listed in the prompt")
    confirm_timeout_s: float = Field(default=3.0, ge=0, description="wait for perception to confirm goals")
    robot_state_wait_s: float = Field(default=5.0, ge=0, description="wait for a first robot state at task start")
    repeat_failure_limit: int = Field(default=2, ge=1, description="an action failing this often in a row is withdrawn")
    question_timeout_s: float = Field(default=30.0, ge=0, description="wait for the user to say which object they "
                                                                       "mean; then the nearest is taken")


@dataclass
class TraceStep:
    kind: str
    text: str


@dataclass
class EpisodeResult:
    success: bool
    outcome: str            # succeeded | impossible | budget_exhausted | canceled | error
    summary: str
    steps: int
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


class StepReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thought: str = Field(max_length=1000)
    action: str
    question: str = Field(default="", max_length=300, description="for ASK_USER()")
    query: str = Field(default="", max_length=300, description="for search_map()")


# ---- the action space ------------------------------------------------------------------------
ASKED_OBJECTS = 3   # get_object is offered for this many of a goal's candidates, the nearest
def allowed_actions(scene: SceneGraph, known: set[str], withdrawn: set[str], skills: SkillPlanner,
                    goals: list[Goal], explored: set[str]) -> list[str]:
    """Every action valid now: each skill of the library grounded in what the robot has perceived
    (objects, furniture, rooms, arms) whose preconditions hold in the map, then the perception
    calls about rooms and about what the goals name. The robot state is in every prompt, so
    get_robot_state is not offered; few, relevant choices are what a small model handles well."""
    rooms = scene.rooms()
    furniture = [f.id for f in scene.furniture() if f.id in known]
    objects = [o.id for o in scene.objects() if o.id in known]
    goal_labels = sorted({g.object for g in goals if g.object})
    # When the goals name objects, only those are worth handling, and only put where a goal wants
    # them; an object whose goal is met already stays where it is.
    about_objects = [g for g in goals if g.object or g.kind == "clear"]
    wanted = {obj for g in about_objects if not goal_met(g, scene) for obj in goal_objects(g, scene)}
    relevant = [obj for obj in objects if obj in wanted] if about_objects else objects

    def aimed_at(kinds: tuple[str, ...]) -> list[str]:
        """The perceived furniture that goals of these kinds name."""
        named = {f for g in goals if g.kind in kinds for f in goal_furniture(scene, g)}
        return [f for f in furniture if f in named]
    targets = aimed_at(PLACING_KINDS)
    cleared = set(aimed_at(("clear",)))
    if cleared and not targets:  # what is cleared away may go anywhere else
        targets = [f for f in furniture if f not in cleared]
    actions = []
    openable = [f for f in furniture if scene.entity(f).state]
    # Where the goals' objects are, where they go and what must open or close: while every goal
    # object is where the map says, driving anywhere else, or into rooms not seen yet, is wandering.
    switched = [f for f in aimed_at(("is_open", "is_closed")) if f in openable]
    receiving = [f for f in aimed_at(("object_in",)) if f in openable]
    # Put on a closed one, a thing would end on top of it, not inside.
    on_top = set(aimed_at(("object_on",)))
    shut = {f for f in receiving if scene.entity(f).state == "closed" and f not in on_top}
    supports = {s[1] for obj in relevant if (s := scene.support(obj))}
    enclosing = {s[1] for obj in relevant if (s := scene.support(obj)) and s[0] == "in"}
    lost = any(scene.entity(obj).status == "missing" for obj in relevant)
    worth_going = [f for f in furniture if f in supports or f in targets or f in cleared or f in switched]
    held = any(scene.entity(obj).status == "held" for obj in relevant)
    searching = lost or not (worth_going or held)
    # Opening what holds no goal object and receives none is a detour (and what is put into an
    # open nightstand ends inside it, not on it).
    to_open = [f for f in openable if searching or f in switched or f in receiving or f in supports]
    opening_helps = {f for f in [*receiving, *enclosing] if scene.entity(f).state == "closed"}
    goal_rooms = {g.room for g in goals if g.kind in ("robot_in_room", "bring_to_user")}
    worth_entering = [r for r in rooms if r in goal_rooms or (searching and r not in explored)]
    candidates = {"object": relevant, "furniture": targets or furniture,
                  "place": [*(furniture if searching else worth_going), *worth_entering],
                  "openable": to_open, "arm": scene.robot.arms if scene.robot else [],
                  # Looking around helps where a goal object was not seen where the map had it;
                  # handing over, when something is to be brought to someone.
                  "room": [scene.robot.room] if lost and scene.robot and scene.robot.room else [],
                  "person": [p.id for p in scene.people()] if "bring_to_user" in {g.kind for g in goals} else [],
                  "text": []}
    # Opening takes a free hand: while something must still be opened, the last one is not filled.
    free_arms = [arm for arm in candidates["arm"] if not scene.robot.held.get(arm)]
    keep_free = free_arms if opening_helps and len(free_arms) == 1 else []
    moves, handling = [], []
    for name, spec in skills.library.skills.items():
        moving = any(p.type == "place" for p in spec.params)
        fills_arm = any(pre.check == "arm_free" for pre in spec.preconditions)
        for args in itertools.product(*(candidates[p.type] for p in spec.params)):
            call = SkillCall(name, tuple(args))
            put_on = [a for p, a in zip(spec.params, args) if p.type == "furniture"]
            arms_taken = [a for p, a in zip(spec.params, args) if fills_arm and p.type == "arm"]
            if str(call) in withdrawn or set(put_on) & shut or set(arms_taken) & set(keep_free) \
                    or not skills.check_preconditions(call, scene).ok:
                continue
            actions.append(str(call))
            if moving:
                moves.append(str(call))
            elif about_objects and set(args) & set(relevant) and all(f in targets for f in put_on):
                handling.append(str(call))
            elif set(args) & opening_helps:  # while it is closed, the valid call on it opens it
                handling.append(str(call))
    # With every skill ruled out while goals remain (both hands full at a closed fridge), the
    # narrowing has gone too far: every skill valid here is offered.
    if not actions and goals:
        return allowed_actions(scene, known, withdrawn, skills, [], explored)
    # A goal object can be taken, or put where a goal wants it, here and now: driving off first helps nothing.
    if handling:
        actions = [a for a in actions if a not in moves]
    actions += ["get_rooms()", *(f"get_objects_in_room({room})" for room in rooms)]
    actions += [f"find_objects({label})" for label in goal_labels]
    if searching and objects:  # a goal object is lost or nowhere to be seen: the map may hold another that fits
        actions.append(SEARCH_MAP)
    if about_objects:  # the nearest few: asking about each of fifty cups helps nobody
        actions += [f"get_object({obj})" for obj in scene.nearest_to_robot(relevant)[:ASKED_OBJECTS]]
    actions += [ASK_USER, GIVE_UP]
    return [a for a in actions if a not in withdrawn]


def action_schema(actions: list[str]) -> dict:
    """Thought first, then one of the valid actions (ReAct)."""
    properties = {"thought": {"type": "string", "maxLength": 160}, "action": {"enum": actions}}
    if ASK_USER in actions:
        properties["question"] = {"type": "string", "maxLength": 160}
    if SEARCH_MAP in actions:
        properties["query"] = {"type": "string", "maxLength": 120}
    return {"type": "object", "properties": properties, "required": ["thought", "action"]}


# Words with which users refer to themselves; a request without any asks for nothing to be brought to them.
USER_WORDS = frozenset({"i", "i'm", "im", "i've", "i'd", "me", "my", "mine", "we", "we're", "us", "our", "here"})


def mentions_user(request: str) -> bool:
    return bool(USER_WORDS & set(re.findall(r"[a-z']+", request.lower())))


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
    has no such furniture and that the request does not name for it means any room."""
    words = words_of(request)
    fixed = []
    for goal in goals:
        if goal.target and goal.kind != "bring_to_user":
            named = rooms_named_for(goal.target, words, scene.rooms())
            if named and goal.room not in named:  # where it goes is usually named last
                goal = goal.model_copy(update={"room": named[-1]})
            elif not named and goal.room and not any(f.label == goal.target for f in scene.furniture(goal.room)):
                goal = goal.model_copy(update={"room": ""})
        fixed.append(goal)
    return fixed


def _take_instead(goal: Goal) -> str:
    return f'if the request is to take the {goal.object}, the goal is {{"kind": "holding", "object": "{goal.object}"}}'


def goal_problems(request: str, goals: list[Goal], scene: SceneGraph) -> tuple[list[str], list[str]]:
    """What is wrong with goals read from a request (unknown labels, furniture not where the goal
    says, a kind that contradicts the request's words), and what is only doubtful (a goal true
    already, a place the request does not name): the model may insist on doubtful goals."""
    words = words_of(request)
    furniture = scene.furniture()
    named_furniture = sorted({f.label for f in furniture if f" {_phrase(f.label)} " in words})
    known = ({o.label for o in scene.objects()}, {f.label for f in furniture}, set(scene.rooms()))
    problems, doubts = [], []
    for goal in goals:
        for value, allowed in zip((goal.object, goal.target, goal.room), known):
            if value and value not in allowed:
                problems.append(f"{value!r} is not a known label or room")
        if goal.target and not any(f.label == goal.target for f in scene.furniture(goal.room or None)):
            rooms_with = sorted({f.room for f in furniture if f.label == goal.target})
            problems.append(f"there is no {goal.target}" + (f" in the {goal.room} (room is where the {goal.target} is; "
                                                             f"a {goal.target} is in the {', '.join(rooms_with)})"
                                                             if goal.room and rooms_with else ""))
        if goal.kind in PLACING_KINDS and named_furniture and goal.target not in named_furniture:
            problems.append(f"the request names no {goal.target}; it names {', '.join(named_furniture)}")
        if goal.kind in PLACING_KINDS and not named_furniture and not goal_met(goal, scene):
            doubts.append(f"the request names no furniture for the {goal.object} to go to; {_take_instead(goal)}")
        if goal.kind == "object_on" and re.search(rf" (?:in|into|inside) (?:the |a |an )?{_phrase(goal.target)} ", words) \
                and any(f.label == goal.target and f.state for f in furniture):
            problems.append(f"the request puts the {goal.object} inside the {goal.target}: that is object_in")
        if goal.kind == "bring_to_user" and not mentions_user(request):
            problems.append("bring_to_user is for requests to bring something to the user (me, I, my), and "
                            "this request does not ask that; where it names furniture, use object_on")
    named_objects = named_object_labels(request, known[0])
    if goals and named_objects and not any(goal.object in named_objects for goal in goals):
        # "I can't find my keys" read as an open fridge: the thing the user talks about is lost.
        # Small models take up a goal written out for them far more often than a description of one.
        kind, who = ("bring_to_user", "brought to the user") if mentions_user(request) else ("holding", "taken")
        doubts.append(f"the request is about the {', '.join(map(_phrase, named_objects))}, and no goal has "
                      f"{'it' if len(named_objects) == 1 else 'one of them'} as its object; if the "
                      f"{_phrase(named_objects[0])} must be {who}, the goal is "
                      f'{{"kind": "{kind}", "object": "{named_objects[0]}"}}')
    # Being back in this room at the end is a fair goal beside others, though true now.
    true_now = [goal for goal in goals if goal_met(goal, scene) and not (goal.kind == "robot_in_room" and len(goals) > 1)]
    doubts += [f"'{goal}' is true already" + (f", so {goal.target} is not where the request wants the {goal.object}; "
                                              f"{_take_instead(goal)}" if goal.kind in PLACING_KINDS else "")
               for goal in true_now]
    if true_now:
        doubts.append("goals give the state the request asks for")
    return problems, doubts


@dataclass
class Context:
    """What the model is told of the episode so far: every action with its outcome in one line
    each, and the full text of the latest observations only, so the prompt stays short."""
    done: list[str] = field(default_factory=list)
    latest: list[str] = field(default_factory=list)

    def done_text(self, keep: int) -> str:
        if not self.done:
            return "nothing"
        older = len(self.done) - keep
        return ("(" + str(older) + " earlier actions) " if older > 0 else "") + "; ".join(self.done[-keep:])


def robot_line(scene: SceneGraph, reach_m: float) -> str:
    robot = scene.robot
    near = scene.furniture_near(robot.pose.x, robot.pose.y, reach_m)
    held = [f"{arm} arm holds {obj}" for arm, obj in robot.held.items() if obj]
    return (f"in the {robot.room}, " + (f"next to {near[0]}" if near else "next to nothing") + "; "
            + (", ".join(held) if held else "holds nothing"))


def user_message(request: str, robot: str, goals: list[str], done: str, latest: list[str], actions: list[str]) -> str:
    lines = [f"Request: {request}", f"Robot: {robot}."]
    lines += [f"Goal: {goal}" for goal in goals]
    lines.append(f"Done so far: {done}")
    lines += [f"Observation: {text}" for text in latest]
    lines.append("Valid actions: " + " | ".join(actions))
    return "\n".join(lines)


def _example_turns() -> list[dict]:
    """A worked example in exactly the format of a real step: small models follow the pattern."""
    request = "Put the cup from the desk in the office on the shelf in the hall"
    goal = "a cup on a shelf in the hall: not yet; {where}; target: shelf_2 in the hall."
    steps = [
        ("in the office, next to nothing; holds nothing", "cup_1 is on desk_1 in the office", "nothing",
         "In the office: furniture desk_1 (desk). Objects: cup_1 (cup) on desk_1.",
         ["GOTO(desk_1)", "GOTO(shelf_2)", "GOTO(hall)", "get_rooms()"], "cup_1 is on desk_1; I go there first.", "GOTO(desk_1)"),
        ("in the office, next to desk_1; holds nothing", "cup_1 is on desk_1 in the office", "GOTO(desk_1): done",
         "GOTO(desk_1) succeeded.", ["GOTO(shelf_2)", "GOTO(hall)", "PICK(cup_1, left)", "PICK(cup_1, right)", "get_rooms()"],
         "I am next to desk_1 where cup_1 is; I pick it up.", "PICK(cup_1, right)"),
        ("in the office, next to desk_1; right arm holds cup_1", "cup_1 is held by the robot",
         "GOTO(desk_1): done; PICK(cup_1, right): done", "PICK(cup_1, right) succeeded.",
         ["GOTO(shelf_2)", "GOTO(hall)", "PLACE(cup_1, desk_1, right)", "get_rooms()"], "I hold cup_1; I bring it to shelf_2.", "GOTO(shelf_2)"),
        ("in the hall, next to shelf_2; right arm holds cup_1", "cup_1 is held by the robot",
         "GOTO(desk_1): done; PICK(cup_1, right): done; GOTO(shelf_2): done", "GOTO(shelf_2) succeeded.",
         ["GOTO(desk_1)", "GOTO(office)", "PLACE(cup_1, shelf_2, right)", "get_rooms()"],
         "I am next to shelf_2 holding cup_1; I put it there.", "PLACE(cup_1, shelf_2, right)"),
    ]
    turns = []
    for robot, where, done, observation, actions, thought, action in steps:
        turns.append({"role": "user", "content": user_message(request, robot, [goal.format(where=where)], done, [observation], actions)})
        turns.append({"role": "assistant", "content": json.dumps({"thought": thought, "action": action})})
    return turns


EXAMPLE_TURNS = _example_turns()


_IDS = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_\d+\b")


def mentioned_ids(text: str, scene: SceneGraph) -> set[str]:
    return {token for token in _IDS.findall(text) if scene.has(token)}


# ---- the loop --------------------------------------------------------------------------------
@dataclass
class Acted:
    """A skill or perception action the loop took, with its failure and the cases suggested then."""
    action: str
    failure: FailureInfo | None = None
    case_ids: list[str] = field(default_factory=list)


def general_call(call: str, scene: SceneGraph) -> str:
    """A call with the map's ids turned into what they are, so a fix carries over to other
    homes: GOTO(table_2) -> GOTO(a table), PICK(bottle_1, left) -> PICK(the bottle, left)."""
    name, args = parse_call(call)

    def general(arg: str) -> str:
        if not scene.has(arg):
            return arg
        entity = scene.entity(arg)
        return {"room": arg, "furniture": f"a {entity.label}"}.get(entity.kind, f"the {entity.label}")

    return f"{name}({', '.join(general(a) for a in args)})"


def find_recoveries(acted: list[Acted], success: bool, scene: SceneGraph) -> list[Recovery]:
    """For each failed skill: the calls that followed until the same skill succeeded on the same
    thing (recovered), failed on it again the same way (not recovered), or the task ended (as
    the task did: a way round the failure may have been found)."""
    recoveries = []
    for index, entry in enumerate(acted):
        if entry.failure is None:
            continue
        name, args = parse_call(entry.action)
        steps: list[str] = []
        recovered = success
        for later in acted[index + 1:]:
            steps.append(later.action)
            later_name, later_args = parse_call(later.action)
            if later_name == name and later_args[:1] == args[:1]:
                if later.failure is None or later.failure.code == entry.failure.code:
                    recovered = later.failure is None
                    break
        fix = ""
        if recovered and steps:
            fix = "What worked after this failure before: " + ", then ".join(general_call(s, scene) for s in steps) + "."
        recoveries.append(Recovery(entry.failure, entry.case_ids, steps, recovered, fix))
    return recoveries


COMPOSE_PROMPT = """A robot's skill failed. Similar past failures and what was suggested then are listed.
Write one short suggestion (at most two sentences) for what the robot should do now, using what
fits this failure, and name the ids of the cases you used."""


def compose_messages(failure: FailureInfo, request: str, options: list[tuple[str, str, float]]) -> list[dict]:
    cases = "\n".join(f"- {case_id} (similarity {score:.2f}): {text}" for case_id, text, score in options)
    return [{"role": "system", "content": COMPOSE_PROMPT},
            {"role": "user", "content": f"Request: {request}\nFailed: {failure.skill} [{failure.code}]: "
                                        f"{failure.reason}\nPast cases:\n{cases}"}]


def compose_schema(case_ids: list[str]) -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["suggestion", "case_ids"],
            "properties": {"suggestion": {"type": "string", "maxLength": 400},
                           "case_ids": {"type": "array", "minItems": 1, "items": {"enum": case_ids}}}}


class ComposedSuggestion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suggestion: str = Field(min_length=1, max_length=400)
    case_ids: list[str] = Field(min_length=1)


class TaskPlanner:
    def __init__(self, policy: Policy, tools: Tools, skills: SkillPlanner, settings: PlannerSettings | None = None,
                 on_step: Callable[[TraceStep], None] | None = None):
        self.policy = policy
        self.tools = tools
        self.skills = skills
        self.system_prompt = SYSTEM_PROMPT.format(skills="\n".join(
            f"- {name}({', '.join(p.name for p in spec.params)}): {spec.description}"
            for name, spec in skills.library.skills.items()))
        self.settings = settings or PlannerSettings()
        self.on_step = on_step or (lambda step: None)
        self.cancel_event = threading.Event()

    def _emit(self, kind: str, text: str) -> None:
        self.on_step(TraceStep(kind, text))

    def run(self, request: str) -> EpisodeResult:
        started = time.monotonic()
        stats = {"calls": 0, "prompt": 0, "completion": 0}
        self._emit("request", request)
        acted: list[Acted] = []

        def finish(success: bool, outcome: str, summary: str, steps: int) -> EpisodeResult:
            recoveries = find_recoveries(acted, success, self.tools.scene())
            if recoveries:
                self.tools.learn(request, recoveries)
            result = EpisodeResult(success, outcome, summary, steps, stats["calls"], stats["prompt"],
                                   stats["completion"], time.monotonic() - started)
            self._emit("result", f"{outcome}: {summary} ({steps} steps, {result.llm_calls} LLM calls, "
                                 f"{result.prompt_tokens}+{result.completion_tokens} tokens, {result.seconds:.1f} s)")
            self._say(SPOKEN_OUTCOME[outcome].format(summary=summary))
            return result

        if not self._wait_for(lambda: self.tools.scene().robot is not None, self.settings.robot_state_wait_s):
            self._emit("error", "the robot state is not known (nothing received on /robot/state)")
            return finish(False, "error", "the robot state is unknown", 0)
        try:
            goals = self._extract_goals(request, stats)
        except RequestImpossible as why:
            return finish(False, "impossible", str(why), 0)
        except PolicyError as error:
            self._emit("error", f"could not understand the request: {error}")
            return finish(False, "error", str(error), 0)
        for question in ambiguous_goals(request, goals, self.tools.scene()):
            goals[question.goal] = goals[question.goal].model_copy(update={"object_id": self._settle(question)})
        self._emit("goal", "; ".join(str(g) for g in goals))

        context = Context()
        known: set[str] = set()
        failures_in_row: dict[str, int] = {}
        skill_failing = False  # the last skill failed; looking around since does not change that
        looked: set[str] = set()  # perception calls made since the last skill: asking again tells nothing new
        suggested = False
        asked = False
        # A skill that led from a situation back to one the robot was in before goes round in a
        # circle: it is not offered in that situation again. The move that closes the circle is
        # withdrawn, not the first one, which often was right ("go to the table" before "go back"
        # without picking anything up).
        circular: dict[tuple, set[str]] = {}
        visited: set[tuple] = set()
        last_move: tuple[tuple, str] | None = None
        # The robot looks around where it stands before the first step.
        seen_room = self.tools.scene().robot.room
        explored = {seen_room}
        focus = frozenset(g.object for g in goals if g.object)
        view = self.tools.perceive("get_objects_in_room", [seen_room], focus)
        known |= set(view.entities)
        context.latest = [view.text]
        for step in range(1, self.settings.step_budget + 1):
            if self.cancel_event.is_set():
                return finish(False, "canceled", "canceled by the user", step - 1)
            scene = self.tools.scene()
            if all(goal_met(goal, scene) for goal in goals):
                return finish(True, "succeeded", "the world state satisfies the request", step - 1)
            status = [goal_status(goal, scene) for goal in goals]
            for _, ids in status:
                known |= set(ids)
            situation = (robot_line(scene, self.skills.robot.reach_m), tuple(line for line, _ in status))
            withdrawn = {a for a, n in failures_in_row.items() if n >= self.settings.repeat_failure_limit} | looked
            if last_move and situation in visited:
                circular.setdefault(last_move[0], set()).add(last_move[1])
            visited.add(situation)
            last_move = None
            withdrawn |= circular.get(situation, set())
            # Giving up is for a request the map cannot meet or after a failure, and a suggestion is tried first;
            # a question only when the map cannot tell, once per task: a robot that keeps asking is no help.
            lacking = any(goal_lacks(goal, scene) for goal in goals)
            if suggested or not (skill_failing or lacking):
                withdrawn.add(GIVE_UP)
            if asked or not lacking:
                withdrawn.add(ASK_USER)
            actions = allowed_actions(scene, known, withdrawn, self.skills, goals, explored)
            if not actions:  # an empty choice is no schema a server accepts (llama.cpp crashed on one)
                return finish(False, "impossible", "every action possible here has been tried without reaching "
                                                   "the goals", step - 1)
            prompt = user_message(request, situation[0], list(situation[1]),
                                  context.done_text(self.settings.history_steps), context.latest, actions)
            try:
                reply = self._decide(prompt, actions, stats)
            except PolicyError as error:
                self._emit("error", f"the planner's model failed: {error}")
                return finish(False, "error", str(error), step)
            if reply is None:
                context.latest = ["The last reply was not valid; answer with one of the valid actions."]
                continue
            self._emit("thought", reply.thought)
            if reply.action == GIVE_UP:
                return finish(False, "impossible", reply.thought, step)
            if reply.action == ASK_USER:
                context.latest = [self._ask_user(reply.question)]
                context.done.append(f"{ASK_USER}: asked")
                asked = True
                continue
            # The query travels in the call, so the trace and the history show what was searched for.
            action = format_call("search_map", [reply.query.strip() or request]) if reply.action == SEARCH_MAP \
                else reply.action
            observation, failed = self._act(action, focus, request, stats, acted)
            suggested = failed and "Suggestion:" in observation
            context.latest = [observation]
            is_perception = parse_call(reply.action)[0] in PERCEPTION_ACTIONS
            if is_perception:
                looked.add(reply.action)
            else:
                looked.clear()
                skill_failing = failed
                if not failed:
                    last_move = (situation, reply.action)
            scene = self.tools.scene()
            room = scene.robot.room
            if not failed and room != seen_room:
                # Arriving in a room, the robot sees what is there.
                view = self.tools.perceive("get_objects_in_room", [room], focus)
                self._emit("observation", view.text)
                context.latest.append(view.text)
                known |= set(view.entities)
                seen_room = room
                explored.add(room)
            known |= mentioned_ids(observation, scene)
            if failed:
                failures_in_row[reply.action] = failures_in_row.get(reply.action, 0) + 1
                context.done.append(f"{reply.action}: FAILED")
                if failures_in_row[reply.action] >= self.settings.repeat_failure_limit:
                    context.latest.append(f"{reply.action} failed {failures_in_row[reply.action]} times in a row; "
                                          "it is withdrawn, try something else.")
            else:
                failures_in_row.clear()
                context.done.append(f"{reply.action}: {'looked' if is_perception else 'done'}")
                if self._may_satisfy(reply.action, goals) and self._confirm(goals):
                    return finish(True, "succeeded", "the world state satisfies the request", step)
        return finish(False, "budget_exhausted", f"the step budget of {self.settings.step_budget} is spent",
                      self.settings.step_budget)

    def _ask_user(self, question: str) -> str:
        self._emit("question", question)
        answer = self.tools.ask(question, self.settings.question_timeout_s)
        self._emit("answer", answer or "no answer")
        return f"The user answered: {answer}" if answer else "The user did not answer."

    def _say(self, text: str) -> None:
        self._emit("say", text)
        self.tools.say(text)

    def _settle(self, question: Question) -> str:
        """Ask which object the user means; without a clear answer in time, take the nearest."""
        self._emit("question", question.text)
        answer = self.tools.ask(question.text, self.settings.question_timeout_s)
        choice = chosen_candidate(answer, question, self.tools.scene()) if answer else None
        if choice is None:
            choice, place = question.candidates[0], question.places[0]
            why = f"{answer!r} did not say which one" if answer else "no answer"
            self._emit("answer", f"{why}; taking the nearest {question.label}, the one {place} ({choice})")
            self._say(f"I will take the {question.label} {place}.")
        else:
            self._emit("answer", f"{answer!r}: {choice}")
        return choice

    # ---- one model call, validated --------------------------------------------------------
    def _call(self, messages: list[dict], schema: dict, stats: dict) -> PolicyReply:
        reply = self.policy.complete(messages, schema)
        stats["calls"] += 1
        stats["prompt"] += reply.prompt_tokens
        stats["completion"] += reply.completion_tokens
        if reply.prompt_tokens or reply.seconds:  # scripted replies have neither
            self._emit("llm", f"{reply.prompt_tokens}+{reply.completion_tokens} tokens, {reply.seconds:.2f} s"
                              + (f" ({reply.source})" if reply.source else ""))
        return reply

    def _validated(self, messages: list[dict], schema: dict, stats: dict, parse: Callable[[str], object]):
        """Ask, validate, and on an invalid reply tell the model what was wrong, a bounded number of times."""
        return ask_validated(lambda m: self._call(m, schema, stats), messages, parse, self.settings.max_repairs,
                             lambda problem, text: self._emit("error", f"invalid reply ({problem}): {text[:200]}"))

    def _extract_goals(self, request: str, stats: dict) -> list[Goal]:
        scene = self.tools.scene()
        user_room = scene.robot.room  # the user asks the robot where it stands
        object_labels = sorted({o.label for o in scene.objects()})
        furniture_labels = sorted({f.label for f in scene.furniture()})
        openable_labels = sorted({f.label for f in scene.furniture() if f.state})
        rooms = scene.rooms()
        prompt = GOAL_PROMPT.format(objects=", ".join(object_labels), furniture=", ".join(furniture_labels),
                                    rooms=", ".join(rooms), user_room=user_room,
                                    openable=", ".join(openable_labels) or "none in this map")
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": request}]
        schema = goal_schema(object_labels, furniture_labels, openable_labels, rooms)
        doubted: list[Goal] = []  # the last reply's goals, when they were only doubted, not wrong
        impossible: list[str] = []

        def parse(text: str) -> list[Goal]:
            reply = GoalReply.model_validate_json(text)
            if reply.impossible:
                if len(reply.impossible.split()) < 3:
                    raise ValueError("say in a few words why the request is impossible: what is missing")
                # "There is no fridge" in a home with a fridge is no reason ("no table in the
                # bathroom" may be: the room is named).
                reason = words_of(reply.impossible)
                said_missing = [label for label in [*object_labels, *furniture_labels, *rooms]
                                if f" no {_phrase(label)} " in reason and not rooms_named_for(label, reason, rooms)]
                if said_missing:
                    raise ValueError(f"the map has a {', a '.join(map(_phrase, said_missing))}: look again at the "
                                     "request and give goals")
                if impossible:  # said twice: believed
                    raise RequestImpossible(reply.impossible)
                impossible[:] = [reply.impossible]
                raise ValueError("look again at the labels: if something in the map can meet the request, give goals "
                                 "with it; if not, answer impossible again")
            goals = pin_named_objects(request, rooms_from_request(request, final_goals(
                [g.model_copy(update={"room": user_room}) if g.kind == "bring_to_user" else g for g in reply.goals]),
                scene), scene)
            problems, doubts = goal_problems(request, goals, scene)
            doubted[:] = goals if doubts and not problems else []
            if problems or doubts:
                raise ValueError("; ".join([*problems, *doubts]))
            return goals

        goals = self._validated(messages, schema, stats, parse)
        # The model insists: perhaps there is indeed nothing to do, or nothing that can be done.
        if goals is None and doubted:
            return doubted
        if goals is None and impossible:
            raise RequestImpossible(impossible[0])
        if goals is None:
            raise PolicyError("no valid goals after repairs")
        return goals

    def _decide(self, prompt: str, actions: list[str], stats: dict) -> StepReply | None:
        messages = [{"role": "system", "content": self.system_prompt}, *EXAMPLE_TURNS,
                    {"role": "user", "content": prompt}]

        def parse(text: str) -> StepReply:
            reply = StepReply.model_validate_json(text)
            if reply.action not in actions:
                raise ValueError(f"action {reply.action!r} is not one of the valid actions now")
            if reply.action == ASK_USER and not reply.question.strip().endswith("?"):
                # A statement put to the user only costs the wait for an answer that cannot come.
                raise ValueError(f"{ASK_USER} needs a \"question\" to the user that ends with '?'")
            return reply

        return self._validated(messages, action_schema(actions), stats, parse)

    # ---- acting -----------------------------------------------------------------------------
    def _act(self, action: str, focus: frozenset[str], request: str, stats: dict, acted: list[Acted]
             ) -> tuple[str, bool]:
        name, args = parse_call(action)
        acted.append(Acted(action))
        if name in PERCEPTION_ACTIONS:
            self._emit("perception", action)
            observation = self.tools.perceive(name, args, focus)
            self._emit("observation", observation.text)
            return observation.text, False
        self._emit("skill", action)
        result = self.tools.execute_skill(action)
        if result.success:
            self._emit("observation", result.message)
            return result.message, False
        failure = result.failure or FailureInfo(action, "", "FAILED", result.message)
        acted[-1].failure = failure
        self._emit("failure", f"{failure.skill} failed at {failure.command or 'start'} [{failure.code}]: {failure.reason}")
        observation = f"{action} FAILED [{failure.code}]: {failure.reason}"
        suggestion = self.tools.explain(failure)
        if suggestion is not None:
            if suggestion.fit == "compose":
                suggestion = self._compose(failure, request, suggestion, stats)
            acted[-1].case_ids = list(suggestion.case_ids)
            self._emit("suggestion", f"{suggestion.text} (cases {', '.join(suggestion.case_ids)})")
            observation += f" Suggestion: {suggestion.text}"
        return observation, True

    def _compose(self, failure: FailureInfo, request: str, suggestion: SuggestionInfo, stats: dict) -> SuggestionInfo:
        """One suggestion made by the LLM of several cases that fit about equally; if it cannot,
        the best case's suggestion stands."""
        ids = [case_id for case_id, _, _ in suggestion.options]
        scores = dict(zip(suggestion.case_ids, suggestion.scores))

        def parse(text: str) -> ComposedSuggestion:
            reply = ComposedSuggestion.model_validate_json(text)
            unknown = [i for i in reply.case_ids if i not in ids]
            if unknown:
                raise ValueError(f"case_ids: {', '.join(unknown)} were not among the cases given ({', '.join(ids)})")
            return reply

        try:
            composed = self._validated(compose_messages(failure, request, suggestion.options),
                                       compose_schema(ids), stats, parse)
        except PolicyError as error:
            self._emit("error", f"could not compose a suggestion from cases {', '.join(ids)}: {error}")
            composed = None
        if composed is None:
            return suggestion
        used = list(dict.fromkeys(composed.case_ids))
        return SuggestionInfo(composed.suggestion, used, [scores[i] for i in used], fit="compose",
                              options=suggestion.options)

    def _may_satisfy(self, action: str, goals: list[Goal]) -> bool:
        """A skill that acted on what a goal names, or moved the robot when a goal is about where
        it is, may have finished the task."""
        name, args = parse_call(action)
        if name in PERCEPTION_ACTIONS:
            return False
        scene = self.tools.scene()
        labels = {scene.entity(a).label for a in args if scene.has(a)} | set(args)
        moved = name == "GOTO"
        return any(labels & {goal.object, goal.target, goal.room} - {""}
                   or (moved and goal.kind in ("robot_in_room", "bring_to_user")) for goal in goals)

    def _confirm(self, goals: list[Goal]) -> bool:
        """Goals are met once perception shows them; give it a moment to see the result of a skill."""
        return self._wait_for(lambda: all(goal_met(goal, self.tools.scene()) for goal in goals),
                              self.settings.confirm_timeout_s)

    def _wait_for(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() >= deadline or self.cancel_event.is_set():
                return False
            time.sleep(0.1)
        return True
