"""The world model's symbolic view as a knowledge graph, as L3M+P keeps it: each fact a triplet,
(subject, relation, object) or (subject, property, true), that is one predicate of the PDDL domain
made from the skill library, read off the scene graph. People tell the robot what changed while it
was not looking ("the juice is on the desk now"); such a change, written as triplets to remove
and to add, is verified against the domain and the map before it touches the scene graph, where it
lands as a told fact with its time."""

from __future__ import annotations

from pydantic import Field

from planner.core.files import StrictModel
from planner.core.planning.pddl import PREDICATES, state_facts
from planner.core.scene_graph import Entity, SceneGraph
from planner.core.skills import SkillPlanner

ROBOT = "robot"  # the subject of at(): the domain leaves the robot implicit
# What people may tell, with the types of its arguments: where things are and what is open. Where the
# robot is and what it holds, it knows better than anyone can tell it. Narrower than the domain's
# types where the map knows better: only furniture with a door or drawer opens or holds things inside.
TELLABLE = {"on": ("item", "furniture"), "inside": ("item", "openable"), "is_open": ("openable",)}


class Triplet(StrictModel):
    subject: str = Field(min_length=1, max_length=80)
    relation: str = Field(min_length=1, max_length=40)
    object: str | bool = Field(default=True, description="an id for a relation, true for a property")

    def __str__(self) -> str:
        return f"({self.subject}, {self.relation}, {str(self.object).lower() if self.object is True else self.object})"

    def key(self) -> tuple[str, str, str | bool]:
        return self.subject, self.relation, self.object


class Change(StrictModel):
    """What a person's sentence changes: the facts no longer true and the facts now true."""
    remove: list[Triplet] = Field(default_factory=list, max_length=12)
    add: list[Triplet] = Field(default_factory=list, max_length=12)


def triplet(fact: tuple[str, ...]) -> Triplet:
    """A domain fact (predicate, arg, ...) as its triplet."""
    predicate, *args = fact
    if predicate == "at":
        return Triplet(subject=ROBOT, relation="at", object=args[0])
    if len(args) == 1:
        return Triplet(subject=args[0], relation=predicate)
    return Triplet(subject=args[0], relation=predicate, object=args[1])


def knowledge(planner: SkillPlanner, scene: SceneGraph, ids: set[str] | None = None) -> list[Triplet]:
    """The knowledge graph of the scene (only the facts about `ids`, when given)."""
    def kept(entities: list[Entity]) -> list[Entity]:
        return [e for e in entities if ids is None or e.id in ids]
    place = planner.beside(scene) or scene.known_robot.room
    facts = state_facts(scene, planner.robot.arm_names, place, kept(scene.objects()), kept(scene.furniture()))
    return [triplet(f) for f in facts if ids is None or f[0] in ("at", "holding", "hand_empty") or f[1] in ids]


def neighbourhood(graph: list[Triplet], seeds: set[str], depth: int = 1) -> list[Triplet]:
    """The triplets within `depth` hops of the seed entities: at depth 1 those that name a seed,
    at depth 2 also those that name what those lead to (the other things on the same table)."""
    reached, kept = set(seeds), []
    for _ in range(depth):
        kept = [t for t in graph if t.subject in reached or t.object in reached]
        reached |= {x for t in kept for x in (t.subject, t.object) if isinstance(x, str)}
    return kept


def _kind(scene: SceneGraph, node_id: str) -> str:
    """The domain type of a map id: item, furniture, openable, room or person."""
    entity = scene.entity(node_id)
    if entity.kind == "object":
        return "item"
    if entity.kind == "furniture":
        return "openable" if entity.state else "furniture"
    return entity.kind


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _is_a(kind: str, wanted: str) -> bool:
    return kind == wanted or (wanted == "furniture" and kind == "openable")


