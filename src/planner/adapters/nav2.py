"""Navigation through Nav2's Simple Commander (nav2_simple_commander.BasicNavigator): a navigate
command becomes a NavigateToPose goal in the map frame, a look_around command a full turn on the
spot (Nav2's Spin behavior); feedback is watched for timeouts and stalls, and the result and
error code become our failure codes.

nav2_simple_commander is imported only when this backend is chosen; tests drive the adapter
with a double of BasicNavigator's methods."""

from __future__ import annotations

import math
import threading

from geometry_msgs.msg import PoseStamped
from pydantic import Field

from planner.core.controller import StallDetector
from planner.core.failures import FailureCode
from planner.core.files import StrictModel
from planner.core.geometry import Pose2D
from planner.core.skills import Command
from planner.core.types import Outcome


class Nav2Settings(StrictModel):
    node_name: str = "planner_navigator"
    stall_window_s: float = Field(default=20.0, gt=0, description="a goal is canceled as stalled when the distance "
                                                                   "to go has not shrunk by stall_min_progress_m in this time")
    stall_min_progress_m: float = Field(default=0.1, gt=0)
    ready_timeout_s: float = Field(default=30.0, gt=0, description="how long a command waits for Nav2's action server "
                                                                   "to be up before it fails as unavailable")
    initial_pose: tuple[float, float, float] | None = Field(
        default=None, description="x, y, yaw in the map frame given to the localizer once at start-up (AMCL without "
                                  "one); none: the robot's localizer is trusted as it is")

# Nav2 error codes (nav2_msgs actions: FollowPath 1xx, ComputePathToPose 2xx,
# ComputePathThroughPoses 3xx, NavigateToPose 9xxx) → our failure codes.
NAV2_ERRORS = {
    102: FailureCode.LOCALIZATION_LOST, 202: FailureCode.LOCALIZATION_LOST, 302: FailureCode.LOCALIZATION_LOST,
    9002: FailureCode.LOCALIZATION_LOST,
    104: FailureCode.PATH_BLOCKED, 105: FailureCode.PATH_BLOCKED, 106: FailureCode.PATH_BLOCKED,
    107: FailureCode.TIMEOUT, 9003: FailureCode.TIMEOUT,
    203: FailureCode.START_BLOCKED, 205: FailureCode.START_BLOCKED, 303: FailureCode.START_BLOCKED, 305: FailureCode.START_BLOCKED,
    204: FailureCode.GOAL_OUTSIDE_MAP, 304: FailureCode.GOAL_OUTSIDE_MAP,
    206: FailureCode.GOAL_IN_COLLISION, 306: FailureCode.GOAL_IN_COLLISION,
    207: FailureCode.NO_PATH, 208: FailureCode.NO_PATH, 307: FailureCode.NO_PATH, 308: FailureCode.NO_PATH,
}


def pose_stamped(pose: Pose2D, frame_id: str, stamp) -> PoseStamped:
    """A planar base pose as a PoseStamped: yaw about z as a quaternion (x, y, z, w)."""
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    msg.pose.position.x, msg.pose.position.y = float(pose.x), float(pose.y)
    msg.pose.orientation.z, msg.pose.orientation.w = math.sin(pose.yaw / 2), math.cos(pose.yaw / 2)
    return msg


def task_error(navigator) -> tuple[int, str]:
    """The failed task's error code and message: getTaskError() where the Simple Commander has it
    (Kilted and later), else the result message of the action."""
    if hasattr(navigator, "getTaskError"):
        code, message = navigator.getTaskError()
        return int(code or 0), str(message or "")
    future = getattr(navigator, "result_future", None)
    result = getattr(future.result(), "result", None) if future is not None and future.done() else None
    return int(getattr(result, "error_code", 0) or 0), str(getattr(result, "error_msg", "") or "")


READY_POLL_S = 0.5   # how often a command waiting for Nav2 looks again (and at its stop)


