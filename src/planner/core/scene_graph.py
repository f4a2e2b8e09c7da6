"""The scene graph: rooms -> furniture -> objects, with label distributions and spatial relations.

Built from a world file or a Voxeland map, kept up to date by fusing 3D detections, and queried
by the perception actions of the planner. Plain Python over networkx; no ROS here.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import asdict, dataclass, field

import networkx as nx
from shapely.geometry import Point, Polygon

from planner.core.geometry import Pose2D, footprint_contains, horizontal_distance, in_field_of_view
from planner.core.voxeland import VoxelandMap
from planner.core.world import World

ON_TOLERANCE_M = 0.06      # an object's bottom within this of a surface top stands on it
NEAR_DISTANCE_M = 1.0      # otherwise it is near the closest furniture within this
ASSOCIATION_GATE_M = 0.5   # a detection this close to a known object of the same label is that object
HELD_GATE_M = 1.5          # a held object is seen this close to the camera, wherever the robot went

# Labels that are furniture (places to go to and put things on) rather than movable objects.
DEFAULT_FURNITURE_LABELS = frozenset({
    "table", "counter", "desk", "shelf", "bed", "sofa", "couch", "chair", "cabinet", "fridge",
    "sink", "nightstand", "dresser", "stove", "bench", "tv_stand", "bookshelf", "wardrobe",
})


@dataclass
class Entity:
    id: str
    kind: str                       # room | furniture | object
    label: str
    labels: dict[str, float] = field(default_factory=dict)
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    size: tuple[float, float, float] = (0.0, 0.0, 0.0)
    room: str = ""
    status: str = "seen"            # seen | missing | held
    last_seen: float = 0.0
    polygon: list[tuple[float, float]] = field(default_factory=list)  # rooms only


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

    @property
    def label(self) -> str:
        return max(self.labels.items(), key=lambda item: item[1])[0]


@dataclass
class DetectionFrame:
    sensor: Pose2D
    fov_deg: float
    range_m: float
    stamp: float
    detections: list[Detection]


@dataclass
class FusionReport:
    updated: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


class SceneGraph:
    def __init__(self, furniture_labels: frozenset[str] = DEFAULT_FURNITURE_LABELS):
        self.graph = nx.DiGraph()
        self.furniture_labels = furniture_labels
        self.robot: RobotSnapshot | None = None
        self._room_shapes: dict[str, Polygon] = {}

    # ---- building -------------------------------------------------------------------------
    def add_room(self, name: str, polygon: list[tuple[float, float]]) -> None:
        shape = Polygon(polygon)
        centroid = shape.centroid
        self.graph.add_node(name, entity=Entity(
            id=name, kind="room", label="room", labels={"room": 1.0},
            center=(centroid.x, centroid.y, 0.0), polygon=[tuple(p) for p in polygon]))
        self._room_shapes[name] = shape

    def add_item(self, entity: Entity) -> None:
        """Add furniture or an object; its room and relations are derived from its box."""
        entity.room = self.room_at(entity.center[0], entity.center[1]) or ""
        self.graph.add_node(entity.id, entity=entity)
        self._relink(entity.id)

    @classmethod
    def from_world(cls, world: World, stamp: float = 0.0) -> "SceneGraph":
        scene = cls()
        for room in world.rooms:
            scene.add_room(room.name, room.polygon)
        for item in world.furniture:
            scene.add_item(Entity(id=item.id, kind="furniture", label=item.label, labels={item.label: 1.0},
                                  center=item.center, size=item.size, last_seen=stamp))
        for obj in world.objects:
            scene.add_item(Entity(id=obj.id, kind="object", label=obj.label, labels={obj.label: 1.0},
                                  center=world.object_center(obj), size=obj.size, last_seen=stamp))
        return scene

    @classmethod
    def from_voxeland(cls, semantic_map: VoxelandMap, rooms: dict[str, list[tuple[float, float]]] | None = None,
                      furniture_labels: frozenset[str] = DEFAULT_FURNITURE_LABELS) -> "SceneGraph":
        """Rooms come from polygons when given; otherwise one room covering the whole map."""
        scene = cls(furniture_labels)
        if not rooms:
            rooms = {"map": _bounding_polygon(semantic_map)}
        for name, polygon in rooms.items():
            scene.add_room(name, polygon)
        # Furniture first so objects can be related to it.
        ordered = sorted(semantic_map.instances, key=lambda inst: inst.label not in furniture_labels)
        for inst in ordered:
            kind = "furniture" if inst.label in furniture_labels else "object"
            scene.add_item(Entity(id=inst.id, kind=kind, label=inst.label, labels=dict(inst.labels),
                                  center=inst.center, size=inst.size))
        return scene

    # ---- relations --------------------------------------------------------------------------
    def _relink(self, node_id: str) -> None:
        """Recompute the room and support edges of one item (and, for furniture, of its neighbours)."""
        entity = self.entity(node_id)
        for room in [s for s, _, d in self.graph.in_edges(node_id, data=True) if d["relation"] == "contains"]:
            self.graph.remove_edge(room, node_id)
        if entity.room:
            self.graph.add_edge(entity.room, node_id, relation="contains")
        if entity.kind == "object":
            self._relink_support(entity)
        elif entity.kind == "furniture":
            reach = max(entity.size[:2]) + NEAR_DISTANCE_M
            for other in self.objects():
                if horizontal_distance(other.center, entity.center) <= reach:
                    self._relink_support(other)

    def _relink_support(self, entity: Entity) -> None:
        for _, target in list(self.graph.out_edges(entity.id)):
            self.graph.remove_edge(entity.id, target)
        if entity.status != "held":
            support = self._support_of(entity)
            if support:
                self.graph.add_edge(entity.id, support[0], relation=support[1])

    def _support_of(self, entity: Entity) -> tuple[str, str] | None:
        bottom = entity.center[2] - entity.size[2] / 2
        nearest: tuple[float, str] | None = None
        for item in self.furniture(entity.room or None):
            top = item.center[2] + item.size[2] / 2
            if abs(bottom - top) <= ON_TOLERANCE_M and footprint_contains(item.center, item.size, entity.center[0], entity.center[1]):
                return item.id, "on"
            distance = horizontal_distance(item.center, entity.center) - max(item.size[:2]) / 2
            if distance <= NEAR_DISTANCE_M and (nearest is None or distance < nearest[0]):
                nearest = (distance, item.id)
        return (nearest[1], "near") if nearest else None

    # ---- queries ----------------------------------------------------------------------------
    def entity(self, node_id: str) -> Entity:
        return self.graph.nodes[node_id]["entity"]

    def has(self, node_id: str) -> bool:
        return node_id in self.graph

    def room_at(self, x: float, y: float) -> str | None:
        point = Point(x, y)
        return next((name for name, shape in self._room_shapes.items() if shape.covers(point)), None)

    def rooms(self) -> list[str]:
        return sorted(self._room_shapes)

    def _items(self, kind: str, room: str | None) -> list[Entity]:
        entities = (data["entity"] for _, data in self.graph.nodes(data=True))
        return sorted((e for e in entities if e.kind == kind and (room is None or e.room == room)), key=lambda e: e.id)

    def furniture(self, room: str | None = None) -> list[Entity]:
        return self._items("furniture", room)

    def objects(self, room: str | None = None) -> list[Entity]:
        return self._items("object", room)

    def furniture_near(self, x: float, y: float, distance: float) -> list[str]:
        """Furniture whose footprint edge is within `distance` of (x, y), nearest first."""
        gaps = []
        for item in self.furniture():
            dx = max(abs(x - item.center[0]) - item.size[0] / 2, 0.0)
            dy = max(abs(y - item.center[1]) - item.size[1] / 2, 0.0)
            if (gap := (dx * dx + dy * dy) ** 0.5) <= distance:
                gaps.append((gap, item.id))
        return [item_id for _, item_id in sorted(gaps)]

    def support(self, object_id: str) -> tuple[str, str] | None:
        """(relation, furniture id) an object stands in, e.g. ("on", "table_1")."""
        for _, target, data in self.graph.out_edges(object_id, data=True):
            return data["relation"], target
        return None

    def relations(self, node_id: str) -> list[str]:
        entity = self.entity(node_id)
        if entity.status == "held":
            return [f"{node_id} held by the robot"]
        if entity.status == "missing":
            return [f"{node_id} not seen where last mapped (it may have been moved)"]
        support = self.support(node_id)
        return [f"{node_id} {support[0]} {support[1]}"] if support else []

    def labels(self) -> list[str]:
        return sorted({e.label for e in [*self.furniture(), *self.objects()]})

    def find(self, query: str) -> list[Entity]:
        """Objects and furniture whose labels (any of the top ones) or id match words of the query."""
        words = {w for w in re.split(r"[^a-z0-9_]+", query.lower()) if w}
        words |= {w[:-1] for w in words if w.endswith("s")}
        matches = []
        for entity in [*self.furniture(), *self.objects()]:
            names = {entity.id.lower(), *entity.labels}
            if names & words:
                matches.append(entity)
        return sorted(matches, key=lambda e: (-e.labels.get(e.label, 0.0), e.id))

    # ---- updates ----------------------------------------------------------------------------
    def set_robot(self, robot: RobotSnapshot) -> None:
        """Robot state in; held objects leave their support, released ones wait to be re-seen."""
        held_now = {obj for obj in robot.held.values() if obj}
        for entity in self.objects():
            if entity.id in held_now and entity.status != "held":
                entity.status = "held"
                self._relink_support(entity)
            elif entity.id not in held_now and entity.status == "held":
                entity.status = "missing"
        self.robot = robot

    def mark_missing(self, object_id: str) -> None:
        """Someone (the controller) found the object is not where the graph puts it."""
        entity = self.entity(object_id)
        entity.status = "missing"
        self._relink_support(entity)

    def move_item(self, node_id: str, center: tuple[float, float, float], stamp: float) -> None:
        entity = self.entity(node_id)
        entity.center = center
        entity.last_seen = stamp
        if entity.status != "held":
            entity.status = "seen"
        entity.room = self.room_at(center[0], center[1]) or entity.room
        self._relink(node_id)

    def fuse(self, frame: DetectionFrame) -> FusionReport:
        """Associate one camera frame's detections with the graph.

        A detection close to a known object of the same label updates it; objects that should
        have been seen and were not become missing; a detection matching nothing known takes a
        missing object of the same label (it was moved) or else becomes a new object.
        """
        report = FusionReport()
        sensor_room = self.room_at(frame.sensor.x, frame.sensor.y)
        matched: set[str] = set()
        unmatched: list[Detection] = []
        for detection in frame.detections:
            label = detection.label
            if label in self.furniture_labels:
                continue  # furniture is mapped, not tracked
            candidates = [o for o in self.objects() if o.label == label and o.id not in matched and (
                horizontal_distance(o.center, detection.center) <= ASSOCIATION_GATE_M
                or (o.status == "held" and frame.sensor.distance_to(*detection.center[:2]) <= HELD_GATE_M))]
            if candidates:
                best = min(candidates, key=lambda o: horizontal_distance(o.center, detection.center))
                matched.add(best.id)
                self.move_item(best.id, detection.center, frame.stamp)
                report.updated.append(best.id)
            else:
                unmatched.append(detection)
        expected_unseen = [o for o in self.objects()
                           if o.id not in matched and o.status == "seen" and o.room == sensor_room
                           and in_field_of_view(frame.sensor, frame.fov_deg, frame.range_m, o.center[0], o.center[1])]
        for entity in expected_unseen:
            entity.status = "missing"
            self._relink_support(entity)
            report.missing.append(entity.id)
        for detection in unmatched:
            moved = [o for o in self.objects() if o.label == detection.label and o.status == "missing" and o.id not in matched]
            if moved:
                best = min(moved, key=lambda o: horizontal_distance(o.center, detection.center))
                matched.add(best.id)
                self.move_item(best.id, detection.center, frame.stamp)
                report.moved.append(best.id)
                if best.id in report.missing:
                    report.missing.remove(best.id)
            else:
                new_id = self._new_id(detection.label)
                self.add_item(Entity(id=new_id, kind="object", label=detection.label,
                                     labels=dict(sorted(detection.labels.items(), key=lambda i: -i[1])),
                                     center=detection.center, size=detection.size, last_seen=frame.stamp))
                matched.add(new_id)
                report.created.append(new_id)
        return report

    def _new_id(self, label: str) -> str:
        return next(f"{label}_{n}" for n in itertools.count(1) if not self.graph.has_node(f"{label}_{n}"))

    # ---- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "nodes": [asdict(data["entity"]) for _, data in self.graph.nodes(data=True)],
            "edges": [{"source": s, "relation": d["relation"], "target": t} for s, t, d in self.graph.edges(data=True)],
        }

    @classmethod
    def from_dict(cls, data: dict) -> "SceneGraph":
        scene = cls()
        for node in data["nodes"]:
            entity = Entity(**{**node, "center": tuple(node["center"]), "size": tuple(node["size"]),
                               "polygon": [tuple(p) for p in node.get("polygon", [])]})
            if entity.kind == "room":
                scene.add_room(entity.id, entity.polygon)
            else:
                scene.graph.add_node(entity.id, entity=entity)
        for edge in data["edges"]:
            scene.graph.add_edge(edge["source"], edge["target"], relation=edge["relation"])
        return scene


def _bounding_polygon(semantic_map: VoxelandMap) -> list[tuple[float, float]]:
    boxes = semantic_map.instances + semantic_map.structure
    if not boxes:
        return [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
    xs = [b.center[0] + s * b.size[0] / 2 for b in boxes for s in (-1, 1)]
    ys = [b.center[1] + s * b.size[1] / 2 for b in boxes for s in (-1, 1)]
    return [(min(xs), min(ys)), (max(xs), min(ys)), (max(xs), max(ys)), (min(xs), max(ys))]
