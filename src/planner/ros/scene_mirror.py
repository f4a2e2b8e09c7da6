"""Perception's scene graph kept current inside a consumer node (task planner, skill planner,
controller), so that reading the world costs nothing and waiting for it is woken by its changes.

The graph is fetched whole (/perception/get_scene_graph) once, at first use, and then brought up
to date by each /scene_graph/updates message in sequence order. A gap in the sequence (an update
lost, or perception started again: its numbers start above any earlier run's) fetches it whole
again. The robot comes from /robot/state. Messages are only queued by the subscription callbacks and applied by the
reader, under the mirror's lock, so a graph is never changed while someone reads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from planner.core.scene_graph import SceneGraph
from planner.msg import RobotState, SceneGraphUpdate
from planner.ros.convert import apply_update_msg, robot_from_msg, robot_state_problem, scene_from_msg, seconds
from planner.ros.futures import Deadline
from planner.ros.qos import RELIABLE
from planner.srv import GetSceneGraph

FETCH_TIMEOUT_S = 5.0
UPDATE_QUEUE_DEPTH = 100   # updates kept for a reader that has not caught up; a longer backlog ends in a fetch

T = TypeVar("T")


class SceneMirror:
    def __init__(self, node, callback_group):
        self._node = node
        self._clock = node.get_clock()
        self._client = node.create_client(GetSceneGraph, "perception/get_scene_graph", callback_group=callback_group)
        node.create_subscription(SceneGraphUpdate, "scene_graph/updates", self._on_update, RELIABLE,
                                 callback_group=callback_group)
        node.create_subscription(RobotState, "robot/state", self._on_robot, RELIABLE, callback_group=callback_group)
        self._lock = threading.RLock()              # held while the graph is brought up to date or read
        self._arrived = threading.Condition()       # guards what the callbacks leave; notified on each change
        self._updates: list[SceneGraphUpdate] = []
        self._overflowed = False
        self._robot: RobotState | None = None
        self._changes = 0                           # messages that changed something, for waiters
        self._scene: SceneGraph | None = None
        self._seq = 0
        self._robot_applied: RobotState | None = None
        self.seen_until = 0.0                       # stamp of the latest camera frame in the graph
        self.fetches = 0                            # whole-graph fetches so far (at start and on gaps)

    # ---- subscription callbacks: queue, wake waiters ----------------------------------------
    def _on_update(self, msg: SceneGraphUpdate) -> None:
        with self._arrived:
            if len(self._updates) < UPDATE_QUEUE_DEPTH:
                self._updates.append(msg)
            else:
                self._updates, self._overflowed = [], True
            self._changes += 1
            self._arrived.notify_all()

    def _on_robot(self, msg: RobotState) -> None:
        if robot_state_problem(msg) is not None:
            return  # perception reports it
        with self._arrived:
            previous, self._robot = self._robot, msg
            if previous is None or _robot_changed(previous, msg):
                self._changes += 1
                self._arrived.notify_all()

    # ---- readers ---------------------------------------------------------------------------------
    @contextmanager
    def current(self) -> Iterator[SceneGraph]:
        """The graph as perception has it now, held still while the block reads it; raises
        CallFailed when it has to be fetched and perception does not answer."""
        with self._lock:
            yield self._catch_up()

    def snapshot(self) -> SceneGraph:
        """The graph as perception has it now, for a reader that is the only one advancing this
        mirror (a task's own thread): it changes only at that reader's next call."""
        with self.current() as scene:
            return scene

    def wait_until(self, condition: Callable[[SceneGraph], T], timeout_s: float, stop: threading.Event | None = None,
                   until: Callable[[T], bool] = bool) -> T:
        """`condition` on the graph, again at each change, until `until` its value, `timeout_s`
        passes on the node's clock or `stop` is set; its last value."""
        deadline = Deadline(timeout_s, self._clock)
        while True:
            with self._arrived:
                seen = self._changes
            with self.current() as scene:
                value = condition(scene)
            if until(value) or deadline.remaining() <= 0 or (stop is not None and stop.is_set()):
                return value
            with self._arrived:
                self._arrived.wait_for(lambda seen=seen: self._changes != seen, timeout=deadline.wait_s())

    def wait_for_look(self, after_s: float, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """Until the graph holds a camera frame taken after `after_s` (ROS time, seconds): what
        the robot saw once it had acted, as the in-process robot looks after each command."""
        return bool(self.wait_until(lambda _: self.seen_until >= after_s, timeout_s, stop))

    # ---- catching up -----------------------------------------------------------------------------
    def _catch_up(self) -> SceneGraph:
        with self._arrived:
            updates, self._updates = self._updates, []
            overflowed, self._overflowed = self._overflowed, False
            robot = self._robot
        if self._scene is None or overflowed:
            self._fetch()
        for update in sorted(updates, key=lambda u: u.seq):
            if update.seq > self._seq + 1:
                self._fetch()   # one or more lost: the fetched graph holds them
            if update.seq == self._seq + 1:
                apply_update_msg(self._scene, update)
                self._seq, self.seen_until = update.seq, max(self.seen_until, seconds(update.seen_until))
        if robot is not None and robot is not self._robot_applied and robot.arms:
            self._scene.robot = robot_from_msg(robot)
            self._robot_applied = robot
        return self._scene

    def _fetch(self) -> None:
        reply = self._node.call(self._client, GetSceneGraph.Request(), timeout_s=FETCH_TIMEOUT_S)
        self.fetches += 1
        self._scene, self._seq = scene_from_msg(reply.graph, reply.robot), reply.graph.seq
        self.seen_until = seconds(reply.graph.seen_until)
        self._robot_applied = None


def _robot_changed(before: RobotState, after: RobotState) -> bool:
    return (before.base_pose != after.base_pose or list(before.held) != list(after.held) or before.room != after.room
            or before.busy != after.busy)
