"""Small planar geometry used by skills, perception and the simulator."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shapely.geometry import Point, Polygon, box
from shapely.ops import nearest_points, unary_union


@dataclass(frozen=True)
class Pose2D:
    x: float
    y: float
    yaw: float = 0.0

    def distance_to(self, x: float, y: float) -> float:
        return math.hypot(x - self.x, y - self.y)


def normalize_angle(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


def approach_pose(center: tuple[float, float, float], size: tuple[float, float, float],
                  from_x: float, from_y: float, standoff: float,
                  facing: tuple[float, float] | None = None) -> Pose2D:
    """A base pose in front of the box side that faces (from_x, from_y), looking at the box.

    The robot stops `standoff` metres from that side, so the box is within arm reach and the
    base does not collide with it: at the middle of the side, or along it in front of `facing`
    (a point on or in the box: what the arms must reach on a long table).
    """
    return approach_poses(center, size, from_x, from_y, standoff, facing)[0]


def approach_poses(center: tuple[float, float, float], size: tuple[float, float, float],
                   from_x: float, from_y: float, standoff: float,
                   facing: tuple[float, float] | None = None) -> list[Pose2D]:
    """`approach_pose` in front of each of the box's four sides, the side that faces (from_x,
    from_y) most first: where furniture stands close to other furniture, another side may be free."""
    cx, cy = center[0], center[1]
    half_x, half_y = size[0] / 2, size[1] / 2
    dx, dy = from_x - cx, from_y - cy
    along_x, along_y = facing if facing is not None else (cx, cy)
    along_x, along_y = min(max(along_x, cx - half_x), cx + half_x), min(max(along_y, cy - half_y), cy + half_y)
    # How much each side's outward normal points towards (from_x, from_y), scaled by the box aspect.
    sides = [(dx * half_y, Pose2D(cx + half_x + standoff, along_y, math.pi)),
             (-dx * half_y, Pose2D(cx - half_x - standoff, along_y, 0.0)),
             (dy * half_x, Pose2D(along_x, cy + half_y + standoff, -math.pi / 2)),
             (-dy * half_x, Pose2D(along_x, cy - half_y - standoff, math.pi / 2))]
    return [pose for _, pose in sorted(sides, key=lambda side: -side[0])]


def horizontal_distance(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def free_spot(center: tuple[float, ...], size: tuple[float, ...], taken: Sequence[tuple[float, ...]]
              ) -> tuple[float, float]:
    """A point on a surface (its centre, or halfway to an edge) away from the points taken."""
    candidates = [(center[0] + dx * size[0] / 4, center[1] + dy * size[1] / 4)
                  for dx, dy in [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)]]
    return max(candidates, key=lambda c: min((math.dist(c, p[:2]) for p in taken), default=1.0))


def in_field_of_view(sensor: Pose2D, fov_deg: float, range_m: float, x: float, y: float) -> bool:
    if sensor.distance_to(x, y) > range_m:
        return False
    if fov_deg >= 360:
        return True
    bearing = normalize_angle(math.atan2(y - sensor.y, x - sensor.x) - sensor.yaw)
    return abs(math.degrees(bearing)) <= fov_deg / 2


def footprint_contains(center: tuple[float, float, float], size: tuple[float, float, float],
                       x: float, y: float, margin: float = 0.0) -> bool:
    return abs(x - center[0]) <= size[0] / 2 + margin and abs(y - center[1]) <= size[1] / 2 + margin


def free_point_in_room(polygon: list[tuple[float, float]], furniture: list[tuple[tuple[float, float, float], tuple[float, float, float]]],
                       clearance: float) -> tuple[float, float] | None:
    """The point of a room nearest its middle that keeps `clearance` from the walls and from every
    furniture footprint (center, size): the middle of a bedroom is often the bed. None when the
    room has no such space."""
    room = Polygon(polygon)
    free = room.buffer(-clearance).difference(unary_union(
        [box(c[0] - s[0] / 2, c[1] - s[1] / 2, c[0] + s[0] / 2, c[1] + s[1] / 2).buffer(clearance) for c, s in furniture]))
    if free.is_empty:
        return None
    point = nearest_points(free, Point(room.centroid.x, room.centroid.y))[0]
    return point.x, point.y
