"""The task planner: an LLM as the policy of a ReAct loop.

Each step the model sees the request, the goals, the robot state and a compact history, and
answers `{"thought": ..., "action": ...}` where the action is one of the actions valid now:
perception calls and skills grounded in what the robot has perceived. Perception results,
skill outcomes, failure reasons and explainer suggestions come back as observations. The task
ends when the goals hold in the world state, when the model gives up, on cancel, or when the
step budget is spent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.core.goals import Goal, GoalReply, goal_met, goal_schema
from planner.core.scene_graph import SceneGraph
from planner.core.skills import parse_call

GIVE_UP = "GIVE_UP()"
PERCEPTION_ACTIONS = ("get_rooms", "get_objects_in_room", "get_object", "find_objects", "get_robot_state")

SYSTEM_PROMPT = """You control a household service robot. You plan one step at a time.
Each step, answer with JSON: {"thought": "<one short sentence of reasoning>", "action": "<one action from the list>"}.
Perception actions ask the robot's map: get_rooms(), get_objects_in_room(room), get_object(id), find_objects(label), get_robot_state().
Skills move the robot: GOTO(place) drives next to a piece of furniture or into a room; PICK(object, arm) needs the object within reach;
PLACE(object, furniture, arm) needs the object held and the furniture within reach.
Objects may not be where the map says: after a failure, read the reason and the suggestion, look at the map again, and adapt.
Use ids exactly as the observations give them (e.g. table_1). GIVE_UP() only when the request is impossible."""

GOAL_PROMPT = """Turn the user's request into goals that can be checked in the world.
Kinds: object_on (an object with label `object` ends on furniture with label `target`, in `room` if the request names one),
holding (the robot ends holding an object with label `object`), robot_in_room (the robot ends in `room`).
Use only the labels and rooms listed. Leave unused fields as "".
Known object labels: {objects}. Furniture labels: {furniture}. Rooms: {rooms}.
Example: "put the apple on the desk in the office" -> {{"goals": [{{"kind": "object_on", "object": "apple", "target": "desk", "room": "office"}}]}}"""


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


class Tools(Protocol):
    """The robot as the planner sees it; the task planner node implements it over ROS."""

    def scene(self) -> SceneGraph: ...

    def perceive(self, name: str, args: list[str]) -> Observation: ...

    def execute_skill(self, call: str) -> SkillResult: ...

    def explain(self, failure: FailureInfo) -> SuggestionInfo | None: ...


@dataclass
class PolicyReply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


class PolicyError(RuntimeError):
    """The policy could not answer (server unreachable, out of replies, ...)."""


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
    history_steps: int = Field(default=12, ge=1, description="recent steps kept in full in the prompt")
    observation_chars: int = Field(default=600, ge=80)
    confirm_timeout_s: float = Field(default=3.0, ge=0, description="wait for perception to confirm goals")
    repeat_failure_limit: int = Field(default=2, ge=1, description="an action failing this often in a row is withdrawn")


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


# ---- the action space ------------------------------------------------------------------------
def allowed_actions(scene: SceneGraph, known: set[str], failed_out: set[str]) -> list[str]:
    """Every action valid now, grounded in what exists and what the robot has perceived."""
    robot = scene.robot
    rooms = scene.rooms()
    furniture = [f.id for f in scene.furniture() if f.id in known]
    objects = [o.id for o in scene.objects() if o.id in known]
    labels = scene.labels()
    actions = ["get_rooms()", "get_robot_state()"]
    actions += [f"get_objects_in_room({room})" for room in rooms]
    actions += [f"get_object({obj})" for obj in objects]
    actions += [f"find_objects({label})" for label in labels]
    actions += [f"GOTO({place})" for place in [*furniture, *rooms]]
    if robot is not None:
        free_arms = [arm for arm in robot.arms if not robot.held.get(arm)]
        held = {obj: arm for arm, obj in robot.held.items() if obj}
        actions += [f"PICK({obj}, {arm})" for obj in objects if obj not in held for arm in free_arms]
        actions += [f"PLACE({obj}, {place}, {arm})" for obj, arm in held.items() for place in furniture]
    actions.append(GIVE_UP)
    return [a for a in actions if a not in failed_out]


def action_schema(actions: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {"thought": {"type": "string", "maxLength": 300}, "action": {"enum": actions}},
        "required": ["thought", "action"],
    }


_IDS = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_\d+\b")


def mentioned_ids(text: str, scene: SceneGraph) -> set[str]:
    return {token for token in _IDS.findall(text) if scene.has(token)}


# ---- the loop --------------------------------------------------------------------------------
class TaskPlanner:
    def __init__(self, policy: Policy, tools: Tools, settings: PlannerSettings | None = None,
                 on_step: Callable[[TraceStep], None] | None = None):
        self.policy = policy
        self.tools = tools
        self.settings = settings or PlannerSettings()
        self.on_step = on_step or (lambda step: None)
        self.cancel_event = threading.Event()

    def _emit(self, kind: str, text: str) -> None:
        self.on_step(TraceStep(kind, text))

    def run(self, request: str) -> EpisodeResult:
        started = time.monotonic()
        stats = {"calls": 0, "prompt": 0, "completion": 0}
        self._emit("request", request)

        def finish(success: bool, outcome: str, summary: str, steps: int) -> EpisodeResult:
            result = EpisodeResult(success, outcome, summary, steps, stats["calls"], stats["prompt"],
                                   stats["completion"], time.monotonic() - started)
            self._emit("result", f"{outcome}: {summary} ({steps} steps, {result.llm_calls} LLM calls, "
                                 f"{result.prompt_tokens}+{result.completion_tokens} tokens, {result.seconds:.1f} s)")
            return result

        try:
            goals = self._extract_goals(request, stats)
        except PolicyError as error:
            self._emit("error", f"could not understand the request: {error}")
            return finish(False, "error", str(error), 0)
        self._emit("goal", "; ".join(str(g) for g in goals))

        history: list[str] = []
        known: set[str] = set()
        failures_in_row: dict[str, int] = {}
        state = self.tools.perceive("get_robot_state", [])
        known |= set(state.entities)
        history.append(f"Observation: {state.text}")
        for step in range(1, self.settings.step_budget + 1):
            if self.cancel_event.is_set():
                return finish(False, "canceled", "canceled by the user", step - 1)
            if all(goal_met(goal, self.tools.scene()) for goal in goals):
                return finish(True, "succeeded", "the world state satisfies the request", step - 1)
            scene = self.tools.scene()
            withdrawn = {a for a, n in failures_in_row.items() if n >= self.settings.repeat_failure_limit}
            actions = allowed_actions(scene, known, withdrawn)
            try:
                reply = self._decide(request, goals, history, actions, stats)
            except PolicyError as error:
                self._emit("error", f"the planner's model failed: {error}")
                return finish(False, "error", str(error), step)
            if reply is None:
                history.append("Observation: your reply was not valid; answer with one listed action.")
                continue
            self._emit("thought", reply.thought)
            history.append(f"Thought: {reply.thought}\nAction: {reply.action}")
            if reply.action == GIVE_UP:
                return finish(False, "impossible", reply.thought, step)
            observation, failed = self._act(reply.action)
            known |= mentioned_ids(observation, self.tools.scene())
            history.append(f"Observation: {observation}")
            if failed:
                failures_in_row[reply.action] = failures_in_row.get(reply.action, 0) + 1
                if failures_in_row[reply.action] >= self.settings.repeat_failure_limit:
                    history.append(f"Observation: {reply.action} failed {failures_in_row[reply.action]} times in a row; "
                                   "it is withdrawn, try something else.")
            else:
                failures_in_row.clear()
                if self._may_satisfy(reply.action, goals) and self._confirm(goals):
                    return finish(True, "succeeded", "the world state satisfies the request", step)
        return finish(False, "budget_exhausted", f"the step budget of {self.settings.step_budget} is spent",
                      self.settings.step_budget)

    # ---- one model call, validated --------------------------------------------------------
    def _call(self, messages: list[dict], schema: dict, stats: dict) -> PolicyReply:
        reply = self.policy.complete(messages, schema)
        stats["calls"] += 1
        stats["prompt"] += reply.prompt_tokens
        stats["completion"] += reply.completion_tokens
        if reply.prompt_tokens or reply.seconds:  # scripted replies have neither
            self._emit("llm", f"{reply.prompt_tokens}+{reply.completion_tokens} tokens, {reply.seconds:.2f} s")
        return reply

    def _validated(self, messages: list[dict], schema: dict, stats: dict, parse: Callable[[str], object]):
        """Ask, validate, and on an invalid reply tell the model what was wrong, a bounded number of times."""
        for attempt in range(self.settings.max_repairs + 1):
            reply = self._call(messages, schema, stats)
            try:
                return parse(reply.text)
            except (ValueError, ValidationError) as error:
                problem = _short_error(error)
                self._emit("error", f"invalid reply ({problem}): {reply.text[:200]}")
                messages = [*messages, {"role": "assistant", "content": reply.text},
                            {"role": "user", "content": f"That reply is invalid: {problem}. Answer again with valid JSON."}]
        return None

    def _extract_goals(self, request: str, stats: dict) -> list[Goal]:
        scene = self.tools.scene()
        object_labels = sorted({o.label for o in scene.objects()})
        furniture_labels = sorted({f.label for f in scene.furniture()})
        rooms = scene.rooms()
        prompt = GOAL_PROMPT.format(objects=", ".join(object_labels), furniture=", ".join(furniture_labels),
                                    rooms=", ".join(rooms))
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": request}]
        schema = goal_schema(object_labels, furniture_labels, rooms)

        def parse(text: str) -> list[Goal]:
            goals = GoalReply.model_validate_json(text).goals
            for goal in goals:
                for value, allowed in ((goal.object, object_labels), (goal.target, furniture_labels), (goal.room, rooms)):
                    if value and value not in allowed:
                        raise ValueError(f"{value!r} is not a known label or room")
            return goals

        goals = self._validated(messages, schema, stats, parse)
        if goals is None:
            raise PolicyError("no valid goals after repairs")
        return goals

    def _decide(self, request: str, goals: list[Goal], history: list[str], actions: list[str], stats: dict) -> StepReply | None:
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": self._prompt(request, goals, history, actions)}]

        def parse(text: str) -> StepReply:
            reply = StepReply.model_validate_json(text)
            if reply.action not in actions:
                raise ValueError(f"action {reply.action!r} is not one of the valid actions now")
            return reply

        return self._validated(messages, action_schema(actions), stats, parse)

    def _prompt(self, request: str, goals: list[Goal], history: list[str], actions: list[str]) -> str:
        keep = self.settings.history_steps * 2
        older, recent = history[:-keep], history[-keep:]
        lines = [f"Request: {request}", "Goals: " + "; ".join(str(g) for g in goals)]
        if older:
            lines.append(f"({len(older)} earlier entries omitted)")
        limit = self.settings.observation_chars
        lines += [entry if len(entry) <= limit else entry[:limit] + " ..." for entry in recent]
        lines.append("Valid actions now: " + " | ".join(actions))
        return "\n".join(lines)

    # ---- acting -----------------------------------------------------------------------------
    def _act(self, action: str) -> tuple[str, bool]:
        name, args = parse_call(action)
        if name in PERCEPTION_ACTIONS:
            self._emit("perception", action)
            observation = self.tools.perceive(name, args)
            self._emit("observation", observation.text)
            return observation.text, False
        self._emit("skill", action)
        result = self.tools.execute_skill(action)
        if result.success:
            self._emit("observation", result.message)
            return result.message, False
        failure = result.failure or FailureInfo(action, "", "FAILED", result.message)
        self._emit("failure", f"{failure.skill} failed at {failure.command or 'start'} [{failure.code}]: {failure.reason}")
        observation = f"{action} FAILED [{failure.code}]: {failure.reason}"
        suggestion = self.tools.explain(failure)
        if suggestion is not None:
            self._emit("suggestion", f"{suggestion.text} (cases {', '.join(suggestion.case_ids)})")
            observation += f" Suggestion: {suggestion.text}"
        return observation, True

    def _may_satisfy(self, action: str, goals: list[Goal]) -> bool:
        """A skill that acted on a goal's object or went to a goal's room may have finished the task."""
        name, args = parse_call(action)
        if name in PERCEPTION_ACTIONS:
            return False
        scene = self.tools.scene()
        labels = {scene.entity(a).label for a in args if scene.has(a)} | set(args)
        return any(goal.object in labels or (goal.room and goal.room in labels) for goal in goals)

    def _confirm(self, goals: list[Goal]) -> bool:
        """Goals are met once perception shows them; give it a moment to see the result of a skill."""
        deadline = time.monotonic() + self.settings.confirm_timeout_s
        while True:
            if all(goal_met(goal, self.tools.scene()) for goal in goals):
                return True
            if time.monotonic() >= deadline or self.cancel_event.is_set():
                return False
            time.sleep(0.1)


def _short_error(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'reply'}: {first['msg']}"
    return str(error)
