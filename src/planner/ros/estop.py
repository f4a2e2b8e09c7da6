"""The emergency stop as every node that moves the robot or starts work holds it.

True on /emergency_stop (std_msgs/Bool, from any publisher: a button's driver, `ros2 topic pub`)
engages it and false releases it. A publisher of /emergency_stop may have no history for a node
that starts later, so each node that holds the stop publishes it, stamped with when it was first
heard, on /emergency_stop/state, latched: a node that (re)starts reads the newest state from any
node still alive before it accepts work, and a stop pressed while the executor was dead still
stops the simulator's motion and is still engaged when the executor comes back."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from std_msgs.msg import Bool

from planner.msg import EmergencyStop
from planner.ros.convert import seconds, to_stamp
from planner.ros.qos import ESTOP_STATE_TOPIC, ESTOP_TOPIC, LATCHED, RELIABLE

STATE_DISCOVERY_S = 2.0   # how long a node that just started waits to hear a stop held elsewhere
CLOCK_SKEW_S = 5.0        # a state stamped further ahead than this is not believed: it would outlast every press


class EmergencyStopLatch:
    def __init__(self, node, callback_group, on_change: Callable[[bool], None]):
        """`on_change(engaged)` is called once per change, from a subscription's thread."""
        self.engaged = threading.Event()
        self._on_change = on_change
        self._lock = threading.Lock()
        self._stamp = float("-inf")
        self._started = time.monotonic()
        self._heard = threading.Event()
        self._state_pub = node.create_publisher(EmergencyStop, ESTOP_STATE_TOPIC, LATCHED)
        node.create_subscription(Bool, ESTOP_TOPIC, self._pressed, RELIABLE, callback_group=callback_group)
        node.create_subscription(EmergencyStop, ESTOP_STATE_TOPIC, self._held, LATCHED, callback_group=callback_group)

    def _pressed(self, msg: Bool) -> None:
        """A press is the newest news there is, whatever the stamps held."""
        with self._lock:
            stamp = max(time.time(), self._stamp + 1e-6)
        self._take(msg.data, stamp)

    def _held(self, msg: EmergencyStop) -> None:
        stamp = seconds(msg.stamp)
        if math.isfinite(stamp) and stamp <= time.time() + CLOCK_SKEW_S:
            self._take(msg.engaged, stamp)

    def _take(self, engaged: bool, stamp: float) -> None:
        """A state heard; older news than what is held is dropped (the latched copies of every node
        come back to each other)."""
        with self._lock:
            if stamp <= self._stamp:
                return
            self._stamp = stamp
            changed = engaged != self.engaged.is_set()
            if engaged:
                self.engaged.set()
            else:
                self.engaged.clear()
            self._heard.set()
        self._state_pub.publish(EmergencyStop(stamp=to_stamp(stamp), engaged=engaged))
        if changed:
            self._on_change(engaged)

    def settled(self) -> bool:
        """Whether the stop is engaged, once the node has had time to hear one held elsewhere: a
        node that just (re)started waits up to STATE_DISCOVERY_S before it answers."""
        if not self._heard.is_set():
            self._heard.wait(max(self._started + STATE_DISCOVERY_S - time.monotonic(), 0.0))
        return self.engaged.is_set()
