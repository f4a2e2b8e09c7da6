"""Skills: strict `SKILL(arg, ...)` syntax, precondition checks and HTN decomposition into commands.

The skill library is configuration (config/skills.yaml): parameters with types, declarative
preconditions naming checks below, and the commands a skill decomposes into.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.core.files import load_model
from planner.core.geometry import Pose2D, approach_pose, free_point_in_room, horizontal_distance
from planner.core.scene_graph import SceneGraph

ParamType = Literal["object", "furniture", "openable", "place", "arm", "text"]
CommandName = Literal["navigate", "approach", "grasp", "lift", "place_approach", "release", "retreat", "open", "close"]


class SkillSyntaxError(ValueError):
    """A skill call that is not `SKILL(arg, ...)` of a known skill with valid arguments."""


class SkillRefused(Exception):
    """A skill that must not start: invalid, or a precondition fails. Carries the failure code."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


# ---- configuration ---------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParamSpec(_Strict):
    name: str
    type: ParamType


class PreconditionSpec(_Strict):
    check: str
    args: list[str] = Field(default_factory=list)


class CommandSpec(_Strict):
    command: CommandName
    arm: str = ""
    object: str = ""
    target: str = ""


class SkillSpec(_Strict):
    description: str
    params: list[ParamSpec]
    preconditions: list[PreconditionSpec] = Field(default_factory=list)
    methods: list[CommandSpec] = Field(min_length=1)


class SkillLibrary(_Strict):
    command_timeouts_s: dict[CommandName, float]
    typical_mass_kg: dict[str, float] = Field(default_factory=dict, description="by label, for objects whose mass "
                                                                                 "perception does not know")
    skills: dict[str, SkillSpec]

    @model_validator(mode="after")
    def _references(self):
        for name, skill in self.skills.items():
            if not re.fullmatch(r"[A-Z][A-Z_]*", name):
                raise ValueError(f"skills.{name}: skill names are upper case, e.g. PICK")
            params = {p.name for p in skill.params}
            for index, pre in enumerate(skill.preconditions):
                if pre.check not in PRECONDITIONS:
                    raise ValueError(f"skills.{name}.preconditions[{index}].check: unknown check {pre.check!r}; "
                                     f"known: {', '.join(sorted(PRECONDITIONS))}")
                unknown = [a for a in pre.args if a not in params]
                if unknown:
                    raise ValueError(f"skills.{name}.preconditions[{index}].args: {unknown} are not parameters")
            for index, method in enumerate(skill.methods):
                for slot in ("arm", "object", "target"):
                    value = getattr(method, slot)
                    if value and value.strip("{}") not in params:
                        raise ValueError(f"skills.{name}.methods[{index}].{slot}: {value!r} is not a parameter")
        return self


def load_skill_library(path: str | Path) -> SkillLibrary:
    return load_model(path, SkillLibrary)


# ---- calls -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SkillCall:
    name: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(self.args)})"


_CALL = re.compile(r"^\s*([A-Za-z_]+)\s*\((.*)\)\s*$", re.S)


def parse_call(text: str) -> tuple[str, list[str]]:
    match = _CALL.match(text)
    if not match:
        raise SkillSyntaxError(f"{text!r} is not of the form NAME(arg, ...)")
    inner = match.group(2).strip()
    return match.group(1), [arg.strip().strip("'\"") for arg in inner.split(",")] if inner else []


@dataclass
class Check:
    ok: bool
    code: str = ""
    reason: str = ""


@dataclass
class Command:
    name: str
    arm: str = ""
    object_id: str = ""
    target_id: str = ""
    base_pose: Pose2D | None = None
    point: tuple[float, float, float] | None = None
    timeout_s: float = 30.0


@dataclass
class RobotProfile:
    arms: list[str]
    reach_m: float
    standoff_m: float
    payload_kg: float = 5.0

    @classmethod
    def of(cls, robot) -> "RobotProfile":
        """The profile of a world file's robot (planner.core.world.Robot)."""
        return cls(list(robot.arms), robot.reach_m, robot.standoff_m, robot.payload_kg)


