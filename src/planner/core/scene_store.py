"""The scene graph on disk: saved as it changes, given back when perception restarts.

The file holds the graph and a fingerprint of the prior map it grew from, so a graph grown
from another map is not restored over a new one. Writes are atomic (temporary file, fsync,
rename): a crash mid-save leaves the previous save. A file that cannot be read is set aside
under a new name and reported, never silently overwritten.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path

import shapely

from planner.core.errors import InputError
from planner.core.files import bulk_allocation, label_problem, point_problem, size_problem, write_json_atomic
from planner.core.scene_graph import SUPPORT_ORDER, SceneGraph

FORMAT_VERSION = 1


def fingerprint(paths: list[Path]) -> str:
    """Of the files the prior map is made from (their contents, not their names)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


NODE_KINDS = ("room", "furniture", "object", "person")
STATUSES = ("seen", "missing", "held")
SAVED_RELATIONS = (*SUPPORT_ORDER, "contains")
MAX_ROOM_VERTICES = 10_000   # a room outline, not a scan
FUTURE_SLACK_S = 86_400.0    # clocks of machines that saved the file may run ahead a little


def check_saved_graph(graph: dict) -> None:
    """A graph that parses may still not be one (an edge to a node that is not there, a kind or
    relation no code knows, a box of negative size, a room that is no polygon, a time that never
    comes) and would stop perception at every start: InputError naming it."""
    nodes = graph["nodes"]
    rooms = {node.get("id") for node in nodes if node.get("kind") == "room"}
    ids = set()
    for index, node in enumerate(nodes):
        where = f"nodes[{index}] ({str(node.get('id', '?'))[:40]})"
        if (problem := node_problem(node, rooms)) is not None:
            raise InputError(f"{where}.{problem}")
        if node["id"] in ids:
            raise InputError(f"{where}.id: used by another node too")
        ids.add(node["id"])
    for index, edge in enumerate(graph["edges"]):
        what = f"edges[{index}] ({edge['source']} {edge['relation']} {edge['target']})"
        missing = [edge[end] for end in ("source", "target") if edge[end] not in ids]
        if missing:
            raise InputError(f"{what}: no node {', '.join(missing)}")
        if edge["relation"] not in SAVED_RELATIONS:
            raise InputError(f"{what}: {edge['relation']!r} is none of {', '.join(SAVED_RELATIONS)}")


def node_problem(node: dict, rooms: set[str]) -> str | None:
    """`field: what is wrong` with a saved node, or None."""
    if node.get("kind") not in NODE_KINDS:
        return f"kind: {node.get('kind')!r} is none of {', '.join(NODE_KINDS)}"
    labels = [node["label"], *node.get("labels", {})]
    if (problem := next(filter(None, map(label_problem, labels)), None)) is not None:
        return f"label: {problem}"
    scores = [*node.get("labels", {}).values(), *node.get("evidence", {}).values()]
    if not all(math.isfinite(score) and score >= 0 for score in scores):
        return "labels: label scores must be finite and not negative"
    if node.get("status", "seen") not in STATUSES:
        return f"status: {node.get('status')!r} is none of {', '.join(STATUSES)}"
    horizon = time.time() + FUTURE_SLACK_S
    for name in ("last_seen", "first_seen", "told"):
        if not (math.isfinite(node.get(name, 0.0)) and 0 <= node.get(name, 0.0) <= horizon):
            return f"{name}: {node.get(name)!r} is no time that has come"
    if not (math.isfinite(node.get("mass_kg", 0.0)) and node.get("mass_kg", 0.0) >= 0):
        return f"mass_kg: {node.get('mass_kg')!r} must be a finite mass, 0 when unknown"
    if node["kind"] == "room":
        return polygon_problem(node.get("polygon", []))
    if node.get("room", "") not in rooms | {""}:
        return f"room: no room {node['room']!r} in the graph"
    for name, check in (("center", point_problem), ("size", size_problem)):
        if (problem := check(tuple(node[name]))) is not None:
            return f"{name}: {problem}"
    return None


def polygon_problem(polygon: list) -> str | None:
    if not 3 <= len(polygon) <= MAX_ROOM_VERTICES:
        return f"polygon: a room has 3 to {MAX_ROOM_VERTICES} corners, this one {len(polygon)}"
    problem = next(filter(None, (point_problem(tuple(point)) for point in polygon)), None)
    return f"polygon: each corner {problem}" if problem else None


class SceneStore:
    def __init__(self, path: Path, prior_fingerprint: str):
        self.path = path
        self.prior_fingerprint = prior_fingerprint

    def load(self) -> tuple[SceneGraph | None, str]:
        """The saved graph (None when there is none to use) and a sentence saying what happened."""
        if not self.path.exists():
            return None, f"no saved scene graph at {self.path}; starting from the prior map"
        try:
            with bulk_allocation():
                data = json.loads(self.path.read_text())
            if data.get("format") != FORMAT_VERSION:
                raise InputError(f"format {data.get('format')!r}, expected {FORMAT_VERSION}")
            if data.get("prior") != self.prior_fingerprint:
                return None, (f"{self.path} was saved over another prior map (fingerprint {data.get('prior')}, now "
                              f"{self.prior_fingerprint}); starting from the prior map")
            check_saved_graph(data["graph"])
            scene = SceneGraph.from_dict(data["graph"])
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, InputError, KeyError, TypeError, ValueError,
                AttributeError, RecursionError, OverflowError, shapely.errors.ShapelyError) as error:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(self.path, aside)
            return None, f"{self.path} could not be read ({error!r}); set aside as {aside.name}, starting from the prior map"
        return scene, f"restored {len(scene.objects())} objects from {self.path} (saved {data.get('saved', '?')})"

    def snapshot(self, scene: SceneGraph) -> dict:
        """What `write` saves; cheap, so it can be taken under the graph's lock and written elsewhere."""
        return {"format": FORMAT_VERSION, "prior": self.prior_fingerprint,
                "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "graph": scene.to_dict()}

    def write(self, snapshot: dict) -> None:
        write_json_atomic(self.path, snapshot)
