"""A world file as a Gazebo (gz-sim) SDF world, so the homes the built-in simulator runs also run in
Gazebo: rooms become walls with a gap at each door, furniture and objects boxes of their sizes, named
by their ids (perception and the planner refer to the same names). Furniture with a door or drawer
is a shell open towards the room, so what the world puts inside it stands on its inner shelf.
The robot is not in the world: spawn its own model at the pose `robot_spawn` gives."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from shapely.geometry import LineString, MultiLineString, Point
from shapely.ops import linemerge, unary_union

from planner.core.geometry import approach_pose
from planner.core.world import INNER_SHELF_M, Furniture, World, person_box

SDF_VERSION = "1.9"             # Gazebo Harmonic (Jazzy's); Ionic reads it too
WALL_HEIGHT_M = 2.5
WALL_THICKNESS_M = 0.1
DOOR_WIDTH_M = 0.9
PANEL_M = 0.02                  # board thickness of cupboards, fridges and drawers
SYSTEMS = (("gz-sim-physics-system", "gz::sim::systems::Physics"),
           ("gz-sim-user-commands-system", "gz::sim::systems::UserCommands"),
           ("gz-sim-scene-broadcaster-system", "gz::sim::systems::SceneBroadcaster"),
           ("gz-sim-sensors-system", "gz::sim::systems::Sensors"))

Box = tuple[tuple[float, float, float], tuple[float, float, float]]  # centre relative to the model, size


def _text(parent: ET.Element, tag: str, text: str) -> ET.Element:
    element = ET.SubElement(parent, tag)
    element.text = text
    return element


def _numbers(*values: float) -> str:
    return " ".join(f"{value:.9g}" for value in values)


def _model(world: ET.Element, name: str, pose: tuple[float, ...], boxes: list[Box], static: bool,
           mass_kg: float = 0.0, colour: str = "0.7 0.7 0.7 1") -> None:
    model = ET.SubElement(world, "model", name=name)
    _text(model, "static", str(static).lower())
    _text(model, "pose", _numbers(*pose, 0.0, 0.0, 0.0) if len(pose) == 3 else _numbers(*pose))  # x y z [roll pitch yaw]
    link = ET.SubElement(model, "link", name="link")
    if not static:
        (sx, sy, sz), = [size for _, size in boxes]
        inertial = ET.SubElement(link, "inertial")
        _text(inertial, "mass", _numbers(mass_kg))
        inertia = ET.SubElement(inertial, "inertia")
        for axis, (a, b) in (("ixx", (sy, sz)), ("iyy", (sx, sz)), ("izz", (sx, sy))):
            _text(inertia, axis, _numbers(mass_kg * (a * a + b * b) / 12))
    for index, (centre, size) in enumerate(boxes):
        for kind in ("collision", "visual"):
            part = ET.SubElement(link, kind, name=f"{kind}_{index}")
            _text(part, "pose", _numbers(*centre, 0.0, 0.0, 0.0))
            _text(ET.SubElement(ET.SubElement(part, "geometry"), "box"), "size", _numbers(*size))
            if kind == "visual":
                material = ET.SubElement(part, "material")
                _text(material, "ambient", colour)
                _text(material, "diffuse", colour)


def wall_segments(world: World) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The straight wall pieces: every room outline once (shared walls too), less a door's width at each door."""
    outline = linemerge(unary_union([room.shape().boundary for room in world.rooms]))
    gaps = unary_union([Point(door.position).buffer(DOOR_WIDTH_M / 2) for door in world.doors]) if world.doors else None
    walls = outline.difference(gaps) if gaps is not None else outline
    lines = list(walls.geoms) if isinstance(walls, MultiLineString) else [walls] if isinstance(walls, LineString) else []
    segments = []
    for line in lines:
        points = list(line.coords)
        segments += [(a, b) for a, b in zip(points, points[1:]) if math.dist(a, b) > 1e-6]
    return segments


def _front_axis(item: Furniture, world: World) -> tuple[int, float]:
    """The axis (0: x, 1: y) and sign of the side of a piece of furniture that faces its room."""
    room = next(r for r in world.rooms if r.name == world.room_at(item.center[0], item.center[1]))
    centre = room.shape().centroid
    stand = approach_pose(item.center, item.size, centre.x, centre.y, 1.0)
    dx, dy = stand.x - item.center[0], stand.y - item.center[1]
    return (0, math.copysign(1.0, dx)) if abs(dx) > abs(dy) else (1, math.copysign(1.0, dy))


