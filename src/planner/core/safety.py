"""Hazard rules: skill calls the robot refuses whatever the plan, e.g. a knife handed to a person or
a fork put into the microwave. They are checked on the grounded call (ids in the scene graph), by
code, not by the LLM, so no wording of a request and no reply of a model gets round them."""

from __future__ import annotations

import re

from pydantic import Field

from planner.core.files import StrictModel
from planner.core.scene_graph import SceneGraph


def label_words(label: str) -> set[str]:
    """A label's words, singular: 'kitchen_knives' -> {'kitchen', 'knife', 'knive', 'knives'}."""
    words = set(re.findall(r"[a-z0-9]+", label.lower()))
    singular = {word[:-1] for word in words if word.endswith("s")}
    singular |= {word[:-3] + "fe" for word in words if word.endswith("ves")}
    return words | singular


class HazardRule(StrictModel):
    """A skill call is refused when one of its arguments is a `thing` and another a `near`."""
    skills: list[str] = Field(min_length=1, description="the skills it applies to, e.g. [PLACE, HANDOVER]")
    thing: list[str] = Field(min_length=1, description="words of a label (knife) or kinds (object)")
    near: list[str] = Field(min_length=1, description="words of a label (microwave) or kinds (person)")
    reason: str = Field(min_length=1, description="said to the planner and the user when a call is refused")

    def matches(self, scene: SceneGraph, entity_id: str, terms: list[str]) -> bool:
        entity = scene.entity(entity_id)
        return entity.kind in terms or bool(label_words(entity.label) & set(terms))

    def breached_by(self, skill: str, args: tuple[str, ...], scene: SceneGraph) -> bool:
        if skill not in self.skills:
            return False
        ids = [arg for arg in args if scene.has(arg)]
        return any(self.matches(scene, thing, self.thing) and self.matches(scene, near, self.near)
                   for thing in ids for near in ids if near != thing)


def hazard(rules: list[HazardRule], skill: str, args: tuple[str, ...], scene: SceneGraph) -> str | None:
    """Why the call is refused, naming what it would do; None when no rule forbids it."""
    for rule in rules:
        if rule.breached_by(skill, args, scene):
            return f"{skill}({', '.join(args)}) is not done: {rule.reason}"
    return None
