"""The scene graph: rooms -> furniture -> objects, with label evidence and spatial relations.

Built from a world file or a Voxeland map, kept up to date by fusing 3D detections, and queried
by the perception actions of the planner. Plain Python over networkx; no ROS here.

Edges: `room --contains--> item` for every piece of furniture and object, and
`object --on|in|under|near--> reference` for where an object is. Indexes (a floor grid, the
members of each room, the items of each label) keep building, fusion and queries from scanning
the whole graph, so a building-sized map of 10,000 objects stays fast.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import Polygon

from planner.core.errors import PlannerError
from planner.core.files import bulk_allocation, label_problem, point_problem, size_problem
from planner.core.frames import FrameTree, transform_box
from planner.core.geometry import Pose2D, free_spot, horizontal_distance, in_field_of_view
from planner.core.spatial import GridIndex
from planner.core.voxeland import STRUCTURE_LABEL, VoxelandMap, label_distribution
from planner.core.world import World, person_box

ON_TOLERANCE_M = 0.06        # an object's bottom within this of a top stands on it
UNDER_CLEARANCE_M = 0.05     # an object whose top is this far below a top, inside its footprint, is under it
NEAR_DISTANCE_M = 0.75       # footprint gap within which an unsupported object is near furniture
NEAR_LIMIT = 2               # near relations kept per object, closest first
ASSOCIATION_GATE_M = 0.5     # a detection farther than this from an instance is not that instance
LABEL_COMPATIBILITY_MIN = 0.3  # Bhattacharyya coefficient of label distributions to associate
HELD_GATE_M = 1.5            # a held object is seen this close to the camera, wherever the robot went
BULK_RELATE_MIN = 100        # objects added at once from which they are related with tree queries
MOVE_EPSILON_M = 0.02       # a re-seen box moving less than this leaves its neighbours' relations alone
FUSION_WEIGHT_CAP = 5        # a re-seen box follows new evidence with at least 1/5 weight (objects move)
MISSING_AFTER_FRAMES = 2     # frames in which an object should have been seen before it counts as missing
PRIOR_EVIDENCE = 5.0         # evidence behind a label from a world file (a handful of observations)

# Labels that are furniture (places to go to and put things on) rather than movable objects.
DEFAULT_FURNITURE_LABELS = frozenset({
    "table", "counter", "desk", "shelf", "bed", "sofa", "couch", "chair", "cabinet", "fridge",
    "sink", "nightstand", "dresser", "stove", "bench", "tv_stand", "bookshelf", "wardrobe",
    "dishwasher", "oven", "microwave", "drawer", "coffee_table", "armchair", "stool",
})
# Things with an inside: an object within their box is "in" them rather than "under" them. So is
# anything with a door or a drawer (an open/closed state), whatever its label. A semantic map gives
# no states, so the names ScanNet-labelled maps use count too (a fork in a "refrigerator").
CONTAINER_LABELS = frozenset({
    "fridge", "cabinet", "drawer", "nightstand", "shelf", "bookshelf", "wardrobe", "dresser", "dishwasher",
    "oven", "microwave", "sink", "box", "bowl", "basket", "bin", "bag", "pot",
    "refrigerator", "kitchen_cabinet", "cupboard", "closet", "trash_can", "washing_machine",
})
# A map unsure whether a thing is a counter (0.51) or a dining table (0.39) may be holding the cup
# "on the dining table": a label at least this share of the item's most likely one is a kind it may be.
MAY_BE_SHARE = 0.5
SUPPORT_ORDER = ("in", "on", "under", "near")
PERSON_LABELS = frozenset({"person"})   # detections of people become person nodes, not objects
ARTICULATION_STATES = ("", "open", "closed")
MAX_SENSOR_RANGE_M = 100.0   # beyond any RGB-D camera's reach


@dataclass
class Entity:
    id: str
    kind: str                       # room | furniture | object | person
    label: str
    labels: dict[str, float] = field(default_factory=dict)      # distribution of the top labels
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    size: tuple[float, float, float] = (0.0, 0.0, 0.0)
    room: str = ""
    status: str = "seen"            # seen | missing | held
    last_seen: float = 0.0
    polygon: list[tuple[float, float]] = field(default_factory=list)  # rooms only
    evidence: dict[str, float] = field(default_factory=dict)    # accumulated label scores
    n_observations: int = 0
    first_seen: float = 0.0
    missed: int = 0                 # frames in a row it should have been seen and was not
    state: str = ""                 # open | closed for things with a door or drawer
    mass_kg: float = 0.0            # objects: 0 when unknown
    told: float = 0.0               # when a person told where it is or how it stands; 0: as perceived

    def add_evidence(self, scores: dict[str, float]) -> None:
        for label, score in scores.items():
            self.evidence[label] = self.evidence.get(label, 0.0) + score
        self.labels = label_distribution(self.evidence)
        self.label = next(iter(self.labels))

    def bounds(self, margin: float = 0.0) -> tuple[float, float, float, float]:
        hx, hy = self.size[0] / 2 + margin, self.size[1] / 2 + margin
        return self.center[0] - hx, self.center[1] - hy, self.center[0] + hx, self.center[1] + hy

    @property
    def bottom(self) -> float:
        return self.center[2] - self.size[2] / 2

    @property
    def top(self) -> float:
        return self.center[2] + self.size[2] / 2


@dataclass
class RobotSnapshot:
    pose: Pose2D
    room: str
    arms: list[str]
    held: dict[str, str]            # arm -> object id ("" when free)
    busy: bool = False

    def holding(self, object_id: str) -> str | None:
        return next((arm for arm, held in self.held.items() if held == object_id), None)


@dataclass
class Detection:
    labels: dict[str, float]
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    rotation: np.ndarray | None = None   # the box's axes in its frame (3x3); None: the frame's axes
    state: str = ""                      # open | closed: an articulated thing (fridge door, drawer) seen

    @property
    def label(self) -> str:
        return max(self.labels.items(), key=lambda item: item[1])[0]

    def problem(self) -> str | None:
        """What makes this detection unusable, naming the field; None when it is fine."""
        if not self.labels:
            return "labels: empty"
        for label, score in self.labels.items():
            if (problem := label_problem(label)) is not None:
                return f"labels: {problem}"
            if not math.isfinite(score) or score < 0:
                return f"labels.{label}: score must be a finite number >= 0, got {score}"
        if sum(self.labels.values()) <= 0:
            return "labels: all scores are zero"
        if self.state not in ARTICULATION_STATES:
            return f"state: must be one of {', '.join(repr(s) for s in ARTICULATION_STATES)}, got {self.state!r}"
        for name, problem in (("center", point_problem(self.center)), ("size", size_problem(self.size))):
            if problem is not None:
                return f"{name}: {problem}"
        if self.rotation is not None and not np.isfinite(self.rotation).all():
            return "orientation: must be a finite quaternion"
        return None


@dataclass
class DetectionFrame:
    """One camera frame's detections in the map frame, with where the camera was and what it covers."""
    sensor: Pose2D
    fov_deg: float
    range_m: float
    stamp: float
    detections: list[Detection]


