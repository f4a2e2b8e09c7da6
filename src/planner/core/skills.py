"""Skills: strict `SKILL(arg, ...)` syntax, precondition checks and HTN decomposition into commands.

The skill library is configuration (config/skills.yaml): commands with the facts they need and
change, shared tasks, and skills with typed parameters, declarative preconditions naming the
checks below, effects, and HTN methods that GTPyhop decomposes into commands (planner.core.htn).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import networkx as nx
from pydantic import Field, model_validator

from planner.core.calls import SkillSyntaxError, format_call, parse_call
from planner.core.errors import PlannerError
from planner.core.failures import FailureCode
from planner.core.files import StrictModel, load_model
from planner.core.geometry import Pose2D, approach_poses, footprint_contains, free_point_in_room, horizontal_distance
from planner.core.goals import PLACING_KINDS, Goal
from planner.core.htn import (
    Compound,
    Condition,
    Decomposer,
    Fact,
    Method,
    MethodSpec,
    Operator,
    Step,
    TaskSpec,
    check_references,
    parse_terms,
)
from planner.core.ports import Lexicon
from planner.core.robot_profile import RobotProfile
from planner.core.safety import AimedHazard, HazardRule, Hazards, ThingKinds, label_words, rule_terms_known
from planner.core.scene_graph import SceneGraph
from planner.core.types import Outcome
from planner.core.world import opening_heights

ParamType = Literal["object", "furniture", "openable", "place", "room", "person", "arm", "text"]
CommandSlot = Literal["arm", "object", "target", "text"]
# Facts the HTN planner reads from the scene graph (until a step changes them), with their arity.
FACT_ARITY = {"at": 1, "holding": 2, "holding_any": 1, "gripper_open": 1, "is_open": 1, "on": 2}


class SkillRefused(PlannerError):
    """A skill that must not start: invalid, or a precondition fails. Carries the failure code."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


# ---- configuration ---------------------------------------------------------------------------
class ParamSpec(StrictModel):
    name: str
    type: ParamType


class PreconditionSpec(StrictModel):
    check: str
    args: list[str] = Field(default_factory=list)


class CommandSpec(StrictModel):
    args: list[CommandSlot]
    timeout_s: float = Field(gt=0)
    point: Literal["", "object", "target", "target_top"] = Field(default="", description="where an arm command aims")
    requires: list[str] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    simulated_by: str = Field(default="", pattern=r"^$|^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
                              description="for a command the built-in simulator lacks: the function that carries it "
                                          "out there, as 'package.module:function' (docs/add-a-skill.md)")


class SkillSpec(StrictModel):
    description: str
    params: list[ParamSpec]
    choose: dict[str, str] = Field(default_factory=dict, description="parameters the skill fills itself, e.g. "
                                                                      "arm: holding_arm(object)")
    preconditions: list[PreconditionSpec] = Field(default_factory=list)
    effects: list[str] = Field(default_factory=list)
    methods: list[MethodSpec] = Field(min_length=1)

    def all_params(self) -> list[str]:
        return [p.name for p in self.params] + list(self.choose)


