"""Writes the object-finding benchmark's Voxeland maps and ground truth from the scenes below.

Each item has what it really is and what the mapping made of it (label evidence that may put
another label first), so the maps are as uncertain as real ones and the truth is still exact.
The truth of each query is a rule over the real labels and the geometry, applied to every map.
Run: python bench/objects/make_data.py   (rewrites maps/ and truth/ next to it)
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import yaml

HERE = Path(__file__).parent
SEATS = {"chair", "sofa", "armchair", "stool", "bench"}
COUCHES = {"sofa"}
DRINKS = {"water_bottle", "juice", "milk", "soda_can"}
FRUIT = {"apple", "banana", "orange"}
TABLES = {"table", "desk", "coffee_table"}
# Confusions the mapping makes: the label that may win instead of the real one.
CONFUSED = {"chair": "stool", "stool": "chair", "sofa": "bed", "armchair": "sofa", "bench": "table", "mug": "cup",
            "cup": "mug", "water_bottle": "vase", "juice": "bottle", "milk": "bottle", "soda_can": "cup",
            "apple": "orange", "orange": "apple", "banana": "knife", "knife": "spoon", "book": "box",
            "laptop": "book", "table": "desk", "desk": "table", "coffee_table": "table", "bed": "sofa",
            "plant": "vase", "lamp": "bottle", "tv": "monitor", "bookshelf": "cabinet", "piano": "table"}


class Scene:
    def __init__(self, name: str, seed: int):
        self.name, self.rng = name, random.Random(seed)
        self.items: list[dict] = []
        self.rooms: list[tuple[str, float, float, float, float]] = []

    def room(self, name: str, x0: float, y0: float, x1: float, y1: float) -> None:
        self.rooms.append((name, x0, y0, x1, y1))

    def add(self, truth: str, x: float, y: float, size: tuple[float, float, float], z: float = 0.0,
            confidence: float = 0.8) -> dict:
        """An item standing at floor height z (its bottom); confidence: the real label's share of
        the evidence (below 0.5 the confused label may come first)."""
        item = {"truth": truth, "center": [x, y, round(z + size[2] / 2, 3)], "size": list(size),
                "confidence": confidence}
        self.items.append(item)
        return item

    def on(self, truth: str, support: dict, size: tuple[float, float, float], dx: float = 0.0, dy: float = 0.0,
           confidence: float = 0.8) -> dict:
        top = support["center"][2] + support["size"][2] / 2
        return self.add(truth, support["center"][0] + dx, support["center"][1] + dy, size, top, confidence)

    def voxeland(self) -> dict:
        instances = {}
        for index, (name, x0, y0, x1, y1) in enumerate(self.rooms):
            instances[f"room{index}"] = {"bbox": {"center": [(x0 + x1) / 2, (y0 + y1) / 2, 1.4],
                                                  "size": [x1 - x0, y1 - y0, 2.8]},
                                         "n_observations": 2000, "results": {"unknown": 6000.0, "wall": 700.0}}
        for index, item in enumerate(self.items):
            item["id"] = f"obj{index + 1}"
            observations = self.rng.randint(5, 80)
            total = observations * self.rng.uniform(3.0, 8.0)
            real = item["confidence"]
            results = {item["truth"]: real * total}
            if item["truth"] in CONFUSED:
                results[CONFUSED[item["truth"]]] = (1 - real) * total * 0.8
            results["unknown"] = (1 - real) * total * 0.2
            instances[item["id"]] = {"bbox": {"center": item["center"], "size": item["size"]},
                                     "n_observations": observations,
                                     "results": {k: round(v, 1) for k, v in results.items() if v > 0}}
        return {"instances": instances}


def _gap(a: dict, b: dict) -> float:
    """Distance between two boxes' footprints (0 when they overlap)."""
    dx = max(0.0, abs(a["center"][0] - b["center"][0]) - (a["size"][0] + b["size"][0]) / 2)
    dy = max(0.0, abs(a["center"][1] - b["center"][1]) - (a["size"][1] + b["size"][1]) / 2)
    return math.hypot(dx, dy)


def _resting_on(item: dict, support: dict) -> bool:
    bottom = item["center"][2] - item["size"][2] / 2
    top = support["center"][2] + support["size"][2] / 2
    return abs(bottom - top) < 0.05 and _gap(item, support) == 0 and item is not support


def _area(item: dict) -> float:
    return item["size"][0] * item["size"][1]