@dataclass
class SensorFrame:
    """One camera frame as it arrives: detections and the camera pose in `frame_id`."""
    frame_id: str
    sensor: np.ndarray              # 4x4 pose of the camera in frame_id
    fov_deg: float
    range_m: float
    stamp: float
    detections: list[Detection]
    # The direction the camera looks, in its own axes: x for a body frame, z for an optical one (REP 103).
    view_axis: tuple[float, float, float] = (1.0, 0.0, 0.0)

    def problem(self) -> str | None:
        """What makes the whole frame unusable, naming the field; None when it is fine."""
        if not (math.isfinite(self.stamp) and self.stamp >= 0):   # ROS time starts at 0; TF refuses earlier
            return f"header.stamp: must be at or after time 0, got {self.stamp} s"
        if not np.isfinite(self.sensor).all():
            return "sensor_pose: must be finite (and the orientation a quaternion)"
        if (problem := point_problem(tuple(self.sensor[:3, 3]))) is not None:
            return f"sensor_pose.position: {problem}"
        # 0 is "not known": nothing is then taken as missing for not being seen.
        if not (math.isfinite(self.fov_deg) and 0 <= self.fov_deg <= 360):
            return f"fov_deg: must be in [0, 360], got {self.fov_deg}"
        if not (math.isfinite(self.range_m) and 0 <= self.range_m <= MAX_SENSOR_RANGE_M):
            return f"range_m: must be in [0, {MAX_SENSOR_RANGE_M:.0f}] m, got {self.range_m}"
        return None

    def in_map(self, frames: FrameTree) -> DetectionFrame:
        """Into the fixed frame; raises FrameError (unknown frame) or TransformNotReady (retry later)."""
        to_map = frames.to_fixed(self.frame_id, self.stamp)
        moved = [Detection(d.labels, *transform_box(to_map, d.center, d.size, d.rotation), state=d.state)
                 for d in self.detections]
        camera = to_map @ self.sensor
        looking = camera[:3, :3] @ np.asarray(self.view_axis, dtype=float)
        sensor = Pose2D(float(camera[0, 3]), float(camera[1, 3]), math.atan2(looking[1], looking[0]))
        return DetectionFrame(sensor, self.fov_deg, self.range_m, self.stamp, moved)


@dataclass
class FusionReport:
    updated: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)       # a missing object seen again elsewhere
    merged: list[str] = field(default_factory=list)      # a "new" object that was a known one moved
    relabelled: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def changed(self) -> bool:
        return any((self.updated, self.created, self.moved, self.merged, self.relabelled, self.missing))


def label_compatibility(a: dict[str, float], b: dict[str, float]) -> float:
    """Bhattacharyya coefficient of two label distributions: 1 same, 0 nothing in common."""
    total_a, total_b = sum(a.values()) or 1.0, sum(b.values()) or 1.0
    return sum(math.sqrt(a[label] / total_a * b[label] / total_b) for label in a.keys() & b.keys())


def _box_overlap_ratio(inner: Entity | Detection, outer: Entity | Detection) -> float:
    """Share of `inner`'s volume that lies inside `outer`'s box."""
    volume = 1.0
    for axis in range(3):
        low = max(inner.center[axis] - inner.size[axis] / 2, outer.center[axis] - outer.size[axis] / 2)
        high = min(inner.center[axis] + inner.size[axis] / 2, outer.center[axis] + outer.size[axis] / 2)
        if high <= low:
            return 0.0
        volume *= (high - low) / inner.size[axis]
    return volume


def footprint_gap(a: Entity, b: Entity) -> float:
    dx = max(abs(a.center[0] - b.center[0]) - (a.size[0] + b.size[0]) / 2, 0.0)
    dy = max(abs(a.center[1] - b.center[1]) - (a.size[1] + b.size[1]) / 2, 0.0)
    return math.hypot(dx, dy)


def _over_footprint(subject: Entity, reference: Entity) -> bool:
    return (abs(subject.center[0] - reference.center[0]) <= reference.size[0] / 2
            and abs(subject.center[1] - reference.center[1]) <= reference.size[1] / 2)


def top_label(entity: Entity) -> str:
    """The item's most likely label that says what it is (not the mapper's walls-and-floor one)."""
    return next((label for label in entity.labels if label != STRUCTURE_LABEL), entity.label)


def may_be(entity: Entity) -> set[str]:
    """The kinds the item may well be: its labels at least `MAY_BE_SHARE` as likely as its most likely
    one. (What a query excludes is judged by the most likely label alone: a thing that is probably
    a stool is still "something to sit on that is not a chair", though it may be one.)"""
    top = top_label(entity)
    most = entity.labels.get(top, 0.0)
    return {top} | {label for label, p in entity.labels.items() if label != STRUCTURE_LABEL and p >= MAY_BE_SHARE * most}