@dataclass
class SkillPlanner:
    library: SkillLibrary
    robot: RobotProfile

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
            return ""
        if kind == "arm":
            return "" if value in self.robot.arms else f"not an arm of this robot ({', '.join(self.robot.arms)})"
        if not scene.has(value):
            return "no such thing in the scene graph"
        entity = scene.entity(value)
        if kind == "openable":
            return "" if entity.state else "has no door or drawer to open or close"
        allowed = {"object": {"object"}, "furniture": {"furniture"}, "place": {"furniture", "room"}}[kind]
        return "" if entity.kind in allowed else f"is a {entity.kind}, expected {' or '.join(sorted(allowed))}"

    def bindings(self, call: SkillCall) -> dict[str, str]:
        spec = self.library.skills[call.name]
        return {p.name: value for p, value in zip(spec.params, call.args)}

    def check_preconditions(self, call: SkillCall, scene: SceneGraph) -> Check:
        """The first failing precondition, or ok. Every check names what failed and why."""
        bound = self.bindings(call)
        for pre in self.library.skills[call.name].preconditions:
            result = PRECONDITIONS[pre.check](self, scene, *(bound[a] for a in pre.args))
            if not result.ok:
                return result
        return Check(True)

    def plan(self, text: str, scene: SceneGraph) -> tuple[SkillCall, list[Command]]:
        """Parse, check and decompose a skill call; raises SkillRefused with the reason it cannot run."""
        if scene.robot is None:
            raise SkillRefused("ROBOT_STATE_UNKNOWN", "no robot state has been received yet")
        try:
            call = self.parse(text, scene)
        except SkillSyntaxError as error:
            raise SkillRefused("INVALID_SKILL", str(error)) from None
        check = self.check_preconditions(call, scene)
        if not check.ok:
            raise SkillRefused(check.code, check.reason)
        return call, self.decompose(call, scene)

    def decompose(self, call: SkillCall, scene: SceneGraph) -> list[Command]:
        bound = self.bindings(call)
        robot = scene.robot
        commands = []
        for method in self.library.skills[call.name].methods:
            fill = lambda slot: bound[slot.strip("{}")] if slot else ""  # noqa: E731
            # A skill without an arm parameter (OPEN, CLOSE) uses the first free arm.
            arm = fill(method.arm) or next((a for a in self.robot.arms if not robot.held.get(a)), self.robot.arms[0])
            command = Command(name=method.command, arm=arm, object_id=fill(method.object),
                              target_id=fill(method.target), timeout_s=self.library.command_timeouts_s[method.command])
            if command.name == "navigate":
                command.base_pose = self.navigation_goal(command.target_id, scene, robot.pose)
            elif command.name in ("approach", "grasp", "lift"):
                command.point = scene.entity(command.object_id).center
            elif command.name == "place_approach":
                target = scene.entity(command.target_id)
                command.point = (target.center[0], target.center[1], target.center[2] + target.size[2] / 2)
            commands.append(command)
        return commands

    def navigation_goal(self, target_id: str, scene: SceneGraph, start: Pose2D) -> Pose2D:
        target = scene.entity(target_id)
        if target.kind == "room":
            free = free_point_in_room(target.polygon, [(f.center, f.size) for f in scene.furniture(target_id)],
                                      self.robot.standoff_m) if target.polygon else None
            x, y = free or target.center[:2]
            return Pose2D(x, y, start.yaw)
        # From another room the robot comes in through a door: face the side towards the room's
        # middle (furniture stands against walls), not the side towards where it is now.
        seen_from = start
        if target.room and scene.has(target.room) and scene.robot and scene.robot.room != target.room:
            middle = scene.entity(target.room).center
            seen_from = Pose2D(middle[0], middle[1], 0.0)
        return approach_pose(target.center, target.size, seen_from.x, seen_from.y, self.robot.standoff_m)