class Nav2Navigation:
    """Runs navigate and look_around commands on a BasicNavigator, one goal at a time."""

    def __init__(self, navigator, frame_id: str = "map", stall_window_s: float = 20.0, stall_min_progress_m: float = 0.1,
                 ready_timeout_s: float = 30.0):
        self.navigator = navigator
        self.frame_id = frame_id
        self.stall_window_s = stall_window_s
        self.stall_min_progress_m = stall_min_progress_m
        self.ready_timeout_s = ready_timeout_s

    def clock(self) -> float:
        """The navigator node's time: simulated under use_sim_time, so a Gazebo slower than real time
        does not time goals out or take them for stalled."""
        return self.navigator.get_clock().now().nanoseconds * 1e-9

    @classmethod
    def connect(cls, node_name: str, initial_pose: tuple[float, float, float] | None = None, **settings) -> Nav2Navigation:
        """The commander's node, at once: Nav2 is waited for by each command, not here, so the
        executor starts (and answers, and stops) whether or not Nav2 is up yet. The commander's own
        start-up wait is not used: for AMCL it publishes an initial pose at the map origin first."""
        from nav2_simple_commander.robot_navigator import BasicNavigator

        navigator = BasicNavigator(node_name=node_name)
        navigation = cls(navigator, **settings)
        if initial_pose is not None:
            navigator.setInitialPose(pose_stamped(Pose2D(*initial_pose), navigation.frame_id,
                                                  navigator.get_clock().now().to_msg()))
        return navigation

    def ready(self, client, stop: threading.Event) -> bool:
        """Whether the action server behind `client` answers within ready_timeout_s (False at once on stop)."""
        waited = 0.0
        while not client.wait_for_server(timeout_sec=READY_POLL_S):
            waited += READY_POLL_S
            if stop.is_set() or waited >= self.ready_timeout_s:
                return False
        return True

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        """One command; `stop` set at any time, even before it started, cancels it."""
        spin = command.name == "look_around"
        client = self.navigator.spin_client if spin else self.navigator.nav_to_pose_client
        if not self.ready(client, stop):
            if stop.is_set():
                return Outcome(False, FailureCode.CANCELED, "canceled")
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE,
                           f"Nav2's {'spin' if spin else 'navigate_to_pose'} action is not up after "
                           f"{self.ready_timeout_s:.0f} s (executor.nav2.ready_timeout_s): is Nav2 running and active?")
        if spin:
            where = "the turn on the spot"
            accepted = self.navigator.spin(spin_dist=2 * math.pi, time_allowance=int(command.timeout_s))
        else:
            goal = pose_stamped(command.base_pose, self.frame_id, self.navigator.get_clock().now().to_msg())
            where = f"the drive to ({command.base_pose.x:.2f}, {command.base_pose.y:.2f})"
            accepted = self.navigator.goToPose(goal)
        if not accepted:
            return Outcome(False, FailureCode.BACKEND_UNAVAILABLE, f"Nav2 rejected {where}")
        started = self.clock()
        stall = StallDetector(self.stall_window_s, self.stall_min_progress_m)
        # The commander keeps the last goal's feedback until new feedback comes, and Nav2 reports 0 m
        # to go before it has a path: neither says anything about this drive's progress.
        stale = self.navigator.getFeedback()
        while not self.navigator.isTaskComplete():
            now = self.clock()
            stopped = None
            feedback = self.navigator.getFeedback()
            remaining = float(getattr(feedback, "distance_remaining", 0.0) or 0.0)
            if stop.is_set():
                stopped = Outcome(False, FailureCode.CANCELED, "canceled")
            elif now - started > command.timeout_s:
                stopped = Outcome(False, FailureCode.TIMEOUT, f"{where} did not end within {command.timeout_s:.0f} s")
            elif feedback is not stale and remaining > 0 and stall.update(now, remaining):
                stopped = Outcome(False, FailureCode.STALLED, f"{remaining:.2f} m still to go on {where}, less "
                                                           f"than {self.stall_min_progress_m} m closer in "
                                                           f"{self.stall_window_s:.0f} s")
            if stopped is not None:
                self.navigator.cancelTask()
                return stopped
        return self._outcome(where)

    def _outcome(self, where: str) -> Outcome:
        result = self.navigator.getResult()
        status = getattr(result, "name", str(result))  # a TaskResult enum member
        if status == "SUCCEEDED":
            return Outcome(True)
        if status == FailureCode.CANCELED:
            return Outcome(False, FailureCode.CANCELED, "Nav2 canceled the goal")
        code, message = task_error(self.navigator)
        detail = f"Nav2 error {code} during {where}" + (f": {message}" if message else "")
        return Outcome(False, NAV2_ERRORS.get(code, FailureCode.NAVIGATION_ABORTED), detail)
