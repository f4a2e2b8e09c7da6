"""A classical planner behind the PDDL of planner.core.planning.pddl: unified-planning reads and
checks the domain and problem, Fast Downward searches. A plan, no plan, a timeout or a domain error
are outcomes with a reason, never an exception the caller has to guess at."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal

import pyparsing as pp
from unified_planning.engines import CompilationKind, PlanGenerationResultStatus, ValidationResultStatus
from unified_planning.exceptions import UPException
from unified_planning.io import PDDLReader
from unified_planning.plans import ActionInstance, PlanKind, SequentialPlan
from unified_planning.shortcuts import Compiler, OneshotPlanner, PlanValidator, get_environment

from planner.core.goals import Goal, goal_furniture, goal_objects
from planner.core.planning.pddl import Domain, Engine, Problem, Unmeetable, make_problem, skill_call
from planner.core.scene_graph import SceneGraph
from planner.core.skills import SkillPlanner

ENGINES = {"satisficing": "fast-downward", "optimal": "fast-downward-opt"}
# Fast Downward's optimal search takes neither conditional effects nor disjunctions: unified-planning
# compiles them away first, and maps the plan back.
OPTIMAL_COMPILATIONS = (CompilationKind.CONDITIONAL_EFFECTS_REMOVING, CompilationKind.DISJUNCTIVE_CONDITIONS_REMOVING)

get_environment().credits_stream = None  # the engines' banners are not the user's business
get_environment().error_used_name = False  # a map id may equal a type's name; PDDL keeps them apart


@dataclass
class PlanOutcome:
    status: Literal["plan", "no_plan", "timeout", "error"]
    calls: list[str] = field(default_factory=list)  # skill calls, in order
    reason: str = ""
    seconds: float = 0.0
    engine: str = ""
    problem: str = ""      # the PDDL problem the plan (or the last attempt) was for
    full_state: bool = False  # planned over the whole map, after the relevant part had no plan
    shortest_timed_out: bool = False  # the optimal search ran out of time: the first plan found instead

    @property
    def found(self) -> bool:
        return self.status == "plan"


_FAILED = {PlanGenerationResultStatus.UNSOLVABLE_PROVEN: "no_plan",
           PlanGenerationResultStatus.UNSOLVABLE_INCOMPLETELY: "no_plan",
           PlanGenerationResultStatus.TIMEOUT: "timeout"}


def plan_goals(domain: Domain, skills: SkillPlanner, scene: SceneGraph, goals: list[Goal],
               engine: Engine = "optimal", timeout_s: float = 10.0, avoid: tuple[str, ...] = ()) -> PlanOutcome:
    """A plan over the part of the map the goals need, without the skill calls in `avoid`; over the
    whole map when that part has none (something in the way the relevance rule does not foresee).
    A thing named by its kind is first planned for as the one of its kind with the least driving:
    plans that differ only in which cup they fetch are equally short to the planner."""
    started = time.monotonic()
    outcome = PlanOutcome("no_plan")
    for tried in filter(None, (nearest_first(scene, goals), goals)):
        try:
            outcome = solve(domain, make_problem(domain, skills, scene, tried, avoid=avoid), engine, timeout_s)
            if outcome.status == "no_plan":
                outcome = solve(domain, make_problem(domain, skills, scene, tried, relevant_only=False, avoid=avoid),
                                engine, timeout_s)
                outcome.full_state = True
        except Unmeetable as error:
            outcome = PlanOutcome("no_plan", reason=str(error), engine=ENGINES[engine])
        if outcome.status != "no_plan":
            break
    if outcome.status == "timeout" and engine == "optimal":
        # The fewest skills can take longer to prove than to find ("tidy everything off the desk" with
        # two arms and a dozen places to put things): the first plan found beats none.
        outcome = plan_goals(domain, skills, scene, goals, "satisficing", timeout_s, avoid)
        outcome.shortest_timed_out = True
    outcome.seconds = time.monotonic() - started
    return outcome


def nearest_first(scene: SceneGraph, goals: list[Goal]) -> list[Goal] | None:
    """The goals with each thing named only by its kind narrowed to the one of that kind the robot
    reaches by the shortest drive: to it, then on to where the goal takes it (the user's room, the
    nearest furniture of the target's kind). None when no goal leaves a choice."""
    robot = scene.known_robot.pose
    narrowed, chose = [], False
    for goal in goals:
        candidates = goal_objects(goal, scene) if goal.object and not goal.object_id and goal.kind != "clear" else []
        if len(candidates) < 2:
            narrowed.append(goal)
            continue
        ends = ([scene.entity(goal.room).center[:2]] if goal.kind == "bring_to_user" and scene.has(goal.room) else
                [scene.entity(f).center[:2] for f in goal_furniture(scene, goal)])
        drives = {c: _drive(scene, (robot.x, robot.y), c, ends) for c in candidates}
        narrowed.append(goal.model_copy(update={"object_id": min(candidates, key=drives.__getitem__)}))
        chose = True
    return narrowed if chose else None


def _drive(scene: SceneGraph, start: tuple[float, float], candidate: str, ends: list) -> float:
    """Straight-line metres from `start` to the thing and on to the nearest of `ends` (none held)."""
    if scene.entity(candidate).status == "held":
        return 0.0
    at = scene.entity(candidate).center[:2]
    return math.dist(start, at) + min((math.dist(at, end) for end in ends), default=0.0)


def solve(domain: Domain, problem: Problem, engine: Engine = "optimal", timeout_s: float = 10.0) -> PlanOutcome:
    """A plan for a problem made from the scene graph, as skill calls."""
    found = plan_pddl(domain.text, problem.text, engine, timeout_s)
    calls = [skill_call(domain, problem.names, name, args) for name, args in found.actions]
    reason = found.reason
    if found.status == "no_plan":
        reason = "no sequence of skills reaches the goal from what the map shows"
    return PlanOutcome(found.status, calls, reason, found.seconds, found.engine, problem.text)


@dataclass
class PddlPlan:
    status: Literal["plan", "no_plan", "timeout", "error"]
    actions: list[tuple[str, list[str]]] = field(default_factory=list)  # (action, arguments), in order
    reason: str = ""
    seconds: float = 0.0
    engine: str = ""


def parse_pddl(domain_text: str, problem_text: str):
    """The problem as unified-planning reads it; PddlError says what does not parse, and where."""
    try:
        return PDDLReader().parse_problem_string(without_either(domain_text), problem_text)
    except KeyError as missing:  # the reader looks names up without checking them first
        raise PddlError(f"{missing} is not declared in the domain or the problem") from None
    except (UPException, SyntaxError, ValueError, pp.ParseBaseException) as error:
        raise PddlError(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__) from None


class PddlError(ValueError):
    """PDDL text that unified-planning cannot read."""


def without_either(domain_text: str) -> str:
    """The domain with each `(either A B …)` type (PDDL :typing, which unified-planning's reader
    does not take) made a type of its own, `either_A_B`, that A, B … are kinds of: an object of A is
    then one of `either_A_B` wherever that is asked for, as `(either A B)` means. This needs A, B …
    to have one parent, and each to be in one either; PddlError says which is not."""
    if "either" not in domain_text.lower():
        return domain_text
    eithers: dict[tuple[str, ...], str] = {}

    def replaced(node):
        if isinstance(node, list) and node[:1] and isinstance(node[0], str) and node[0].lower() == "either":
            members = tuple(sorted(node[1:]))
            return eithers.setdefault(members, "either_" + "_".join(members))
        return [replaced(child) for child in node] if isinstance(node, list) else node
    tree = replaced(_SEXPR.parse_string(f"({domain_text})", parse_all=True).as_list()[0][0])
    types = next((section for section in tree if isinstance(section, list) and section[:1] == [":types"]), None)
    parents = _typed_names(types[1:]) if types else {}
    for members, name in eithers.items():
        above = {parents.get(member, "object") for member in members}
        if len(above) > 1:
            raise PddlError(f"(either {' '.join(members)}): the types have different parents "
                            f"({', '.join(sorted(above))}), which this reader cannot join")
        taken = [m for m in members if any(m in other and other != members for other in eithers)]
        if taken:
            raise PddlError(f"(either {' '.join(members)}): {', '.join(taken)} is in another either too")
        parents[name] = above.pop()
        parents.update({member: name for member in members})
    if types is None:
        types = [":types"]
        tree.insert(next(i for i, section in enumerate(tree) if isinstance(section, list)
                         and section[:1] not in ([":requirements"], ["domain"])), types)
    types[1:] = [part for name, parent in parents.items() for part in (name, "-", parent)]
    return _unparsed(tree)


_SEXPR = pp.nested_expr("(", ")", ignore_expr=pp.Regex(r";[^\n]*").suppress())


def _typed_names(items: list) -> dict[str, str]:
    """`a b - parent c` as {a: parent, b: parent, c: object}."""
    typed: dict[str, str] = {}
    pending: list[str] = []
    words = iter(items)
    for word in words:
        if word == "-":
            parent = next(words)
            typed.update({name: parent for name in pending})
            pending = []
        else:
            pending.append(word)
    typed.update({name: "object" for name in pending})
    return typed


def _unparsed(node) -> str:
    return "(" + " ".join(_unparsed(child) for child in node) + ")" if isinstance(node, list) else node


def plan_pddl(domain_text: str, problem_text: str, engine: Engine = "optimal", timeout_s: float = 10.0) -> PddlPlan:
    """Fast Downward's plan for any domain and problem text."""
    started = time.monotonic()
    name = ENGINES[engine]

    def outcome(status, reason="", actions=()) -> PddlPlan:
        return PddlPlan(status, list(actions), reason, time.monotonic() - started, name)
    try:
        parsed = parse_pddl(domain_text, problem_text)
    except PddlError as error:
        return outcome("error", f"the PDDL does not parse: {error}")
    compiled, back = parsed, []
    if engine == "optimal":
        for kind in OPTIMAL_COMPILATIONS:
            if not compiled.kind.has_conditional_effects() and kind == CompilationKind.CONDITIONAL_EFFECTS_REMOVING:
                continue
            with Compiler(problem_kind=compiled.kind, compilation_kind=kind) as compiler:
                result = compiler.compile(compiled, kind)
            compiled = result.problem
            back.append(result.map_back_action_instance)
    try:
        with OneshotPlanner(name=name) as planner:
            result = planner.solve(compiled, timeout=timeout_s)
    except UPException as error:
        return outcome("error", f"{name}: {error}")
    if result.status in _FAILED:
        status = _FAILED[result.status]
        return outcome(status, f"no plan within {timeout_s:g} s" if status == "timeout" else "no plan reaches the goal")
    if result.plan is None:
        return outcome("error", f"{name} ended with {result.status.name}")
    actions = []
    for action in result.plan.actions:
        for map_back in reversed(back):
            action = map_back(action) if action is not None else None
        if action is not None:  # None: an action the compilation added (reaching a disjunctive goal)
            actions.append((action.action.name, [str(p) for p in action.actual_parameters]))
    return outcome("plan", actions=actions)


def validate_plan(domain_text: str, problem_text: str, actions: list[tuple[str, list[str]]]) -> str:
    """Why the plan does not reach the problem's goal from its initial state ("" when it does), by
    unified-planning's plan validator."""
    problem = parse_pddl(domain_text, problem_text)
    steps = []
    for number, (name, args) in enumerate(actions, 1):
        if not problem.has_action(name):
            return f"step {number}: no action {name} in the domain"
        unknown = [a for a in args if not problem.has_object(a)]
        if unknown:
            return f"step {number}: {', '.join(unknown)} not in the problem"
        steps.append(ActionInstance(problem.action(name), [problem.object(a) for a in args]))
    with PlanValidator(problem_kind=problem.kind, plan_kind=PlanKind.SEQUENTIAL_PLAN) as validator:
        result = validator.validate(problem, SequentialPlan(steps))
    if result.status == ValidationResultStatus.VALID:
        return ""
    return str(result.reason or result.inapplicable_action or "the plan does not reach the goal")
