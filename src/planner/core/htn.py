"""HTN decomposition of skills into commands, planned by GTPyhop.

The domain is the skill library's (config/skills.yaml): every command is a GTPyhop action that
needs some facts and changes others; every skill and shared task has methods (conditions and
steps, tried in order). A fact no step has changed yet is read from the world (the scene graph),
so a decomposition is planned on what perception shows now.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import Field

from planner.core.calls import SkillSyntaxError, parse_call
from planner.core.files import StrictModel

os.environ.setdefault("GTPYHOP_QUIET", "true")  # GTPyhop prints a banner on import unless told
import gtpyhop  # noqa: E402

with contextlib.redirect_stdout(io.StringIO()):  # it announces every change of verbosity
    gtpyhop.set_verbose_level(0)

# GTPyhop plans in module-level state (the current domain): one decomposition at a time.
_PLANNING = threading.Lock()

Fact = tuple[str, ...]          # ("holding", "left", "cup_1")
ReadFact = Callable[[Fact], bool]


class MethodSpec(StrictModel):
    name: str = Field(pattern=r"^[a-z][a-z_0-9]*$")
    when: list[str] = Field(default_factory=list, description="facts that must hold for this method, e.g. "
                                                                 "'near(target)' or 'not in_room(room)'")
    steps: list[str] = Field(default_factory=list, description="commands, tasks or skills in order, e.g. "
                                                                  "'grasp(arm, object)'")


class TaskSpec(StrictModel):
    params: list[str]
    methods: list[MethodSpec] = Field(min_length=1)


@dataclass(frozen=True)
class Condition:
    """`fact(param, ...)` or `not fact(param, ...)`, its params still names to be bound."""
    fact: str
    params: tuple[str, ...]
    negated: bool = False

    @classmethod
    def parse(cls, text: str) -> Condition:
        negated = text.startswith("not ")
        name, params = parse_call(text.removeprefix("not ").strip())
        return cls(name, tuple(params), negated)

    def bound(self, values: dict[str, str]) -> Fact:
        return (self.fact, *(values[p] for p in self.params))


@dataclass(frozen=True)
class Step:
    name: str
    params: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Step:
        name, params = parse_call(text)
        return cls(name, tuple(params))


@dataclass
class Operator:
    """A command as the HTN planner sees it."""
    params: tuple[str, ...]
    requires: list[Condition] = field(default_factory=list)
    effects: list[Condition] = field(default_factory=list)


@dataclass
class Method:
    name: str
    when: list[Condition]
    steps: list[Step]


@dataclass
class Compound:
    """A skill or shared task: its parameters and its methods, in the order they are tried."""
    params: tuple[str, ...]
    methods: list[Method]


class _World:
    """The fact reader, shared by every state copy GTPyhop makes (it deep-copies states)."""

    def __init__(self, read: ReadFact):
        self.read = read

    def __deepcopy__(self, memo):
        return self


def holds(state, condition: Condition, values: dict[str, str]) -> bool:
    fact = condition.bound(values)
    value = state.changed[fact] if fact in state.changed else state.world.read(fact)
    return value != condition.negated


def check_references(where: str, names: list[str], params: set[str]) -> None:
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ValueError(f"{where}: {', '.join(unknown)} {'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
                         f"(parameters: {', '.join(sorted(params)) or 'none'})")


def parse_terms(where: str, texts: list[str], kind: Callable[[str], object]) -> list:
    parsed = []
    for index, text in enumerate(texts):
        try:
            parsed.append(kind(text))
        except SkillSyntaxError as error:
            raise ValueError(f"{where}[{index}]: {error}") from None
    return parsed


class Decomposer:
    """A GTPyhop domain made from the library: plan(skill, args, read) → the command steps."""

    def __init__(self, name: str, operators: dict[str, Operator], compounds: dict[str, Compound]):
        self.operators = operators
        self.compounds = compounds
        with _PLANNING:
            self.domain = gtpyhop.Domain(name)
            gtpyhop.declare_actions(*(self._action(n, op) for n, op in operators.items()))
            for task, compound in compounds.items():
                gtpyhop.declare_task_methods(task, *(self._method(task, compound, m) for m in compound.methods))

    @staticmethod
    def _action(name: str, operator: Operator):
        def act(state, *args):
            values = dict(zip(operator.params, args))
            if not all(holds(state, c, values) for c in operator.requires):
                return False
            for effect in operator.effects:
                state.changed[effect.bound(values)] = not effect.negated
            state.steps += 1  # a step that changes no fact is still a step (GTPyhop drops those)
            return state
        act.__name__ = name
        return act

    @staticmethod
    def _method(task: str, compound: Compound, method: Method):
        def refine(state, *args):
            values = dict(zip(compound.params, args))
            if not all(holds(state, c, values) for c in method.when):
                return False
            return [(step.name, *(values[p] for p in step.params)) for step in method.steps]
        refine.__name__ = f"{task}__{method.name}"
        return refine

    def plan(self, task: str, args: tuple[str, ...], read: ReadFact) -> list[tuple[str, ...]] | None:
        """The commands (name, *args) that carry out `task`, or None when no method applies."""
        state = gtpyhop.State("now", changed={}, steps=0, world=_World(read))
        with _PLANNING:
            gtpyhop.set_current_domain(self.domain)
            plan = gtpyhop.find_plan(state, [(task, *args)])
        return None if plan is False or plan is None else [tuple(step) for step in plan]

    def final_facts(self, steps: list[tuple[str, ...]]) -> dict[Fact, bool]:
        """What the steps change, in order (a later step wins)."""
        changed: dict[Fact, bool] = {}
        for name, *args in steps:
            operator = self.operators[name]
            values = dict(zip(operator.params, args))
            for effect in operator.effects:
                changed[effect.bound(values)] = not effect.negated
        return changed
