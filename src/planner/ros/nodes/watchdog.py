"""Watchdog node: what moves the robot stops when the executor dies or the emergency stop is engaged.

The executor cancels its own goals on the stop, but a goal it left running when it died has nobody
to cancel it: Nav2 drives on to the goal of a client that vanished, a controller plays out its
trajectory. This node, a process of its own, cancels the goals of every motion action of the robot
(planner.core.motion_guard: by type, in the robot's namespace; the built-in simulator's stand-ins
too): all of them when the executor's liveliness is lost, and each one that runs while the stop is
engaged, whoever sent it. A cancel goes to the action's own cancel service with an empty goal id,
which by the ROS 2 action protocol cancels every goal of that server."""

from __future__ import annotations

from action_msgs.msg import GoalStatusArray
from action_msgs.srv import CancelGoal
from rclpy.action import get_action_names_and_types
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import qos_profile_action_status_default

from planner.core.motion_guard import motion_actions, running
from planner.ros.estop import EmergencyStopLatch
from planner.ros.futures import Heartbeat
from planner.ros.node import PlannerNode, main_for

SCAN_PERIOD_S = 1.0   # how often the graph is searched for motion actions that appeared
WATCH_PERIOD_S = 0.1  # how often the executor's liveliness is looked at


class WatchdogNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("watchdog", config)
        self.group = MutuallyExclusiveCallbackGroup()
        self.cancel_clients: dict[str, object] = {}
        self.status_subscriptions: dict[str, object] = {}
        self.executor_alive = Heartbeat(self, "executor")
        self.losses_seen = 0
        self.estop = EmergencyStopLatch(self, self.group, self._on_estop)
        self.create_timer(SCAN_PERIOD_S, self._scan, callback_group=self.group)
        self.create_timer(WATCH_PERIOD_S, self._watch_executor, callback_group=self.group)
        self._scan()

    def _scan(self) -> None:
        """Follow the motion actions that have appeared in the graph."""
        found = motion_actions(get_action_names_and_types(self), self.config.watchdog.action_types,
                               self.get_namespace())
        for name in found:
            if name in self.cancel_clients:
                continue
            self.cancel_clients[name] = self.create_client(CancelGoal, f"{name}/_action/cancel_goal",
                                                           callback_group=self.group)
            self.status_subscriptions[name] = self.create_subscription(
                GoalStatusArray, f"{name}/_action/status", lambda msg, name=name: self._on_status(name, msg),
                qos_profile_action_status_default, callback_group=self.group)
            self.get_logger().info(f"guarding {name}")

    def _on_status(self, name: str, msg: GoalStatusArray) -> None:
        if self.estop.engaged.is_set() and running([status.status for status in msg.status_list]):
            self._cancel([name], "the emergency stop is engaged")

    def _on_estop(self, engaged: bool) -> None:
        if engaged:
            self._cancel(list(self.cancel_clients), "the emergency stop is engaged")

    def _watch_executor(self) -> None:
        if self.executor_alive.losses > self.losses_seen:
            self.losses_seen = self.executor_alive.losses
            self._cancel(list(self.cancel_clients), "the executor died")

    def _cancel(self, names: list[str], why: str) -> None:
        """Every goal of these actions canceled; said for each action that had one."""
        for name in names:
            client = self.cancel_clients[name]
            if not client.service_is_ready():
                continue
            future = client.call_async(CancelGoal.Request())   # an empty goal id and stamp: all goals
            future.add_done_callback(lambda done, name=name: self._canceled(name, why, done))

    def _canceled(self, name: str, why: str, done) -> None:
        reply = done.result()
        if reply is not None and reply.goals_canceling:
            self.report("warn", f"{why}: canceled {len(reply.goals_canceling)} goal(s) of {name}")


def main() -> int:
    return main_for(WatchdogNode)