class SkillLibrary(StrictModel):
    commands: dict[str, CommandSpec]
    typical_mass_kg: dict[str, float] = Field(default_factory=dict, description="by label, for objects whose mass "
                                                                                 "perception does not know")
    unknown_density_kg_m3: float = Field(default=1000.0, gt=0, description="an object whose mass neither perception "
                                         "nor typical_mass_kg knows is taken to be this dense (water: as heavy as "
                                         "household things get), so its box bounds its mass from above")
    density_kg_m3: dict[str, float] = Field(default_factory=dict, description="by thing kind: how dense an object "
                                            "of unknown mass of that kind may be (metal), where water is too light")
    thing_kinds: dict[str, list[str]] = Field(default_factory=dict, description="kinds of things the hazard rules "
                                              "and densities name (sharp, metal, bed), by the words that name them")
    tasks: dict[str, TaskSpec] = Field(default_factory=dict)
    skills: dict[str, SkillSpec]
    hazards: list[HazardRule] = Field(default_factory=list, description="moves of a thing refused whatever the plan")
    aimed_hazards: list[AimedHazard] = Field(default_factory=list, description="requests that aim an action at "
                                             "people, refused before any model reads them")

    @model_validator(mode="after")
    def _references(self):
        arities = {name: len(c.args) for name, c in self.commands.items()}
        arities |= {name: len(t.params) for name, t in self.tasks.items()}
        arities |= {name: len(s.all_params()) for name, s in self.skills.items()}
        for name, command in self.commands.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
                raise ValueError(f"commands.{name}: command names are lower case, e.g. press_button")
            for part in ("requires", "effects"):
                self._facts(f"commands.{name}.{part}", getattr(command, part), set(command.args))
        for name in self.tasks:
            if name in self.commands:
                raise ValueError(f"tasks.{name}: a command has that name")
        for name, task in self.tasks.items():
            self._methods(f"tasks.{name}", task.methods, set(task.params), arities)
        for name, skill in self.skills.items():
            where = f"skills.{name}"
            if not re.fullmatch(r"[A-Z][A-Z_]*", name):
                raise ValueError(f"{where}: skill names are upper case, e.g. PICK")
            params = set(skill.all_params())
            for chosen, chooser in skill.choose.items():
                self._chooser(f"{where}.choose.{chosen}", chooser, {p.name for p in skill.params})
            for index, pre in enumerate(skill.preconditions):
                if pre.check not in PRECONDITIONS:
                    raise ValueError(f"{where}.preconditions[{index}].check: unknown check {pre.check!r}; "
                                     f"known: {', '.join(sorted(PRECONDITIONS))}")
                given = [arg for arg in pre.args if arg not in {p.name for p in skill.params}]
                if given:
                    raise ValueError(f"{where}.preconditions[{index}].args: {', '.join(given)} is no parameter the "
                                     f"caller gives (checks run before `choose`)")
                check_references(f"{where}.preconditions[{index}].args", pre.args, params)
            self._facts(f"{where}.effects", skill.effects, params)
            self._methods(where, skill.methods, params, arities)
        problems = rule_terms_known(self.hazards, self.thing_kinds)
        problems += [f"density_kg_m3.{kind}: no kind {kind!r} in thing_kinds" for kind in self.density_kg_m3
                     if kind not in self.thing_kinds]
        if problems:
            raise ValueError("; ".join(problems))
        self._acyclic()
        return self

    def _acyclic(self) -> None:
        """A task that (through others) has itself as a step would decompose for ever."""
        calls = nx.DiGraph()
        for section, entries in (("tasks", self.tasks), ("skills", self.skills)):
            for name, entry in entries.items():
                for method in entry.methods:
                    for step in method.steps:
                        callee = Step.parse(step).name
                        if callee not in self.commands:
                            calls.add_edge(name, callee, where=f"{section}.{name}.methods")
        try:
            cycle = nx.find_cycle(calls)
        except nx.NetworkXNoCycle:
            return
        path = " → ".join([cycle[0][0], *(callee for _, callee in cycle)])
        raise ValueError(f"{calls.edges[cycle[0]]['where']}: {path} never ends in commands")

    @staticmethod
    def _facts(where: str, texts: list[str], params: set[str]) -> None:
        for index, condition in enumerate(parse_terms(where, texts, Condition.parse)):
            if condition.fact not in FACT_ARITY:
                raise ValueError(f"{where}[{index}]: unknown fact {condition.fact!r}; known: {', '.join(FACT_ARITY)}")
            if len(condition.params) != FACT_ARITY[condition.fact]:
                raise ValueError(f"{where}[{index}]: {condition.fact} takes {FACT_ARITY[condition.fact]} argument(s)")
            check_references(f"{where}[{index}]", list(condition.params), params)

    def _methods(self, where: str, methods: list[MethodSpec], params: set[str], arities: dict[str, int]) -> None:
        for index, method in enumerate(methods):
            self._facts(f"{where}.methods[{index}].when", method.when, params)
            for number, step in enumerate(parse_terms(f"{where}.methods[{index}].steps", method.steps, Step.parse)):
                place = f"{where}.methods[{index}].steps[{number}]"
                if step.name not in arities:
                    raise ValueError(f"{place}: {step.name!r} is no command, task or skill")
                if len(step.params) != arities[step.name]:
                    raise ValueError(f"{place}: {step.name} takes {arities[step.name]} argument(s), got {len(step.params)}")
                check_references(place, list(step.params), params)

    @staticmethod
    def _chooser(where: str, text: str, params: set[str]) -> None:
        try:
            name, args = parse_call(text if "(" in text else f"{text}()")
        except SkillSyntaxError as error:
            raise ValueError(f"{where}: {error}") from None
        if name not in CHOOSERS:
            raise ValueError(f"{where}: unknown choice {name!r}; known: {', '.join(CHOOSERS)}")
        check_references(where, args, params)

    def decomposer(self) -> Decomposer:
        def conditions(texts: list[str]) -> list[Condition]:
            return [Condition.parse(t) for t in texts]

        def methods(specs: list[MethodSpec]) -> list[Method]:
            return [Method(m.name, conditions(m.when), [Step.parse(s) for s in m.steps]) for m in specs]
        operators: dict[str, Operator] = {name: Operator(tuple(c.args), conditions(c.requires), conditions(c.effects))
                     for name, c in self.commands.items()}
        compounds = {name: Compound(tuple(t.params), methods(t.methods)) for name, t in self.tasks.items()}
        compounds |= {name: Compound(tuple(s.all_params()), methods(s.methods)) for name, s in self.skills.items()}
        return Decomposer(f"skills-{id(self)}", operators, compounds)


