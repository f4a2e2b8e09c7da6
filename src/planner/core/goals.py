"""Goals a request is turned into, checked against the world state (the scene graph), never
against what the model says."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.core.files import StrictModel
from planner.core.scene_graph import SceneGraph

LISTED_PER_GOAL = 3   # objects a goal's status line names; the others are counted

GoalKind = Literal["object_on", "object_in", "holding", "bring_to_user", "robot_in_room", "is_open", "is_closed", "clear"]
# Goals that put an object somewhere; object_in only behind a door or in a drawer.
PLACING_KINDS = ("object_on", "object_in")
# Goals whose target must be furniture that opens.
OPENABLE_TARGET_KINDS = ("object_in", "is_open", "is_closed")
# The fields a reply of each kind carries (the schema asks for exactly these) and the ones it must fill.
# bring_to_user's room is where the user is: the planner fills it in, not the model.
REPLY_FIELDS: dict[str, tuple[str, ...]] = {
    "object_on": ("object", "target", "room"), "object_in": ("object", "target", "room"), "holding": ("object",),
    "bring_to_user": ("object",), "robot_in_room": ("room",), "is_open": ("target", "room"),
    "is_closed": ("target", "room"), "clear": ("target", "room")}
NEEDED: dict[str, tuple[str, ...]] = {
    "object_on": ("object",), "object_in": ("object", "target"), "holding": ("object",),
    "bring_to_user": ("object",), "robot_in_room": ("room",),
    "is_open": ("target",), "is_closed": ("target",), "clear": ("target",)}


class Goal(StrictModel):
    kind: GoalKind
    object: str = Field(default="", description="label of the object, e.g. bottle")
    target: str = Field(default="", description="label of the furniture, e.g. table")
    room: str = Field(default="", description="room the target, the robot or the user is in")
    object_id: str = Field(default="", description="the one object meant, once the user said which")
    other_than: str = Field(default="", description="furniture the object is on now, when the request wants it on "
                                                    "another piece of furniture with the target's label")

    @model_validator(mode="after")
    def _complete(self):
        missing = [name for name in NEEDED[self.kind] if not getattr(self, name)]
        if missing:
            raise ValueError(f"goal {self.kind} needs {', '.join(missing)}")
        if self.kind == "object_on" and not (self.target or self.room):
            raise ValueError("goal object_on needs a target, or a room where any furniture will do")
        if self.other_than and self.kind not in PLACING_KINDS:
            raise ValueError(f"goal {self.kind} puts nothing on furniture, so it has no furniture to leave")
        return self

    def __str__(self) -> str:
        thing = self.object_id or indefinite(self.object)
        where = f" in the {self.room}" if self.room else ""
        other = f" other than {self.other_than}" if self.other_than else ""
        return {
            "object_on": f"{thing} on {indefinite(self.target) if self.target else 'furniture'}{other}{where}",
            "object_in": f"{thing} inside {indefinite(self.target)}{other}{where}",
            "holding": f"the robot holds {thing}",
            "bring_to_user": f"the robot brings {thing} to the user{where}",
            "robot_in_room": f"the robot is in the {self.room}",
            "is_open": f"the {self.target}{where} is open",
            "is_closed": f"the {self.target}{where} is closed",
            "clear": f"nothing is left on the {self.target}{where} and the robot's hands are empty",
        }[self.kind]


def indefinite(label: str) -> str:
    return f"{'an' if label[:1] in 'aeiou' else 'a'} {label}"


class GoalReply(StrictModel):
    """Goals, or why the request cannot be done with what is in the map and what the robot can do."""
    goals: list[Goal] = Field(default_factory=list, max_length=4)
    impossible: str = Field(default="", max_length=200)

    @model_validator(mode="after")
    def _one_answer(self):
        if bool(self.goals) == bool(self.impossible):
            raise ValueError("give either goals or why the request is impossible")
        return self


def goal_schema(object_labels: list[str], furniture_labels: list[str], openable_labels: list[str],
                rooms: list[str]) -> dict:
    """JSON schema of the goal reply: one alternative per kind with only that kind's fields, and
    labels and rooms enumerated so that they exist in the map."""
    values = {"object": sorted(object_labels), "target": sorted(furniture_labels), "room": sorted(rooms)}
    alternatives = []
    for kind, fields in REPLY_FIELDS.items():
        if kind in OPENABLE_TARGET_KINDS:
            if not openable_labels:
                continue
            choices = {**values, "target": sorted(openable_labels)}
        else:
            choices = values
        properties: dict[str, dict] = {"kind": {"const": kind}}
        for name in fields:
            optional = name not in NEEDED[kind]
            properties[name] = {"enum": choices[name] + ([""] if optional else [])}
        alternatives.append({"type": "object", "properties": properties, "required": ["kind", *fields]})
    # One object at the root, as OpenAI's strict mode and tool calls require; "impossible" goes with no goals.
    return {"type": "object",
            "properties": {"goals": {"type": "array", "maxItems": 4, "items": {"anyOf": alternatives}},
                           "impossible": {"type": "string", "maxLength": 160}},
            "required": ["goals"]}


def goal_furniture(scene: SceneGraph, goal: Goal) -> list[str]:
    """The furniture a goal names: its target label, in its room when it gives one, but not the
    furniture it is to leave; a thing put in a room without a target may go on any furniture there."""
    return [f.id for f in scene.furniture(goal.room or None)
            if (f.label == goal.target or not goal.target) and f.id != goal.other_than]


def _held(scene: SceneGraph) -> set[str]:
    return {obj for obj in (scene.robot.held.values() if scene.robot else []) if obj}


def _on(scene: SceneGraph, furniture: list[str]) -> list[str]:
    return [o.id for o in scene.objects() if o.status == "seen" and (s := scene.furniture_support(o.id))
            and s[1] in furniture]


def goal_objects(goal: Goal, scene: SceneGraph) -> list[str]:
    """The objects a goal is about: the one the user chose or any with its label; for clearing,
    what stands on the furniture and what the robot holds."""
    if goal.kind == "clear":
        return [*_on(scene, goal_furniture(scene, goal)), *sorted(_held(scene))]
    if not goal.object:
        return []
    if goal.object_id:
        return [goal.object_id] if scene.has(goal.object_id) else []
    return [o.id for o in scene.objects() if o.label == goal.object]


def goal_met(goal: Goal, scene: SceneGraph) -> bool:
    robot_room = scene.robot.room if scene.robot else ""
    if goal.kind == "robot_in_room":
        return robot_room == goal.room
    if goal.kind in ("holding", "bring_to_user"):
        holds = bool(_held(scene) & set(goal_objects(goal, scene)))
        return holds and (goal.kind == "holding" or not goal.room or robot_room == goal.room)
    if goal.kind in ("is_open", "is_closed"):
        wanted = "open" if goal.kind == "is_open" else "closed"
        return any(scene.entity(f).state == wanted for f in goal_furniture(scene, goal))
    if goal.kind == "clear":
        return not _held(scene) and not _on(scene, goal_furniture(scene, goal))
    return bool(furniture_meeting(goal, scene))


def furniture_meeting(goal: Goal, scene: SceneGraph) -> set[str]:
    """The furniture where a placing goal's objects are now as it wants them."""
    relations = ("in",) if goal.kind == "object_in" else ("on", "in")
    wanted = set(goal_furniture(scene, goal))
    return {support[1] for obj in map(scene.entity, goal_objects(goal, scene))
            if obj.status == "seen" and (support := scene.furniture_support(obj.id))
            and support[0] in relations and support[1] in wanted}


