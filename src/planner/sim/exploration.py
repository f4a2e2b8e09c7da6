"""Robots looking around a simulated home while people move things about.

Each robot starts in its own room with its own time budget and camera. It looks in a few
directions from a free spot in the room (the simulator's camera: its field of view and range, its
room only, nothing inside closed furniture), then drives by the simulator's routes to the room its
exploration policy picks, until the next room no longer fits its budget. People's moves happen at
their times whoever is watching, so what a robot saw may no longer be so when it is asked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from planner.core.fleet import RobotMemory
from planner.core.geometry import Pose2D, free_point_in_room
from planner.core.robot_profile import RobotProfile
from planner.core.world import World
from planner.sim.simulated_world import Route, SimulatedWorld

LOOK_S = 2.0            # one look: turn to a heading and detect
SPOT_CLEARANCE_M = 0.4  # where the robot stands to look keeps this far from walls and furniture


@dataclass(frozen=True)
class Explorer:
    name: str
    start_room: str
    budget_s: float
    fov_deg: float
    range_m: float = 5.0
    looks_per_room: int = 3


@dataclass(frozen=True)
class Move:
    """A person puts an object onto (or into, when open) a piece of furniture at `time_s`."""
    time_s: float
    object_id: str
    onto: str


class RoomChooser(Protocol):
    def next_room(self, memory: RobotMemory, here: str, travel_s: dict[str, float], now_s: float) -> str | None: ...


def look_spots(world: World) -> dict[str, tuple[float, float]]:
    """Where a robot stands to look around each room: free space nearest the room's middle."""
    spots = {}
    for room in world.rooms:
        furniture = [(f.center, f.size) for f in world.furniture if world.room_at(f.center[0], f.center[1]) == room.name]
        spot = free_point_in_room(room.polygon, furniture, SPOT_CLEARANCE_M)
        if spot is None:
            centre = room.shape().representative_point()
            spot = (centre.x, centre.y)
        spots[room.name] = spot
    return spots


def presence(sim: SimulatedWorld) -> dict[str, set[str]]:
    """Room -> labels of the things in it now (on or inside its furniture)."""
    rooms: dict[str, set[str]] = {room.name: set() for room in sim.world.rooms}
    for obj in sim.world.objects:
        x, y, _ = sim.positions[obj.id]
        room = sim.world.room_at(x, y)
        if room is not None:
            rooms[room].add(obj.label)
    return rooms


class Home:
    """A home over time: the world as it starts and the moves people make, in time order."""

    def __init__(self, world: World, profile: RobotProfile, moves: Sequence[Move]):
        self.world = world
        self.profile = profile
        self.moves = sorted(moves, key=lambda move: move.time_s)
        self.spots = look_spots(world)
        self._furniture_labels = {f.label for f in world.furniture}
        sim = SimulatedWorld(world, profile)
        self._history = [(0.0, presence(sim))]
        for move in self.moves:
            outcome = sim.move_object(move.object_id, move.onto)
            if not outcome.ok:
                raise ValueError(f"move at {move.time_s:.0f} s: {outcome.detail}")
            self._history.append((move.time_s, presence(sim)))

    def presence_at(self, time_s: float) -> dict[str, set[str]]:
        """Room -> labels there at `time_s` (after every move made by then)."""
        return next(state for moved_at, state in reversed(self._history) if moved_at <= time_s)

    def explore(self, explorer: Explorer, chooser: RoomChooser) -> RobotMemory:
        """What `explorer` sees when it looks around this home, room by room as `chooser` picks."""
        camera = self.profile.camera.model_copy(update={"fov_deg": explorer.fov_deg, "range_m": explorer.range_m})
        sim = SimulatedWorld(self.world, self.profile.model_copy(update={"camera": camera}))
        pending = list(self.moves)
        memory = RobotMemory(explorer.name)
        room, now = explorer.start_room, 0.0
        looks = max(1, explorer.looks_per_room)
        while True:
            for heading in range(looks):
                while pending and pending[0].time_s <= now:
                    move = pending.pop(0)
                    sim.move_object(move.object_id, move.onto)
                sim.set_robot_pose(Pose2D(*self.spots[room], 2 * math.pi * heading / looks))
                frame = sim.camera_frame(now)
                labels = [] if frame is None else [max(d.labels, key=d.labels.__getitem__) for d in frame.detections]
                memory.look(room, [label for label in labels if label not in self._furniture_labels and label != "person"],
                            now)
                now += LOOK_S
            travel = {}
            for other, spot in self.spots.items():
                route = sim.plan_route(Pose2D(*spot, 0.0)) if other != room else None
                if isinstance(route, Route):
                    seconds = route.length / self.profile.speed_mps
                    if now + seconds + looks * LOOK_S <= explorer.budget_s:
                        travel[other] = seconds
            choice = chooser.next_room(memory, room, travel, now)
            if choice is None or choice not in travel:
                return memory
            now += travel[choice]
            room = choice
