"""Waiting on service and action futures from worker threads, with timeouts and stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from std_msgs.msg import Empty

from planner.core.errors import PlannerError
from planner.core.failures import FailureCode
from planner.ros.qos import ALIVE, alive_topic


class CallKind(StrEnum):
    """Why a call failed, for callers that act on it (a timeout is not a missing server)."""
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    REJECTED = "rejected"
    STOPPED = "stopped"
    ERROR = "error"     # the server's side raised


class CallFailed(PlannerError, RuntimeError):
    def __init__(self, message: str, kind: CallKind):
        super().__init__(message)
        self.kind = kind


def failed_call_code(error: CallFailed, stopped: bool) -> str:
    """The failure code of a robot command whose call failed (`stopped`: the executor stopped it)."""
    return (FailureCode.CANCELED if stopped else FailureCode.TIMEOUT if error.kind == CallKind.TIMEOUT
            else FailureCode.ROBOT_UNAVAILABLE if error.kind == CallKind.UNAVAILABLE
            else FailureCode.BACKEND_UNAVAILABLE)


STOP_POLL_S = 0.05


class Deadline:
    """A time limit on a node's clock when that follows /clock (use_sim_time: a Gazebo slower than
    real time, or paused, does not run out what the robot is still doing), else on the wall clock,
    as it is until the first /clock message, so that no wait hangs on a simulator that is not there.
    Limits on the robot's work take the node's clock; limits on messages and people stay on the wall."""

    SIM_POLL_S = 0.1   # simulated time runs faster or slower than the wall: look again this often

    def __init__(self, seconds: float, clock=None):
        self._sim_clock = clock if clock is not None and clock.ros_time_is_active and clock.now().nanoseconds else None
        self._end = self._now() + seconds

    def _now(self) -> float:
        return self._sim_clock.now().nanoseconds * 1e-9 if self._sim_clock is not None else time.monotonic()

    def remaining(self) -> float:
        return self._end - self._now()

    def wait_s(self, poll_s: float | None = None) -> float:
        """Wall seconds to wait before looking at the deadline again (at most `poll_s`)."""
        remaining = self.remaining()
        if self._sim_clock is not None:
            remaining = min(remaining, self.SIM_POLL_S)
        return max(min(remaining, poll_s) if poll_s is not None else remaining, 0.0)


SERVER_GONE_S = 2.0   # a server missing from the graph this long has died: its answer will never come


def wait_future(future, timeout_s: float, what: str, give_up: bool = True, stop: threading.Event | None = None,
                clock=None, server_alive: Callable[[], bool] | None = None) -> Any:
    """The future's result; CallFailed after `timeout_s` (on `clock`, see Deadline), as soon as
    `stop` is set, or once `server_alive` has said no for SERVER_GONE_S, when the future is dropped
    unless `give_up` is False (its answer is still wanted, e.g. an action result after a cancel)."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    deadline = Deadline(timeout_s, clock)
    problem, kind = "", CallKind.ERROR
    poll_s = STOP_POLL_S if stop is not None or server_alive is not None else None
    seen_alive = time.monotonic()
    while not done.is_set() and not problem:
        if server_alive is not None and server_alive():
            seen_alive = time.monotonic()
        if stop is not None and stop.is_set():
            problem, kind = "stopped", CallKind.STOPPED
        elif deadline.remaining() <= 0:
            problem, kind = f"no answer within {timeout_s:.0f} s", CallKind.TIMEOUT
        elif time.monotonic() - seen_alive > SERVER_GONE_S:
            problem, kind = f"its server went away while it ran (gone for {SERVER_GONE_S:.0f} s)", CallKind.UNAVAILABLE
        else:
            done.wait(deadline.wait_s(poll_s))
    if problem:
        if give_up:
            future.cancel()
        raise CallFailed(f"{what}: {problem}", kind)
    if future.exception() is not None:
        raise CallFailed(f"{what}: {future.exception()}", CallKind.ERROR)
    return future.result()


DISCOVERY_S = 5.0   # how long a call waits, at most, for its server to be discovered


def discovery_limit(timeout_s: float) -> float:
    """How long a call with this limit waits for its server to be discovered: no longer than the
    call itself may take, and at most DISCOVERY_S."""
    return min(timeout_s, DISCOVERY_S)


def call_service(client, request, timeout_s: float = 5.0, clock=None, discovery_s: float | None = None,
                 heartbeat: Heartbeat | None = None) -> Any:
    """The reply; `discovery_s` (default: `discovery_limit(timeout_s)`) is how long the server may
    take to be discovered; with the `heartbeat` of its node, a server that dies fails the call at once."""
    if not client.wait_for_service(timeout_sec=discovery_limit(timeout_s) if discovery_s is None else discovery_s):
        raise CallFailed(f"service {client.srv_name} is not available", CallKind.UNAVAILABLE)
    server_alive = heartbeat.watch(client.service_is_ready) if heartbeat is not None else None
    return wait_future(client.call_async(request), timeout_s, f"service {client.srv_name}", clock=clock,
                       server_alive=server_alive)


