"""What the task loop knows of a task besides the world, and how a task ends."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from planner.core.calls import parse_call
from planner.core.failures import FailureCode
from planner.core.goals import Goal, goal_status
from planner.core.planning.action_space import ASK_USER, GIVE_UP, PERCEPTION_ACTIONS
from planner.core.planning.grounding import Grounding
from planner.core.planning.prompts import PromptHistory, robot_line
from planner.core.planning.recoveries import ActionRecord
from planner.core.scene_graph import SceneGraph
from planner.core.types import EpisodeOutcome, FailureInfo, PlanVerdict

STACK_MISSING = (FailureCode.SKILL_PLANNER_UNAVAILABLE, FailureCode.CONTROLLER_UNAVAILABLE,
                 FailureCode.EXECUTOR_UNAVAILABLE, FailureCode.ROBOT_UNAVAILABLE)


MAP_IDS = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_\d+\b")


def mentioned_ids(text: str, scene: SceneGraph) -> set[str]:
    """The ids of this map a text names."""
    return {token for token in MAP_IDS.findall(text) if scene.has(token)}


def may_satisfy(action: str, goals: list[Goal], scene: SceneGraph) -> bool:
    """A skill that acted on what a goal names, or moved the robot when a goal is about where
    it is, may have finished the task."""
    name, args = parse_call(action)
    if name in PERCEPTION_ACTIONS:
        return False
    labels = {scene.entity(a).label for a in args if scene.has(a)} | set(args)
    moved = name == "GOTO"
    return any(labels & {goal.object, goal.target, goal.room} - {""}
               or (moved and goal.kind in ("robot_in_room", "bring_to_user")) for goal in goals)


class Ending(NamedTuple):
    """How a task ended: its outcome, why, and after how many steps."""
    outcome: EpisodeOutcome
    summary: str
    steps: int


def final_ending(failure: FailureInfo | None, steps: int) -> Ending | None:
    """How a task ends on a failure no other action works around, in either mode."""
    if failure is None:
        return None
    if failure.code == FailureCode.HAZARD:
        # Not a failure to work around: what the request leads to is forbidden.
        return Ending(EpisodeOutcome.REFUSED, failure.reason, steps)
    if failure.code in STACK_MISSING:
        # No other action can do better while a part of the stack is down.
        return Ending(EpisodeOutcome.ERROR, failure.reason, steps)
    return None


@dataclass
class LoopState:
    """What the loop knows of a task besides the world: the goals, what it has seen and tried,
    and what it has withdrawn from the model's choice."""
    request: str
    goals: list[Goal]
    focus: frozenset[str]               # the goals' object labels, listed first in a crowded room
    acted: list[ActionRecord]           # every action taken, with failures and the cases suggested then
    seen_room: str
    explored: set[str]
    history: PromptHistory = field(default_factory=PromptHistory)
    known: set[str] = field(default_factory=set)                  # ids the robot has perceived
    failures_in_row: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)  # of each action in the whole task
    skill_failing: bool = False          # the last skill failed; looking around since does not change that
    looked: set[str] = field(default_factory=set)  # perception calls since the last skill: asking again tells nothing new
    suggested: bool = False              # the last failure came with a suggestion
    asked: bool = False
    asked_fleet: set[str] = field(default_factory=set)   # labels the other robots were asked about
    grounding: Grounding | None = None   # the request's phrases in the map's words
    reread: bool = False                 # LLM+P read the goals again once, after finding no plan
    verdict: PlanVerdict | None = None   # the plan check of the first plan checked
    first_steps_checked: bool = False    # ReAct's first steps were put to the plan check
    # A skill that led from a situation back to one the robot was in before goes round in a
    # circle: it is not offered in that situation again. The move that closes the circle is
    # withdrawn, not the first one, which often was right ("go to the table" before "go back"
    # without picking anything up).
    circular: dict[tuple, set[str]] = field(default_factory=dict)
    visited: set[tuple] = field(default_factory=set)
    last_move: tuple[tuple, str] | None = None

    def arrive(self, scene: SceneGraph, reach_m: float) -> tuple:
        """The situation the robot is in now (where it is, how each goal stands), noted as
        visited; a move that led back to a situation seen before closes a circle."""
        status = [goal_status(goal, scene) for goal in self.goals]
        for _, ids in status:
            self.known |= set(ids)
        situation = (robot_line(scene, reach_m), tuple(line for line, _ in status))
        if self.last_move and situation in self.visited:
            self.circular.setdefault(self.last_move[0], set()).add(self.last_move[1])
        self.visited.add(situation)
        self.last_move = None
        return situation

    def withdrawn(self, situation: tuple, lacking: bool, repeat_failure_limit: int) -> set[str]:
        """Actions not offered now: failed too often in a row, looked at already, closing a circle.
        Giving up is for a request the map cannot meet or after a failure, and a suggestion is
        tried first; a question only when the map cannot tell, once per task: a robot that keeps
        asking is no help."""
        withdrawn = {a for a, n in self.failures_in_row.items() if n >= repeat_failure_limit} | self.looked
        withdrawn |= self.circular.get(situation, set())
        if self.suggested or not (self.skill_failing or lacking):
            withdrawn.add(GIVE_UP)
        if self.asked or not lacking:
            withdrawn.add(ASK_USER)
        return withdrawn

    def note(self, situation: tuple, action: str, observation: str, failed: bool, repeat_failure_limit: int) -> None:
        """What an action's outcome (`observation`, `failed`) changes in what the loop knows and
        tells the model next."""
        history = self.history
        self.suggested = failed and "Suggestion:" in observation
        history.latest = [observation]
        is_perception = parse_call(action)[0] in PERCEPTION_ACTIONS
        if is_perception:
            self.looked.add(action)
        else:
            self.looked.clear()
            self.skill_failing = failed
            if not failed:
                self.last_move = (situation, action)
        if failed:
            self.failures[action] = self.failures.get(action, 0) + 1
            failures = self.failures_in_row[action] = self.failures_in_row.get(action, 0) + 1
            history.done.append(f"{action}: FAILED")
            if failures >= repeat_failure_limit:
                history.latest.append(f"{action} failed {failures} times in a row; it is withdrawn, try something else.")
        else:
            self.failures_in_row.clear()
            history.done.append(f"{action}: {'looked' if is_perception else 'done'}")
