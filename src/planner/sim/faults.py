"""Faults a real robot meets, injected into a task: chosen per task in the suite file or at random
from a seed, and turned into the simulator's scenario events (or, for a garbage LLM reply, a
policy that answers nonsense on a given call). The same seed gives the same faults."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import Field

from planner.core.files import StrictModel
from planner.core.ports import JUDGEMENT_SCHEMA, Policy, judged
from planner.core.robot_profile import RobotProfile
from planner.core.types import PolicyReply
from planner.core.world import World
from planner.sim.simulated_world import (
    AbortNavigation,
    BlockPath,
    CommandStarted,
    DropDetections,
    HangCommand,
    MoveObject,
    Occlude,
    ScenarioEvent,
    SlipGrasp,
    Trigger,
    WornGripper,
)

FaultKind = Literal["object_moved", "grasp_slip", "worn_gripper", "nav_blocked", "nav_aborted", "object_occluded",
                    "detection_dropout", "command_timeout", "garbage_reply"]
FAULT_KINDS: tuple[str, ...] = FaultKind.__args__
OBJECT_FAULTS = ("object_moved", "grasp_slip", "worn_gripper", "object_occluded", "command_timeout")

# Replies a model under load or a broken server sends: prose, cut JSON, invented skills, nothing.
GARBAGE_REPLIES = (
    "Sure! I will help the robot with that request.",
    '{"thought": "I should go to the',
    '{"thought": "go", "action": "TELEPORT(kitchen)"}',
    "",
    '{"goals": "bring it"}',
)


class Fault(StrictModel):
    kind: FaultKind
    object: str = Field(default="", description="the object it concerns; empty: the task's first object")
    onto: str = Field(default="", description="object_moved: where it ends up; empty: chosen by the seed")
    arm: str = Field(default="", description="worn_gripper: the arm; empty: the one a pick takes first")
    call: int = Field(default=0, ge=0, description="garbage_reply: which LLM call (1 = the first); 0: by the seed")
    duration_s: float = Field(default=20.0, gt=0, description="object_occluded, detection_dropout: for how long")


class GarbledPolicy:
    """The real policy, except that the given calls (1-based) get a garbage reply instead."""

    def __init__(self, policy: Policy, calls: set[int], rng: random.Random):
        self.policy = policy
        self.garbage = {call: rng.choice(GARBAGE_REPLIES) for call in sorted(calls)}
        self.calls = 0

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        self.calls += 1
        if self.calls in self.garbage:
            return PolicyReply(self.garbage[self.calls])
        return self.policy.complete(messages, schema)

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        self.calls += 1
        if self.calls in self.garbage:
            return PolicyReply(self.garbage[self.calls])
        return judged(self.policy, messages, schema)


def random_faults(rng: random.Random, objects: list[str]) -> list[Fault]:
    """One fault for a task, of a kind that can touch it (object faults need an object to handle)."""
    kinds = [k for k in FAULT_KINDS if objects or k not in OBJECT_FAULTS]
    return [Fault(kind=rng.choice(kinds))]


def _surface_for(world: World, object_id: str, rng: random.Random) -> str:
    """Where an external agent puts an object: another open surface of its room, else of the home."""
    obj = next(o for o in world.objects if o.id == object_id)
    here = world.furniture_by_id(obj.placed_on)
    room = world.room_at(here.center[0], here.center[1])
    surfaces = [f for f in world.furniture if not f.openable and f.id != here.id]
    same_room = [f for f in surfaces if world.room_at(f.center[0], f.center[1]) == room]
    return rng.choice(same_room or surfaces).id


def fault_events(faults: list[Fault], world: World, robot: RobotProfile, objects: list[str], rng: random.Random
                 ) -> tuple[list[ScenarioEvent], set[int]]:
    """Scenario events for the simulator, and the LLM calls that get garbage. `objects` are the ids
    the task is about (the first is the default target of object faults); a worn gripper is the
    robot's first arm unless the fault names one."""
    events: list[ScenarioEvent] = []
    garbage: set[int] = set()
    navigation = Trigger(command_started=CommandStarted(command="navigate"))
    for fault in faults:
        target = fault.object or (objects[0] if objects else "")
        if fault.kind in OBJECT_FAULTS and not target:
            raise ValueError(f"fault {fault.kind} needs an object and the task names none")
        on_command = lambda command: Trigger(command_started=CommandStarted(command=command, object=target))  # noqa: E731, B023 (called in this iteration)
        if fault.kind == "object_moved":
            onto = fault.onto or _surface_for(world, target, rng)
            events.append(ScenarioEvent(trigger=on_command("approach"), move_object=MoveObject(object=target, onto=onto)))
        elif fault.kind == "grasp_slip":
            events.append(ScenarioEvent(trigger=on_command("lift"), slip_grasp=SlipGrasp(object=target)))
        elif fault.kind == "worn_gripper":
            events.append(ScenarioEvent(trigger=Trigger(at_start=True),
                                        worn_gripper=WornGripper(arm=fault.arm or robot.arm_names[0])))
        elif fault.kind == "command_timeout":
            events.append(ScenarioEvent(trigger=on_command("grasp"), hang_command=HangCommand(command="grasp")))
        elif fault.kind == "object_occluded":
            events.append(ScenarioEvent(trigger=Trigger(at_start=True),
                                        occlude=Occlude(object=target, duration_s=fault.duration_s)))
        elif fault.kind == "nav_blocked":
            events.append(ScenarioEvent(trigger=navigation, block_path=BlockPath(attempts=1)))
        elif fault.kind == "nav_aborted":
            events.append(ScenarioEvent(trigger=navigation, abort_navigation=AbortNavigation(after_fraction=0.5)))
        elif fault.kind == "detection_dropout":
            events.append(ScenarioEvent(trigger=navigation, drop_detections=DropDetections(duration_s=fault.duration_s)))
        else:
            garbage.add(fault.call or rng.randint(1, 4))
    return events, garbage