def _has_inside(entity: Entity) -> bool:
    """Whether the item may well be a thing with an inside: one of the kinds it may be is a container,
    or a kind of one by its last word ("laundry_basket"), or it has a door or drawer state."""
    return bool(entity.state) or any(label in CONTAINER_LABELS or label.rsplit("_", 1)[-1] in CONTAINER_LABELS
                                     for label in may_be(entity))


def spatial_relation(subject: Entity, reference: Entity) -> str | None:
    """in / on / under from two boxes (None when neither holds). Boxes of furniture reach the floor."""
    if not _over_footprint(subject, reference):
        return None
    if abs(subject.bottom - reference.top) <= ON_TOLERANCE_M:
        return "on"
    container = _has_inside(reference)
    inside = reference.bottom - ON_TOLERANCE_M <= subject.center[2] <= reference.top
    if inside and container and _box_overlap_ratio(subject, reference) >= 0.5:
        return "in"
    if subject.top <= reference.top - UNDER_CLEARANCE_M and not container:
        return "under"
    return None


class SceneGraph:
    def __init__(self, furniture_labels: frozenset[str] = DEFAULT_FURNITURE_LABELS,
                 missing_after_frames: int = MISSING_AFTER_FRAMES):
        self.graph = nx.DiGraph()
        self._by_id: dict[str, Entity] = {}   # the graph's node entities, without NodeView overhead
        self.furniture_labels = furniture_labels
        self.missing_after_frames = missing_after_frames
        self.robot: RobotSnapshot | None = None
        self._room_shapes: dict[str, Polygon] = {}
        self._room_tree: shapely.STRtree | None = None
        self._grid = GridIndex()
        self._furniture_grid = GridIndex()   # what objects are near, apart from the clutter around them
        self._members: dict[str, set[str]] = defaultdict(set)   # room -> furniture and object ids
        self._by_label: dict[str, set[str]] = defaultdict(set)  # any top label -> ids
        self._next_number: dict[str, int] = defaultdict(lambda: 1)
        self._missing: set[str] = set()    # objects not seen where mapped
        self._created: set[str] = set()    # instances that detections created (may be known ones moved)
        self._told: set[str] = set()       # items whose place or state someone told since they were seen
        self.changed: set[str] = set()
        self.removed: set[str] = set()

    # ---- building -------------------------------------------------------------------------
    def add_room(self, name: str, polygon: list[tuple[float, float]]) -> None:
        shape = Polygon(polygon)
        centroid = shape.centroid
        room = Entity(id=name, kind="room", label="room", labels={"room": 1.0},
                      center=(centroid.x, centroid.y, 0.0), polygon=[(x, y) for x, y in polygon])
        self.graph.add_node(name, entity=room)
        self._by_id[name] = room
        self._room_shapes[name] = shape
        self._room_tree = None
        self.changed.add(name)

    def add_item(self, entity: Entity) -> None:
        self.add_items([entity])

    def add_items(self, entities: list[Entity]) -> None:
        """Add furniture and objects; rooms and relations are derived from their boxes."""
        rooms = self._rooms_at([e.center[0] for e in entities], [e.center[1] for e in entities])
        had_items = len(self._grid) > 0
        for entity, room in zip(entities, rooms):
            if not entity.evidence:
                entity.evidence = {label: p * max(entity.n_observations, 1) for label, p in entity.labels.items()}
            entity.room = room
            self._insert(entity)
        affected = {e.id for e in entities if e.kind == "object"}
        if had_items:  # items already there may now stand on, in or under the new ones
            for entity in entities:
                affected |= self._objects_around(entity)
        subjects = [self.entity(object_id) for object_id in affected]
        # Trees over the whole map pay off for a map being built, not for the odd new detection.
        bulk = self._bulk_relation_candidates(subjects) if len(subjects) >= BULK_RELATE_MIN else [None] * len(subjects)
        for entity, candidates in zip(subjects, bulk):
            self._relate(entity, candidates)

    def _insert(self, entity: Entity) -> None:
        self.graph.add_node(entity.id, entity=entity)
        self._by_id[entity.id] = entity
        self._set_status(entity, entity.status)
        self._index_box(entity)
        self._index_labels(entity, set())
        self.set_told(entity.id, entity.told)
        self._set_room(entity, entity.room)
        self.changed.add(entity.id)
        self.removed.discard(entity.id)

    def _set_room(self, entity: Entity, room: str) -> None:
        if self.graph.has_edge(entity.room, entity.id):
            self.graph.remove_edge(entity.room, entity.id)
            self._members[entity.room].discard(entity.id)
        entity.room = room
        if room:
            self.graph.add_edge(room, entity.id, relation="contains")
            self._members[room].add(entity.id)

    def _set_status(self, entity: Entity, status: str) -> None:
        entity.status = status
        if status == "missing":
            self._missing.add(entity.id)
        else:
            self._missing.discard(entity.id)

    def _index_labels(self, entity: Entity, before: set[str]) -> None:
        for label in before - entity.labels.keys():
            self._by_label[label].discard(entity.id)
        for label in entity.labels.keys() - before:
            self._by_label[label].add(entity.id)

    @classmethod
    def from_world(cls, world: World, stamp: float = 0.0) -> SceneGraph:
        scene = cls()
        for room in world.rooms:
            scene.add_room(room.name, room.polygon)
        prior: dict[str, Any] = {"last_seen": stamp, "first_seen": stamp, "n_observations": int(PRIOR_EVIDENCE)}
        scene.add_items([Entity(id=item.id, kind="furniture", label=item.label, labels={item.label: 1.0},
                                center=item.center, size=item.size,
                                state=("open" if item.open else "closed") if item.openable else "", **prior)
                         for item in world.furniture])
        scene.add_items([Entity(id=obj.id, kind="object", label=obj.label, labels={obj.label: 1.0},
                                center=world.object_center(obj), size=obj.size, mass_kg=obj.mass_kg, **prior)
                         for obj in world.objects])
        scene.add_items([Entity(id=person.id, kind="person", label="person", labels={"person": 1.0},
                                center=person_box(person)[0], size=person_box(person)[1], **prior)
                         for person in world.people])
        return scene

    def is_furniture(self, label: str) -> bool:
        """A furniture label, or a kind of one named by it ("kitchen_cabinet", "dining_table")."""
        return label in self.furniture_labels or label.rsplit("_", 1)[-1] in self.furniture_labels

    @classmethod
    def from_voxeland(cls, semantic_map: VoxelandMap, rooms: dict[str, list[tuple[float, float]]] | None = None,
                      furniture_labels: frozenset[str] = DEFAULT_FURNITURE_LABELS) -> SceneGraph:
        """Rooms from polygons when given; else each room-sized structure box is a room; else one
        room covering the map."""
        scene = cls(furniture_labels)
        if not rooms:
            rooms = {box.id: _footprint(box.center, box.size) for box in semantic_map.structure}
        if not rooms:
            rooms = {"map": _bounding_polygon(semantic_map)}
        for name, polygon in rooms.items():
            scene.add_room(name, polygon)
        with bulk_allocation():
            scene.add_items([Entity(id=inst.id, kind="furniture" if scene.is_furniture(inst.label) else "object",
                                    label=inst.label, labels=dict(inst.labels), evidence=dict(inst.evidence),
                                    center=inst.center, size=inst.size, n_observations=inst.n_observations)
                             for inst in semantic_map.instances])
        return scene

    # ---- relations --------------------------------------------------------------------------
    def _relation_candidates(self, entity: Entity) -> set[str]:
        """What an object may be in, on, under (boxes over its centre) or near (furniture): only
        these, so that clutter around it, however dense, is not compared with it."""
        x, y = entity.center[0], entity.center[1]
        return self._grid.query((x, y, x, y)) | self._furniture_grid.query(entity.bounds(NEAR_DISTANCE_M))

    def _bulk_relation_candidates(self, subjects: list[Entity]) -> list[set[str]]:
        """_relation_candidates for many objects at once, with exact box tests in two tree queries:
        building a map costs what its objects touch, not the square of its density."""
        if not subjects:
            return []
        ids = list(self._by_id)
        furniture = [i for i in ids if self._by_id[i].kind == "furniture"]
        found: list[set[str]] = [set() for _ in subjects]
        centres = shapely.points([(e.center[0], e.center[1]) for e in subjects])
        for subject, item in shapely.STRtree(_boxes(self._by_id[i] for i in ids)).query(centres, predicate="intersects").T:
            found[subject].add(ids[item])
        if furniture:
            tree = shapely.STRtree(_boxes(self._by_id[i] for i in furniture))
            near = tree.query(_boxes(subjects), predicate="dwithin", distance=NEAR_DISTANCE_M)
            for subject, item in near.T:
                found[subject].add(furniture[item])
        return found

    def _relate(self, entity: Entity, candidates: set[str] | None = None) -> None:
        """Recompute where an object is: one of in / on / under, else near the closest furniture."""
        for target in [t for t in self.graph.successors(entity.id)]:
            self.graph.remove_edge(entity.id, target)
        self.changed.add(entity.id)
        if entity.status != "seen":
            return
        best: tuple[int, float, str] | None = None
        near: list[tuple[float, str]] = []
        for other_id in self._relation_candidates(entity) if candidates is None else candidates:
            if other_id == entity.id:
                continue
            other = self._by_id[other_id]
            if other.status != "seen":
                continue
            relation = spatial_relation(entity, other)
            if relation is not None:
                # Tightest support wins: the highest top for on, the smallest box for in / under.
                rank = other.top if relation == "on" else -other.size[0] * other.size[1] * other.size[2]
                candidate = (SUPPORT_ORDER.index(relation), -rank, other_id)
                if best is None or candidate < best:
                    best = candidate
            elif other.kind == "furniture" and other.room == entity.room:
                if (gap := footprint_gap(entity, other)) <= NEAR_DISTANCE_M:
                    near.append((gap, other_id))
        if best is not None:
            self.graph.add_edge(entity.id, best[2], relation=SUPPORT_ORDER[best[0]])
        for _, other_id in sorted(near)[:NEAR_LIMIT]:
            self.graph.add_edge(entity.id, other_id, relation="near")

    def _objects_around(self, entity: Entity, old_bounds=None) -> set[str]:
        """Other objects whose relations may change because `entity` appeared, moved or went: those
        over its box, and those near it when it is furniture."""
        around = self._grid.query(entity.bounds(NEAR_DISTANCE_M if entity.kind == "furniture" else 0.0))
        if old_bounds is not None:
            around |= self._grid.query(old_bounds)
        around |= {s for s, _ in self.graph.in_edges(entity.id)}
        return {i for i in around if i != entity.id and self._by_id[i].kind == "object"}

    def _relate_around(self, entity: Entity, old_bounds=None) -> None:
        for object_id in self._objects_around(entity, old_bounds):
            self._relate(self.entity(object_id))

    # ---- queries ----------------------------------------------------------------------------
    def entity(self, node_id: str) -> Entity:
        return self._by_id[node_id]

    def has(self, node_id: str) -> bool:
        return node_id in self.graph

    def _tree(self) -> shapely.STRtree:
        if self._room_tree is None:
            self._room_names = list(self._room_shapes)
            self._room_tree = shapely.STRtree([self._room_shapes[n] for n in self._room_names])
        return self._room_tree

    def _rooms_at(self, xs: list[float], ys: list[float]) -> list[str]:
        """The room covering each point; a point outside every room goes to the nearest one."""
        if not self._room_shapes or not xs:
            return [""] * len(xs)
        tree = self._tree()
        points = shapely.points(np.column_stack([xs, ys]))
        found = [""] * len(xs)
        for point_index, room_index in tree.query(points, predicate="covered_by").T:
            if not found[point_index]:
                found[point_index] = self._room_names[room_index]
        outside = [i for i, room in enumerate(found) if not room]
        if outside:
            for point_index, room_index in tree.query_nearest(points[outside]).T:
                found[outside[point_index]] = self._room_names[room_index]
        return found

    def room_at(self, x: float, y: float) -> str | None:
        """The room covering (x, y), None outside every room."""
        if not self._room_shapes:
            return None
        hits = self._tree().query(shapely.points(x, y), predicate="covered_by")
        return self._room_names[min(hits)] if len(hits) else None

    def rooms(self) -> list[str]:
        return sorted(self._room_shapes)

    def _entities(self, ids) -> list[Entity]:
        return sorted((self._by_id[i] for i in ids), key=lambda e: e.id)

    def _items(self, kind: str, room: str | None) -> list[Entity]:
        ids = self._members.get(room, ()) if room is not None else self.graph.nodes
        return [e for e in self._entities(ids) if e.kind == kind]

    def furniture(self, room: str | None = None) -> list[Entity]:
        return self._items("furniture", room)

    def objects(self, room: str | None = None) -> list[Entity]:
        return self._items("object", room)

    def people(self, room: str | None = None) -> list[Entity]:
        return self._items("person", room)

    def room_contents(self, room: str) -> tuple[list[Entity], list[str]]:
        """Furniture and objects of a room, and where each object is (get_objects_in_room)."""
        objects = self.objects(room)
        return [*self.furniture(room), *objects], [r for e in objects for r in self.relations(e.id)]

    def nearest_to_robot(self, ids) -> list[str]:
        """Ids by distance from the robot, those in its room first (as they are when it knows no pose)."""
        robot = self.robot
        if robot is None:
            return list(ids)

        def distance(node_id: str) -> tuple[bool, float]:
            entity = self.entity(node_id)
            return entity.room != robot.room, math.hypot(entity.center[0] - robot.pose.x, entity.center[1] - robot.pose.y)

        return sorted(ids, key=distance)

    def furniture_near(self, x: float, y: float, distance: float) -> list[str]:
        """Furniture whose footprint edge is within `distance` of (x, y), nearest first."""
        return [entity.id for entity in self.near(x, y, distance) if entity.kind == "furniture"]

    def near(self, x: float, y: float, distance: float) -> list[Entity]:
        """Furniture, objects and people whose footprint edge is within `distance` of (x, y), nearest first."""
        gaps = []
        for item_id in self._grid.query((x - distance, y - distance, x + distance, y + distance)):
            item = self.entity(item_id)
            dx = max(abs(x - item.center[0]) - item.size[0] / 2, 0.0)
            dy = max(abs(y - item.center[1]) - item.size[1] / 2, 0.0)
            if (gap := math.hypot(dx, dy)) <= distance:
                gaps.append((gap, item.id))
        return [self.entity(item_id) for _, item_id in sorted(gaps)]

    def support(self, object_id: str) -> tuple[str, str] | None:
        """(relation, reference) of where an object is, e.g. ("on", "table_1"): in / on / under
        before near."""
        edges = [(SUPPORT_ORDER.index(d["relation"]), d["relation"], t)
                 for _, t, d in self.graph.out_edges(object_id, data=True)]
        return min(edges)[1:] if edges else None

    def furniture_support(self, object_id: str) -> tuple[str, str] | None:
        """("on" or "in", furniture) an object rests on or in, through the things stacked under it (a
        mug on a magazine on the coffee table is on the coffee table); None when no furniture bears it."""
        support, seen = self.support(object_id), {object_id}
        while support and support[0] in ("on", "in") and self.entity(support[1]).kind == "object" \
                and support[1] not in seen:
            seen.add(support[1])
            support = self.support(support[1])
        if support and support[0] in ("on", "in") and self.entity(support[1]).kind == "furniture":
            return support
        return None

    def relation_edges(self, node_id: str) -> list[tuple[str, str]]:
        """All (relation, reference) pairs of an object, support first."""
        return sorted(((d["relation"], t) for _, t, d in self.graph.out_edges(node_id, data=True)),
                      key=lambda edge: (SUPPORT_ORDER.index(edge[0]), edge[1]))

    def relations(self, node_id: str) -> list[str]:
        """Readable relations for the planner, e.g. ["bottle_1 on table_2", "bottle_1 near sink_1"]."""
        entity = self.entity(node_id)
        if entity.status == "held":
            return [f"{node_id} held by the robot"]
        if entity.status == "missing":
            return [f"{node_id} not seen where last mapped (it may have been moved)"]
        return [f"{node_id} {relation} {target}" for relation, target in self.relation_edges(node_id)]

    def find(self, query: str = "", *, room: str | None = None, kind: str | None = None,
             status: str | None = None, relation: str | None = None, reference: str | None = None,
             min_probability: float = 0.0) -> list[Entity]:
        """Furniture and objects by label words or id in `query` (any of their top labels, plurals
        too) and by attributes; the most probable label matches first."""
        words = {w for w in re.split(r"[^a-z0-9_]+", query.lower()) if w}
        words |= {w[:-1] for w in words if w.endswith("s")}
        indexed: list[set[str]] = []   # the indexes that apply, intersected instead of scanning the graph
        if room is not None:
            indexed.append(self._members.get(room, set()))
        if words:
            indexed.append(set().union(*(self._by_label.get(w, ()) for w in words)) | (words & self._by_id.keys()))
        if status == "missing":
            indexed.append(self._missing)
        if reference:
            indexed.append({s for s, _ in self.graph.in_edges(reference)} if reference in self.graph else set())
        ids = set.intersection(*indexed) if indexed else self._by_id.keys()
        matches = []
        for entity in self._entities(ids):
            if entity.kind == "room" or (kind and entity.kind != kind) or (room and entity.room != room):
                continue
            if status and entity.status != status:
                continue
            probability = max((entity.labels.get(w, 0.0) for w in words), default=0.0)
            if words and entity.id not in words and probability < min_probability:
                continue
            if (relation or reference) and not any((not relation or r == relation) and (not reference or t == reference)
                                                  for r, t in self.relation_edges(entity.id)):
                continue
            matches.append(entity)
        return sorted(matches, key=lambda e: (-max((e.labels.get(w, 0.0) for w in words), default=0.0), e.id))

    # ---- updates ----------------------------------------------------------------------------
    @property
    def known_robot(self) -> RobotSnapshot:
        """The robot state, for code that runs only once there is one (skills refuse to plan and
        tasks to start without it)."""
        if self.robot is None:
            raise PlannerError("no robot state has been received yet")
        return self.robot

    def set_robot(self, robot: RobotSnapshot) -> None:
        """Robot state in; held objects leave their support, released ones wait to be re-seen."""
        if not robot.room:  # a real robot's state knows its pose, not the rooms
            robot = replace(robot, room=self.room_at(robot.pose.x, robot.pose.y) or "")
        held_now = {obj for obj in robot.held.values() if obj and obj in self.graph}
        if self.robot is None:  # first state: objects may have been restored as held
            held_before = {e.id for e in self.objects() if e.status == "held"}
        else:
            held_before = {obj for obj in self.robot.held.values() if obj and obj in self.graph}
        for object_id in held_now | held_before:
            entity = self.entity(object_id)
            if object_id in held_now and entity.status != "held":
                self._set_status(entity, "held")
                self._relate(entity)
            elif object_id not in held_now and entity.status == "held":
                self._set_status(entity, "missing")
                self._relate(entity)
        self.robot = robot

    def mark_missing(self, object_id: str) -> str | None:
        """The object is not where the graph puts it (unseen in view, or the controller found so).

        An instance that detections created after this object was last seen was this object,
        moved: it is merged back under this id, and its former id is returned (else None).
        """
        entity = self.entity(object_id)
        self._set_status(entity, "missing")
        self._relate(entity)
        self._relate_around(entity)
        return self._merge_moved_copy(entity)

    def move_item(self, node_id: str, center: tuple[float, float, float], stamp: float,
                  size: tuple[float, float, float] | None = None) -> None:
        entity = self.entity(node_id)
        old_bounds = entity.bounds(NEAR_DISTANCE_M)
        shifted = (entity.status != "seen" or horizontal_distance(entity.center, center) > MOVE_EPSILON_M
                   or abs(entity.center[2] - center[2]) > MOVE_EPSILON_M)
        entity.center = center
        entity.size = size or entity.size
        entity.last_seen = stamp
        entity.missed = 0
        if entity.status != "held":
            self._set_status(entity, "seen")
        self._index_box(entity)
        room = self.room_at(center[0], center[1])
        if room and room != entity.room:
            self._set_room(entity, room)
        self._relate(entity)
        if shifted:
            self._relate_around(entity, old_bounds)

    def _unindex(self, entity: Entity) -> None:
        self._missing.discard(entity.id)
        self._created.discard(entity.id)
        self._told.discard(entity.id)
        self._members[entity.room].discard(entity.id)
        for label in entity.labels:
            self._by_label[label].discard(entity.id)
        self._grid.remove(entity.id)
        self._furniture_grid.remove(entity.id)

    def _index_box(self, entity: Entity) -> None:
        self._grid.insert(entity.id, entity.bounds())
        if entity.kind == "furniture":
            self._furniture_grid.insert(entity.id, entity.bounds())

    def put_item(self, node_id: str, furniture_id: str, inside: bool, stamp: float) -> None:
        """An object someone else put on furniture (at a free spot of its top) or into it."""
        entity, furniture = self.entity(node_id), self.entity(furniture_id)
        taken = [self.entity(s).center for s, _ in self.graph.in_edges(furniture_id)
                 if s != node_id and self.entity(s).kind == "object"]
        x, y = free_spot(furniture.center, furniture.size, taken)
        z = furniture.center[2] if inside else furniture.top + entity.size[2] / 2
        self.move_item(node_id, (x, y, z), stamp)

    def set_told(self, node_id: str, stamp: float) -> None:
        """When someone told the item's place or state (0: not since it was last seen)."""
        self.entity(node_id).told = stamp
        if stamp:
            self._told.add(node_id)
        else:
            self._told.discard(node_id)

    def set_state(self, node_id: str, state: str) -> None:
        """A door or drawer opened or closed out of the robot's sight."""
        self.entity(node_id).state = state
        self.changed.add(node_id)

    def remove_item(self, node_id: str) -> None:
        entity = self.entity(node_id)
        dependents = [s for s, _ in self.graph.in_edges(node_id) if self.entity(s).kind == "object"]
        self._unindex(entity)
        self.graph.remove_node(node_id)
        del self._by_id[node_id]
        self.changed.discard(node_id)
        self.removed.add(node_id)
        for other in dependents:
            self._relate(self.entity(other))

    def _observe(self, entity: Entity, detection: Detection, stamp: float, report: FusionReport) -> None:
        """Fuse one associated detection as one more observation: its label probabilities count
        as much evidence as an average past observation; the box follows the evidence, or jumps
        to the detection for an object that was missing or is held."""
        before_label, before_labels = entity.label, set(entity.labels)
        per_observation = sum(entity.evidence.values()) / max(entity.n_observations, 1)
        total = sum(detection.labels.values())
        entity.add_evidence({label: per_observation * score / total for label, score in detection.labels.items()})
        self._index_labels(entity, before_labels)
        entity.n_observations += 1
        # What the robot sees outranks what it was told: the box jumps to where it is seen.
        weight = 1.0 if entity.status != "seen" or entity.told else 1.0 / min(entity.n_observations, FUSION_WEIGHT_CAP)
        self.set_told(entity.id, 0.0)
        self.move_item(entity.id, _toward(entity.center, detection.center, weight), stamp,
                       _toward(entity.size, detection.size, weight))
        if entity.label != before_label:
            report.relabelled.append(entity.id)

    def _associate(self, detection: Detection, sensor: Pose2D, matched: set[str]) -> Entity | None:
        """The known instance a detection is: close (or overlapping) and with compatible labels."""
        best: tuple[float, Entity] | None = None
        x, y, _ = detection.center
        gate = ASSOCIATION_GATE_M
        candidates = self._grid.query((x - gate, y - gate, x + gate, y + gate))
        held = [o for o in (self.robot.held.values() if self.robot else ()) if o in self.graph]
        # A place someone told is a claim: the thing seen anywhere else is still that thing.
        told = [i for i in sorted(self._told) if self._by_id[i].labels.keys() & detection.labels.keys()]
        for candidate_id in [*candidates, *held, *told]:
            entity = self.entity(candidate_id)
            if candidate_id in matched or entity.kind == "room":
                continue
            compatibility = label_compatibility(entity.labels, detection.labels)
            if compatibility < LABEL_COMPATIBILITY_MIN:
                continue
            if entity.status == "held":
                if sensor.distance_to(x, y) > HELD_GATE_M:
                    continue
                distance = 0.0
            else:
                distance = horizontal_distance(entity.center, detection.center)
                if distance > gate and _box_overlap_ratio(detection, entity) < 0.5 and not entity.told:
                    continue
            score = compatibility * (1.0 - min(distance / gate, 1.0)) + _box_overlap_ratio(detection, entity)
            if best is None or score > best[0]:
                best = (score, entity)
        return best[1] if best else None

    def fuse(self, frame: DetectionFrame) -> FusionReport:
        """Associate one camera frame's detections (map frame) with the graph.

        Each detection updates the instance it overlaps with compatible labels. An object that
        should have been in view and was not seen for `missing_after_frames` frames becomes
        missing. A detection matching nothing is a missing object of compatible labels seen
        elsewhere (it was moved) or else a new instance; a new instance that turns out to be a
        known object moved (the known one goes missing later) is merged back into it.
        """
        report = FusionReport()
        matched: set[str] = set()
        unmatched: list[Detection] = []
        for detection in frame.detections:
            if detection.state:
                self._observe_articulation(detection, frame.stamp, report)
                continue
            entity = self._associate(detection, frame.sensor, matched)
            if entity is None:
                unmatched.append(detection)
                continue
            matched.add(entity.id)
            self._observe(entity, detection, frame.stamp, report)
            report.updated.append(entity.id)
        for detection in unmatched:
            moved = [o for o in self._objects_labelled(detection.labels, self._missing) if o.id not in matched]
            if moved:
                best = max(moved, key=lambda o: (label_compatibility(o.labels, detection.labels),
                                                  -horizontal_distance(o.center, detection.center)))
                matched.add(best.id)
                self._observe(best, detection, frame.stamp, report)
                report.moved.append(best.id)
            else:
                matched.add(self._create(detection, frame.stamp, report))
        self._count_misses(frame, matched, report)
        return report

    def _observe_articulation(self, detection: Detection, stamp: float, report: FusionReport) -> None:
        """A door or drawer seen open or closed: the state of the furniture it belongs to."""
        x, y = detection.center[0], detection.center[1]
        near = self._grid.query((x - ASSOCIATION_GATE_M, y - ASSOCIATION_GATE_M, x + ASSOCIATION_GATE_M, y + ASSOCIATION_GATE_M))
        candidates = [self._by_id[i] for i in near if i in self._by_id]
        furniture = [e for e in candidates if e.kind == "furniture" and e.label == detection.label and e.state]
        if not furniture:
            return
        entity = min(furniture, key=lambda e: horizontal_distance(e.center, detection.center))
        entity.last_seen = stamp
        if entity.state != detection.state or entity.told:
            entity.state = detection.state
            self.set_told(entity.id, 0.0)
            self.changed.add(entity.id)
            report.updated.append(entity.id)

    def enclosed(self, object_id: str) -> str:
        """The closed furniture an object is in (hidden from the camera and the arms), else ""."""
        support = self.support(object_id)
        if support and support[0] == "in" and self.entity(support[1]).state == "closed":
            return support[1]
        return ""

    def _objects_labelled(self, labels: dict[str, float], among: set[str]) -> list[Entity]:
        """Objects of `among` whose labels are compatible with `labels`."""
        ids = {i for i in among if not self._by_id[i].labels.keys().isdisjoint(labels)}
        return [e for e in self._entities(ids) if e.kind == "object"
                and label_compatibility(e.labels, labels) >= LABEL_COMPATIBILITY_MIN]

    def _create(self, detection: Detection, stamp: float, report: FusionReport) -> str:
        label = detection.label
        kind = "furniture" if self.is_furniture(label) else "person" if label in PERSON_LABELS else "object"
        new_id = self._new_id(label)
        self._created.add(new_id)
        self.add_item(Entity(id=new_id, kind=kind, label=label, labels=label_distribution(detection.labels),
                             evidence=dict(detection.labels), center=detection.center, size=detection.size,
                             last_seen=stamp, first_seen=stamp, n_observations=1))
        report.created.append(new_id)
        return new_id

    def _count_misses(self, frame: DetectionFrame, matched: set[str], report: FusionReport) -> None:
        """Objects the camera should have seen (in range, in view, in its room: walls occlude)."""
        sensor, reach = frame.sensor, frame.range_m
        sensor_room = self.room_at(sensor.x, sensor.y)
        for object_id in self._grid.query((sensor.x - reach, sensor.y - reach, sensor.x + reach, sensor.y + reach)):
            if object_id not in self.graph:
                continue  # merged away meanwhile
            entity = self.entity(object_id)
            if (object_id in matched or entity.kind != "object" or entity.status != "seen" or entity.room != sensor_room
                    or not in_field_of_view(sensor, frame.fov_deg, reach, entity.center[0], entity.center[1])
                    or self.enclosed(object_id)):
                continue
            entity.missed += 1
            if entity.missed >= self.missing_after_frames:
                copy_id = self.mark_missing(object_id)
                if copy_id is None:
                    report.missing.append(object_id)
                    continue
                for bucket in (report.created, report.updated):
                    if copy_id in bucket:
                        bucket.remove(copy_id)
                report.merged.append(object_id)
        report.missing.sort()

    def _merge_moved_copy(self, entity: Entity) -> str | None:
        """A same-label instance first seen after `entity` was last seen was `entity`, moved."""
        copies = [o for o in self._objects_labelled(entity.labels, self._created)
                  if o.id != entity.id and o.status == "seen" and o.first_seen > entity.last_seen]
        if not copies:
            return None
        copy = min(copies, key=lambda o: o.first_seen)
        entity.add_evidence(copy.evidence)
        entity.n_observations += copy.n_observations
        self.remove_item(copy.id)
        self.move_item(entity.id, copy.center, copy.last_seen, copy.size)
        return copy.id

    def _new_id(self, label: str) -> str:
        number = self._next_number[label]
        while self.graph.has_node(f"{label}_{number}") or f"{label}_{number}" in self.removed:
            number += 1
        self._next_number[label] = number + 1
        return f"{label}_{number}"

    # ---- serialisation and incremental updates ------------------------------------------------
    def node_edges(self, node_id: str) -> list[dict]:
        """The edges an update of one node carries: its relations and the room containing it."""
        edges = [{"source": node_id, "relation": d["relation"], "target": t}
                 for _, t, d in self.graph.out_edges(node_id, data=True)]
        entity = self.entity(node_id)
        if entity.room and self.graph.has_edge(entity.room, node_id):
            edges.append({"source": entity.room, "relation": "contains", "target": node_id})
        return edges

    def take_changes(self) -> dict:
        """What changed since the last call, as an update `apply_update` replays elsewhere."""
        update = {"nodes": [_entity_dict(self.entity(i)) for i in sorted(self.changed) if i in self.graph],
                  "edges": [e for i in sorted(self.changed) if i in self.graph for e in self.node_edges(i)],
                  "removed": sorted(self.removed)}
        self.changed, self.removed = set(), set()
        return update

    def apply_update(self, update: dict) -> None:
        for node_id in update.get("removed", ()):
            if node_id in self.graph:
                self.remove_item(node_id)
        for node in update.get("nodes", ()):
            entity = _entity_from_dict(node)
            if entity.kind == "room":
                self.add_room(entity.id, entity.polygon)
                continue
            if entity.id in self.graph:
                self._unindex(self.entity(entity.id))
                contains = [(r, i) for r, i, d in self.graph.in_edges(entity.id, data=True) if d["relation"] == "contains"]
                self.graph.remove_edges_from([*self.graph.out_edges(entity.id), *contains])
            self._insert(entity)
        for edge in update.get("edges", ()):
            if edge["relation"] != "contains":
                self.graph.add_edge(edge["source"], edge["target"], relation=edge["relation"])

    def to_dict(self) -> dict:
        return {
            "nodes": [_entity_dict(entity) for entity in self._by_id.values()],
            "edges": [{"source": s, "relation": d["relation"], "target": t} for s, t, d in self.graph.edges(data=True)],
        }

    @classmethod
    def from_dict(cls, data: dict) -> SceneGraph:
        """The graph as saved: relations as they were, not recomputed."""
        scene = cls()
        with bulk_allocation():
            scene.apply_update({"nodes": sorted(data["nodes"], key=lambda n: n["kind"] != "room"), "edges": data["edges"]})
        scene.changed = set()
        return scene


