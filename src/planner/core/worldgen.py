"""World files made rather than written: a generator of homes of any size for the simulator,
and a world built from a Voxeland semantic map and room polygons. Both give a validated World
and write it as a readable world file."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import shapely
from shapely.geometry import Polygon

from planner.core.geometry import approach_pose
from planner.core.robot_profile import RobotProfile
from planner.core.scene_graph import SceneGraph
from planner.core.world import World, opening_heights

ROOM_W, ROOM_D, HALL_D = 5.0, 4.0, 2.0      # room width along the hallway, depth, hallway depth
DOOR_MIN_M = 0.8                              # a shared wall at least this long gets a door

# What each kind of room holds: furniture (label, size, openable, where: (u, v) in the room with u
# along the hallway from the room's left wall and v away from the hallway) and the objects on it.
ROOM_KINDS = {
    "kitchen": [("counter", (1.4, 0.6, 0.9), "", (0.9, 3.6)), ("fridge", (0.8, 0.7, 1.8), "door", (4.4, 3.55)),
                ("table", (0.9, 0.7, 0.75), "", (2.5, 1.8)), ("cabinet", (0.6, 0.8, 0.9), "door", (0.3, 1.4))],
    "living_room": [("sofa", (1.6, 0.9, 0.8), "", (2.5, 3.5)), ("coffee_table", (0.8, 0.5, 0.45), "", (2.5, 1.9)),
                    ("shelf", (0.5, 1.2, 1.2), "", (4.7, 2.0)), ("side_table", (0.5, 0.5, 0.6), "", (0.4, 3.5))],
    "bedroom": [("bed", (1.6, 2.0, 0.5), "", (2.5, 3.0)), ("nightstand", (0.5, 0.5, 0.5), "drawer", (0.5, 3.6)),
                ("dresser", (0.5, 1.2, 0.9), "drawer", (4.7, 1.6))],
    "bathroom": [("sink", (0.8, 0.5, 0.9), "", (2.5, 3.7)), ("shelf", (0.5, 0.8, 1.2), "", (0.3, 2.0))],
    "office": [("desk", (1.2, 0.7, 0.75), "", (2.5, 3.5)), ("shelf", (0.5, 1.2, 1.2), "", (4.7, 1.8)),
               ("chair", (0.5, 0.5, 0.9), "", (0.5, 0.8))],
    "dining_room": [("table", (1.2, 0.8, 0.75), "", (2.5, 2.2)), ("cabinet", (0.6, 1.2, 0.9), "door", (0.3, 2.2))],
}
OBJECTS = {
    "kitchen": ["cup", "mug", "bottle", "apple", "banana", "plate", "bowl", "bread", "milk", "juice", "spoon"],
    "living_room": ["remote", "magazine", "book", "cup", "can", "pillow", "vase", "glasses", "phone"],
    "bedroom": ["pillow", "book", "lamp", "clock", "keys", "wallet", "socks", "medicine"],
    "bathroom": ["towel", "soap", "toothbrush", "shampoo"],
    "office": ["laptop", "pen", "notebook", "mug", "book", "binder", "stapler"],
    "dining_room": ["plate", "glass", "fork", "napkin", "bottle", "candle", "orange"],
}
OBJECT_SIZE = (0.08, 0.08, 0.12)
SLOT_M = 0.2           # objects stand on a grid of this pitch, at most one per slot


@dataclass
class Skipped:
    id: str
    reason: str


FurnitureSpec = tuple[str, tuple[float, float, float], str, tuple[float, float]]  # label, size, openable, (u, v)


def generate_world(rooms: int, objects: int, robot: RobotProfile, seed: int = 0, name: str = "",
                   room_kinds: dict[str, list[FurnitureSpec]] | None = None,
                   objects_by_room: dict[str, list[str]] | None = None,
                   holders: frozenset[str] | None = None) -> World:
    """A hallway with `rooms` rooms off both sides, furnished by kind, and `objects` objects on
    (and in) the furniture where `robot` reaches them. The same seed gives the same home.
    `room_kinds` and `objects_by_room` replace the built-in kinds (a room per key, in order);
    `holders`: furniture labels things may stand on or in (default: all)."""
    if rooms < 1 or objects < 0:
        raise ValueError("rooms must be at least 1 and objects at least 0")
    room_kinds = room_kinds or ROOM_KINDS
    objects_by_room = objects_by_room or OBJECTS
    rng = random.Random(seed)
    per_side = math.ceil(rooms / 2)
    length = per_side * ROOM_W
    data: dict = {"name": name or f"generated_{rooms}_rooms_{objects}_objects_seed_{seed}",
                  "rooms": [{"name": "hallway", "polygon": [[0, 0], [length, 0], [length, HALL_D], [0, HALL_D]]}],
                  "doors": [], "furniture": [], "objects": []}
    kinds = list(room_kinds)
    counts: dict[str, int] = {}
    surfaces: list[tuple[dict, tuple[float, float]]] = []     # furniture and the middle of its room
    kind_of: dict[str, str] = {}
    for index in range(rooms):
        kind = kinds[index % len(kinds)]
        counts[kind] = counts.get(kind, 0) + 1
        room = kind if counts[kind] == 1 else f"{kind}_{counts[kind]}"
        x0 = (index // 2) * ROOM_W
        north = index % 2 == 0
        y0, y1 = (HALL_D, HALL_D + ROOM_D) if north else (-ROOM_D, 0.0)
        data["rooms"].append({"name": room, "polygon": [[x0, y0], [x0 + ROOM_W, y0], [x0 + ROOM_W, y1], [x0, y1]]})
        data["doors"].append({"rooms": ["hallway", room], "position": [x0 + ROOM_W / 2, HALL_D if north else 0.0]})
        for label, size, openable, (u, v) in room_kinds[kind]:
            y = HALL_D + v if north else -v
            furniture_id = _next_id(label, counts)
            item: dict[str, Any] = {"id": furniture_id, "label": label, "center": [round(x0 + u, 3), round(y, 3), size[2] / 2],
                    "size": list(size)}
            if openable:
                item["openable"] = openable
            data["furniture"].append(item)
            if (holders is None or label in holders) and (_top_reached(item, robot) or _inside_reached(item, robot)):
                surfaces.append((item, (x0 + ROOM_W / 2, (y0 + y1) / 2)))
            kind_of[item["id"]] = kind
    slots = {item["id"]: _slots(item, middle, robot) for item, middle in surfaces}
    for _ in range(objects):
        free = [item for item, _ in surfaces if slots[item["id"]]]
        if not free:
            raise ValueError(f"{objects} objects do not fit on the furniture of {rooms} rooms; add rooms")
        item = rng.choice(free)
        offset = slots[item["id"]].pop(rng.randrange(len(slots[item["id"]])))
        label = rng.choice(objects_by_room[kind_of[item["id"]]])
        obj: dict[str, Any] = {"id": _next_id(label, counts), "label": label, "placed_on": item["id"], "offset": list(offset),
               "size": list(OBJECT_SIZE)}
        if "openable" in item and (rng.random() < 0.5 or not _top_reached(item, robot)) and _inside_reached(item, robot):
            obj["inside"] = True
        data["objects"].append(obj)
    data["robot"] = {"pose": [ROOM_W / 2, HALL_D / 2, 0.0]}
    return World.model_validate(data)


def _top_reached(item: dict, robot: RobotProfile) -> bool:
    """A thing standing on its top is where the arms work: the thing, not the top (a milk carton on a
    1.89 m fridge stands at 1.95 m, above a 1.9 m workspace)."""
    return robot.works_at(item["size"][2] + OBJECT_SIZE[2] / 2)


def _inside_reached(item: dict, robot: RobotProfile) -> bool:
    """Its door or drawer opens and its lowest shelf is reached (it stands on the floor)."""
    return "openable" in item and all(map(robot.works_at, opening_heights(0.0, item["size"][2]).values()))


def _next_id(label: str, counts: dict[str, int]) -> str:
    key = f"id:{label}"
    counts[key] = counts.get(key, 0) + 1
    return f"{label}_{counts[key]}"


def _slots(item: dict, room_middle: tuple[float, float], robot: RobotProfile) -> list[tuple[float, float]]:
    """Offsets where objects can stand on a piece of furniture: a grid over its top, kept where an
    arm reaches from the base pose the robot takes coming into the room (facing its middle)."""
    half_x, half_y = item["size"][0] / 2 - 0.06, item["size"][1] / 2 - 0.06
    base = approach_pose(item["center"], item["size"], room_middle[0], room_middle[1], robot.standoff_m)
    grid = [(round(-half_x + i * SLOT_M, 3), round(-half_y + j * SLOT_M, 3))
            for i in range(int(2 * half_x / SLOT_M) + 1) for j in range(int(2 * half_y / SLOT_M) + 1)]
    return [(u, v) for u, v in grid
            if math.hypot(item["center"][0] + u - base.x, item["center"][1] + v - base.y) <= robot.reach_m - 0.1]


# ---- from a Voxeland map -----------------------------------------------------------------------
OPENABLE_LABELS = {"fridge": "door", "cabinet": "door", "wardrobe": "door", "dishwasher": "door", "oven": "door",
                   "microwave": "door", "drawer": "drawer", "dresser": "drawer", "nightstand": "drawer"}


def world_from_scene(scene: SceneGraph, name: str, robot_pose: tuple[float, float, float] | None = None
                     ) -> tuple[World, list[Skipped], dict[str, str]]:
    """A world file's content from a scene graph built from a Voxeland map: furniture as mapped,
    objects on (or in) the furniture under them, doors where rooms share a wall. Objects with no
    furniture under them cannot be placed and are skipped with the reason. Ids become `label_n`
    (what the planner reads); the map's ids are returned beside them."""
    counts: dict[str, int] = {}
    renamed: dict[str, str] = {}
    rooms = [{"name": r, "polygon": [list(p) for p in scene.entity(r).polygon]} for r in scene.rooms()]
    furniture, objects, skipped = [], [], []
    for item in scene.furniture():
        renamed[item.id] = _next_id(item.label, counts)
        entry: dict[str, Any] = {"id": renamed[item.id], "label": item.label, "center": [round(v, 3) for v in item.center],
                 "size": [round(v, 3) for v in item.size]}
        if item.label in OPENABLE_LABELS:
            entry["openable"] = OPENABLE_LABELS[item.label]
        furniture.append(entry)
    for obj in scene.objects():
        support = scene.furniture_support(obj.id)  # a book on a book stands on the shelf below
        if not support:
            skipped.append(Skipped(obj.id, f"{obj.label}: not on or in a piece of furniture "
                                           f"({'; '.join(scene.relations(obj.id)) or 'no relation'})"))
            continue
        base = scene.entity(support[1])
        offset = [round(max(-base.size[axis] / 2, min(base.size[axis] / 2, obj.center[axis] - base.center[axis])), 3)
                  for axis in (0, 1)]
        renamed[obj.id] = _next_id(obj.label, counts)
        entry = {"id": renamed[obj.id], "label": obj.label, "placed_on": renamed[base.id], "offset": offset,
                 "size": [round(v, 3) for v in obj.size]}
        if support[0] == "in" and base.label in OPENABLE_LABELS:
            entry["inside"] = True
        objects.append(entry)
    if robot_pose is None:
        centre = Polygon(rooms[0]["polygon"]).representative_point()
        robot_pose = (round(centre.x, 3), round(centre.y, 3), 0.0)
    data = {"name": name, "rooms": rooms, "doors": shared_wall_doors(rooms), "furniture": furniture,
            "objects": objects, "robot": {"pose": list(robot_pose)}}
    return World.model_validate(data), skipped, {new: old for old, new in renamed.items()}


