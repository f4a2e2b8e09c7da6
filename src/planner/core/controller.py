"""The controller's judgement: turn a failed command or a refused skill into a failure message
with a reason the planner can act on, and the context it happened in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.core.failures import FailureCode, reason_for
from planner.core.geometry import horizontal_distance
from planner.core.safety import Hazards
from planner.core.scene_graph import SceneGraph
from planner.core.skills import Command, SkillSyntaxError, parse_call
from planner.core.types import FailureInfo, Outcome

MOVED_M = 0.25      # an object further than this from where its skill was planned has been moved
ARRIVED_M = 0.30    # the base this close to a navigation goal has arrived

CheckPhase = Literal["before", "after"]


class StallDetector:
    """Progress from feedback (a distance still to go): stalled when it has not come down by
    min_progress within window seconds."""

    def __init__(self, window_s: float, min_progress: float):
        self.window_s = window_s
        self.min_progress = min_progress
        self._best: float | None = None
        self._since = 0.0

    def update(self, now: float, remaining: float) -> bool:
        if self._best is None or remaining <= self._best - self.min_progress:
            self._best, self._since = remaining, now
            return False
        return now - self._since > self.window_s


@dataclass
class ExecutionEventInfo:
    execution_id: str
    task_id: str
    skill: str
    command: str
    index: int
    total: int
    state: str      # started | succeeded | failed | refused
    code: str = ""
    detail: str = ""


def object_of(skill: str, scene: SceneGraph | None) -> str:
    """The object a skill call acts on: its first argument that is an object in the map."""
    try:
        _, args = parse_call(skill)
    except SkillSyntaxError:
        return ""
    if scene is None:
        return ""
    return next((a for a in args if scene.has(a) and scene.entity(a).kind == "object"), "")


def describe_failure(event: ExecutionEventInfo, scene: SceneGraph | None) -> FailureInfo:
    """A failure message for the planner: code, one-sentence reason, and where it happened (the
    robot, and the object the skill acts on)."""
    object_id = object_of(event.skill, scene)
    context: dict = {"execution_id": event.execution_id, "command_index": event.index, "commands": event.total,
                     "stage": "preconditions" if event.state == "refused" else "execution"}
    where = ""
    if scene is not None and scene.robot is not None:
        robot = scene.robot
        context["robot"] = {"x": round(robot.pose.x, 2), "y": round(robot.pose.y, 2), "room": robot.room,
                            "held": {arm: obj for arm, obj in robot.held.items() if obj}}
    if scene is not None and object_id and scene.has(object_id):
        relations = scene.relations(object_id)
        context["object"] = {"id": object_id, "room": scene.entity(object_id).room, "relations": relations}
        support = scene.support(object_id)
        where = f"; the map now shows it {support[0]} {support[1]}" if support else ""
        if event.code == FailureCode.OBJECT_NOT_FOUND and support and f" {support[1]}" in event.detail:
            where = "; it has not been seen anywhere else yet"  # the map still has it where it was not found
    reason = reason_for(event.code, event.detail, object_id, where)
    return FailureInfo(skill=event.skill, command=event.command, code=event.code or FailureCode.FAILED, reason=reason,
                       context=context)


def missing_object(failure: FailureInfo) -> str:
    """The object a failure found missing from where the map has it ("" for other failures):
    perception stops trusting that place."""
    if failure.code != FailureCode.OBJECT_NOT_FOUND:
        return ""
    found = failure.context.get("object")
    return str(found.get("id", "")) if isinstance(found, dict) else ""


def check_command(phase: CheckPhase, command: Command, scene: SceneGraph, hazards: Hazards) -> Outcome:
    return check_before(command, scene, hazards) if phase == "before" else check_after(command, scene)


def check_before(command: Command, scene: SceneGraph, hazards: Hazards) -> Outcome:
    """May the command run, and does the world still match what it was planned on? A command that
    puts or hands its object to its target must break no hazard rule (a raw command sent to the
    executor too, not only a checked skill's); the object of an approach or grasp must be where the
    map had it when the skill was decomposed (the command's point)."""
    if command.object_id and command.target_id:
        danger = hazards.refusal(command.object_id, command.target_id, scene)
        if danger is not None:
            return Outcome(False, FailureCode.HAZARD, f"{command.name} of {command.object_id} to {command.target_id} "
                                                      f"is not done: {danger}")
    if command.name not in ("approach", "grasp") or not command.object_id or command.point is None:
        return Outcome(True)
    if not scene.has(command.object_id) or scene.entity(command.object_id).status == "missing":
        return Outcome(False, FailureCode.WORLD_CHANGED, f"{command.object_id} is no longer seen where the plan expects it")
    entity = scene.entity(command.object_id)
    moved = horizontal_distance(command.point[:2], entity.center)
    if entity.status == "seen" and moved > MOVED_M:
        where = "; ".join(scene.relations(command.object_id)) or f"in the {entity.room}"
        return Outcome(False, FailureCode.WORLD_CHANGED, f"{command.object_id} moved {moved:.2f} m since the skill was planned "
                                             f"({where})")
    return Outcome(True)


def check_after(command: Command, scene: SceneGraph) -> Outcome:
    """Did the command do what it reported, as perception sees it? The robot at its goal, the
    object in the gripper after grasp, verify_grasp and lift, on its target after release, out of
    it after the person took it, the door moved."""
    robot = scene.robot
    if robot is None:
        return Outcome(False, FailureCode.ROBOT_STATE_UNKNOWN, f"no robot state to confirm {command.name} with")
    if command.name == "navigate" and command.base_pose is not None:
        off = robot.pose.distance_to(command.base_pose.x, command.base_pose.y)
        if off > ARRIVED_M:
            return Outcome(False, FailureCode.NOT_AT_GOAL, f"the robot is {off:.2f} m from the goal")
    elif command.name in ("grasp", "verify_grasp", "lift") and robot.held.get(command.arm) != command.object_id:
        holds = robot.held.get(command.arm) or "nothing"
        code = FailureCode.GRASP_LOST if command.name == "lift" else FailureCode.GRASP_NOT_CONFIRMED
        return Outcome(False, code, f"the {command.arm} gripper holds {holds}, not {command.object_id}")
    elif command.name == "release":
        support = scene.support(command.object_id) if scene.has(command.object_id) else None
        if robot.holding(command.object_id) or not support or support[1] != command.target_id:
            where = "; ".join(scene.relations(command.object_id)) if scene.has(command.object_id) else ""
            return Outcome(False, FailureCode.PLACE_NOT_CONFIRMED,
                         f"{command.object_id} is not seen on {command.target_id}" + (f" ({where})" if where else ""))
    elif command.name == "wait_for_take" and robot.held.get(command.arm) == command.object_id:
        return Outcome(False, FailureCode.HANDOVER_NOT_CONFIRMED, f"the {command.arm} gripper still holds {command.object_id}")
    elif command.name in ("open", "close"):
        wanted = "open" if command.name == "open" else "closed"
        state = scene.entity(command.target_id).state if scene.has(command.target_id) else ""
        if state != wanted:
            return Outcome(False, FailureCode.ARTICULATION_NOT_CONFIRMED, f"{command.target_id} is {state or 'unknown'}, not {wanted}")
    return Outcome(True)
