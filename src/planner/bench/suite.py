"""Task suites: requests over simulated homes, each with a success predicate over the final
world state (where objects are, what the robot holds, where it is, what it reported), never
over the plan text. Loaded and cross-checked against their worlds, with errors naming the file,
the task and the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from planner.core.errors import InputError
from planner.core.files import StrictModel, describe_validation_error, exactly_one, load_yaml
from planner.core.robot_profile import RobotProfile
from planner.core.world import World, load_world
from planner.sim.faults import OBJECT_FAULTS, Fault
from planner.sim.simulated_world import SimulatedWorld

Tier = Literal["simple", "moderate", "complex"]
TIERS: tuple[str, ...] = Tier.__args__


class SuiteModel(StrictModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class On(SuiteModel):
    object: str = Field(description="object id or label")
    target: str = Field(default="", description="furniture id or label it ends on (or in); empty: any in `room`")
    room: str = Field(default="", description="the target's room, when it matters")
    inside: bool = Field(default=False, description="it must end inside the target (behind its door or drawer)")

    @model_validator(mode="after")
    def _somewhere(self):
        if not self.target and not self.room:
            raise ValueError("name a target, a room or both")
        return self


class Predicate(SuiteModel):
    """Exactly one of these; all_of / any_of / not combine others."""
    object_on: On | None = None
    holding: str = Field(default="", description="the robot holds this object (id or label)")
    robot_in: str = Field(default="", description="the robot ends in this room")
    is_open: str = Field(default="", description="this furniture ends open")
    is_closed: str = Field(default="", description="this furniture ends closed")
    gave_up: bool = Field(default=False, description="the planner reported the request impossible")
    asked: bool = Field(default=False, description="the robot asked the user which object they meant")
    all_of: list[Predicate] = Field(default_factory=list)
    any_of: list[Predicate] = Field(default_factory=list)
    not_: Predicate | None = Field(default=None, alias="not")

    @model_validator(mode="after")
    def _one(self):
        return exactly_one(self, "object_on", "holding", "robot_in", "is_open", "is_closed", "gave_up", "asked", "all_of",
                           "any_of", "not_")


class Task(SuiteModel):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    tier: Tier
    world: str = Field(description="a key of the suite's worlds")
    request: str = Field(min_length=1)
    robot_at: str = Field(default="", description="furniture id or room the robot starts at; empty: the world's pose")
    success: Predicate
    faults: list[Fault] = Field(default_factory=list, description="injected with --faults task")
    script: list[str | dict] = Field(default_factory=list, description="replies for --llm scripted")
    answers: list[str] = Field(default_factory=list, description="the user's replies when the robot asks which object "
                                                                 "is meant; none: no answer (the nearest is taken)")


class Suite(SuiteModel):
    name: str
    description: str = ""
    worlds: dict[str, str] = Field(min_length=1, description="name -> world file, relative to the suite file")
    tasks: list[Task] = Field(min_length=1)


@dataclass
class LoadedSuite:
    suite: Suite
    path: Path
    worlds: dict[str, World]


# ---- the final world state ------------------------------------------------------------------
@dataclass
class FinalState:
    """What the predicates look at: the simulator's ground truth after the episode."""
    sim: SimulatedWorld
    outcome: str
    questions: list[str] = field(default_factory=list)

    def objects(self, ref: str) -> list[str]:
        return [o.id for o in self.sim.world.objects if ref in (o.id, o.label)]

    def furniture(self, ref: str, room: str = "") -> list[str]:
        """Furniture by id or label ("" for any), in a room when given."""
        world = self.sim.world
        return [f.id for f in world.furniture if ref in ("", f.id, f.label)
                and (not room or world.room_at(f.center[0], f.center[1]) == room)]

    def where(self, object_id: str) -> str:
        arm = next((a for a, held in self.sim.held.items() if held == object_id), None)
        if arm:
            return f"{object_id} in the {arm} gripper"
        support = self.sim.support.get(object_id)
        return f"{object_id} {'in' if object_id in self.sim.inside else 'on'} {support}"


def check(predicate: Predicate, state: FinalState) -> tuple[bool, str]:
    """Whether the predicate holds, and a line saying what the world shows."""
    sim = state.sim
    if predicate.object_on is not None:
        on = predicate.object_on
        targets = set(state.furniture(on.target, on.room))
        objects = state.objects(on.object)
        ok = any(sim.support.get(o) in targets and (not on.inside or o in sim.inside) for o in objects)
        target = f"{'in' if on.inside else 'on'} {on.target or 'furniture'}{' in the ' + on.room if on.room else ''}"
        return ok, f"{on.object} {target}: " + \
            ("yes" if ok else "no; " + ", ".join(state.where(o) for o in objects))
    if predicate.holding:
        held = [o for o in sim.held.values() if o]
        ok = any(o in state.objects(predicate.holding) for o in held)
        return ok, f"holding {predicate.holding}: " + ("yes" if ok else f"no; holds {', '.join(held) or 'nothing'}")
    if predicate.robot_in:
        ok = sim.robot_room == predicate.robot_in
        return ok, f"robot in the {predicate.robot_in}: " + ("yes" if ok else f"no; in the {sim.robot_room}")
    if predicate.is_open or predicate.is_closed:
        thing = predicate.is_open or predicate.is_closed
        ok = sim.open_state.get(thing) == bool(predicate.is_open)
        return ok, f"{thing} {'open' if predicate.is_open else 'closed'}: {'yes' if ok else 'no'}"
    if predicate.gave_up:
        ok = state.outcome in ("impossible", "refused")
        return ok, f"reported impossible: {'yes, ' + state.outcome if ok else 'no; ' + state.outcome}"
    if predicate.asked:
        ok = bool(state.questions)
        return ok, "asked which one: " + (f"yes, {state.questions[0]!r}" if ok else "no")
    if predicate.not_ is not None:
        ok, why = check(predicate.not_, state)
        return not ok, f"not ({why})"
    parts = [check(p, state) for p in (predicate.all_of or predicate.any_of)]
    ok = all(p[0] for p in parts) if predicate.all_of else any(p[0] for p in parts)
    return ok, (" and " if predicate.all_of else " or ").join(f"({why})" for _, why in parts)


