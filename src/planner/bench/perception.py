"""`planner bench perception`: map build time and memory, detection fusion throughput and query
latency of the scene graph on synthetic Voxeland maps of growing size.

Everything runs in this one process and thread (one core), on the core scene graph the
perception node wraps; message conversion is not included.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from planner.bench.common import machine_info, write_results
from planner.core.frames import FrameTree, planar, rigid, transform_point
from planner.core.geometry import Pose2D
from planner.core.scene_graph import Detection, SceneGraph, SensorFrame
from planner.core.synthetic import OBJECT_LABELS, cluttered_map, synthetic_map
from planner.core.voxeland import load_voxeland

DEFAULT_SIZES = (10, 100, 1000, 10000, 50000)
# Dense maps: the same few rooms ever more cluttered (a Voxeland map of many small items), where
# relating each object to everything around it grew with the square of the density.
DENSE_SIZES = (5000, 10000, 20000)
DENSE_ROOMS = 4
# Fusion: a 15 Hz camera's detections with room to spare, on a home's map and on a building's.
TARGETS = {"build_s_at_10000": 1.0, "detections_per_s": {"10000": 10_000.0, "50000": 5_000.0},
           "query_median_ms_at_10000": 1.0}
QUERY_SAMPLES = 1000
FUSION_DETECTIONS = 3000
CAMERA_MOUNT = (0.1, 0.0, 1.3)


def _build(path: Path, rooms) -> SceneGraph:
    return SceneGraph.from_voxeland(load_voxeland(path), rooms)


def measure_build(path: Path, rooms, repeat: int) -> dict:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        _build(path, rooms)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    scene = _build(path, rooms)
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    start = time.perf_counter()
    saved = json.dumps(scene.to_dict())
    save_s = time.perf_counter() - start
    return {"build_s": statistics.median(times), "build_s_runs": times, "retained_mb": retained / 2**20,
            "peak_mb": peak / 2**20, "save_s": save_s, "saved_mb": len(saved) / 2**20}


def _measure_map(data: dict, rooms, path: Path, repeat: int) -> tuple[dict, SceneGraph]:
    """The map written to `path`, its build measured; the results entry and the built scene."""
    path.write_text(json.dumps(data))
    entry = {"instances": len(data["instances"]), "rooms": len(rooms), "map_mb": path.stat().st_size / 2**20}
    entry.update(measure_build(path, rooms, repeat))
    return entry, _build(path, rooms)


def _camera_frames(scene: SceneGraph, rng: random.Random, count: int):
    """Camera frames as the robot would send them: each room's objects seen from its middle,
    in the camera frame, with position noise, confused labels, 5% dropout and a few new objects."""
    frames = FrameTree()
    frames.set_static("base_link", "camera_link", rigid(CAMERA_MOUNT))
    rooms = scene.rooms()
    produced, stamp = [], 0.0
    while sum(len(f.detections) for f in produced) < count:
        stamp += 0.1
        room = scene.entity(rng.choice(rooms))
        robot = Pose2D(room.center[0], room.center[1], rng.uniform(-3.14, 3.14))
        frames.set_dynamic("map", "base_link", stamp, planar(robot))
        to_camera = np.linalg.inv(frames.to_fixed("camera_link", stamp))
        detections = []
        for obj in scene.objects(room.id):
            if rng.random() < 0.05:
                continue
            seen = tuple(c + rng.gauss(0, 0.01) for c in obj.center)
            detections.append(Detection({obj.label: rng.uniform(0.5, 0.9), rng.choice(OBJECT_LABELS): 0.1},
                                        transform_point(to_camera, seen), obj.size))
        if rng.random() < 0.2:
            spot = (room.center[0] + rng.uniform(-2, 2), room.center[1] + rng.uniform(-2, 2), 0.05)
            detections.append(Detection({rng.choice(OBJECT_LABELS): 0.8}, transform_point(to_camera, spot), (0.1, 0.1, 0.1)))
        produced.append(SensorFrame("camera_link", np.eye(4), 360.0, 6.0, stamp, detections))
    return frames, produced


def measure_fusion(scene: SceneGraph, rng: random.Random) -> dict:
    frames, camera_frames = _camera_frames(scene, rng, FUSION_DETECTIONS)
    detections = sum(len(f.detections) for f in camera_frames)
    created = 0
    start = time.perf_counter()
    for frame in camera_frames:
        created += len(scene.fuse(frame.in_map(frames)).created)
    elapsed = time.perf_counter() - start
    return {"detections": detections, "frames": len(camera_frames), "fusion_s": elapsed,
            "detections_per_s": detections / elapsed, "created": created}


def _latency_ms(call: Callable[[], object], samples: int) -> dict:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"median_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))]}


def measure_queries(scene: SceneGraph, rng: random.Random, samples: int = QUERY_SAMPLES) -> dict:
    """The perception services' work: one object with its relations, a room's contents with
    relations, objects by label in a room, the room at a point, furniture near a point."""
    objects = [e.id for e in scene.objects()]
    rooms = scene.rooms()

    def random_point():
        room = scene.entity(rng.choice(rooms))
        return room.center[0] + rng.uniform(-2, 2), room.center[1] + rng.uniform(-2, 2)

    def get_object():
        object_id = rng.choice(objects)
        return scene.entity(object_id), scene.relations(object_id)

    def objects_in_room():
        room = rng.choice(rooms)
        return scene.furniture(room), [scene.relations(o.id) for o in scene.objects(room)]

    return {
        "get_object": _latency_ms(get_object, samples),
        "objects_in_room": _latency_ms(objects_in_room, samples),
        "find_label_in_room": _latency_ms(lambda: scene.find(rng.choice(OBJECT_LABELS), room=rng.choice(rooms)), samples),
        "room_at": _latency_ms(lambda: scene.room_at(*random_point()), samples),
        "furniture_near": _latency_ms(lambda: scene.furniture_near(*random_point(), 1.0), samples),
    }


def run(sizes=DEFAULT_SIZES, out_dir: Path = Path("bench/results"), repeat: int = 3, seed: int = 0,
        progress: Callable[[str], None] = print, dense_sizes=DENSE_SIZES) -> dict:
    rng = random.Random(seed)
    results = {"benchmark": "perception", "machine": machine_info(), "seed": seed, "repeat": repeat,
               "targets": TARGETS, "sizes": {}, "dense_rooms": DENSE_ROOMS, "dense": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            data, rooms = synthetic_map(size, seed)
            progress(f"[{size:>6} objects] building ({len(data['instances'])} instances, {len(rooms)} rooms) x{repeat} ...")
            entry, scene = _measure_map(data, rooms, Path(scratch) / f"map_{size}.json", repeat)
            progress(f"[{size:>6} objects] build {entry['build_s'] * 1000:.1f} ms, peak {entry['peak_mb']:.1f} MiB; "
                     f"queries x{QUERY_SAMPLES} ...")
            entry["queries"] = measure_queries(scene, rng)
            progress(f"[{size:>6} objects] fusing {FUSION_DETECTIONS}+ detections ...")
            entry["fusion"] = measure_fusion(scene, rng)
            progress(f"[{size:>6} objects] {entry['fusion']['detections_per_s']:.0f} detections/s; "
                     f"get_object median {entry['queries']['get_object']['median_ms']:.3f} ms")
            results["sizes"][str(size)] = entry
        for size in dense_sizes:
            data, rooms = cluttered_map(size, DENSE_ROOMS, seed)
            progress(f"[{size:>6} objects in {len(rooms)} rooms] building x{repeat} ...")
            entry, scene = _measure_map(data, rooms, Path(scratch) / f"dense_{size}.json", repeat)
            entry["relations"] = sum(len(scene.relation_edges(o.id)) for o in scene.objects())
            progress(f"[{size:>6} objects in {len(rooms)} rooms] build {entry['build_s']:.2f} s, "
                     f"{entry['relations']} relations")
            results["dense"][str(size)] = entry
    results["summary"] = summarize(results)
    progress("written: " + ", ".join(map(str, write_results(results, out_dir, "perception", plot))))
    return results


def summarize(results: dict) -> dict:
    sizes = results["sizes"]
    largest = sizes[max(sizes, key=int)]
    smallest_large = [s for s in sizes if int(s) >= 1000]
    summary = {
        "largest_size": max(map(int, sizes)),
        "build_s_at_largest": largest["build_s"],
        "min_detections_per_s": min(e["fusion"]["detections_per_s"] for e in sizes.values()),
        "worst_query_median_ms_at_largest": max(q["median_ms"] for q in largest["queries"].values()),
    }
    if len(smallest_large) >= 2:
        low, high = sorted(smallest_large, key=int)[0], sorted(smallest_large, key=int)[-1]
        summary["build_time_ratio"] = {"sizes": [int(low), int(high)], "objects_ratio": int(high) / int(low),
                                       "time_ratio": sizes[high]["build_s"] / sizes[low]["build_s"],
                                       "memory_ratio": sizes[high]["retained_mb"] / sizes[low]["retained_mb"]}
    dense = results.get("dense", {})
    if len(dense) >= 2:
        low, high = min(dense, key=int), max(dense, key=int)
        summary["dense_build_time_ratio"] = {"sizes": [int(low), int(high)], "rooms": results["dense_rooms"],
                                             "objects_ratio": int(high) / int(low),
                                             "time_ratio": dense[high]["build_s"] / dense[low]["build_s"]}
    summary["targets_met"] = {
        "build_under_1s_at_10000": sizes.get("10000", {}).get("build_s", float("inf")) < TARGETS["build_s_at_10000"],
        **{f"fusion_at_{size}_at_least_{wanted:.0f}_per_s": size in sizes
           and sizes[size]["fusion"]["detections_per_s"] >= wanted for size, wanted in TARGETS["detections_per_s"].items()},
        "queries_under_1ms_median_at_10000": "10000" in sizes and max(
            q["median_ms"] for q in sizes["10000"]["queries"].values()) < TARGETS["query_median_ms_at_10000"],
    }
    return summary


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(results["sizes"], key=int)
    n = [int(s) for s in sizes]
    entries = [results["sizes"][s] for s in sizes]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    ax = axes[0][0]
    ax.loglog(n, [e["build_s"] for e in entries], "o-", label="load + build")
    ax.loglog(n, [e["save_s"] for e in entries], "s--", label="save (JSON)")
    ax.loglog(n, [entries[-1]["build_s"] * x / n[-1] for x in n], ":", color="grey", label="linear")
    if results.get("dense"):
        dense = sorted(results["dense"], key=int)
        ax.loglog([int(d) for d in dense], [results["dense"][d]["build_s"] for d in dense], "^-",
                  label=f"dense: all in {results['dense_rooms']} rooms")
    ax.axhline(TARGETS["build_s_at_10000"], color="red", lw=0.8, label="target at 10k: 1 s")
    ax.set(title="Map build time", xlabel="objects", ylabel="seconds")
    ax.legend(fontsize=8)
    ax = axes[0][1]
    ax.loglog(n, [e["retained_mb"] for e in entries], "o-", label="retained")
    ax.loglog(n, [e["peak_mb"] for e in entries], "s--", label="peak while building")
    ax.set(title="Memory (tracemalloc)", xlabel="objects", ylabel="MiB")
    ax.legend(fontsize=8)
    ax = axes[1][0]
    for name in entries[0]["queries"]:
        ax.loglog(n, [e["queries"][name]["median_ms"] for e in entries], "o-", label=name)
    ax.axhline(TARGETS["query_median_ms_at_10000"], color="red", lw=0.8, label="target: 1 ms")
    ax.set(title="Query latency (median)", xlabel="objects", ylabel="ms")
    ax.legend(fontsize=7)
    ax = axes[1][1]
    ax.semilogx(n, [e["fusion"]["detections_per_s"] for e in entries], "o-")
    targets = TARGETS["detections_per_s"]
    ax.plot([int(s) for s in targets], list(targets.values()), "rv", label="targets")
    ax.set(title="Detection fusion (one core)", xlabel="objects in the map", ylabel="detections / s", ylim=(0, None))
    ax.legend(fontsize=8)
    machine = results["machine"]
    fig.suptitle(f"planner bench perception — {machine['cpu']} ({machine['cores']} cores), "
                 f"Python {machine['python']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
