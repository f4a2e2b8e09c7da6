"""The watchdog stops what the executor left moving: against an action server that, like Nav2's or
a trajectory controller's, goes on with a goal whose client died, over DDS."""

import os
import signal
import subprocess
import sys
import time

import pytest
from rclpy.action import ActionServer, CancelResponse
from std_msgs.msg import Bool, String

from conftest import RosClient, wait_for, write_config
from planner.action import Say
from planner.config import load_config
from planner.core.motion_guard import motion_actions, running
from planner.ros.nodes.watchdog import WatchdogNode

GOAL_RUNS_S = 30.0    # a goal of the double runs this long unless canceled
SHORT = "short"       # ... or this long, a goal that says so
SHORT_S = 1.0


class MotionDouble:
    """An action server that runs each goal until it is canceled or its time is up, whoever sent it
    and whether or not they are still there. Say stands in for a motion action's type."""

    def __init__(self, node, name: str):
        self.ended: dict[str, str] = {}   # goal text → 'canceled' or 'done'
        self.started: list[str] = []
        ActionServer(node, Say, name, self._execute, cancel_callback=lambda _: CancelResponse.ACCEPT)

    def _execute(self, goal_handle):
        text = goal_handle.request.text
        self.started.append(text)
        end = time.monotonic() + (SHORT_S if text == SHORT else GOAL_RUNS_S)
        while time.monotonic() < end:
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                self.ended[text] = "canceled"
                return Say.Result(success=False, message="canceled")
            time.sleep(0.02)
        goal_handle.succeed()
        self.ended[text] = "done"
        return Say.Result(success=True)


@pytest.fixture
def guarded(ros, tmp_path):
    """The watchdog with Say as the type of a motion action, a double serving it, and a client."""
    import rclpy

    config = load_config(write_config(tmp_path, watchdog={"action_types": ["planner/action/Say"]}))
    client = RosClient("watchdog_test")
    status = client.collect(String, "/planner/status")
    server_node = client.add(rclpy.create_node("motion_double"))
    double = MotionDouble(server_node, "/arm_controller/motion")
    watchdog = client.add(WatchdogNode(config))
    wait_for(lambda: "/arm_controller/motion" in watchdog.cancel_clients
             and watchdog.cancel_clients["/arm_controller/motion"].service_is_ready(), 10)
    yield client, double, status, watchdog
    client.close()


def send(client, text: str):
    """The goal sent, from a client that stays; its result future."""
    action = client.action_client(Say, "/arm_controller/motion")
    assert action.wait_for_server(timeout_sec=10)
    sent = action.send_goal_async(Say.Goal(text=text))
    wait_for(lambda: sent.done(), 10)
    assert sent.result().accepted
    return sent.result().get_result_async()


def test_only_the_robots_motion_actions_are_guarded():
    graph = [("/navigate_to_pose", ["nav2_msgs/action/NavigateToPose"]),
             ("/robot2/navigate_to_pose", ["nav2_msgs/action/NavigateToPose"]),
             ("/robot1/navigate_to_pose", ["nav2_msgs/action/NavigateToPose"]),
             ("/robot1/arm_controller/follow_joint_trajectory", ["control_msgs/action/FollowJointTrajectory"]),
             ("/robot1/executor/execute_commands", ["planner/action/ExecuteCommands"])]
    patterns = ["nav2_msgs/action/*", "control_msgs/action/FollowJointTrajectory"]
    assert motion_actions(graph, patterns, "/robot1") == ["/robot1/arm_controller/follow_joint_trajectory",
                                                         "/robot1/navigate_to_pose"]
    assert motion_actions(graph, patterns, "/") == ["/navigate_to_pose", "/robot1/arm_controller/follow_joint_trajectory",
                                                   "/robot1/navigate_to_pose", "/robot2/navigate_to_pose"]
    assert running([4, 2]) and not running([4, 5, 6, 3])


def test_the_emergency_stop_cancels_motion_goals_whoever_sent_them_until_it_is_released(guarded):
    client, double, status, _ = guarded
    estop = client.node.create_publisher(Bool, "/emergency_stop", 10)
    wait_for(lambda: client.node.count_subscribers("/emergency_stop") >= 1)
    first = send(client, "first")
    wait_for(lambda: "first" in double.started)
    estop.publish(Bool(data=True))
    pressed = time.monotonic()
    wait_for(lambda: double.ended.get("first") == "canceled", 5)
    print(f"canceled {time.monotonic() - pressed:.2f} s after the stop")
    wait_for(lambda: first.done(), 5)
    wait_for(lambda: any("the emergency stop is engaged: canceled 1 goal(s) of /arm_controller/motion" in s.data
                         for s in status), 5)
    # A goal sent while the stop is engaged is canceled as soon as it runs.
    send(client, "while stopped")
    wait_for(lambda: double.ended.get("while stopped") == "canceled", 5)
    estop.publish(Bool(data=False))
    time.sleep(0.5)
    done = send(client, SHORT)
    wait_for(lambda: done.done(), 10)
    assert double.ended[SHORT] == "done"


EXECUTOR = """
import sys
from planner.config import load_config
from planner.ros.node import main_for
from planner.ros.nodes.executor import ExecutorNode
sys.exit(main_for(lambda: ExecutorNode(load_config(sys.argv[1]))))
"""


def test_a_motion_goal_is_canceled_when_the_executor_dies_and_not_otherwise(guarded, tmp_path):
    """The executor's process killed: a goal it left running would go on (Nav2, a trajectory
    controller); the watchdog hears the executor's liveliness end and cancels it."""
    client, double, status, watchdog = guarded
    executor = subprocess.Popen([sys.executable, "-c", EXECUTOR, str(write_config(tmp_path))],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: watchdog.executor_alive.alive_count == 1, 60)
        send(client, "left running")
        wait_for(lambda: "left running" in double.started)
        time.sleep(1.5)
        assert "left running" not in double.ended   # a live executor: nothing is canceled
        os.kill(executor.pid, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: double.ended.get("left running") == "canceled", 10)
        print(f"canceled {time.monotonic() - killed:.1f} s after the kill")
        wait_for(lambda: any("the executor died: canceled 1 goal(s)" in s.data for s in status), 5)
    finally:
        executor.kill()
        executor.wait(timeout=30)