def truth(scene: Scene) -> dict[str, list[str]]:
    items = scene.items

    def having(labels: set[str]) -> list[dict]:
        return [i for i in items if i["truth"] in labels]

    def ids(chosen: list[dict]) -> list[str]:
        return [i["id"] for i in chosen]

    tables = having({"table", "coffee_table"})
    largest = max(map(_area, tables), default=0.0)
    return {
        "mug": ids(having({"mug"})),
        "chair_near_table": ids([c for c in having({"chair"}) if any(_gap(c, t) <= 0.5 for t in having(TABLES))]),
        "biggest_table": ids([t for t in tables if _area(t) == largest]),
        "book_on_shelf": ids([b for b in having({"book"}) if any(_resting_on(b, s) for s in having({"bookshelf"}))]),
        "piano": ids(having({"piano"})),
        "sit": ids(having(SEATS)),
        "thirsty": ids(having(DRINKS)),
        "cut_bread": ids(having({"knife"})),
        "lie_down": ids(having({"bed", "sofa"})),
        "laptop_work": ids(having({"desk", "table"})),
        "sit_not_couch": ids(having(SEATS - COUCHES)),
        "fruit_not_apple": ids(having(FRUIT - {"apple"})),
        "empty_table": ids([t for t in having(TABLES) if not any(_resting_on(i, t) for i in items)]),
        "drink_not_water": ids(having(DRINKS - {"water_bottle"})),
        "sit_not_chair_couch_stool": ids(having(SEATS - {"chair", "sofa", "stool"})),
    }


# ---- the scenes -----------------------------------------------------------------------------
def studio() -> Scene:
    s = Scene("studio", 1)
    s.room("studio", 0, 0, 6, 5)
    desk = s.add("desk", 5.3, 1.0, (1.2, 0.6, 0.75))
    s.add("chair", 5.3, 1.6, (0.45, 0.45, 0.9), confidence=0.55)
    s.on("laptop", desk, (0.35, 0.25, 0.03), dx=-0.2, confidence=0.4)
    s.on("mug", desk, (0.09, 0.09, 0.1), dx=0.4, confidence=0.55)
    table = s.add("table", 2.0, 1.0, (1.0, 0.8, 0.74))
    s.add("chair", 2.0, 1.7, (0.45, 0.45, 0.9))
    s.add("stool", 3.4, 1.0, (0.35, 0.35, 0.6), confidence=0.5)
    s.on("knife", table, (0.22, 0.03, 0.02), dx=-0.2, confidence=0.7)
    s.on("apple", table, (0.08, 0.08, 0.08), dx=0.2, dy=0.1)
    s.on("banana", table, (0.18, 0.05, 0.04), dx=0.3, dy=-0.2, confidence=0.6)
    s.add("bed", 1.2, 4.0, (2.0, 1.6, 0.5))
    s.add("sofa", 4.5, 4.3, (1.8, 0.8, 0.8), confidence=0.6)
    coffee = s.add("coffee_table", 4.5, 3.4, (0.9, 0.5, 0.4))
    s.on("juice", coffee, (0.08, 0.08, 0.2), confidence=0.4)
    s.add("plant", 0.4, 0.4, (0.4, 0.4, 0.9))
    s.add("lamp", 0.3, 2.6, (0.3, 0.3, 1.5))
    shelf = s.add("bookshelf", 3.0, 4.8, (1.0, 0.3, 1.8))
    s.on("book", shelf, (0.15, 0.22, 0.03), dx=-0.3)
    s.on("book", shelf, (0.15, 0.22, 0.04), dx=0.2, confidence=0.5)
    s.add("tv", 5.8, 3.4, (0.1, 1.0, 0.6), z=0.6)
    return s


def family_home() -> Scene:
    s = Scene("family_home", 2)
    s.room("kitchen", 0, 0, 5, 4)
    s.room("living_room", 5, 0, 11, 6)
    s.room("bedroom", 0, 4, 5, 9)
    counter = s.add("counter", 2.5, 0.35, (3.0, 0.7, 0.9))
    s.on("knife", counter, (0.25, 0.03, 0.02), dx=-1.0)
    s.on("mug", counter, (0.09, 0.09, 0.1), dx=0.2, confidence=0.5)
    s.on("cup", counter, (0.08, 0.08, 0.1), dx=0.6)
    s.on("milk", counter, (0.1, 0.1, 0.25), dx=1.2, confidence=0.55)
    s.add("fridge", 0.45, 2.5, (0.8, 0.7, 1.8))
    dining = s.add("table", 2.5, 2.3, (1.8, 1.0, 0.75))
    for dx in (-0.5, 0.5):
        for dy in (-0.75, 0.75):
            s.add("chair", 2.5 + dx, 2.3 + dy, (0.45, 0.45, 0.9), confidence=0.55 if dx > 0 else 0.85)
    s.on("orange", dining, (0.08, 0.08, 0.08), dx=0.3)
    s.on("apple", dining, (0.08, 0.08, 0.08), dx=-0.3, confidence=0.55)
    s.on("water_bottle", dining, (0.07, 0.07, 0.25), dy=0.2)
    s.add("sofa", 8.0, 5.4, (2.2, 0.9, 0.8))
    s.add("armchair", 10.3, 3.5, (0.8, 0.8, 0.9), confidence=0.5)
    coffee = s.add("coffee_table", 8.0, 4.2, (1.1, 0.6, 0.4))
    s.on("soda_can", coffee, (0.07, 0.07, 0.12), confidence=0.4)
    s.add("tv", 8.0, 0.2, (1.2, 0.1, 0.7), z=0.5)
    shelf = s.add("bookshelf", 5.4, 3.0, (0.35, 1.2, 1.9))
    s.on("book", shelf, (0.22, 0.15, 0.03))
    s.add("plant", 10.5, 0.5, (0.5, 0.5, 1.1))
    s.add("bed", 2.0, 7.5, (2.0, 1.8, 0.55))
    nightstand = s.add("nightstand", 3.4, 8.4, (0.5, 0.4, 0.55))
    s.on("lamp", nightstand, (0.2, 0.2, 0.4))
    s.on("book", nightstand, (0.2, 0.15, 0.04), dx=0.1, confidence=0.5)
    s.add("desk", 4.3, 5.0, (1.0, 0.55, 0.75))
    s.add("bench", 0.8, 5.5, (1.2, 0.4, 0.45), confidence=0.55)
    return s