CANCEL_WAIT_S = 5.0   # how long a timed-out goal may take to end after its cancel


ALIVE_POLL_S = 0.1   # how often a wait for a node's process looks again


class Heartbeat:
    """Whether the process of a node (`server_node`, resolved in the watching node's namespace)
    lives on, from the liveliness of its `~/alive` publisher. `losses` counts the processes behind it
    that went away, so a call can tell that the one holding its goal died even when a restarted one
    has taken its place under the same name. A process that comes back to life is no loss: one
    starved of the CPU for longer than the lease (a loaded machine) misses it and asserts again."""

    def __init__(self, node, server_node: str):
        self.losses = 0
        self.alive_count: int | None = None  # none heard yet: nodes of one process share a participant,
        # whose own publishers' liveliness DDS does not report to it
        self._node = node
        self._subscription = node.create_subscription(
            Empty, alive_topic(server_node), lambda _: None, ALIVE,
            event_callbacks=SubscriptionEventCallbacks(liveliness=self._changed),
            callback_group=MutuallyExclusiveCallbackGroup())

    def alive_within(self, timeout_s: float) -> bool:
        """Whether a process of the node lives, waiting up to `timeout_s` for it: by the liveliness of
        its `~/alive`, or, where that is never reported (the same process), by its publisher in the graph."""
        deadline = time.monotonic() + timeout_s
        while True:
            heard = self.alive_count
            alive = heard > 0 if heard is not None else \
                self._node.count_publishers(self._subscription.topic_name) > 0
            if alive or time.monotonic() >= deadline:
                return alive
            time.sleep(ALIVE_POLL_S)

    def _changed(self, info) -> None:
        self.alive_count = info.alive_count
        if info.alive_count_change < 0:
            self.losses -= info.alive_count_change
        # A restarted process is a new publisher: it adds to the alive count without leaving not-alive.
        self.losses -= max(min(info.alive_count_change, -info.not_alive_count_change), 0)

    def watch(self, ready: Callable[[], bool]) -> Callable[[], bool]:
        """A check that the server (`ready`: whether its client sees it) is still the one it is now:
        false once it has died since, or while its process is not alive (one already dead when
        the watch began stays in the graph for a while). A process that had missed its lease when
        the watch began and then revives brings the count below where it was: it is still the
        same server."""
        losses = self.losses
        return lambda: ready() and self.losses <= losses and self.alive_count != 0


class ActionCall:
    """Send one goal and wait for its result from a worker thread; cancel() from any thread. The
    result's time limit runs on `clock` (the calling node's, see Deadline) when given; the server
    may take `discovery_s` to be discovered."""

    def __init__(self, client: ActionClient, name: str, clock=None, heartbeat: Heartbeat | None = None,
                 discovery_s: float = DISCOVERY_S):
        self.client = client
        self.name = name
        self.clock = clock
        self.heartbeat = heartbeat
        self.discovery_s = discovery_s
        self.goal_handle = None

    def run(self, goal, timeout_s: float, feedback_callback=None, stop: threading.Event | None = None):
        """The result; the goal is canceled when it takes longer than `timeout_s` or `stop` is set,
        even if that happened before the goal was sent."""
        if not self.client.wait_for_server(timeout_sec=self.discovery_s):
            raise CallFailed(f"action {self.name} is not available", CallKind.UNAVAILABLE)
        server_alive = self.client.server_is_ready if self.heartbeat is None else self.heartbeat.watch(self.client.server_is_ready)
        self.goal_handle = wait_future(self.client.send_goal_async(goal, feedback_callback=feedback_callback),
                                       10.0, f"action {self.name} goal", server_alive=server_alive)
        if not self.goal_handle.accepted:
            raise CallFailed(f"action {self.name} rejected the goal", CallKind.REJECTED)
        result = self.goal_handle.get_result_async()
        try:
            return wait_future(result, timeout_s, f"action {self.name}", give_up=False, stop=stop,
                               clock=self.clock, server_alive=server_alive).result
        except CallFailed as error:
            # Cancel, and give the server a moment to wind the goal down, so that the next goal
            # does not find the robot still busy with this one (a server that went away cannot).
            self.cancel()
            if error.kind != CallKind.UNAVAILABLE:
                try:
                    wait_future(result, CANCEL_WAIT_S, f"action {self.name} cancel")
                except CallFailed:
                    pass
            raise

    def cancel(self) -> None:
        if self.goal_handle is not None:
            self.goal_handle.cancel_goal_async()


def wait_until(predicate, timeout_s: float, period_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(period_s)
    return predicate()
