"""What an arm must not hit, read from the scene graph for a motion planner's collision world:
the furniture, objects and people whose box comes within the arm's reach of the base, as boxes in
the map frame. A held object is not in the world (it travels attached to the hand), nor is one the
scene graph believes gone. The things a motion is meant to touch (the object a grasp closes on,
the surface a release puts down on or a sweep wipes, the person an object is handed to) are left
out while that motion runs, or every such goal would be a goal in collision."""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.geometry import Pose2D
from planner.core.scene_graph import SceneGraph

OBSTACLE_KINDS = ("furniture", "object", "person")


@dataclass(frozen=True)
class CollisionBox:
    id: str
    center: tuple[float, float, float]   # in the map frame
    size: tuple[float, float, float]


def obstacles_within_reach(scene: SceneGraph, base: Pose2D, reach_m: float, handled: str = "") -> dict[str, CollisionBox]:
    """By id, the boxes an arm on a base at `base` could touch: those whose footprint edge is within
    `reach_m` of the base's centre, seen where they are (not held, not missing), with a volume. The
    object a command handles is there whatever its status: its box is what the hand will carry."""
    boxes = {entity.id: CollisionBox(entity.id, entity.center, entity.size)
             for entity in scene.near(base.x, base.y, reach_m)
             if entity.kind in OBSTACLE_KINDS and entity.status == "seen" and min(entity.size) > 0}
    if handled in scene.graph:
        entity = scene.entity(handled)
        boxes[handled] = CollisionBox(handled, entity.center, entity.size)
    return boxes


@dataclass
class CollisionWorld:
    """What a planning scene holds, as this side put it there: the ids of its world boxes and, per
    hand's link, the object attached to it. `plan` gives what to add or replace and what to remove
    to make the world the obstacles a motion must avoid."""
    world: set[str]
    attached: dict[str, str]             # link -> object id

    @classmethod
    def empty(cls) -> CollisionWorld:
        return cls(set(), {})

    def plan(self, obstacles: dict[str, CollisionBox], touched: set[str]) -> tuple[list[CollisionBox], list[str]]:
        """(boxes to add or move, ids to remove): the obstacles but those touched or held. Every wanted
        box is sent again, since a planning scene fixed to the moving base places a box by where the
        base was when it came."""
        held = set(self.attached.values())
        wanted = [box for box_id, box in obstacles.items() if box_id not in touched and box_id not in held]
        keep = {box.id for box in wanted}
        return wanted, sorted(self.world - keep)

    def applied(self, added: list[CollisionBox], removed: list[str]) -> None:
        self.world = (self.world - set(removed)) | {box.id for box in added}

    def attach(self, link: str, object_id: str) -> None:
        """The object goes with the hand: out of the world, onto the link."""
        self.world.discard(object_id)
        self.attached[link] = object_id

    def detach(self, link: str) -> str:
        """The object the link let go of ('' when none). The planning scene puts it back into the world
        where it is, so it counts as there, for the next plan to move or remove."""
        object_id = self.attached.pop(link, "")
        if object_id:
            self.world.add(object_id)
        return object_id
