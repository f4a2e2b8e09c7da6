"""The second source of task suites, built apart from planner.bench.generate_tasks: the scan
source's homes (planner.bench.scan_homes: many rooms, 100-300 items labelled as a scan's mapper
labels them) made into simulator worlds the way a real map is (planner.core.worldgen.world_from_scene),
and requests in that source's words and styles: things and rooms called by what people call them
rather than by their labels, needs said indirectly, hurried typos.

`planner bench generate tasks --source scan --seeds 0-4 --out DIR` writes DIR/worlds/scan-S.yaml and
DIR/tasks.yaml, which `planner bench tasks --suite DIR/tasks.yaml` runs. A task succeeds by a
predicate over the final world (any thing of the category asked for will do, wherever it is and
whatever the map labels it)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from planner.bench.scan_homes import ScanHome, make_scan_home, typo, voxeland
from planner.bench.scan_vocabulary import BY_NAME, CATEGORIES, NEEDS, ROOM_TYPES, Category
from planner.core.files import stack_label
from planner.core.robot_profile import RobotProfile
from planner.core.scene_graph import SceneGraph
from planner.core.voxeland import parse_voxeland
from planner.core.world import World, WorldObject
from planner.core.worldgen import OBJECT_SIZE, world_from_scene

ITEMS = (100, 160)   # items a home has, at random between: the smaller of the source's homes, for the simulator
FETCH = ("grab the {n} for me", "could you pick up the {n}?", "the {n}, can you get hold of it", "mind fetching the {n}?",
         "pick the {n} up")
GO = ("head over to the {r}", "can you go to the {r}?", "the {r}, go there please", "off to the {r} with you")
PUT_ON = ("the {n} should go on the {h}", "could you move the {n} onto the {h}?", "put the {n} on the {h} for me")
TAKE_TO = ("take the {n} to the {r}", "the {n} belongs in the {r}, can you bring it there?")
BOTH_ON = ("first the {a}, then the {b}: both on the {h}, please", "could the {a} and the {b} go on the {h}?")
LACKING = ("could you fetch me the {n}?", "bring the {n} over, would you")
TYPO_SHARE = 0.15


@dataclass
class ScanPlan:
    """A scan home as a simulator world, and the category of each thing in it."""
    seed: int
    home: ScanHome
    world: World
    robot: RobotProfile
    category: dict[str, Category]   # world id -> what the thing is (its label may say otherwise)
    room_type: dict[str, str]       # room -> its type
    task_prefix = "s"

    @property
    def name(self) -> str:
        return f"scan-{self.seed}"


def make_plan(seed: int, robot: RobotProfile, items: int | None = None) -> ScanPlan:
    home = make_scan_home(seed, items or random.Random(f"scan-tasks-{seed}").randint(*ITEMS))
    rooms = {name: [(x0, y0), (x1, y0), (x1, y1), (x0, y1)] for name, (x0, y0, x1, y1) in home.rooms.items()}
    scene = SceneGraph.from_voxeland(parse_voxeland(voxeland(home), f"scan-{seed}"), rooms)
    world, _, map_ids = world_from_scene(scene, f"scan-{seed}")
    by_id = {item.id: item.category for item in home.items}
    category = {new: by_id[old] for new, old in map_ids.items() if old in by_id}
    return ScanPlan(seed, home, world, robot, category, dict(home.room_types))


def _said(rng: random.Random, category: Category) -> str:
    return rng.choice(category.said)


def _styled(rng: random.Random, text: str) -> str:
    text = typo(rng, text) if rng.random() < TYPO_SHARE else text
    return text[0].upper() + text[1:]


def _any(predicates: list[dict]) -> dict:
    return predicates[0] if len(predicates) == 1 else {"any_of": predicates}


class TaskMaker:
    """The requests one scan home allows, by tier, each with its success predicate."""

    def __init__(self, plan: ScanPlan, rng: random.Random):
        self.plan, self.rng, self.world = plan, rng, plan.world
        self.furniture = {f.id: f for f in self.world.furniture}
        self.room_of = {f.id: self.world.room_at(f.center[0], f.center[1]) or "" for f in self.world.furniture}
        # Things the map labels as what they are (in any of the category's spellings), on a top the arms
        # reach: what a request can ask to move. Those it mislabelled stay in the home as they are.
        self.movable = [o for o in self.world.objects if self._labelled_right(o.id, o.label) and not o.inside
                        and plan.robot.works_at(self.furniture[o.placed_on].size[2] + OBJECT_SIZE[2] / 2)]

    def _labelled_right(self, item: str, label: str) -> bool:
        return item in self.plan.category and label in {stack_label(raw) for raw in self.plan.category[item].raw}

    def _of(self, category: Category) -> list[WorldObject]:
        return [o for o in self.movable if self.plan.category[o.id] is category]

    def _meeting(self, categories: set[str]) -> list[WorldObject]:
        """Every thing of the categories, whatever its label says and wherever it is: any of them
        meets a request for one (a backpack in a drawer is a backpack)."""
        return [o for o in self.world.objects if o.id in self.plan.category and self.plan.category[o.id].name in categories]

    def _room_said(self, room: str) -> tuple[str, list[str]]:
        """A room as a person calls it, by the common name of its type (the map may call it a lounge,
        a washroom or the master bedroom), and the rooms of the map that name fits."""
        room_type = self.plan.room_type[room]
        return ROOM_TYPES[room_type][0][0], sorted(r for r, t in self.plan.room_type.items() if t == room_type)

    def _surfaces(self) -> list:
        return [f for f in self.world.furniture if self._labelled_right(f.id, f.label)
                and self.plan.category[f.id].holds == "on" and self.plan.robot.works_at(f.size[2] + OBJECT_SIZE[2] / 2)]

    def simple(self) -> list[dict]:
        rng, tasks = self.rng, []
        for category in {self.plan.category[o.id].name: self.plan.category[o.id] for o in self.movable}.values():
            things = self._of(category)
            tasks.append({"request": _styled(rng, rng.choice(FETCH).format(n=_said(rng, category))),
                          "robot_at": things[0].placed_on,
                          "success": _any([{"holding": o.id} for o in self._meeting({category.name})])})
        for room in self.plan.room_type:
            said, rooms = self._room_said(room)
            tasks.append({"request": _styled(rng, rng.choice(GO).format(r=said)),
                          "success": _any([{"robot_in": r} for r in rooms])})
        return tasks

    def moderate(self) -> list[dict]:
        rng, tasks = self.rng, []
        surfaces = self._surfaces()
        for thing in self.movable:
            category = self.plan.category[thing.id]
            things = self._meeting({category.name})
            targets = [f for f in surfaces if self.plan.category[f.id].name != self.plan.category.get(thing.placed_on,
                                                                                                       category).name]
            if targets:
                target = self.plan.category[rng.choice(targets).id]
                places = [f.id for f in surfaces if self.plan.category[f.id] is target]
                tasks.append({"request": _styled(rng, rng.choice(PUT_ON).format(n=_said(rng, category),
                                                                                h=_said(rng, target))),
                              "success": _any([{"object_on": {"object": o.id, "target": p}} for o in things
                                               for p in places])})
            here = self.room_of[thing.placed_on]
            elsewhere = [r for r in self.plan.room_type if self.plan.room_type[r] != self.plan.room_type.get(here)]
            if elsewhere:
                said, rooms = self._room_said(rng.choice(elsewhere))
                tasks.append({"request": _styled(rng, rng.choice(TAKE_TO).format(n=_said(rng, category), r=said)),
                              "success": _any([{"object_on": {"object": o.id, "room": r}} for o in things
                                               for r in rooms])})
        return tasks

    def complex(self, user_room: str, user_at: str) -> list[dict]:
        rng, tasks = self.rng, []
        for categories, phrasings in NEEDS.values():
            meeting = self._meeting(set(categories))
            if any(o in self.movable for o in meeting) and not any(BY_NAME[name].furniture for name in categories):
                ways = [{"all_of": [{"holding": o.id}, {"robot_in": user_room}]} for o in meeting]
                ways += [{"object_on": {"object": o.id, "room": user_room}} for o in meeting]
                tasks.append({"request": _styled(rng, rng.choice(phrasings)), "robot_at": user_at,
                              "success": {"any_of": ways}})
        by_category = {self.plan.category[o.id].name: o for o in self.movable}
        pairs = list(zip(list(by_category.values()), list(by_category.values())[1:]))
        surfaces = self._surfaces()
        for first, second in rng.sample(pairs, min(len(pairs), 6)):
            targets = [f for f in surfaces if f.id not in (first.placed_on, second.placed_on)]
            if targets:
                target = self.plan.category[rng.choice(targets).id]
                places = [f.id for f in targets if self.plan.category[f.id] is target]
                said = [_said(rng, self.plan.category[o.id]) for o in (first, second)]
                tasks.append({"request": _styled(rng, rng.choice(BOTH_ON).format(a=said[0], b=said[1],
                                                                                 h=_said(rng, target))),
                              "success": {"all_of": [_any([{"object_on": {"object": o.id, "target": p}}
                                                           for o in self._meeting({self.plan.category[thing.id].name})
                                                           for p in places]) for thing in (first, second)]}})
        present = {c.name for c in self.plan.category.values()} | {i.category.name for i in self.plan.home.items}
        lacking = [c for c in CATEGORIES if not c.furniture and c.name not in present]
        if lacking:
            category = rng.choice(lacking)
            tasks.append({"request": _styled(rng, rng.choice(LACKING).format(n=_said(rng, category))),
                          "robot_at": user_at, "success": {"gave_up": True}})
        return tasks
