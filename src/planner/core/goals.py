"""Goals a request is turned into, checked against the world state (the scene graph), never
against what the model says."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.core.scene_graph import SceneGraph


class Goal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["object_on", "holding", "robot_in_room"]
    object: str = Field(default="", description="label of the object, e.g. bottle")
    target: str = Field(default="", description="label of the furniture to put it on, e.g. table")
    room: str = Field(default="", description="room the target or the robot must be in")
    object_id: str = Field(default="", description="the one object meant, once the user said which")

    @model_validator(mode="after")
    def _complete(self):
        needed = {"object_on": ("object", "target"), "holding": ("object",), "robot_in_room": ("room",)}[self.kind]
        missing = [name for name in needed if not getattr(self, name)]
        if missing:
            raise ValueError(f"goal {self.kind} needs {', '.join(missing)}")
        return self

    def __str__(self) -> str:
        thing = self.object_id or f"a {self.object}"
        if self.kind == "object_on":
            return f"{thing} on a {self.target}" + (f" in the {self.room}" if self.room else "")
        if self.kind == "holding":
            return f"the robot holds {thing}"
        return f"the robot is in the {self.room}"


class GoalReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    goals: list[Goal] = Field(min_length=1, max_length=4)


def goal_schema(object_labels: list[str], furniture_labels: list[str], rooms: list[str]) -> dict:
    """JSON schema of the goal reply; labels and rooms are enumerated so they exist in the map."""
    return {
        "type": "object",
        "properties": {
            "goals": {
                "type": "array", "minItems": 1, "maxItems": 4,
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"enum": ["object_on", "holding", "robot_in_room"]},
                        "object": {"enum": sorted(object_labels) + [""]},
                        "target": {"enum": sorted(furniture_labels) + [""]},
                        "room": {"enum": sorted(rooms) + [""]},
                    },
                    "required": ["kind", "object", "target", "room"],
                },
            }
        },
        "required": ["goals"],
    }


def goal_objects(goal: Goal, scene: SceneGraph) -> list[str]:
    """The objects that can satisfy a goal: the one the user chose, or any with its label."""
    if goal.object_id:
        return [goal.object_id] if scene.has(goal.object_id) else []
    return [o.id for o in scene.objects() if o.label == goal.object]


def goal_met(goal: Goal, scene: SceneGraph) -> bool:
    if goal.kind == "robot_in_room":
        return scene.robot is not None and scene.robot.room == goal.room
    if goal.kind == "holding":
        held = {obj for obj in (scene.robot.held.values() if scene.robot else []) if obj}
        return bool(held & set(goal_objects(goal, scene)))
    for obj in map(scene.entity, goal_objects(goal, scene)):
        if obj.status != "seen":
            continue
        support = scene.support(obj.id)
        if support and support[0] in ("on", "in"):
            surface = scene.entity(support[1])
            if surface.label == goal.target and (not goal.room or surface.room == goal.room):
                return True
    return False


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
    if goal.kind == "robot_in_room":
        room = scene.robot.room if scene.robot else "unknown"
        return f"{goal}: not yet; the robot is in the {room}.", [goal.room]
    objects = goal_objects(goal, scene)
    parts = [_where(scene, o) for o in objects] or [f"no {goal.object} is known"]
    ids = list(objects) + [support[1] for o in objects if (support := scene.support(o))]
    if goal.kind == "object_on":
        targets = [f.id for f in scene.furniture(goal.room or None) if f.label == goal.target]
        ids += targets
        parts.append("target: " + (", ".join(f"{t} in the {scene.entity(t).room}" for t in targets) or "none known"))
    return f"{goal}: not yet; " + "; ".join(parts) + ".", ids