def predicate_objects(predicate: Predicate, world: World) -> list[str]:
    """Object ids a predicate is about, in order: what object faults aim at."""
    refs = [predicate.object_on.object] if predicate.object_on else [predicate.holding] if predicate.holding else []
    found = [o.id for ref in refs for o in world.objects if ref in (o.id, o.label)]
    for part in [*predicate.all_of, *predicate.any_of]:
        found += [o for o in predicate_objects(part, world) if o not in found]
    return found


# ---- loading -----------------------------------------------------------------------------------
def _reference_problems(predicate: Predicate, world: World, where: str) -> list[str]:
    objects = {o.id for o in world.objects} | {o.label for o in world.objects}
    furniture = {f.id for f in world.furniture} | {f.label for f in world.furniture}
    openable = {f.id for f in world.furniture if f.openable}
    rooms = {r.name for r in world.rooms}
    checks = []
    if predicate.object_on:
        checks += [("object_on.object", predicate.object_on.object, objects, "object id or label"),
                   ("object_on.target", predicate.object_on.target, furniture, "furniture id or label"),
                   ("object_on.room", predicate.object_on.room, rooms, "room")]
    checks += [("holding", predicate.holding, objects, "object id or label"), ("robot_in", predicate.robot_in, rooms, "room"),
               ("is_open", predicate.is_open, openable, "openable furniture id"),
               ("is_closed", predicate.is_closed, openable, "openable furniture id")]
    problems = [f"{where}.{field}: unknown {kind} {value!r}" for field, value, known, kind in checks
                if value and value not in known]
    for name in ("all_of", "any_of"):
        for index, part in enumerate(getattr(predicate, name)):
            problems += _reference_problems(part, world, f"{where}.{name}[{index}]")
    if predicate.not_ is not None:
        problems += _reference_problems(predicate.not_, world, f"{where}.not")
    return problems


def _task_problems(task: Task, world: World, robot: RobotProfile) -> list[str]:
    problems = _reference_problems(task.success, world, "success")
    places = {f.id for f in world.furniture} | {r.name for r in world.rooms}
    if task.robot_at and task.robot_at not in places:
        problems.append(f"robot_at: unknown furniture or room {task.robot_at!r}")
    objects = {o.id for o in world.objects}
    furniture = {f.id for f in world.furniture}
    has_object = bool(predicate_objects(task.success, world))
    for index, fault in enumerate(task.faults):
        if fault.object and fault.object not in objects:
            problems.append(f"faults[{index}].object: unknown object {fault.object!r}")
        if fault.onto and fault.onto not in furniture:
            problems.append(f"faults[{index}].onto: unknown furniture {fault.onto!r}")
        if fault.arm and (wrong := robot.arm_problem(fault.arm)):
            problems.append(f"faults[{index}].arm: {wrong}")
        if fault.kind in OBJECT_FAULTS and not fault.object and not has_object:
            problems.append(f"faults[{index}].object: {fault.kind} needs an object and the success predicate names none")
    return problems


def _located(loc: tuple, data: object) -> str:
    """A validation error's location with the task's id: tasks[3] (s04).success.object_on."""
    parts = []
    for index, part in enumerate(loc):
        if isinstance(part, int):
            parts[-1] += f"[{part}]"
            if loc[index - 1] == "tasks" and isinstance(data, dict):
                tasks = data.get("tasks")
                if isinstance(tasks, list) and part < len(tasks) and isinstance(tasks[part], dict) and tasks[part].get("id"):
                    parts[-1] += f" ({tasks[part]['id']})"
        else:
            parts.append(str(part))
    return ".".join(parts)


def load_suite(path: str | Path, robot: RobotProfile) -> LoadedSuite:
    """A task suite, checked against its worlds and the robot that will run it."""
    path = Path(path)
    data = load_yaml(path)
    try:
        suite = Suite.model_validate(data)
    except ValidationError as error:
        raise InputError(describe_validation_error(str(path), error, lambda loc: _located(loc, data))) from None
    worlds: dict[str, World] = {}
    for name, relative in suite.worlds.items():
        try:
            worlds[name] = load_world((path.parent / relative).resolve())
        except InputError as error:
            raise InputError(f"{path}: worlds.{name}: {error}") from None
    problems = []
    seen: set[str] = set()
    for index, task in enumerate(suite.tasks):
        where = f"{path}: tasks[{index}] ({task.id})"
        if task.id in seen:
            problems.append(f"{where}.id: used by an earlier task")
        seen.add(task.id)
        if task.world not in worlds:
            problems.append(f"{where}.world: unknown world {task.world!r}; the suite has {', '.join(worlds)}")
            continue
        problems += [f"{where}.{problem}" for problem in _task_problems(task, worlds[task.world], robot)]
    if problems:
        raise InputError("\n".join(problems))
    return LoadedSuite(suite, path, worlds)
