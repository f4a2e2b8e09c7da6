"""The scene graph on disk: saved as it changes, given back when perception restarts.

The file holds the graph and a fingerprint of the prior map it grew from, so a graph grown
from another map is not restored over a new one. Writes are atomic (temporary file, fsync,
rename): a crash mid-save leaves the previous save. A file that cannot be read is set aside
under a new name and reported, never silently overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from planner.core.errors import InputError
from planner.core.files import bulk_allocation, point_problem, size_problem, write_json_atomic
from planner.core.scene_graph import SceneGraph

FORMAT_VERSION = 1


def fingerprint(paths: list[Path]) -> str:
    """Of the files the prior map is made from (their contents, not their names)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


NODE_KINDS = ("room", "furniture", "object", "person")


def check_saved_graph(graph: dict) -> None:
    """A graph that parses may still not be one (an edge to a node that is not there, a kind no code
    knows, a box of negative size) and would stop perception at every start: InputError naming it."""
    ids = set()
    for index, node in enumerate(graph["nodes"]):
        where = f"nodes[{index}] ({node.get('id', '?')})"
        if node.get("kind") not in NODE_KINDS:
            raise InputError(f"{where}.kind: {node.get('kind')!r} is none of {', '.join(NODE_KINDS)}")
        if node["kind"] != "room":
            for name, check in (("center", point_problem), ("size", size_problem)):
                if (problem := check(tuple(node[name]))) is not None:
                    raise InputError(f"{where}.{name}: {problem}")
        ids.add(node["id"])
    for index, edge in enumerate(graph["edges"]):
        missing = [edge[end] for end in ("source", "target") if edge[end] not in ids]
        if missing:
            raise InputError(f"edges[{index}] ({edge['source']} {edge['relation']} {edge['target']}): "
                             f"no node {', '.join(missing)}")


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
                AttributeError) as error:
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