def furniture_boxes(item: Furniture, world: World) -> list[Box]:
    """A solid box, or for furniture with a door or drawer a shell open at the front: top, back, sides
    and the inner shelf things stand on."""
    sx, sy, sz = item.size
    if not item.openable:
        return [((0.0, 0.0, 0.0), (sx, sy, sz))]
    axis, sign = _front_axis(item, world)
    half = (sx / 2, sy / 2)
    side = 1 - axis
    shelf_z = -sz / 2 + INNER_SHELF_M - PANEL_M / 2

    def box(along_axis: float, along_side: float, z: float, size_axis: float, size_side: float, size_z: float) -> Box:
        centre, size = [0.0, 0.0, z], [0.0, 0.0, size_z]
        centre[axis], centre[side] = along_axis, along_side
        size[axis], size[side] = size_axis, size_side
        return (centre[0], centre[1], centre[2]), (size[0], size[1], size[2])

    depth, width = 2 * half[axis], 2 * half[side]
    return [box(0.0, 0.0, sz / 2 - PANEL_M / 2, depth, width, PANEL_M),                            # top
            box(0.0, 0.0, shelf_z, depth, width, PANEL_M),                                         # inner shelf
            box(-sign * (half[axis] - PANEL_M / 2), 0.0, 0.0, PANEL_M, width, sz),                 # back
            box(0.0, half[side] - PANEL_M / 2, 0.0, depth, PANEL_M, sz),                           # sides
            box(0.0, -(half[side] - PANEL_M / 2), 0.0, depth, PANEL_M, sz)]


def robot_spawn(world: World) -> tuple[float, float, float]:
    """x, y, yaw to spawn the robot's model at (e.g. ros_gz_sim create -x -y -Y)."""
    return world.robot.pose


def world_sdf(world: World) -> str:
    sdf = ET.Element("sdf", version=SDF_VERSION)
    root = ET.SubElement(sdf, "world", name=world.name)
    physics = ET.SubElement(root, "physics", name="1ms", type="ignored")
    _text(physics, "max_step_size", "0.001")
    _text(physics, "real_time_factor", "1.0")
    for filename, name in SYSTEMS:
        ET.SubElement(root, "plugin", filename=filename, name=name)
    light = ET.SubElement(root, "light", type="directional", name="sun")
    _text(light, "cast_shadows", "true")
    _text(light, "pose", "0 0 10 0 0 0")
    _text(light, "direction", "-0.5 0.1 -0.9")
    ground = ET.SubElement(root, "model", name="ground_plane")
    _text(ground, "static", "true")
    ground_link = ET.SubElement(ground, "link", name="link")
    for kind in ("collision", "visual"):
        plane = ET.SubElement(ET.SubElement(ET.SubElement(ground_link, kind, name=kind), "geometry"), "plane")
        _text(plane, "normal", "0 0 1")
        _text(plane, "size", "200 200")
    for index, (a, b) in enumerate(wall_segments(world)):
        yaw = math.atan2(b[1] - a[1], b[0] - a[0])
        _model(root, f"wall_{index}", ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2, WALL_HEIGHT_M / 2, 0.0, 0.0, yaw),
               [((0.0, 0.0, 0.0), (math.dist(a, b), WALL_THICKNESS_M, WALL_HEIGHT_M))], static=True,
               colour="0.9 0.9 0.85 1")
    for item in world.furniture:
        _model(root, item.id, item.center, furniture_boxes(item, world), static=True, colour="0.6 0.45 0.3 1")
    for obj in world.objects:
        _model(root, obj.id, world.object_center(obj), [((0.0, 0.0, 0.0), obj.size)], static=False,
               mass_kg=obj.mass_kg, colour="0.2 0.5 0.8 1")
    for person in world.people:
        centre, size = person_box(person)
        _model(root, person.id, centre, [((0.0, 0.0, 0.0), size)], static=True, colour="0.9 0.6 0.5 1")
    ET.indent(sdf)
    return '<?xml version="1.0"?>\n' + ET.tostring(sdf, encoding="unicode") + "\n"