def shared_wall_doors(rooms: list[dict]) -> list[dict]:
    """A door in the middle of every wall two rooms share (at least DOOR_MIN_M long)."""
    doors = []
    shapes = [(r["name"], Polygon(r["polygon"])) for r in rooms]
    for i, (a, first) in enumerate(shapes):
        for b, second in shapes[i + 1:]:
            wall = shapely.intersection(first.boundary, second.boundary)
            if wall.length >= DOOR_MIN_M:
                middle = wall.interpolate(0.5, normalized=True) if wall.geom_type == "LineString" else \
                    max(wall.geoms, key=lambda g: g.length).interpolate(0.5, normalized=True)
                doors.append({"rooms": [a, b], "position": [round(middle.x, 3), round(middle.y, 3)]})
    return doors


def world_yaml(world: World, header: str, notes: dict[str, str] | None = None) -> str:
    """A world file as people write them: one entry a line, with a comment header."""
    import yaml

    def flow(value) -> str:
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False).strip()
        return text.removesuffix("\n...").strip()  # a scalar's document end marker

    data = world.model_dump(exclude_defaults=True)
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += [f"name: {data['name']}", "rooms:"]
    lines += [f"  - {flow(room)}" for room in data["rooms"]]
    lines += ["doors:"] + [f"  - {flow(door)}" for door in data.get("doors", [])] if data.get("doors") else ["doors: []"]
    lines.append("furniture:" if data.get("furniture") else "furniture: []")
    lines += [f"  - {flow(item)}" + (f"  # {notes[item['id']]}" if notes and item["id"] in notes else "")
              for item in data.get("furniture", [])]
    lines.append("objects:" if data.get("objects") else "objects: []")
    lines += [f"  - {flow(obj)}" + (f"  # {notes[obj['id']]}" if notes and obj["id"] in notes else "")
              for obj in data.get("objects", [])]
    lines += ["robot:"] + [f"  {key}: {flow(value)}" for key, value in data["robot"].items()]
    return "\n".join(lines) + "\n"
