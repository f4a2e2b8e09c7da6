"""A home built from a PDDL episode's state, for the stack's own grounded reading of what people
say (`planner bench memory --episode … --variants grounded+verify`): the grounded reading finds
the things a sentence names among the labels of a scene graph, and an episode from files has only
objects and atoms.

Which predicates say where things are comes from a scene mapping (`--scene-mapping FILE`; by
default the names of the domain `--export` writes): `on` (a thing, the furniture it stands on or
in), and optionally `inside` (behind that furniture's door), `open` (furniture whose door is
open), `room` (furniture, its room) and the types of furniture that have a door. Things are the
objects of on's first parameter type, furniture those of its second; a thing's label is its name
without a trailing number. The layout is made up — rooms side by side, furniture on a grid —
as the reading uses labels, rooms and supports, not distances."""

from __future__ import annotations

import math
import re
from pathlib import Path

from pydantic import Field

from planner.core.errors import InputError
from planner.core.files import StrictModel, load_model
from planner.core.knowledge import Change, Triplet
from planner.core.world import Furniture, RobotPlacement, Room, World, WorldObject

ONE_ROOM = "home"           # the room of furniture whose room the state does not say
FURNITURE_SPACING_M = 2.0   # furniture on a grid this far apart, so that none overlaps
FURNITURE_SIZE = (1.0, 0.6, 0.75)
NUMBERED = re.compile(r"[_-]?\d+$")


class SceneMapping(StrictModel):
    on: str = Field(default="on", description="predicate (thing, furniture): the thing stands on or in it")
    inside: str = Field(default="inside", description="predicate (thing, furniture): behind its door; '' if none")
    open: str = Field(default="is_open", description="predicate (furniture): its door is open; '' if none")
    room: str = Field(default="", description="predicate (furniture, room): where it stands; '' puts all in one room")
    openable_types: list[str] = Field(default_factory=lambda: ["openable"],
                                      description="types of furniture with a door or drawer")


def load_mapping(path: Path | None) -> SceneMapping:
    return SceneMapping() if path is None else load_model(path, SceneMapping)


def _label(name: str) -> str:
    return NUMBERED.sub("", name) or name


class EpisodeScene:
    """The home of a state (objects with their types, true atoms) as a world for the simulated robot,
    and the grounded reading's changes in the domain's atoms."""

    def __init__(self, mapping: SceneMapping, predicates: dict, objects: dict, where: str):
        """`predicates`: name → parameter types; `objects`: name → type (the memory's); InputError
        names `where` (the mapping) and the key that does not fit the domain."""
        self.mapping = mapping
        arity = {"on": 2, "inside": 2, "open": 1, "room": 2}
        for key, wanted in arity.items():
            name = getattr(mapping, key)
            if key != "on" and not name:
                continue
            if name not in predicates or len(predicates[name]) != wanted:
                raise InputError(f"{where}: {key}: the domain has no predicate {name!r} of {wanted} parameter(s)")
        thing_type, furniture_type = predicates[mapping.on]
        self.things = sorted(n for n, t in objects.items() if thing_type.is_compatible(t))
        self.furniture = sorted(n for n, t in objects.items() if furniture_type.is_compatible(t)
                                and n not in self.things)
        self.openable = {n for n in self.furniture
                         if {t.name for t in objects[n].ancestors} & set(mapping.openable_types)}

    def world(self, facts: set[tuple[str, ...]]) -> World:
        """The home these atoms describe; things whose place they do not say (held, unknown) are left out."""
        mapping = self.mapping
        room_of = {f[1]: f[2] for f in facts if mapping.room and f[0] == mapping.room and f[1] in self.furniture}
        rooms = sorted(set(room_of.values())) or [ONE_ROOM]
        if any(f not in room_of for f in self.furniture) and ONE_ROOM not in rooms:
            rooms.append(ONE_ROOM)
        per_room = {room: [f for f in self.furniture if room_of.get(f, ONE_ROOM) == room] for room in rooms}
        side = FURNITURE_SPACING_M * (math.ceil(math.sqrt(max(len(v) for v in per_room.values()) or 1)) + 1)
        world_rooms, furniture = [], []
        for index, room in enumerate(rooms):
            x0 = index * side
            world_rooms.append(Room(name=room, polygon=[(x0, 0.0), (x0 + side, 0.0), (x0 + side, side), (x0, side)]))
            columns = math.ceil(math.sqrt(len(per_room[room]) or 1))
            for slot, name in enumerate(per_room[room]):
                row, column = divmod(slot, columns)
                furniture.append(Furniture(
                    id=name, label=_label(name), size=FURNITURE_SIZE,
                    center=(x0 + FURNITURE_SPACING_M * (column + 1), FURNITURE_SPACING_M * (row + 1), FURNITURE_SIZE[2] / 2),
                    openable="door" if name in self.openable else "",
                    open=name in self.openable and bool(mapping.open) and (mapping.open, name) in facts))
        placed = {f[1]: f[2] for f in sorted(facts) if f[0] == mapping.on and f[1] in self.things and f[2] in self.furniture}
        objects = [WorldObject(id=name, label=_label(name), placed_on=support,
                               inside=support in self.openable and bool(mapping.inside)
                               and (mapping.inside, name, support) in facts)
                   for name, support in sorted(placed.items())]
        return World(name="episode", rooms=world_rooms, furniture=furniture, objects=objects,
                     robot=RobotPlacement(pose=(side / 2, side / 2, 0.0)))

    def in_domain(self, change: Change) -> Change:
        """The grounded reading's change (on, inside, is_open) in the domain's predicates; a relation
        the mapping has no predicate for is left out."""
        names = {"on": self.mapping.on, "inside": self.mapping.inside, "is_open": self.mapping.open}

        def mapped(triplets: list[Triplet]) -> list[Triplet]:
            return [t.model_copy(update={"relation": names[t.relation]}) for t in triplets if names.get(t.relation)]
        return Change(remove=mapped(change.remove), add=mapped(change.add))
