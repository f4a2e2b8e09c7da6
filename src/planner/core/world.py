"""World files: rooms as polygons, furniture, objects, people and where the robot starts, validated
at load.

A world file describes a home as the simulator holds it (ground truth) and, at start-up, as the
robot has mapped it before (the prior scene graph of perception).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_validator
from shapely.geometry import Point, Polygon

from planner.core.errors import InputError
from planner.core.files import Point3, Size3, StrictModel, describe_validation_error, load_model, load_yaml
from planner.core.geometry import approach_pose
from planner.core.robot_profile import RobotProfile

INNER_SHELF_M = 0.1   # height of the lowest inner shelf of cabinets, fridges and drawers
# A door or drawer is worked at its handle, at people's hand height where it spans it: a fridge
# taller than the arms reach still opens, and things go in on its lowest shelf.
HANDLE_HEIGHT_M = 1.0
PERSON_WIDTH_M = 0.5  # a standing person's footprint, each way


class Room(StrictModel):
    name: str
    polygon: list[tuple[float, float]] = Field(min_length=3)

    @field_validator("polygon")
    @classmethod
    def _valid_polygon(cls, polygon):
        shape = Polygon(polygon)
        if not shape.is_valid or shape.area <= 0:
            raise ValueError("polygon must be a simple polygon with a positive area")
        return polygon

    def shape(self) -> Polygon:
        return Polygon(self.polygon)


def opening_heights(bottom_z: float, top_z: float) -> dict[str, float]:
    """Where hands work a door or drawer between these heights: its handle and its lowest inner shelf."""
    return {"handle": min(top_z, max(bottom_z, HANDLE_HEIGHT_M)), "inner shelf": bottom_z + INNER_SHELF_M}


class Furniture(StrictModel):
    id: str
    label: str
    center: Point3
    size: Size3
    openable: Literal["", "door", "drawer"] = Field(default="", description="a door or drawer to open before "
                                                                            "reaching inside")
    open: bool = Field(default=False, description="initial state of an openable thing")

    @model_validator(mode="after")
    def _open_needs_openable(self):
        if self.open and not self.openable:
            raise ValueError("open: only an openable thing (openable: door or drawer) can be open")
        return self

    @property
    def top_z(self) -> float:
        return self.center[2] + self.size[2] / 2

    @property
    def inner_floor_z(self) -> float:
        """Where things stand inside: a shelf a little above the bottom."""
        return self.center[2] - self.size[2] / 2 + INNER_SHELF_M


class WorldObject(StrictModel):
    id: str
    label: str
    placed_on: str = Field(description="id of the furniture the object stands on (or is inside)")
    inside: bool = Field(default=False, description="inside its (openable) furniture rather than on top")
    offset: tuple[float, float] = (0.0, 0.0)
    size: Size3 = (0.08, 0.08, 0.2)
    mass_kg: float = Field(default=0.5, gt=0)


class Person(StrictModel):
    id: str
    position: tuple[float, float] = Field(description="x, y in the map frame, standing")
    height_m: float = Field(default=1.7, gt=0)


PROFILE_FIELDS = set(RobotProfile.model_fields)


class RobotPlacement(StrictModel):
    """Where the robot starts; what it is (arms, reach, camera) is its robot profile."""
    pose: tuple[float, float, float] = Field(description="x, y, yaw (rad) in the map frame")

    @model_validator(mode="before")
    @classmethod
    def _no_profile_fields(cls, data: object) -> object:
        if isinstance(data, dict) and (profile := sorted(PROFILE_FIELDS & set(data))):
            raise ValueError(f"{', '.join(profile)}: a world only places the robot (pose); what the robot is "
                             f"belongs in its robot profile (the config's robot: file)")
        return data


class Door(StrictModel):
    rooms: tuple[str, str]
    position: tuple[float, float]


class World(StrictModel):
    name: str
    rooms: list[Room] = Field(min_length=1)
    doors: list[Door] = Field(default_factory=list)
    furniture: list[Furniture] = Field(default_factory=list)
    objects: list[WorldObject] = Field(default_factory=list)
    people: list[Person] = Field(default_factory=list, description="people the robot can hand things to")
    robot: RobotPlacement

    @model_validator(mode="after")
    def _consistent(self) -> World:
        seen: set[str] = set()
        for entry in [*(r.name for r in self.rooms), *(f.id for f in self.furniture), *(o.id for o in self.objects),
                      *(p.id for p in self.people)]:
            if entry in seen:
                raise ValueError(f"id {entry!r} is used twice")
            seen.add(entry)
        room_names = {r.name for r in self.rooms}
        for index, door in enumerate(self.doors):
            unknown = [r for r in door.rooms if r not in room_names]
            if unknown:
                raise ValueError(f"doors[{index}].rooms: unknown room(s) {unknown}")
        furniture_ids = {f.id for f in self.furniture}
        for index, obj in enumerate(self.objects):
            if obj.placed_on not in furniture_ids:
                raise ValueError(f"objects[{index}] ({obj.id}).placed_on: unknown furniture {obj.placed_on!r}")
            base = self.furniture_by_id(obj.placed_on)
            if abs(obj.offset[0]) > base.size[0] / 2 or abs(obj.offset[1]) > base.size[1] / 2:
                raise ValueError(f"objects[{index}] ({obj.id}).offset: {obj.offset} is off {obj.placed_on} "
                                 f"(size {base.size[0]} x {base.size[1]})")
            if obj.inside and not base.openable:
                raise ValueError(f"objects[{index}] ({obj.id}).inside: {obj.placed_on} has no door or drawer to be inside")
        for index, item in enumerate(self.furniture):
            if self.room_at(item.center[0], item.center[1]) is None:
                raise ValueError(f"furniture[{index}] ({item.id}).center: not inside any room")
        for index, person in enumerate(self.people):
            if self.room_at(*person.position) is None:
                raise ValueError(f"people[{index}] ({person.id}).position: not inside any room")
        if self.room_at(self.robot.pose[0], self.robot.pose[1]) is None:
            raise ValueError("robot.pose: not inside any room")
        return self

    def room_at(self, x: float, y: float) -> str | None:
        point = Point(x, y)
        for room in self.rooms:
            if room.shape().covers(point):
                return room.name
        return None

    def furniture_by_id(self, furniture_id: str) -> Furniture:
        return next(f for f in self.furniture if f.id == furniture_id)

    def object_center(self, obj: WorldObject) -> tuple[float, float, float]:
        """Where an object stands: on its furniture's top (or its lowest inner shelf), shifted by its offset."""
        base = self.furniture_by_id(obj.placed_on)
        floor = base.inner_floor_z if obj.inside else base.top_z
        return (base.center[0] + obj.offset[0], base.center[1] + obj.offset[1], floor + obj.size[2] / 2)

    def with_robot_at(self, robot_at: str, standoff_m: float) -> World:
        """The world with the robot placed next to a piece of furniture (facing it, `standoff_m`
        from it) or in a room."""
        if not robot_at:
            return self
        room = next((r for r in self.rooms if r.name == robot_at), None)
        if room is not None:
            centre = room.shape().representative_point()
            pose = (centre.x, centre.y, self.robot.pose[2])
        else:
            item = next((f for f in self.furniture if f.id == robot_at), None)
            if item is None:
                raise InputError(f"the robot cannot start at {robot_at!r}: it is neither a room nor a piece of "
                                 f"furniture of the world (rooms: {', '.join(r.name for r in self.rooms)})")
            room = next(r for r in self.rooms if r.name == self.room_at(item.center[0], item.center[1]))
            centre = room.shape().centroid
            goal = approach_pose(item.center, item.size, centre.x, centre.y, standoff_m)
            pose = (goal.x, goal.y, goal.yaw)
        return self.model_copy(update={"robot": self.robot.model_copy(update={"pose": pose})})


def person_box(person: Person) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Where a standing person is, as a box: centre and size."""
    return (person.position[0], person.position[1], person.height_m / 2), (PERSON_WIDTH_M, PERSON_WIDTH_M, person.height_m)


def load_world(path: str | Path) -> World:
    return load_model(path, World)


def load_rooms(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Room polygons: `{room: [[x, y], ...]}` or a world-style `rooms: [{name, polygon}]` list."""
    data = load_yaml(path)
    if isinstance(data, dict) and "rooms" in data:
        data = data["rooms"]
    if isinstance(data, dict):
        data = [{"name": name, "polygon": polygon} for name, polygon in data.items()]
    try:
        rooms = TypeAdapter(list[Room]).validate_python(data)
    except ValidationError as error:
        raise InputError(describe_validation_error(str(path), error)) from None
    return {room.name: [(x, y) for x, y in room.polygon] for room in rooms}