def load_skill_library(path: str | Path) -> SkillLibrary:
    return load_model(path, SkillLibrary)


# ---- calls -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SkillCall:
    name: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return format_call(self.name, self.args)


@dataclass
class Command:
    name: str
    arm: str = ""
    object_id: str = ""
    target_id: str = ""
    base_pose: Pose2D | None = None
    point: tuple[float, float, float] | None = None
    text: str = ""
    timeout_s: float = 30.0


class SkillPlanner:
    def __init__(self, library: SkillLibrary, robot: RobotProfile, lexicon: Lexicon | None = None):
        self.library = library
        self.robot = robot
        self.hazards = Hazards(library.hazards, ThingKinds(library.thing_kinds, lexicon))
        self.decomposer = library.decomposer()

    def parse(self, text: str, scene: SceneGraph) -> SkillCall:
        name, args = parse_call(text)
        spec = self.library.skills.get(name)
        if spec is None:
            raise SkillSyntaxError(f"unknown skill {name!r}; known: {', '.join(sorted(self.library.skills))}")
        if len(args) != len(spec.params):
            expected = ", ".join(p.name for p in spec.params)
            raise SkillSyntaxError(f"{name} takes {len(spec.params)} argument(s) ({expected}), got {len(args)}")
        for param, value in zip(spec.params, args):
            problem = self._type_problem(param.type, value, scene)
            if problem:
                raise SkillSyntaxError(f"{name} argument {param.name}={value!r}: {problem}")
        return SkillCall(name, tuple(args))

    def _type_problem(self, kind: str, value: str, scene: SceneGraph) -> str:
        if kind == "text":
            return "" if value.strip() else "is empty"
        if kind == "arm":
            return "" if value in self.robot.arms else f"not an arm of this robot ({', '.join(self.robot.arms)})"
        if not scene.has(value):
            return "no such thing in the scene graph"
        entity = scene.entity(value)
        if kind == "openable":
            return "" if entity.state else "has no door or drawer to open or close"
        allowed = {"object": {"object"}, "furniture": {"furniture"}, "place": {"furniture", "room"}, "room": {"room"},
                   "person": {"person"}}[kind]
        return "" if entity.kind in allowed else f"is a {entity.kind}, expected {' or '.join(sorted(allowed))}"

    def bindings(self, call: SkillCall, scene: SceneGraph | None = None) -> dict[str, str]:
        """The call's arguments by parameter name, with the ones the skill chooses when a scene is given."""
        spec = self.library.skills[call.name]
        bound = {p.name: value for p, value in zip(spec.params, call.args)}
        if scene is not None:
            for chosen, chooser in spec.choose.items():
                name, args = parse_call(chooser if "(" in chooser else f"{chooser}()")
                bound[chosen] = CHOOSERS[name](self, scene, *(bound[a] for a in args))
        return bound

    def check_preconditions(self, call: SkillCall, scene: SceneGraph) -> Outcome:
        """The first failing precondition, or ok. Every check names what failed and why."""
        bound = self.bindings(call)
        for pre in self.library.skills[call.name].preconditions:
            result = PRECONDITIONS[pre.check](self, scene, *(bound[a] for a in pre.args))
            if not result.ok:
                return result
        return Outcome(True)

    def plan(self, text: str, scene: SceneGraph) -> tuple[SkillCall, list[Command]]:
        """Parse, check and decompose a skill call; raises SkillRefused with the reason it cannot run."""
        if scene.robot is None:
            raise SkillRefused(FailureCode.ROBOT_STATE_UNKNOWN, "no robot state has been received yet")
        try:
            call = self.parse(text, scene)
        except SkillSyntaxError as error:
            raise SkillRefused(FailureCode.INVALID_SKILL, str(error)) from None
        grounded = [arg for arg in call.args if scene.has(arg)]
        danger = next((reason for thing in grounded for near in grounded if near != thing
                       if (reason := self.hazards.refusal(thing, near, scene))), None)
        if danger is not None:
            raise SkillRefused(FailureCode.HAZARD, f"{call.name}({', '.join(call.args)}) is not done: {danger}")
        check = self.check_preconditions(call, scene)
        drives = []
        if check.code == FailureCode.OUT_OF_REACH and (closer := self.step_closer(call, scene)) is not None:
            # The rest is checked from where the drive ends, as a person steps round a bed first.
            furniture_id, pose = closer
            there = copy.copy(scene)
            there.robot = replace(scene.known_robot, pose=pose)
            check = self.check_preconditions(call, there)
            drives = [Command(name="navigate", target_id=furniture_id, base_pose=pose,
                              timeout_s=self.library.commands["navigate"].timeout_s)]
        if not check.ok:
            raise SkillRefused(check.code, check.detail)
        return call, drives + self.decompose(call, scene)

    def beside(self, scene: SceneGraph) -> str | None:
        """The furniture the robot stands beside: the nearest within reach of the base."""
        robot = scene.known_robot
        return next(iter(scene.furniture_near(robot.pose.x, robot.pose.y, self.robot.reach_m)), None)

    def read_fact(self, scene: SceneGraph, fact: Fact) -> bool:
        """A fact as the scene graph shows it now."""
        name, *args = fact
        robot = scene.known_robot
        if name == "holding":
            return robot.held.get(args[0]) == args[1]
        if name == "holding_any":
            return bool(robot.held.get(args[0]))
        if name == "gripper_open":  # the robot state does not report grippers: assume closed, open first
            return False
        if name == "at":
            if scene.entity(args[0]).kind == "room":
                return robot.room == args[0]
            return _near(self, scene, args[0]).ok
        if name == "is_open":
            return scene.entity(args[0]).state == "open"
        support = scene.support(args[0])  # on
        return support is not None and support[1] == args[1]

    def decompose(self, call: SkillCall, scene: SceneGraph) -> list[Command]:
        """The commands for a call whose preconditions hold, from the first methods that plan."""
        spec = self.library.skills[call.name]
        bound = self.bindings(call, scene)
        read = lambda fact: self.read_fact(scene, fact)  # noqa: E731
        steps = self.decomposer.plan(call.name, tuple(bound[p] for p in spec.all_params()), read)
        if steps is None:
            raise SkillRefused(FailureCode.NO_METHOD, f"no method of {call.name} applies in the current state "
                                            f"(methods: {', '.join(m.name for m in spec.methods)})")
        changed = self.decomposer.final_facts(steps)
        for effect in (Condition.parse(text) for text in spec.effects):
            fact = effect.bound(bound)
            if changed.get(fact, read(fact)) == effect.negated:
                raise SkillRefused(FailureCode.INVALID_SKILL_LIBRARY, f"the methods of {call.name} do not make "
                                                            f"{'not ' if effect.negated else ''}{format_call(fact[0], fact[1:])} true")
        return [self._command(step, scene) for step in steps]

    def _command(self, step: tuple[str, ...], scene: SceneGraph) -> Command:
        name, *args = step
        spec = self.library.commands[name]  # the decomposer only emits the library's commands
        slots = dict(zip(spec.args, args))
        command = Command(name=name, arm=slots.get("arm", ""), object_id=slots.get("object", ""),
                          target_id=slots.get("target", ""), text=slots.get("text", ""), timeout_s=spec.timeout_s)
        if name == "navigate":
            command.base_pose = self.navigation_goal(command.target_id, scene, scene.known_robot.pose)
        elif spec.point:
            aimed = scene.entity(command.object_id if spec.point == "object" else command.target_id)
            top = aimed.size[2] / 2 if spec.point == "target_top" else 0.0
            command.point = (aimed.center[0], aimed.center[1], aimed.center[2] + top)
        return command

    def navigation_goal(self, target_id: str, scene: SceneGraph, start: Pose2D) -> Pose2D:
        target = scene.entity(target_id)
        if target.kind == "room":
            free = free_point_in_room(target.polygon, [(f.center, f.size) for f in scene.furniture(target_id)],
                                      self.robot.standoff_m) if target.polygon else None
            x, y = free or target.center[:2]
            return Pose2D(x, y, start.yaw)
        # Furniture stands against walls: its open side, and a cupboard's door, face the room's
        # middle, whichever side the robot is on now (from the bed, a wardrobe's narrow side left
        # a pillow inside 1.2 m away).
        seen_from = start
        if target.room and scene.has(target.room):
            middle = scene.entity(target.room).center
            seen_from = Pose2D(middle[0], middle[1], 0.0)
        # In front of the things on or in it, not the middle of a long side.
        things = [o.center[:2] for o in scene.objects() if (scene.furniture_support(o.id) or ("", ""))[1] == target_id]
        facing = (sum(x for x, _ in things) / len(things), sum(y for _, y in things) / len(things)) if things else None
        sides = [approach_poses(target.center, target.size, seen_from.x, seen_from.y, self.robot.standoff_m, at)
                 for at in ([facing] if facing is not None else []) + things + [None]]
        # Where other furniture stands in front of that side (a cluttered room of a real map), the other
        # sides, nearest the things on it first.
        near = facing or target.center[:2]
        poses = [side[0] for side in sides] + sorted((pose for side in sides for pose in side[1:]),
                                                     key=lambda pose: pose.distance_to(*near))
        clear = standable(poses, target_id, scene)
        # The arms must reach what is on it from where the base stops (a thing at the far edge of deep
        # furniture is out of reach from the near side): the first pose that reaches the most.
        return max(clear, key=lambda pose: sum(pose.distance_to(x, y) <= self.robot.reach_m for x, y in things),
                   default=sides[-1][0])

    def step_closer(self, call: SkillCall, scene: SceneGraph) -> tuple[str, Pose2D] | None:
        """Where the robot stands beside the furniture a thing of the call is on, but not where its
        arms reach the thing (the far side of a large bed): that furniture and the nearest place by
        it where they do; None when there is none or the robot is elsewhere."""
        spec, bound = self.library.skills[call.name], self.bindings(call)
        robot = scene.known_robot.pose
        beside = scene.furniture_near(robot.x, robot.y, self.robot.reach_m)
        for param in spec.params:
            if param.type != "object" or not scene.has(thing_id := bound[param.name]):
                continue
            support = scene.furniture_support(thing_id)
            if support is None or support[1] not in beside \
                    or robot.distance_to(*scene.entity(thing_id).center[:2]) <= self.robot.reach_m:
                continue
            reaching = self.poses_reaching(thing_id, scene)
            return (support[1], min(reaching, key=lambda pose: pose.distance_to(robot.x, robot.y))) if reaching else None
        return None

    def request_refusal(self, request: str, scene: SceneGraph) -> str | None:
        """Why the request itself is refused (it aims an action at someone), or None."""
        people = {word for person in scene.people() for word in label_words(person.label)}
        things = {word for entity in (*scene.objects(), *scene.furniture()) for word in label_words(entity.label)}

        def someone(word: str) -> bool:
            # A printer is a person in WordNet's first sense; in a home with a printer it is the machine.
            return word in people or (word not in things and self.hazards.kinds.first_sense_is_a(word, "person"))
        reason = next((rule.reason for rule in self.library.aimed_hazards if rule.aimed(request, someone)), None)
        return f"{request!r} is not done: {reason}" if reason else None

    def goal_refusal(self, goal: Goal, scene: SceneGraph) -> str | None:
        """Why the hazard rules forbid the goal itself (a fork inside a microwave), so the task ends
        before the robot picks anything up; None when they do not."""
        if goal.kind not in (*PLACING_KINDS, "bring_to_user"):
            return None
        kinds = self.hazards.kinds
        thing = kinds.of(scene.entity(goal.object_id)) if scene.has(goal.object_id) else kinds.of_label(goal.object, "object")
        near = frozenset({"person"}) if goal.kind == "bring_to_user" else kinds.of_label(goal.target, "furniture")
        reason = self.hazards.refusal_of_kinds(thing, near)
        return f"{goal} is not done: {reason}" if reason else None

    def can_take(self, object_id: str, scene: SceneGraph) -> bool:
        """Whether the arms could take the thing from where the base can stand: at a height they
        work at, and within reach from beside its furniture."""
        return _within_workspace(self, scene, object_id).ok and self.reachable_from_beside(object_id, scene)

    def reachable_from_beside(self, object_id: str, scene: SceneGraph) -> bool:
        """Whether an arm reaches the thing from some place beside the furniture it is on, or it is
        on no furniture (the other checks judge that)."""
        return scene.furniture_support(object_id) is None or bool(self.poses_reaching(object_id, scene))

    def poses_reaching(self, object_id: str, scene: SceneGraph) -> list[Pose2D]:
        """The places beside the furniture a thing is on where the base can stand (`standable`) and
        an arm reaches the thing, nearest the thing's side first; none for a thing on no furniture."""
        support = scene.furniture_support(object_id)
        if support is None:
            return []
        thing, furniture = scene.entity(object_id), scene.entity(support[1])
        poses = approach_poses(furniture.center, furniture.size, thing.center[0], thing.center[1],
                               self.robot.standoff_m, thing.center[:2])
        return [pose for pose in standable(poses, furniture.id, scene)
                if pose.distance_to(*thing.center[:2]) <= self.robot.reach_m]


