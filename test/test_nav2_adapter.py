"""The Nav2 adapter against a double of nav2_simple_commander's BasicNavigator: the goal it
sends, and how Nav2's results, error codes, feedback and our cancel become command outcomes."""

import enum
import math
import threading
from types import SimpleNamespace

import pytest
from builtin_interfaces.msg import Time

from planner.adapters.nav2 import Nav2Navigation
from planner.core.geometry import Pose2D
from planner.core.skills import Command


class TaskResult(enum.Enum):  # as nav2_simple_commander.robot_navigator.TaskResult
    UNKNOWN = 0
    SUCCEEDED = 1
    CANCELED = 2
    FAILED = 3


class FakeNavigator:
    """BasicNavigator's polling interface: each isTaskComplete() call is one 0.1 s feedback tick
    with the next distance remaining; the task ends after the last one with `result`."""

    def __init__(self, distances=(3.0, 2.0, 1.0), result=TaskResult.SUCCEEDED, error=(0, ""), accept=True,
                 old_api=False, servers_up=True):
        self.distances = list(distances)
        # The commander's action clients: whether Nav2's servers answer, and how long was waited for them.
        self.waited = 0.0

        def wait_for_server(timeout_sec):
            self.waited += timeout_sec
            return servers_up
        self.nav_to_pose_client = self.spin_client = SimpleNamespace(wait_for_server=wait_for_server)
        self.result, self.error, self.accept = result, error, accept
        self.now = 0.0
        self.goals, self.canceled = [], 0
        self.feedback = None
        if old_api:  # before Kilted: no getTaskError, the error code is in the action result
            self.result_future = SimpleNamespace(done=lambda: True, result=lambda: SimpleNamespace(
                result=SimpleNamespace(error_code=error[0], error_msg=error[1])))
        else:
            self.getTaskError = lambda: self.error

    def get_clock(self):  # the node's clock: simulated time, advanced by the feedback ticks
        return SimpleNamespace(now=lambda: SimpleNamespace(to_msg=lambda: Time(sec=int(self.now)),
                                                           nanoseconds=round(self.now * 1e9)))

    def goToPose(self, pose, behavior_tree=""):
        self.goals.append(pose)
        return self.accept

    def spin(self, spin_dist=1.57, time_allowance=10, disable_collision_checks=False):
        self.goals.append(("spin", spin_dist, time_allowance))
        return self.accept

    def isTaskComplete(self):
        if self.canceled:
            return True
        if not self.distances:
            return True
        self.now += 0.1
        distance = self.distances.pop(0)
        if distance is not None:  # None: no feedback in this tick
            self.feedback = SimpleNamespace(distance_remaining=distance)
        return False

    def getFeedback(self):
        return self.feedback

    def cancelTask(self):
        self.canceled += 1
        self.result = TaskResult.CANCELED

    def getResult(self):
        return self.result


def navigate(navigator, timeout_s=60.0, **settings):
    adapter = Nav2Navigation(navigator, **settings)
    command = Command("navigate", base_pose=Pose2D(1.5, -2.0, math.pi / 2), timeout_s=timeout_s)
    return adapter, adapter.run(command, threading.Event())


def test_the_goal_is_the_approach_pose_in_the_map_frame():
    navigator = FakeNavigator()
    _, outcome = navigate(navigator)
    assert outcome.ok
    goal = navigator.goals[0]
    assert goal.header.frame_id == "map"
    assert (goal.pose.position.x, goal.pose.position.y, goal.pose.position.z) == (1.5, -2.0, 0.0)
    q = goal.pose.orientation
    assert (q.x, q.y) == (0.0, 0.0) and q.z == pytest.approx(math.sqrt(0.5)) and q.w == pytest.approx(math.sqrt(0.5))


@pytest.mark.parametrize("code, ours", [
    (208, "NO_PATH"), (206, "GOAL_IN_COLLISION"), (204, "GOAL_OUTSIDE_MAP"), (105, "PATH_BLOCKED"),
    (104, "PATH_BLOCKED"), (102, "LOCALIZATION_LOST"), (205, "START_BLOCKED"), (9003, "TIMEOUT"),
    (9000, "NAVIGATION_ABORTED"), (0, "NAVIGATION_ABORTED")])