def _toward(current: tuple[float, float, float], seen: tuple[float, float, float], weight: float
            ) -> tuple[float, float, float]:
    x, y, z = (c + weight * (d - c) for c, d in zip(current, seen))
    return x, y, z


def _entity_dict(entity: Entity) -> dict:
    # Own copies of the mutable parts: the dict may be written out while fusion goes on.
    return {**vars(entity), "labels": dict(entity.labels), "evidence": dict(entity.evidence)}


def _entity_from_dict(node: dict) -> Entity:
    fields = {**node, "center": tuple(node["center"]), "size": tuple(node["size"]),
              "polygon": [tuple(p) for p in node.get("polygon", [])]}
    return Entity(**fields)


def _boxes(entities) -> np.ndarray:
    """The entities' footprints as shapely boxes (one vectorised call)."""
    return shapely.box(*np.array([entity.bounds() for entity in entities], dtype=float).reshape(-1, 4).T)


def _footprint(center, size) -> list[tuple[float, float]]:
    x0, y0 = center[0] - size[0] / 2, center[1] - size[1] / 2
    x1, y1 = center[0] + size[0] / 2, center[1] + size[1] / 2
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def _bounding_polygon(semantic_map: VoxelandMap) -> list[tuple[float, float]]:
    boxes = semantic_map.instances + semantic_map.structure
    if not boxes:
        return [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
    xs = [b.center[0] + s * b.size[0] / 2 for b in boxes for s in (-1, 1)]
    ys = [b.center[1] + s * b.size[1] / 2 for b in boxes for s in (-1, 1)]
    return [(min(xs), min(ys)), (max(xs), min(ys)), (max(xs), max(ys)), (min(xs), max(ys))]