def triplet_errors(t: Triplet, scene: SceneGraph) -> list[str]:
    """What makes one triplet no fact the domain can hold: the relation, its shape, the ids, their types."""
    if t.relation not in PREDICATES:
        return [f"{t}: no relation {t.relation!r}; the relations are {', '.join(TELLABLE)}"]
    if t.relation not in TELLABLE:
        return [f"{t}: {t.relation!r} is the robot's own state, which it knows; tell only {', '.join(TELLABLE)}"]
    types = TELLABLE[t.relation]
    if len(types) == 1 and t.object is not True:
        return [f"{t}: {t.relation} is a property: its object is true (remove the triplet to say it is not so)"]
    if len(types) == 2 and not isinstance(t.object, str):
        return [f"{t}: {t.relation} relates two things: its object is {_a(types[1])}'s id"]
    errors = []
    for node_id, wanted in zip([t.subject, t.object], types):
        assert isinstance(node_id, str)
        if not scene.has(node_id):
            errors.append(f"{t}: no {node_id!r} in the map")
        elif not _is_a(kind := _kind(scene, node_id), wanted):
            errors.append(f"{t}: {node_id} is {_a(kind)}, and {t.relation} needs {_a(wanted)} there")
    return errors


def change_errors(change: Change, graph: list[Triplet], scene: SceneGraph) -> list[str]:
    """Why the change cannot be applied to `graph` as it is: each triplet checked against the
    domain and the map, a removed fact must hold, and the graph after it must still be one world
    (each thing in one place, inside only what it is in)."""
    errors = [e for t in [*change.remove, *change.add] for e in triplet_errors(t, scene)]
    if errors:
        return errors
    holding = {t.key() for t in graph}
    errors += [f"{t} is not in the graph, so it cannot be removed" for t in change.remove if t.key() not in holding]
    after = (holding - {t.key() for t in change.remove}) | {t.key() for t in change.add}
    supports: dict[str, set] = {}
    for subject, relation, obj in after:
        if relation == "on":
            supports.setdefault(subject, set()).add(obj)
    for subject, places in sorted(supports.items()):
        if len(places) > 1:
            errors.append(f"{subject} would be on {' and '.join(sorted(places))}: a thing is in one place; "
                          "remove where it was")
    held = {obj for _, relation, obj in after if relation == "holding"}
    for subject, relation, obj in sorted(after, key=str):
        if relation == "inside" and obj not in supports.get(subject, set()):
            errors.append(f"({subject}, inside, {obj}) needs ({subject}, on, {obj}): what is inside furniture "
                          "stands in it")
        if relation == "on" and subject in held:
            errors.append(f"({subject}, on, {obj}): the robot is holding {subject}")
    return errors


def apply_change(scene: SceneGraph, change: Change, stamp: float) -> list[str]:
    """A verified change made in the scene graph as told facts (stamped); what changed, in words.
    A thing whose place is removed and not given again is no longer where the map put it."""
    done = []
    placed = {t.subject for t in [*change.remove, *change.add] if t.relation in ("on", "inside")}
    for subject in sorted(placed):
        support = scene.furniture_support(subject)
        where, inside = (support[1], support[0] == "in") if support else (None, False)
        for t in change.remove:
            if t.subject == subject:
                where, inside = (None, False) if t.relation == "on" else (where, False)
        for t in change.add:
            if t.subject == subject and t.relation == "on" and isinstance(t.object, str):
                where = t.object
            if t.subject == subject and t.relation == "inside":
                inside = True
        if where is None:
            scene.mark_missing(subject)
            done.append(f"{subject} no longer where it was")
        else:
            scene.put_item(subject, where, inside, stamp)
            done.append(f"{subject} {'in' if inside else 'on'} {where}")
        scene.set_told(subject, stamp)
    opened = {t.subject for t in change.add if t.relation == "is_open"}
    closed = {t.subject for t in change.remove if t.relation == "is_open"} - opened
    for furniture in sorted(opened | closed):
        scene.set_state(furniture, "open" if furniture in opened else "closed")
        scene.set_told(furniture, stamp)
        done.append(f"{furniture} {'open' if furniture in opened else 'closed'}")
    return done