def test_nav2_error_codes_become_failure_codes_with_nav2s_message(code, ours):
    _, outcome = navigate(FakeNavigator(result=TaskResult.FAILED, error=(code, "planner says no")))
    assert (outcome.ok, outcome.code) == (False, ours)
    assert f"Nav2 error {code} during the drive to (1.50, -2.00)" in outcome.detail and "planner says no" in outcome.detail


def test_older_simple_commanders_give_the_error_code_in_the_action_result():
    _, outcome = navigate(FakeNavigator(result=TaskResult.FAILED, error=(208, "no path"), old_api=True))
    assert outcome.code == "NO_PATH" and "no path" in outcome.detail


def test_a_rejected_goal_is_reported_not_waited_for():
    navigator = FakeNavigator(accept=False)
    _, outcome = navigate(navigator)
    assert outcome.code == "BACKEND_UNAVAILABLE" and "rejected" in outcome.detail and navigator.canceled == 0


def test_no_arrival_in_time_cancels_the_goal():
    navigator = FakeNavigator(distances=[5.0 - 0.01 * i for i in range(100)])
    _, outcome = navigate(navigator, timeout_s=2.0)
    assert outcome.code == "TIMEOUT" and navigator.canceled == 1 and navigator.now == pytest.approx(2.0, abs=0.11)


def test_a_robot_that_stops_getting_closer_is_stalled_and_its_goal_canceled():
    navigator = FakeNavigator(distances=[3.0, 2.5, 2.0] + [1.98] * 60)
    _, outcome = navigate(navigator, stall_window_s=5.0, stall_min_progress_m=0.1)
    assert outcome.code == "STALLED" and navigator.canceled == 1
    assert "1.98 m still to go on the drive to (1.50, -2.00)" in outcome.detail
    assert 0.3 + 5.0 - 1e-6 <= navigator.now <= 0.3 + 5.1 + 1e-6  # progress ended at 2.0 m, 0.3 s in
    # Slow but steady progress is not a stall.
    _, outcome = navigate(FakeNavigator(distances=[3.0 - 0.03 * i for i in range(90)]), stall_window_s=5.0)
    assert outcome.ok


def test_looking_around_is_a_full_turn_on_the_spot_within_the_commands_time():
    navigator = FakeNavigator(distances=[])
    outcome = Nav2Navigation(navigator).run(
        Command("look_around", target_id="kitchen", timeout_s=30), threading.Event())
    assert outcome.ok and navigator.goals == [("spin", pytest.approx(2 * math.pi), 30)]
    navigator = FakeNavigator(distances=[], result=TaskResult.FAILED, error=(701, "collision ahead"))
    outcome = Nav2Navigation(navigator).run(
        Command("look_around", target_id="kitchen", timeout_s=30), threading.Event())
    assert not outcome.ok and outcome.detail == "Nav2 error 701 during the turn on the spot: collision ahead"


def test_a_stop_from_another_thread_cancels_nav2s_goal():
    navigator = FakeNavigator(distances=[3.0] * 1000)
    adapter = Nav2Navigation(navigator, stall_window_s=1e9)
    stop = threading.Event()
    original = navigator.isTaskComplete

    def tick():
        if navigator.now > 1.0 and not stop.is_set():
            threading.Thread(target=stop.set).start()
            threading.Event().wait(0.05)
        return original()
    navigator.isTaskComplete = tick
    outcome = adapter.run(Command("navigate", base_pose=Pose2D(0, 0, 0), timeout_s=60), stop)
    assert outcome.code == "CANCELED" and navigator.canceled == 1
    # A stop that came before the command started still cancels it: it never drives on.
    navigator = FakeNavigator(distances=[3.0] * 1000)
    outcome = Nav2Navigation(navigator).run(
        Command("navigate", base_pose=Pose2D(0, 0, 0), timeout_s=60), stop)
    assert outcome.code == "CANCELED" and navigator.canceled == 1 and navigator.now == pytest.approx(0.1)


