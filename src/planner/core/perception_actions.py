"""The planner's perception actions, answered the same way whoever holds the map: one table
from action name to a query on a map source and the text the planner reads.

A map source is the scene graph in process (`SceneMap`, for the simulator and the benchmarks) or
perception's services over ROS (the task planner node's); either way the planner sees the same
observation for the same map.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from planner.core.errors import PolicyError
from planner.core.object_finder import ObjectFinder
from planner.core.observations import entity_text, found_text, robot_text, room_contents_text, rooms_text, search_text, unknown_room_text
from planner.core.scene_graph import Entity, RobotSnapshot, SceneGraph
from planner.core.types import Observation


class MapSource(Protocol):
    """What the perception actions ask of a map. A lookup that finds nothing returns the reason."""

    def rooms(self) -> list[str]: ...

    def room_contents(self, room: str) -> tuple[list[Entity], list[str]] | str: ...

    def entity(self, entity_id: str) -> tuple[Entity, list[str]] | str: ...

    def find(self, label: str) -> list[Entity]: ...

    def robot(self) -> RobotSnapshot | None: ...

    def search(self, query: str) -> Searched | str:
        """The objects a request in plain words asks for, or why there is no search here."""


@dataclass
class Searched:
    """What a search of the map in plain words found, best first, why, what went wrong, and the
    model calls it made (a map that does not say counts none)."""
    found: list[Entity]
    explanation: str = ""
    error: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def unknown_entity_text(entity_id: str) -> str:
    return f"unknown object {entity_id!r}"


def _room(source: MapSource, args: list[str], focus: frozenset[str]) -> Observation:
    contents = source.room_contents(args[0])
    if isinstance(contents, str):
        return Observation(contents)
    items, relations = contents
    return Observation(room_contents_text(args[0], items, relations, focus), [e.id for e in items])


def _object(source: MapSource, args: list[str], focus: frozenset[str]) -> Observation:
    found = source.entity(args[0])
    if isinstance(found, str):
        return Observation(found)
    entity, relations = found
    return Observation(entity_text(entity, relations), [args[0]])


def _robot(source: MapSource, args: list[str], focus: frozenset[str]) -> Observation:
    robot = source.robot()
    return Observation(robot_text(robot), [robot.room if robot else ""])


def _find(source: MapSource, args: list[str], focus: frozenset[str]) -> Observation:
    found = source.find(args[0])
    return Observation(found_text(args[0], found), [e.id for e in found])


def _search(source: MapSource, args: list[str], focus: frozenset[str]) -> Observation:
    searched = source.search(args[0])
    if isinstance(searched, str):
        return Observation(searched, answered=False)
    return Observation(search_text(args[0], searched.found, searched.explanation, searched.error),
                       [e.id for e in searched.found], answered=not searched.error, model_calls=searched.calls,
                       prompt_tokens=searched.prompt_tokens, completion_tokens=searched.completion_tokens)


ANSWERS: dict[str, Callable[[MapSource, list[str], frozenset[str]], Observation]] = {
    "get_rooms": lambda source, args, focus: Observation(rooms_text(source.rooms())),
    "get_objects_in_room": _room,
    "get_object": _object,
    "find_objects": _find,
    "get_robot_state": _robot,
    "search_map": _search,
}


def perceive(source: MapSource, name: str, args: list[str], focus: frozenset[str] = frozenset()) -> Observation:
    action = ANSWERS.get(name)
    return action(source, args, focus) if action else Observation(f"unknown perception action {name}")


class SceneMap:
    """A scene graph in process as a map source; search_map through an object finder when given."""

    def __init__(self, graph: SceneGraph, finder: ObjectFinder | None = None):
        self.graph = graph
        self.finder = finder

    def rooms(self) -> list[str]:
        return self.graph.rooms()

    def room_contents(self, room: str) -> tuple[list[Entity], list[str]] | str:
        if room not in self.graph.rooms():
            return unknown_room_text(room, self.graph.rooms())
        return self.graph.room_contents(room)

    def entity(self, entity_id: str) -> tuple[Entity, list[str]] | str:
        if not self.graph.has(entity_id):
            return unknown_entity_text(entity_id)
        return self.graph.entity(entity_id), self.graph.relations(entity_id)

    def find(self, label: str) -> list[Entity]:
        return self.graph.find(label)

    def robot(self) -> RobotSnapshot | None:
        return self.graph.robot

    def search(self, query: str) -> Searched | str:
        if self.finder is None:
            return "searching the map in plain words is not available here"
        try:
            found = self.finder.find(self.graph, query)
        except PolicyError as error:
            return Searched([], error=str(error))
        return Searched([self.graph.entity(i) for i in found.relevant_objects], found.explanation, found.error,
                        found.calls, found.prompt_tokens, found.completion_tokens)