def _where(scene: SceneGraph, object_id: str) -> str:
    entity = scene.entity(object_id)
    if entity.status == "held":
        return f"{object_id} is held by the robot"
    if entity.status == "missing":
        return f"{object_id} was not seen where it was last mapped"
    support = scene.support(object_id)
    if not support:
        return f"{object_id} is in the {entity.room}"
    closed = f" ({support[1]} is closed)" if scene.enclosed(object_id) else ""
    return f"{object_id} is {support[0]} {support[1]} in the {entity.room}{closed}"


def goal_status(goal: Goal, scene: SceneGraph) -> tuple[str, list[str]]:
    """One line on how far a goal is, grounded in map ids, and the ids it names."""
    if goal_met(goal, scene):
        return f"{goal}: done.", []
    robot_room = scene.robot.room if scene.robot else "unknown"
    if goal.kind == "robot_in_room":
        return f"{goal}: not yet; the robot is in the {robot_room}.", [goal.room]
    if goal.kind in ("is_open", "is_closed"):
        things = goal_furniture(scene, goal)
        parts = [f"{f} in the {scene.entity(f).room} is {scene.entity(f).state or 'not openable'}" for f in things]
        return f"{goal}: not yet; " + ("; ".join(parts) or f"no {goal.target} is known") + ".", things
    objects = goal_objects(goal, scene)
    if goal.kind == "clear":
        things = goal_furniture(scene, goal)
        parts = [_where(scene, o) for o in objects]
        return f"{goal}: not yet; " + "; ".join(parts) + ".", [*objects, *things]
    # The nearest few: the prompt must not grow with the number of cups in the house.
    listed = scene.nearest_to_robot(objects)[:LISTED_PER_GOAL]
    parts = [_where(scene, o) for o in listed] or [f"no {goal.object} is known"]
    if len(objects) > len(listed):
        parts.append(f"{len(objects) - len(listed)} more further away")
    ids = list(listed) + [support[1] for o in listed if (support := scene.support(o))]
    if goal.kind in PLACING_KINDS:
        targets = goal_furniture(scene, goal)
        if not goal.target:  # any furniture of the room: the nearest few
            targets = scene.nearest_to_robot(targets)[:LISTED_PER_GOAL]
        ids += targets
        inside = goal.kind == "object_in"  # whether it is open matters only for putting something in
        parts.append("target: " + (", ".join(f"{t} in the {scene.entity(t).room}"
                                             + (f", {scene.entity(t).state}" if inside else "") for t in targets)
                                   or "none known"))
    if goal.kind == "bring_to_user" and goal.room:
        parts.append(f"the user is in the {goal.room}; the robot is in the {robot_room}")
        ids.append(goal.room)
    return f"{goal}: not yet; " + "; ".join(parts) + ".", ids


def goal_lacks(goal: Goal, scene: SceneGraph) -> bool:
    """The map holds nothing that could meet the goal now: no object of its label that is where the
    map says, or no furniture for it. Only then is giving up a reasonable thought."""
    if goal.kind == "robot_in_room" or goal_met(goal, scene):
        return False
    if goal.target and not goal_furniture(scene, goal):
        return True
    if goal.kind == "clear":
        return False
    return not any(scene.entity(o).status != "missing" for o in goal_objects(goal, scene))