def standable(poses: list[Pose2D], furniture_id: str, scene: SceneGraph) -> list[Pose2D]:
    """The `poses` by a piece of furniture where the base can stand: in no other furniture, and in
    its room, as a side beyond the wall of its room is reached by no arm (a bed along the wall to
    the lounge); a side outside every room only where no side is in its own, or the map has no rooms."""
    others = [f for f in scene.furniture() if f.id != furniture_id]
    free = [pose for pose in poses if not any(footprint_contains(f.center, f.size, pose.x, pose.y) for f in others)]
    if not (scene.rooms() and all(scene.entity(room).polygon for room in scene.rooms())):
        return free
    room = scene.entity(furniture_id).room
    return [pose for pose in free if scene.room_at(pose.x, pose.y) == room] \
        or [pose for pose in free if scene.room_at(pose.x, pose.y)]


# ---- preconditions ---------------------------------------------------------------------------
def _location_known(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Outcome:
    entity = scene.entity(object_id)
    if entity.status == "missing":
        return Outcome(False, FailureCode.OBJECT_LOCATION_UNKNOWN,
                     f"{object_id} was not seen where it was last mapped; its location is unknown")
    return Outcome(True)


def _arm_free(planner: SkillPlanner, scene: SceneGraph, arm: str) -> Outcome:
    held = scene.known_robot.held.get(arm, "")
    if held:
        return Outcome(False, FailureCode.ARM_OCCUPIED, f"the {arm} arm already holds {held}")
    return Outcome(True)


def _not_held(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Outcome:
    arm = scene.known_robot.holding(object_id)
    if arm:
        return Outcome(False, FailureCode.ALREADY_HOLDING, f"{object_id} is already held by the {arm} arm")
    return Outcome(True)


def _holding(planner: SkillPlanner, scene: SceneGraph, object_id: str, arm: str) -> Outcome:
    if scene.known_robot.held.get(arm) != object_id:
        actual = scene.known_robot.held.get(arm) or "nothing"
        return Outcome(False, FailureCode.NOT_HOLDING, f"the {arm} arm holds {actual}, not {object_id}")
    return Outcome(True)


def _near(planner: SkillPlanner, scene: SceneGraph, node_id: str, arm: str = "") -> Outcome:
    """Near enough for the arm from where the base stands."""
    entity = scene.entity(node_id)
    robot = scene.known_robot
    hand = f"the {arm} arm" if arm else "the robot"
    distance = horizontal_distance((robot.pose.x, robot.pose.y), entity.center)
    if entity.kind == "furniture":
        distance -= min(entity.size[:2]) / 2  # reaching its near edge is enough to place on it
    if distance > planner.robot.reach_m:
        where = "; ".join(scene.relations(node_id)) or f"in {entity.room}"
        return Outcome(False, FailureCode.OUT_OF_REACH,
                     f"{node_id} is {distance:.1f} m from the robot ({where}); {hand} reaches "
                     f"{planner.robot.reach_m:.1f} m. GOTO a place next to it first")
    return Outcome(True)


def _reachable(planner: SkillPlanner, scene: SceneGraph, node_id: str, arm: str = "") -> Outcome:
    """Within the arm's workspace from where the base stands: near enough, and neither too low nor
    too high where the hand works (on a piece of furniture: its top, or inside when it is open)."""
    near = _near(planner, scene, node_id, arm)
    if not near.ok:
        return near
    if scene.entity(node_id).state == "open":
        return _opening_within_workspace(planner, scene, node_id, arm)
    return _within_workspace(planner, scene, node_id, arm)


def _reachable_from_beside(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Outcome:
    """From some place beside the furniture the thing is on, in that furniture's room, an arm
    reaches it: a thing in the middle of a wide bed along a wall is out of reach wherever the base
    stops (a thing on no furniture is for the other checks)."""
    support = scene.furniture_support(object_id)
    if support is None or planner.poses_reaching(object_id, scene):
        return Outcome(True)
    furniture = scene.entity(support[1])
    return Outcome(False, FailureCode.OUT_OF_WORKSPACE,
                   f"{object_id} is {support[0]} {furniture.id} out of reach from every place beside it in the "
                   f"{furniture.room} where the robot can stand (the arms reach {planner.robot.reach_m:.1f} m)")


def _handle_reachable(planner: SkillPlanner, scene: SceneGraph, node_id: str, arm: str = "") -> Outcome:
    """Near enough to a door or drawer, with its handle and inner shelf within the workspace."""
    near = _near(planner, scene, node_id, arm)
    return near if not near.ok else _opening_within_workspace(planner, scene, node_id, arm)


def _heights_within(planner: SkillPlanner, node_id: str, heights: dict[str, float], arm: str) -> Outcome:
    for part, height in heights.items():
        if not planner.robot.works_at(height):
            low, high = planner.robot.workspace_z_m
            hand = f"the {arm} arm" if arm else "the robot"
            return Outcome(False, FailureCode.OUT_OF_WORKSPACE, f"{node_id}{part} is {height:.2f} m above the floor; "
                                                                f"{hand} works between {low:.2f} and {high:.2f} m")
    return Outcome(True)


def _within_workspace(planner: SkillPlanner, scene: SceneGraph, node_id: str, arm: str = "") -> Outcome:
    """Neither too low nor too high for the arms, wherever the base stands (for furniture, its top,
    where things go)."""
    entity = scene.entity(node_id)
    if entity.kind == "person":
        return Outcome(True)
    if entity.kind != "furniture":
        return _heights_within(planner, node_id, {"": entity.center[2]}, arm)
    outcome = _heights_within(planner, node_id, {"'s top": entity.center[2] + entity.size[2] / 2}, arm)
    if not outcome.ok and entity.state == "closed" and _opening_within_workspace(planner, scene, node_id, arm).ok:
        return Outcome(False, outcome.code, f"{outcome.detail}; OPEN({node_id}) to put things inside it")
    return outcome


def _opening_within_workspace(planner: SkillPlanner, scene: SceneGraph, node_id: str, arm: str = "") -> Outcome:
    """A door or drawer whose handle and lowest inner shelf the arms reach."""
    entity = scene.entity(node_id)
    if entity.kind != "furniture" or not entity.state:
        return Outcome(False, FailureCode.OUT_OF_WORKSPACE, f"{node_id} has no door or drawer")
    bottom = entity.center[2] - entity.size[2] / 2
    heights = opening_heights(bottom, bottom + entity.size[2])
    return _heights_within(planner, node_id, {f"'s {part}": z for part, z in heights.items()}, arm)


def _payload(planner: SkillPlanner, scene: SceneGraph, object_id: str, arm: str) -> Outcome:
    entity = scene.entity(object_id)
    library, limit = planner.library, planner.robot.payload_kg
    mass = entity.mass_kg or library.typical_mass_kg.get(entity.label, 0.0)
    if mass > limit:
        return Outcome(False, FailureCode.TOO_HEAVY, f"{object_id} weighs about {mass:.1f} kg; the {arm} arm lifts at most "
                                                     f"{limit:.1f} kg")
    if not mass:
        # Lifting something too heavy can hurt the arm or drop it on someone: an unknown mass is
        # not 0 kg, it is at most the box full of water, or of metal for a thing of metal.
        dense = {kind: library.density_kg_m3[kind] for kind in planner.hazards.kinds.of(entity)
                 if kind in library.density_kg_m3}
        kind, density = max(dense.items(), key=lambda item: item[1], default=("", library.unknown_density_kg_m3))
        litres = math.prod(entity.size) * 1000
        bound = litres / 1000 * density
        if bound > limit:
            solid = f" of {kind} ({density:.0f} kg/m³)" if kind else ""
            return Outcome(False, FailureCode.TOO_HEAVY,
                           f"the mass of {object_id} is not known, and its {litres:.3g} l box{solid} could weigh up to "
                           f"{bound:.1f} kg; the {arm} arm lifts at most {limit:.1f} kg (give {entity.label} a mass "
                           f"in typical_mass_kg of the skill library if it is lighter)")
    return Outcome(True)


def _elsewhere(planner: SkillPlanner, scene: SceneGraph, place_id: str) -> Outcome:
    """Going where the robot already is does nothing."""
    robot = scene.known_robot
    entity = scene.entity(place_id)
    if entity.kind == "room" and robot.room == place_id:
        return Outcome(False, FailureCode.ALREADY_THERE, f"the robot is already in the {place_id}")
    if entity.kind != "room" and place_id == planner.beside(scene):
        return Outcome(False, FailureCode.ALREADY_THERE, f"the robot is already next to {place_id}")
    return Outcome(True)


def _accessible(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Outcome:
    closed = scene.enclosed(object_id)
    if closed:
        return Outcome(False, FailureCode.CONTAINER_CLOSED, f"{object_id} is in {closed}, which is closed; OPEN({closed}) first")
    return Outcome(True)


def _closed(planner: SkillPlanner, scene: SceneGraph, target_id: str) -> Outcome:
    if scene.entity(target_id).state == "open":
        return Outcome(False, FailureCode.ALREADY_OPEN, f"{target_id} is already open")
    return Outcome(True)


def _is_open(planner: SkillPlanner, scene: SceneGraph, target_id: str) -> Outcome:
    if scene.entity(target_id).state == "closed":
        return Outcome(False, FailureCode.ALREADY_CLOSED, f"{target_id} is already closed")
    return Outcome(True)


def _hand_free(planner: SkillPlanner, scene: SceneGraph) -> Outcome:
    if all(scene.known_robot.held.get(arm) for arm in planner.robot.arms):
        return Outcome(False, FailureCode.ARM_OCCUPIED, "both hands are full; PLACE something first")
    return Outcome(True)


def _held(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Outcome:
    if not scene.known_robot.holding(object_id):
        return Outcome(False, FailureCode.NOT_HOLDING, f"the robot does not hold {object_id}; PICK it first")
    return Outcome(True)


def _person_present(planner: SkillPlanner, scene: SceneGraph, person_id: str) -> Outcome:
    person = scene.entity(person_id)
    if person.status == "missing":
        return Outcome(False, FailureCode.PERSON_NOT_FOUND, f"{person_id} was not seen where they were last; "
                                                f"look for them (LOOK_AROUND a room) first")
    return Outcome(True)


PRECONDITIONS: dict[str, Callable[..., Outcome]] = {
    "held": _held,
    "person_present": _person_present,
    "accessible": _accessible,
    "closed": _closed,
    "is_open": _is_open,
    "hand_free": _hand_free,
    "elsewhere": _elsewhere,
    "location_known": _location_known,
    "arm_free": _arm_free,
    "not_held": _not_held,
    "payload": _payload,
    "holding": _holding,
    "reachable": _reachable,
    "reachable_from_beside": _reachable_from_beside,
    "handle_reachable": _handle_reachable,
    "within_workspace": _within_workspace,
    "opening_within_workspace": _opening_within_workspace,
}


# ---- parameters a skill fills itself ---------------------------------------------------------
def _free_arm(planner: SkillPlanner, scene: SceneGraph) -> str:
    return next((a for a in planner.robot.arms if not scene.known_robot.held.get(a)), planner.robot.arm_names[0])


def _holding_arm(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> str:
    return scene.known_robot.holding(object_id) or planner.robot.arm_names[0]


CHOOSERS: dict[str, Callable[..., str]] = {"free_arm": _free_arm, "holding_arm": _holding_arm}
