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
    localizer: str = Field(default="amcl", min_length=1,
                           description="the lifecycle node that localizes the robot, waited for at start-up: amcl "
                                       "(then also an initial pose), slam_toolbox, ...; none: wait for the navigator only")

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


NAVIGATOR_NODE = "bt_navigator"


def wait_until_active(navigator, localizer: str) -> None:
    """Wait for Nav2's lifecycle nodes. The commander waits for the localizer named, and for AMCL
    also for an initial pose, so the default would never return with another localizer; with
    none, the navigator is the only node to wait for."""
    navigator.waitUntilNav2Active(navigator=NAVIGATOR_NODE,
                                  localizer=NAVIGATOR_NODE if localizer == "none" else localizer)


class Nav2Navigation:
    """Runs navigate and look_around commands on a BasicNavigator, one goal at a time."""

    def __init__(self, navigator, frame_id: str = "map", stall_window_s: float = 20.0, stall_min_progress_m: float = 0.1):
        self.navigator = navigator
        self.frame_id = frame_id
        self.stall_window_s = stall_window_s
        self.stall_min_progress_m = stall_min_progress_m

    def clock(self) -> float:
        """The navigator node's time: simulated under use_sim_time, so a Gazebo slower than real time
        does not time goals out or take them for stalled."""
        return self.navigator.get_clock().now().nanoseconds * 1e-9

    @classmethod
    def connect(cls, node_name: str, localizer: str, **settings) -> Nav2Navigation:
        from nav2_simple_commander.robot_navigator import BasicNavigator

        navigator = BasicNavigator(node_name=node_name)
        wait_until_active(navigator, localizer)
        return cls(navigator, **settings)

    def run(self, command: Command, stop: threading.Event) -> Outcome:
        """One command; `stop` set at any time, even before it started, cancels it."""
        if command.name == "look_around":
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
