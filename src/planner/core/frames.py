"""Coordinate frames: rigid transforms between named frames, composed into the map frame.

Static transforms come from the robot profile (camera mount); dynamic ones (map -> base_link)
from the robot state, kept as a short time history so a camera frame is placed with the robot
pose of its own stamp, as TF does. transforms3d quaternions are (w, x, y, z).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable

import numpy as np
from transforms3d.affines import compose
from transforms3d.euler import euler2mat
from transforms3d.quaternions import axangle2quat, mat2quat, qinverse, qmult, quat2axangle, quat2mat

from planner.core.errors import PlannerError
from planner.core.geometry import Pose2D

HISTORY_LENGTH = 400        # dynamic samples kept per frame (40 s at 10 Hz)
SAME_STAMP_S = 0.001        # a sample this close in time to a stamp is the sample of that stamp


class FrameError(PlannerError, LookupError):
    """No transform: the frame is unknown, or not known at that time."""


class TransformNotReady(FrameError):
    """The frame is known but its transform at that stamp has not arrived yet; retry later."""


def rigid(xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)) -> np.ndarray:
    return compose(np.asarray(xyz, dtype=float), euler2mat(*rpy), np.ones(3))


def from_quaternion(xyz, quaternion_wxyz) -> np.ndarray:
    w, x, y, z = quaternion_wxyz
    if not (w or x or y or z):
        return rigid(xyz)  # an all-zero quaternion is an unset orientation, not a rotation
    return compose(np.asarray(xyz, dtype=float), quat2mat((w, x, y, z)), np.ones(3))


def planar(pose: Pose2D) -> np.ndarray:
    return rigid((pose.x, pose.y, 0.0), (0.0, 0.0, pose.yaw))


def to_planar(matrix: np.ndarray) -> Pose2D:
    return Pose2D(float(matrix[0, 3]), float(matrix[1, 3]), math.atan2(matrix[1, 0], matrix[0, 0]))


def transform_point(matrix: np.ndarray, point) -> tuple[float, float, float]:
    x, y, z = matrix[:3, :3] @ np.asarray(point, dtype=float) + matrix[:3, 3]
    return float(x), float(y), float(z)


def transform_box(matrix: np.ndarray, center, size, rotation: np.ndarray | None = None
                  ) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """A box (axes turned by `rotation` in its frame) as an axis-aligned box in another frame:
    its centre moves, its extent is the bounds of the turned box."""
    turn = matrix[:3, :3] if rotation is None else matrix[:3, :3] @ rotation
    extent = np.abs(turn) @ np.asarray(size, dtype=float)
    return transform_point(matrix, center), (float(extent[0]), float(extent[1]), float(extent[2]))


class FrameTree:
    def __init__(self, fixed_frame: str = "map", fallback: Callable[[str, float], np.ndarray] | None = None):
        """`fallback(frame, stamp)` gives fixed_T_frame for frames this tree does not hold (TF on a
        ROS install); it raises FrameError or TransformNotReady like `to_fixed`."""
        self.fixed_frame = fixed_frame
        self.fallback = fallback
        self._parents: dict[str, str] = {}
        self._static: dict[str, np.ndarray] = {}
        self._history: dict[str, deque[tuple[float, np.ndarray]]] = {}

    def set_static(self, parent: str, child: str, matrix: np.ndarray) -> None:
        self._link(parent, child)
        self._static[child] = matrix

    def set_dynamic(self, parent: str, child: str, stamp: float, matrix: np.ndarray) -> None:
        self._link(parent, child)
        history = self._history.setdefault(child, deque(maxlen=HISTORY_LENGTH))
        if len(history) == HISTORY_LENGTH:
            history.popleft()
        # Samples may arrive out of order (publishers on several threads): keep them sorted by stamp.
        history.insert(bisect.bisect_right([s for s, _ in history], stamp), (stamp, matrix))

    def _link(self, parent: str, child: str) -> None:
        if child == self.fixed_frame:
            raise FrameError(f"{self.fixed_frame!r} is the fixed frame and has no parent")
        known = self._parents.get(child)
        if known is not None and known != parent:
            raise FrameError(f"frame {child!r} already has parent {known!r}, not {parent!r}")
        self._parents[child] = parent

    def frames(self) -> list[str]:
        return sorted({self.fixed_frame, *self._parents, *self._parents.values()})

    def to_fixed(self, frame: str, stamp: float) -> np.ndarray:
        """fixed_T_frame at `stamp`, composed along the chain of parents."""
        matrix = np.eye(4)
        seen = set()
        while frame != self.fixed_frame:
            if frame not in self._parents:
                if self.fallback is not None:
                    return self.fallback(frame, stamp) @ matrix
                if frame in self._parents.values():
                    raise TransformNotReady(f"no transform from {frame!r} to {self.fixed_frame!r} received yet")
                raise FrameError(f"unknown frame {frame!r}; known frames: {', '.join(self.frames())}")
            if frame in seen:
                raise FrameError(f"frame {frame!r} is in a loop of parents")
            seen.add(frame)
            link = self._static.get(frame)
            if link is None:
                link = self._sample(frame, stamp)
            matrix = link @ matrix
            frame = self._parents[frame]
        return matrix

    def _sample(self, frame: str, stamp: float) -> np.ndarray:
        """The transform at `stamp`: a sample of that stamp, or interpolated between the samples
        around it. Newer than every sample means not received yet, as TF treats it: using an
        older pose would misplace everything a moving robot sees."""
        history = self._history.get(frame)
        if not history:
            raise TransformNotReady(f"no transform for {frame!r} received yet")
        stamps = [s for s, _ in history]
        after = bisect.bisect_left(stamps, stamp - SAME_STAMP_S)
        if after < len(stamps) and abs(stamps[after] - stamp) <= SAME_STAMP_S:
            return history[after][1]
        if after == len(stamps):
            raise TransformNotReady(f"transform of {frame!r} at t={stamp:.3f} not received yet (newest t={stamps[-1]:.3f})")
        if after == 0:
            raise FrameError(f"transform of {frame!r} at t={stamp:.3f} is older than the history kept (from t={stamps[0]:.3f})")
        (t0, m0), (t1, m1) = history[after - 1], history[after]
        return interpolate(m0, m1, (stamp - t0) / (t1 - t0))


def interpolate(m0: np.ndarray, m1: np.ndarray, fraction: float) -> np.ndarray:
    """Between two rigid transforms: translation linearly, rotation along the shortest arc."""
    q0, q1 = mat2quat(m0[:3, :3]), mat2quat(m1[:3, :3])
    axis, angle = quat2axangle(qmult(qinverse(q0), q1))
    rotation = quat2mat(qmult(q0, axangle2quat(axis, angle * fraction)))
    return compose(m0[:3, 3] + fraction * (m1[:3, 3] - m0[:3, 3]), rotation, np.ones(3))