def test_choosing_the_robot_backend_where_nav2_is_not_installed_says_what_is_missing(ros, tmp_path):
    from conftest import write_config
    from planner.config import load_config
    from planner.ros.nodes.executor import ExecutorNode

    config = load_config(write_config(tmp_path, executor={"backend": "robot"}))
    with pytest.raises(ValueError, match="executor.backend robot needs (tf2_ros, )?Nav2's nav2_simple_commander, "
                                         "MoveIt 2's moveit_py"):
        ExecutorNode(config)


def test_a_long_drive_is_not_taken_for_a_stall_by_the_last_goals_feedback_or_the_zero_before_a_path():
    navigator = FakeNavigator(distances=[1.0, 0.5, 0.2])
    adapter, outcome = navigate(navigator)
    assert outcome.ok and navigator.feedback.distance_remaining == 0.2
    # The next goal: 25 s with no feedback (the commander still holds 0.2 m), 5 s of "0 m" before
    # Nav2 has a path, then a 60 s drive from 12 m that makes steady progress.
    navigator.distances = [None] * 250 + [0.0] * 50 + [12.0 - 0.019 * tick for tick in range(600)]
    navigator.result = TaskResult.SUCCEEDED
    outcome = adapter.run(Command("navigate", base_pose=Pose2D(9.0, 0.0, 0.0), timeout_s=120.0), threading.Event())
    assert outcome.ok and navigator.canceled == 0 and not navigator.distances


def test_a_drive_that_stops_making_progress_after_a_path_is_still_a_stall():
    navigator = FakeNavigator(distances=[None] * 50 + [0.0] * 20 + [8.0, 7.5] + [7.45] * 300)
    _, outcome = navigate(navigator, timeout_s=120.0)
    assert (outcome.ok, outcome.code, navigator.canceled) == (False, "STALLED", 1)
    assert outcome.detail.startswith("7.45 m still to go")


def test_a_command_waits_for_nav2_only_so_long_and_then_says_it_is_not_up():
    navigator = FakeNavigator(servers_up=False)
    _, outcome = navigate(navigator, ready_timeout_s=3.0)
    assert (outcome.ok, outcome.code, navigator.goals) == (False, "BACKEND_UNAVAILABLE", [])
    assert "navigate_to_pose action is not up after 3 s (executor.nav2.ready_timeout_s)" in outcome.detail
    assert navigator.waited == pytest.approx(3.0)


def test_a_stop_ends_the_wait_for_nav2_at_once():
    navigator = FakeNavigator(servers_up=False)
    stop = threading.Event()
    stop.set()
    outcome = Nav2Navigation(navigator, ready_timeout_s=300.0).run(Command("look_around", timeout_s=30.0), stop)
    assert (outcome.ok, outcome.code, navigator.waited) == (False, "CANCELED", 0.5)


def test_start_up_publishes_no_initial_pose_unless_one_is_configured(monkeypatch):
    import sys
    import types

    poses = []

    class BasicNavigator(FakeNavigator):
        def __init__(self, node_name):
            super().__init__()

        def setInitialPose(self, pose):
            poses.append(pose)
    commander = types.ModuleType("nav2_simple_commander.robot_navigator")
    commander.BasicNavigator = BasicNavigator
    monkeypatch.setitem(sys.modules, "nav2_simple_commander", types.ModuleType("nav2_simple_commander"))
    monkeypatch.setitem(sys.modules, "nav2_simple_commander.robot_navigator", commander)
    Nav2Navigation.connect("planner_navigator", frame_id="map")
    assert poses == []
    Nav2Navigation.connect("planner_navigator", initial_pose=(2.0, 1.0, math.pi), frame_id="map")
    assert [(p.header.frame_id, p.pose.position.x, p.pose.position.y, round(p.pose.orientation.z, 6)) for p in poses] \
        == [("map", 2.0, 1.0, 1.0)]
