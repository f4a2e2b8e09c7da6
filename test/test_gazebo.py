"""`planner world to-sdf` on the shipped worlds: the SDF read back has every piece of furniture, object
and person at its pose with its size, walls along the room outlines with a gap at each door, and the
things inside cupboards clear of the cupboard's boards, and SDFormat's own checker (`ign sdf -k`,
Debian's SDFormat 12, which set-up installs) takes it as valid. Gazebo itself is not to be had here.)"""

import math
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from shapely.geometry import LineString, Point
from shapely.ops import unary_union

from conftest import CONFIG, PLANNER
from planner.core.world import load_world
from planner.sim.gazebo import DOOR_WIDTH_M

WORLDS = sorted((CONFIG / "worlds").glob("*.yaml"))


def numbers(element, path: str) -> list[float]:
    return [float(v) for v in element.find(path).text.split()]


def read_models(sdf: Path) -> dict[str, dict]:
    """Each model: its pose, static flag, mass, and its collision boxes in the world frame (no roll
    or pitch here; walls are turned by yaw)."""
    root = ET.parse(sdf).getroot()
    assert root.tag == "sdf" and root.get("version") == "1.9"
    models = {}
    for model in root.find("world").findall("model"):
        name = model.get("name")
        assert name not in models, f"model {name} twice"
        x, y, z, _, _, yaw = numbers(model, "pose") if model.find("pose") is not None else [0.0] * 6
        boxes = []
        for collision in model.iter("collision"):
            if collision.find("geometry/box") is None:
                continue
            cx, cy, cz = numbers(collision, "pose")[:3]
            boxes.append(((x + cx * math.cos(yaw) - cy * math.sin(yaw), y + cx * math.sin(yaw) + cy * math.cos(yaw), z + cz),
                          numbers(collision, "geometry/box/size"), yaw))
        mass = model.find("link/inertial/mass")
        models[name] = {"pose": (x, y, z), "yaw": yaw, "static": model.find("static").text == "true", "boxes": boxes,
                        "mass": float(mass.text) if mass is not None else None}
    return models


def extent(boxes) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Centre and size of the axis-aligned box around boxes that are not turned."""
    low = [min(c[i] - s[i] / 2 for c, s, _ in boxes) for i in range(3)]
    high = [max(c[i] + s[i] / 2 for c, s, _ in boxes) for i in range(3)]
    return tuple((a + b) / 2 for a, b in zip(low, high)), tuple(b - a for a, b in zip(low, high))


def overlap(a, b) -> bool:
    (ac, asz, _), (bc, bsz, _) = a, b
    return all(abs(ac[i] - bc[i]) < (asz[i] + bsz[i]) / 2 - 1e-9 for i in range(3))


def sdformat_check(sdf: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["ign", "sdf", "-k", str(sdf)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("world", WORLDS, ids=lambda p: p.stem)
def test_sdformat_takes_each_exported_world_as_valid_and_a_broken_one_not(world, tmp_path):
    out = tmp_path / "world.sdf"
    run = subprocess.run([str(PLANNER), "world", "to-sdf", str(world), "--out", str(out)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    checked = sdformat_check(out)
    assert checked.returncode == 0 and "Valid." in checked.stdout, checked.stdout + checked.stderr
    broken = tmp_path / "broken.sdf"   # two models of one name: Gazebo would refuse the world
    broken.write_text(out.read_text().replace('<model name="wall_1"', '<model name="wall_0"', 1))
    checked = sdformat_check(broken)
    assert checked.returncode != 0 and "model with name[wall_0] already exists" in checked.stdout + checked.stderr


@pytest.fixture(params=WORLDS, ids=lambda p: p.stem)
def converted(request, tmp_path):
    out = tmp_path / "world.sdf"
    run = subprocess.run([str(PLANNER), "world", "to-sdf", str(request.param), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "spawn the robot at" in run.stdout
    return load_world(request.param), read_models(out)


def test_every_thing_is_a_model_at_its_pose_with_its_size(converted):
    world, models = converted
    things = [(item.id, item.center, item.size, True) for item in world.furniture]
    things += [(obj.id, world.object_center(obj), obj.size, False) for obj in world.objects]
    for name, centre, size, static in things:
        model = models[name]
        assert model["pose"] == pytest.approx(centre, abs=1e-6) and model["yaw"] == 0.0, name
        assert model["static"] is static, name
        around_centre, around_size = extent(model["boxes"])
        assert around_centre == pytest.approx(centre, abs=1e-6) and around_size == pytest.approx(size, abs=1e-6), name
    for obj in world.objects:
        assert models[obj.id]["mass"] == pytest.approx(obj.mass_kg)
    assert {p.id for p in world.people} <= set(models)


def test_things_inside_cupboards_are_clear_of_the_boards(converted):  # the apartment has ten
    world, models = converted
    for obj in (obj for obj in world.objects if obj.inside):
        (box,) = models[obj.id]["boxes"]
        assert not any(overlap(box, board) for board in models[obj.placed_on]["boxes"]), obj.id
    for item in world.furniture:
        if item.openable:
            assert len(models[item.id]["boxes"]) == 5, f"{item.id}: top, shelf, back and two sides"


def test_walls_follow_the_room_outlines_with_a_gap_at_each_door(converted):
    world, models = converted
    outline = unary_union([room.shape().boundary for room in world.rooms])
    walls = [m for name, m in models.items() if name.startswith("wall_")]
    lines = []
    for wall in walls:
        ((x, y, _), (length, _, height), yaw), = wall["boxes"]
        dx, dy = math.cos(yaw) * length / 2, math.sin(yaw) * length / 2
        line = LineString([(x - dx, y - dy), (x + dx, y + dy)])
        assert outline.buffer(1e-6).contains(line), f"a wall off the room outlines: {line}"
        assert height > 2.0
        lines.append(line)
    gaps = len(world.doors) * DOOR_WIDTH_M
    assert sum(line.length for line in lines) == pytest.approx(outline.length - gaps, abs=1e-6)
    for door in world.doors:
        assert min(line.distance(Point(door.position)) for line in lines) == pytest.approx(DOOR_WIDTH_M / 2, abs=1e-6)


def test_a_file_that_is_not_a_world_is_refused_with_what_is_wrong(tmp_path):
    not_a_world = tmp_path / "robot.yaml"
    not_a_world.write_text("name: robee\nreach_m: 1.0\n")
    run = subprocess.run([str(PLANNER), "world", "to-sdf", str(not_a_world), "--out", str(tmp_path / "x.sdf")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "rooms: Field required" in run.stderr
    assert not (tmp_path / "x.sdf").exists()