# ---- preconditions ---------------------------------------------------------------------------
def _location_known(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Check:
    entity = scene.entity(object_id)
    if entity.status == "missing":
        return Check(False, "OBJECT_LOCATION_UNKNOWN",
                     f"{object_id} was not seen where it was last mapped; its location is unknown")
    return Check(True)


def _arm_free(planner: SkillPlanner, scene: SceneGraph, arm: str) -> Check:
    held = scene.robot.held.get(arm, "")
    if held:
        return Check(False, "ARM_OCCUPIED", f"the {arm} arm already holds {held}")
    return Check(True)


def _not_held(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Check:
    arm = scene.robot.holding(object_id)
    if arm:
        return Check(False, "ALREADY_HOLDING", f"{object_id} is already held by the {arm} arm")
    return Check(True)


def _holding(planner: SkillPlanner, scene: SceneGraph, object_id: str, arm: str) -> Check:
    if scene.robot.held.get(arm) != object_id:
        actual = scene.robot.held.get(arm) or "nothing"
        return Check(False, "NOT_HOLDING", f"the {arm} arm holds {actual}, not {object_id}")
    return Check(True)


def _reachable(planner: SkillPlanner, scene: SceneGraph, node_id: str, arm: str = "") -> Check:
    entity = scene.entity(node_id)
    robot = scene.robot
    distance = horizontal_distance((robot.pose.x, robot.pose.y), entity.center)
    if entity.kind == "furniture":
        distance -= min(entity.size[:2]) / 2  # reaching its near edge is enough to place on it
    if distance > planner.robot.reach_m:
        where = "; ".join(scene.relations(node_id)) or f"in {entity.room}"
        return Check(False, "OUT_OF_REACH",
                     f"{node_id} is {distance:.1f} m from the robot ({where}); the {arm or 'robot'}{' arm' if arm else ''} reaches "
                     f"{planner.robot.reach_m:.1f} m. GOTO a place next to it first")
    return Check(True)


def _payload(planner: SkillPlanner, scene: SceneGraph, object_id: str, arm: str) -> Check:
    entity = scene.entity(object_id)
    mass = entity.mass_kg or planner.library.typical_mass_kg.get(entity.label, 0.0)
    if mass > planner.robot.payload_kg:
        return Check(False, "TOO_HEAVY", f"{object_id} weighs about {mass:.1f} kg; the {arm} arm lifts at most "
                                         f"{planner.robot.payload_kg:.1f} kg")
    return Check(True)


def _surface(planner: SkillPlanner, scene: SceneGraph, target_id: str) -> Check:
    if scene.entity(target_id).kind != "furniture":
        return Check(False, "NOT_A_SURFACE", f"{target_id} is not a piece of furniture to put things on")
    return Check(True)


def _elsewhere(planner: SkillPlanner, scene: SceneGraph, place_id: str) -> Check:
    """Going where the robot already is does nothing."""
    robot = scene.robot
    entity = scene.entity(place_id)
    if entity.kind == "room" and robot.room == place_id:
        return Check(False, "ALREADY_THERE", f"the robot is already in the {place_id}")
    if entity.kind != "room" and place_id in scene.furniture_near(robot.pose.x, robot.pose.y, planner.robot.reach_m)[:1]:
        return Check(False, "ALREADY_THERE", f"the robot is already next to {place_id}")
    return Check(True)


def _accessible(planner: SkillPlanner, scene: SceneGraph, object_id: str) -> Check:
    closed = scene.enclosed(object_id)
    if closed:
        return Check(False, "CONTAINER_CLOSED", f"{object_id} is in {closed}, which is closed; OPEN({closed}) first")
    return Check(True)


def _closed(planner: SkillPlanner, scene: SceneGraph, target_id: str) -> Check:
    if scene.entity(target_id).state == "open":
        return Check(False, "ALREADY_OPEN", f"{target_id} is already open")
    return Check(True)


def _is_open(planner: SkillPlanner, scene: SceneGraph, target_id: str) -> Check:
    if scene.entity(target_id).state == "closed":
        return Check(False, "ALREADY_CLOSED", f"{target_id} is already closed")
    return Check(True)


def _hand_free(planner: SkillPlanner, scene: SceneGraph) -> Check:
    if all(scene.robot.held.get(arm) for arm in planner.robot.arms):
        return Check(False, "ARM_OCCUPIED", "both hands are full; PLACE something first")
    return Check(True)


PRECONDITIONS: dict[str, Callable[..., Check]] = {
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
    "surface": _surface,
}
