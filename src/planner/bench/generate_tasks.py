"""Task suites nobody can memorise: simulated homes and requests made from a seed.

`planner bench generate tasks --seeds 300-305 --out DIR` writes a world file per seed
(`DIR/worlds/home-S.yaml`) and one suite over them (`DIR/tasks.yaml`), which
`planner bench tasks --suite DIR/tasks.yaml` runs. Homes take their rooms, furniture and things
from the generator's own vocabulary (labels as a mapper gives them: refrigerator, tv_monitor,
dining_table); requests call things what people call them (fridge, telly, the dining table),
name rooms by other names (lounge for a living room), and come polite, terse or misspelt, in the
three tiers of the fixed suite. Each task's success is a predicate over the final world state,
so "succeeded" is checked against what the request asked, not against the goals the planner read.
Which seeds are development data and which test data: planner.bench.seeds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import yaml

from planner.bench.generate import misspell
from planner.bench.household import KIND_BY_LABEL, ROOM_KINDS, USES, Kind, RoomKind
from planner.bench.seeds import kind_of
from planner.bench.suite import FinalState, Predicate, check
from planner.core.robot_profile import RobotProfile
from planner.core.world import World
from planner.core.worldgen import FurnitureSpec, generate_world, world_yaml
from planner.sim.simulated_world import SimulatedWorld

TASKS_PER_TIER = 6
# Where furniture stands in a 5 x 4 m room whose door is in the middle of the hallway wall (v = 0).
FURNITURE_SLOTS = ((0.7, 3.4), (2.5, 3.45), (4.3, 3.4), (0.45, 1.9), (4.55, 1.9))
MAX_FOOTPRINT = (1.2, 0.8)
# Furniture with a door or drawer in the simulator.
OPENING = {"refrigerator": "door", "cabinet": "door", "wardrobe": "door", "dresser": "drawer", "nightstand": "drawer",
           "microwave": "door"}
PICK_VERBS = ("pick up", "grab", "take", "get", "fetch")
POLITE = ("{r}", "{r}", "{r}, please", "Could you {l}?", "Please {l}", "Would you {l}?", "Hey robot, {l}")


@dataclass
class HomePlan:
    seed: int
    rooms: dict[str, RoomKind]          # world room name -> its kind
    world: World
    robot: RobotProfile

    task_prefix = "h"

    @property
    def name(self) -> str:
        return f"home-{self.seed}"


def _holders() -> frozenset[str]:
    return frozenset(k.label for k in KIND_BY_LABEL.values() if k.furniture and (k.surface or k.container)
                     and (k.size[2] <= 1.3 or k.label in OPENING))


def make_home(seed: int, robot: RobotProfile) -> HomePlan:
    """Three to five rooms of different kinds off a hallway, 3-5 pieces of furniture each, and
    about three things per room where the robot reaches them."""
    rng = random.Random(seed)
    # Every generated home has a hallway of its own, from which the rooms open.
    kinds = rng.sample([k for k in ROOM_KINDS if k.name != "hallway"], rng.randint(3, 5))
    layout: dict[str, list[FurnitureSpec]] = {}
    objects: dict[str, list[str]] = {}
    holders = _holders()
    for kind in kinds:
        room = kind.name
        optional = list(kind.furniture[2:])
        rng.shuffle(optional)
        labels = [*kind.furniture[:2], *optional][:rng.randint(3, len(FURNITURE_SLOTS))]
        if not any(label in holders for label in labels):
            labels[-1] = next(label for label in kind.furniture if label in holders)
        layout[room] = [(label, _footprint(rng, KIND_BY_LABEL[label]), OPENING.get(label, ""), slot)
                        for label, slot in zip(labels, FURNITURE_SLOTS)]
        objects[room] = list(kind.objects)
    world = generate_world(len(kinds), 3 * len(kinds), robot, seed, f"home-{seed}", layout, objects, holders)
    return HomePlan(seed, {kind.name: kind for kind in kinds}, world, robot)


def _footprint(rng: random.Random, kind: Kind) -> tuple[float, float, float]:
    w, d, h = (round(s * rng.uniform(0.85, 1.15), 2) for s in kind.size)
    return (min(w, MAX_FOOTPRINT[0]), min(d, MAX_FOOTPRINT[1]), h)


# ---- requests -------------------------------------------------------------------------------
def _name(rng: random.Random, label: str) -> str:
    kind = KIND_BY_LABEL.get(label)
    return rng.choice(kind.names) if kind else label.replace("_", " ")


def _room_name(rng: random.Random, plan: HomePlan, room: str) -> str:
    return rng.choice(plan.rooms[room].names) if room in plan.rooms else room.replace("_", " ")


def _polite(rng: random.Random, request: str) -> str:
    text = rng.choice(POLITE).format(r=request, l=request[0].lower() + request[1:])
    if rng.random() < 0.12:
        text = misspell(rng, text)
    return text[0].upper() + text[1:]


def _any(ids: list[str], predicate) -> dict:
    """`predicate` of one of the `ids`."""
    return predicate(ids[0]) if len(ids) == 1 else {"any_of": [predicate(i) for i in ids]}


class TaskMaker:
    """The requests one home allows, by tier, each with its success predicate."""

    def __init__(self, plan: HomePlan, rng: random.Random):
        self.plan, self.rng, self.world = plan, rng, plan.world
        self.furniture = {f.id: f for f in self.world.furniture}
        self.room_of = {f.id: self.world.room_at(f.center[0], f.center[1]) for f in self.world.furniture}
        self.labels = [o.label for o in self.world.objects]

    def _ref(self, obj) -> str:
        """An object as a predicate names it: its label when it is the only one, else its id."""
        return obj.label if self.labels.count(obj.label) == 1 else obj.id

    def _either(self, obj, predicate, room: str = "") -> dict:
        """`predicate` of the object a request names, met by any thing its words cannot tell from it:
        "the plate on the worktop" where two plates stand on the counter means either (in `room`, when
        the request names the room)."""
        support = self.furniture[obj.placed_on].label
        alike = [o for o in self.world.objects if o.label == obj.label and self.furniture[o.placed_on].label == support
                 and (not room or self.room_of[o.placed_on] == room)]
        if len(alike) < 2:
            return predicate(self._ref(obj))
        return {"any_of": [predicate(o.id) for o in alike]}

    def _furniture_called(self, item, name: str, room: str = "", fits=lambda f: True) -> list[str]:
        """Ids of the furniture (that `fits`) a person's `name` for `item` cannot tell from it: "the
        cabinet" where four cabinets stand means any of them, "the table in the dining room" any table
        there (`room`, when the request names it)."""
        return [f.id for f in self.world.furniture if fits(f) and (not room or self.room_of[f.id] == room)
                and (f.label == item.label or name in KIND_BY_LABEL[f.label].names)]

    def _said(self, obj, moving: bool = False) -> str:
        """An object as a person names it: by its furniture when there are more than one ("the
        cup on the desk", or "the cup from the desk" in a request that moves it elsewhere)."""
        name = _name(self.rng, obj.label)
        if self.labels.count(obj.label) > 1:
            support = self.furniture[obj.placed_on]
            return f"{name} {'from' if moving else 'in' if obj.inside else 'on'} the {_name(self.rng, support.label)}"
        return name

    def simple(self) -> list[dict]:
        rng, tasks = self.rng, []
        for obj in [o for o in self.world.objects if not o.inside]:
            request = f"{rng.choice(PICK_VERBS)} the {self._said(obj)}"
            tasks.append({"request": _polite(rng, request), "robot_at": obj.placed_on,
                          "success": self._either(obj, lambda ref: {"holding": ref})})
        for room in self.plan.rooms:
            verb = rng.choice(("Go to the", "Head to the", "Go into the", "Make your way to the"))
            tasks.append({"request": _polite(rng, f"{verb} {_room_name(rng, self.plan, room)}"), "success": {"robot_in": room}})
        for item in self.world.furniture:
            if item.openable:
                verb, name = rng.choice(("open", "open up", "pull open")), _name(rng, item.label)
                tasks.append({"request": _polite(rng, f"{verb} the {name}"), "robot_at": item.id,
                              "success": _any(self._furniture_called(item, name, fits=lambda f: bool(f.openable)),
                                              lambda ref: {"is_open": ref})})
        return tasks

    def moderate(self) -> list[dict]:
        rng, tasks = self.rng, []
        surfaces = [f for f in self.world.furniture if KIND_BY_LABEL[f.label].surface and f.size[2] <= 1.3]
        for obj in self.world.objects:
            targets = [f for f in surfaces if f.id != obj.placed_on and f.label != self.furniture[obj.placed_on].label]
            if targets:
                target = rng.choice(targets)
                room, name = self.room_of[target.id], _name(rng, target.label)
                where = f"the {name} in the {_room_name(rng, self.plan, room)}"
                template = rng.choice(("Take the {o} and put it on {w}", "Move the {o} to {w}",
                                       "Bring the {o} over to {w}", "Go get the {o}, then leave it on {w}"))
                places = self._furniture_called(target, name, room, lambda f: KIND_BY_LABEL[f.label].surface)
                tasks.append({"request": _polite(rng, template.format(o=self._said(obj, moving=True), w=where)),
                              "success": self._either(obj, lambda ref, places=places: _any(places, lambda place: {
                                  "object_on": {"object": ref, "target": place}}))})
            openable = [f for f in self.world.furniture if f.openable and f.id != obj.placed_on]
            if openable and not obj.inside:
                box = rng.choice(openable)
                said = self._said(obj, moving=True)
                name = _name(rng, box.label)
                boxes = self._furniture_called(box, name, fits=lambda f: bool(f.openable))
                tasks.append({"request": _polite(rng, f"put the {said} in the {name}"),
                              "success": self._either(obj, lambda ref, boxes=boxes: _any(boxes, lambda place: {
                                  "object_on": {"object": ref, "target": place, "inside": True}}))})
        for obj in self.world.objects:
            room = self.room_of[obj.placed_on]
            tasks.append({"request": _polite(rng, f"go to the {_room_name(rng, self.plan, room)} and "
                                                  f"{rng.choice(PICK_VERBS)} the {self._said(obj)}"),
                          "success": self._either(obj, lambda ref: {"holding": ref}, room)})
        absent = self._absent_objects()
        if absent and surfaces:
            target = rng.choice(surfaces)
            tasks.append({"request": _polite(rng, f"put the {_name(rng, absent[0])} on the {_name(rng, target.label)}"),
                          "success": {"gave_up": True}})
        return tasks

    def complex(self, user_room: str, user_at: str) -> list[dict]:
        rng, tasks = self.rng, []
        objects = self.world.objects
        for use, (phrases, needs) in USES.items():
            meeting = [o for o in objects if use in KIND_BY_LABEL[o.label].uses]
            if meeting:
                ways = [{"all_of": [{"holding": o.id}, {"robot_in": user_room}]} for o in meeting]
                ways += [{"object_on": {"object": o.id, "room": user_room}} for o in meeting]
                need = rng.choice(needs)  # a whole sentence: said as it is
                tasks.append({"request": need[0].upper() + need[1:], "robot_at": user_at,
                              "success": {"any_of": ways}})
            elif all(use not in KIND_BY_LABEL[f.label].uses for f in self.world.furniture):
                things = [phrase for phrase in phrases if phrase.startswith(("something ", "a "))]
                if things:  # a thing to bring, not a place ("somewhere to wash")
                    tasks.append({"request": _polite(rng, f"bring me {rng.choice(things)}"), "robot_at": user_at,
                                  "success": {"gave_up": True}})
        movable = [o for o in objects if not o.inside]
        surfaces = [f for f in self.world.furniture if KIND_BY_LABEL[f.label].surface and f.size[2] <= 1.3]
        for first, second in zip(movable, movable[1:]):
            targets = [f for f in surfaces if f.id not in (first.placed_on, second.placed_on)]
            if targets and first.label != second.label:
                target = rng.choice(targets)
                said = [self._said(first, True), self._said(second, True)]
                name = _name(rng, target.label)
                places = self._furniture_called(target, name, fits=lambda f: KIND_BY_LABEL[f.label].surface)
                tasks.append({"request": _polite(rng, f"put the {said[0]} and the {said[1]} on the {name}"),
                              "success": {"all_of": [self._either(o, lambda ref, places=places: _any(places, lambda place: {
                                  "object_on": {"object": ref, "target": place}})) for o in (first, second)]}})
        for item in surfaces:
            on_it = [o for o in objects if o.placed_on == item.id and not o.inside]
            if 1 <= len(on_it) <= 2:
                room = self.room_of[item.id]
                clear = rng.choice(("clear the {f} in the {r}", "tidy everything off the {f} in the {r}"))
                tasks.append({"request": _polite(rng, clear.format(f=_name(rng, item.label),
                                                                  r=_room_name(rng, self.plan, room))),
                              "robot_at": item.id,
                              "success": {"all_of": [p for o in on_it for p in (
                                  {"not": {"object_on": {"object": o.id, "target": item.id}}},
                                  {"not": {"holding": o.id}})]}})
        for obj in movable:
            room = self.room_of[obj.placed_on]
            elsewhere = [r for r in self.plan.rooms if r != room]
            if elsewhere:
                here = rng.choice(elsewhere)
                at = next(f.id for f in self.world.furniture if self.room_of[f.id] == here)
                request = rng.choice(("I'm in the {r}, bring me the {o}", "Could you bring the {o} to me? I'm in the {r}"))
                tasks.append({"request": request.format(r=_room_name(rng, self.plan, here), o=self._said(obj)),
                              "robot_at": at,
                              "success": self._either(obj, lambda ref, here=here: {"any_of": [
                                  {"all_of": [{"holding": ref}, {"robot_in": here}]},
                                  {"object_on": {"object": ref, "room": here}}]})})
        return tasks

    def _absent_objects(self) -> list[str]:
        present = set(self.labels)
        return [label for label, kind in sorted(KIND_BY_LABEL.items()) if not kind.furniture and label not in present]


def holds_already(task: dict, plan) -> bool:
    """Whether the task's success holds before the robot does anything ("I need to ring my sister"
    with the phone already in the room where they ask): such a task measures nothing."""
    world = plan.world.with_robot_at(task["robot_at"], plan.robot.standoff_m) if "robot_at" in task else plan.world
    return check(Predicate.model_validate(task["success"]), FinalState(SimulatedWorld(world, plan.robot), ""))[0]


def make_tasks(plan, per_tier: int = TASKS_PER_TIER, maker_class=TaskMaker) -> list[dict]:
    """`per_tier` tasks of each tier for one home (a HomePlan, or a plan of another source with its
    own `maker_class`), drawn from every request it allows."""
    rng = random.Random(plan.seed * 7777 + 5)
    maker = maker_class(plan, rng)
    user_at = rng.choice([f.id for f in plan.world.furniture])
    user_room = maker.room_of[user_at]
    chosen = []
    for tier, pool in (("simple", maker.simple()), ("moderate", maker.moderate()),
                       ("complex", maker.complex(user_room, user_at))):
        # Requests the home cannot meet are kept in every draw that has them: declining is a skill too.
        refusals = [t for t in pool if t["success"] == {"gave_up": True}][:1]
        rest = [t for t in pool if t not in refusals]
        rng.shuffle(rest)
        rest = [t for t in rest if not holds_already(t, plan)]
        for number, task in enumerate([*refusals, *rest][:per_tier], 1):
            chosen.append({"id": f"{plan.task_prefix}{plan.seed}-{tier[0]}{number:02d}", "tier": tier,
                           "world": plan.name, **task})
    return chosen


def write_suite(plans: list, out: Path, per_tier: int | None = None, maker_class=TaskMaker,
                source: str = "household") -> dict:
    """World files and the suite over them (of each home's tasks, `per_tier` of each tier drawn at
    random by its seed, when given); returns counts per tier."""
    (out / "worlds").mkdir(parents=True, exist_ok=True)
    tasks = []
    for plan in plans:
        header = (f"Generated by planner bench generate tasks --source {source} (seed {plan.seed}, {kind_of(plan.seed)} "
                  f"data). Do not edit.")
        (out / "worlds" / f"{plan.name}.yaml").write_text(world_yaml(plan.world, header))
        made = make_tasks(plan, maker_class=maker_class)
        if per_tier is not None:
            rng = random.Random(plan.seed * 31 + 7)
            tiers = {tier: [t for t in made if t["tier"] == tier] for tier in ("simple", "moderate", "complex")}
            made = [task for of_tier in tiers.values() for task in rng.sample(of_tier, min(per_tier, len(of_tier)))]
        tasks += made
    seeds = [p.seed for p in plans]
    suite = {"name": f"generated-{'scan-' if source == 'scan' else ''}{min(seeds)}-{max(seeds)}",
             "description": f"generated homes ({source} source), seeds {', '.join(map(str, seeds))}",
             "worlds": {p.name: f"worlds/{p.name}.yaml" for p in plans}, "tasks": tasks}
    (out / "tasks.yaml").write_text("# Generated by planner bench generate tasks. Do not edit.\n"
                                    + yaml.safe_dump(suite, sort_keys=False, width=120))
    return {tier: sum(t["tier"] == tier for t in tasks) for tier in ("simple", "moderate", "complex")}


def write_source_suite(source: str, seeds: list[int], robot: RobotProfile, out: Path, per_tier: int | None = None,
                       progress=lambda line: None) -> dict:
    """The suite of `source`'s homes for `seeds` (household: this module's; scan: planner.bench.scan_tasks,
    the second source) written to `out`; counts per tier."""
    if source == "scan":
        from planner.bench import scan_tasks

        make, maker_class = scan_tasks.make_plan, scan_tasks.TaskMaker
    else:
        make, maker_class = make_home, TaskMaker
    plans = []
    for number, seed in enumerate(seeds, 1):
        plans.append(make(seed, robot))
        progress(f"[{number}/{len(seeds)}] {plans[-1].name}: {len(plans[-1].world.rooms)} rooms, "
                 f"{len(plans[-1].world.objects)} things")
    return write_suite(plans, out, per_tier, maker_class, source)