def office() -> Scene:
    s = Scene("office", 3)
    s.room("open_office", 0, 0, 8, 6)
    s.room("lounge", 8, 0, 12, 6)
    for index, x in enumerate((1.5, 4.0, 6.5)):
        desk = s.add("desk", x, 1.0, (1.4, 0.7, 0.75), confidence=0.6 if index == 2 else 0.85)
        s.add("chair", x, 1.7, (0.55, 0.55, 1.0), confidence=0.5 if index == 1 else 0.8)
        s.on("laptop", desk, (0.35, 0.25, 0.03), dx=-0.3)
        if index != 1:
            s.on("mug", desk, (0.09, 0.09, 0.1), dx=0.4, confidence=0.6)
    meeting = s.add("table", 4.0, 4.2, (2.4, 1.2, 0.75))
    for x in (3.2, 4.8):
        s.add("chair", x, 5.1, (0.5, 0.5, 0.95))
    s.on("water_bottle", meeting, (0.07, 0.07, 0.25), dx=-0.6, confidence=0.55)
    s.on("water_bottle", meeting, (0.07, 0.07, 0.25), dx=0.6)
    s.add("sofa", 10.0, 5.3, (2.0, 0.9, 0.8), confidence=0.55)
    s.add("stool", 9.0, 2.0, (0.35, 0.35, 0.7), confidence=0.5)
    s.add("table", 10.0, 2.0, (0.8, 0.8, 1.0))
    counter = s.add("counter", 11.6, 3.0, (0.6, 2.0, 0.9))
    s.on("juice", counter, (0.08, 0.08, 0.2), dy=-0.5)
    s.on("banana", counter, (0.18, 0.05, 0.04), dy=0.4)
    s.on("knife", counter, (0.22, 0.03, 0.02), dy=0.8, confidence=0.5)
    s.add("fridge", 11.6, 5.3, (0.7, 0.7, 1.8))
    shelf = s.add("bookshelf", 0.3, 4.0, (0.35, 1.5, 1.9))
    s.on("book", shelf, (0.22, 0.15, 0.03), dy=-0.3)
    s.on("book", shelf, (0.22, 0.15, 0.03), dy=0.3)
    s.add("plant", 7.6, 5.6, (0.5, 0.5, 1.2))
    return s


def large_house() -> Scene:
    """The other three scenes side by side three times over (about 230 items): for the narrowing
    of large maps, not for the 30-item timing."""
    s = Scene("large_house", 4)
    parts = [studio(), family_home(), office()] * 3
    offset = 0.0
    for copy, part in enumerate(parts):
        width = max(r[3] for r in part.rooms) + 1.0
        for name, x0, y0, x1, y1 in part.rooms:
            s.room(f"{name}_{copy + 1}", x0 + offset, y0, x1 + offset, y1)
        for item in part.items:
            s.add(item["truth"], item["center"][0] + offset, item["center"][1],
                  tuple(item["size"]), item["center"][2] - item["size"][2] / 2, item["confidence"])
        offset += width
    return s


def main() -> None:
    (HERE / "maps").mkdir(exist_ok=True)
    (HERE / "truth").mkdir(exist_ok=True)
    for scene in (studio(), family_home(), office(), large_house()):
        data = scene.voxeland()
        (HERE / "maps" / f"{scene.name}.json").write_text(json.dumps(data, indent=1) + "\n")
        rooms = {name: [[x0, y0], [x1, y0], [x1, y1], [x0, y1]] for name, x0, y0, x1, y1 in scene.rooms}
        (HERE / "maps" / f"{scene.name}.rooms.yaml").write_text(yaml.safe_dump(rooms, default_flow_style=None))
        (HERE / "truth" / f"{scene.name}.yaml").write_text(yaml.safe_dump(truth(scene), default_flow_style=None))
        print(f"{scene.name}: {len(scene.items)} items")


if __name__ == "__main__":
    main()
