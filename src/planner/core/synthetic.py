"""Synthetic Voxeland maps of any size, for benchmarks and tests: a building of rooms on a grid,
each with furniture and objects on, in, under and near it, with uncertain label evidence the way
Voxeland accumulates it (several labels, scores in the hundreds), plus one structure instance."""

from __future__ import annotations

import math
import random

ROOM_SIZE_M = (8.0, 6.0)
OBJECTS_PER_ROOM = 25
# (label, size, container) of the furniture every room gets, and where in the room it stands.
FURNITURE = [
    ("table", (1.4, 0.9, 0.75), (2.0, 2.0)),
    ("counter", (2.0, 0.6, 0.9), (5.5, 0.5)),
    ("shelf", (1.0, 0.4, 1.8), (7.5, 3.0)),
    ("sofa", (2.0, 0.9, 0.8), (4.0, 5.3)),
]
OBJECT_LABELS = ["cup", "bottle", "book", "apple", "remote", "bowl", "plate", "mug", "banana", "phone"]
CONFUSIONS = {"cup": "mug", "mug": "cup", "bottle": "vase", "book": "box", "apple": "orange", "remote": "phone",
              "bowl": "plate", "plate": "bowl", "banana": "apple", "phone": "remote",
              "table": "desk", "counter": "table", "shelf": "cabinet", "sofa": "couch"}


def _evidence(label: str, rng: random.Random) -> tuple[dict[str, float], int]:
    """Accumulated scores: mostly the true label, some confusion, a little noise."""
    observations = rng.randint(3, 60)
    confidence = rng.uniform(0.45, 0.95)
    scores = {label: round(observations * confidence * 10, 1),
              CONFUSIONS.get(label, "object"): round(observations * (1 - confidence) * 7, 1)}
    if rng.random() < 0.3:
        scores["unknown"] = round(observations * rng.uniform(0.1, 1.0), 1)
    return scores, observations


def _instance(center, size, scores, observations) -> dict:
    return {"bbox": {"center": [round(v, 3) for v in center], "size": [round(v, 3) for v in size]},
            "n_observations": observations, "results": scores}


def _building(n_rooms: int, rng: random.Random) -> tuple[dict[str, dict], dict[str, list[tuple[float, float]]], list]:
    """Rooms on a grid, each with the same furniture, under one structure box: the instances, the
    room polygons, and per room its corner and its furniture as (label, centre, size)."""
    columns = math.ceil(math.sqrt(n_rooms))
    rows = math.ceil(n_rooms / columns)
    width, depth = ROOM_SIZE_M
    instances = {"obj0": _instance((columns * width / 2, rows * depth / 2, 1.5), (columns * width, rows * depth, 3.0),
                                   {"unknown": 5000.0}, 2000)}
    rooms: dict[str, list[tuple[float, float]]] = {}
    furnished = []
    for room_index in range(n_rooms):
        x0, y0 = (room_index % columns) * width, (room_index // columns) * depth
        rooms[f"room_{room_index}"] = [(x0, y0), (x0 + width, y0), (x0 + width, y0 + depth), (x0, y0 + depth)]
        furniture = []
        for label, size, (fx, fy) in FURNITURE:
            center = (x0 + min(fx, width - size[0] / 2), y0 + min(fy, depth - size[1] / 2), size[2] / 2)
            instances[f"obj{len(instances)}"] = _instance(center, size, *_evidence(label, rng))
            furniture.append((label, center, size))
        furnished.append(((x0, y0), furniture))
    return instances, rooms, furnished


def synthetic_map(n_objects: int, seed: int = 0) -> tuple[dict, dict[str, list[tuple[float, float]]]]:
    """A Voxeland map holding `n_objects` movable objects (plus furniture and structure) and the
    room polygons it lies in."""
    rng = random.Random(seed)
    instances, rooms, furnished = _building(max(1, math.ceil(n_objects / OBJECTS_PER_ROOM)), rng)
    placed = 0
    for _, furniture in furnished:
        for _ in range(min(OBJECTS_PER_ROOM, n_objects - placed)):
            label = rng.choice(OBJECT_LABELS)
            size = (rng.uniform(0.06, 0.2), rng.uniform(0.06, 0.2), rng.uniform(0.05, 0.25))
            base_label, base, base_size = rng.choice(furniture)
            where = rng.random()
            fx, fy = (rng.uniform(-0.4, 0.4) * base_size[0], rng.uniform(-0.4, 0.4) * base_size[1])
            if where < 0.7 or base_label == "sofa":       # on the top
                z = base[2] + base_size[2] / 2 + size[2] / 2
            elif base_label == "shelf":                    # in the shelf
                z = rng.uniform(0.3, 1.4)
            elif where < 0.85:                             # under it
                z = size[2] / 2
            else:                                          # on the floor beside it
                fx, fy, z = base_size[0] / 2 + 0.3, 0.0, size[2] / 2
            center = (base[0] + fx, base[1] + fy, z)
            instances[f"obj{len(instances)}"] = _instance(center, size, *_evidence(label, rng))
            placed += 1
    return {"instances": instances}, rooms


def cluttered_map(n_objects: int, n_rooms: int, seed: int = 0) -> tuple[dict, dict[str, list[tuple[float, float]]]]:
    """`n_objects` small items packed into `n_rooms` furnished rooms, side by side on a grid over
    the floor and over the furniture (a dense Voxeland map of clutter): the more items, the closer
    together, but never one inside another, as a real scan fuses them."""
    rng = random.Random(seed)
    instances, rooms, furnished = _building(n_rooms, rng)
    width, depth = ROOM_SIZE_M
    per_room = math.ceil(n_objects / n_rooms)
    columns = math.ceil(math.sqrt(per_room * width / depth))
    pitch = width / columns
    placed = 0
    for (x0, y0), furniture in furnished:
        for index in range(min(per_room, n_objects - placed)):
            x, y = x0 + (index % columns + 0.5) * pitch, y0 + (index // columns + 0.5) * pitch
            side = pitch * rng.uniform(0.5, 0.9)
            height = rng.uniform(0.05, 0.25)
            under = [c[2] + s[2] / 2 for _, c, s in furniture if abs(x - c[0]) <= s[0] / 2 and abs(y - c[1]) <= s[1] / 2]
            instances[f"obj{len(instances)}"] = _instance((x, y, max(under, default=0.0) + height / 2),
                                                          (side, side, height), *_evidence(rng.choice(OBJECT_LABELS), rng))
            placed += 1
    return {"instances": instances}, rooms
