"""Under use_sim_time the robot's work is timed in simulated seconds: a Gazebo that runs slower than
real time, or is paused, does not time out a skill the robot is still carrying out."""

import threading
import time

import pytest

from conftest import RosClient, wait_for


@pytest.fixture
def sim_time_node(ros):
    """A node following /clock, a publisher of /clock, and a Say action server that never ends a goal
    by itself (a skill still running) but stops when canceled."""
    import rclpy
    from rclpy.action import ActionClient, ActionServer, CancelResponse
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from planner.action import Say

    client = RosClient("sim_time_client")
    node = rclpy.create_node("sim_time_user", parameter_overrides=[Parameter("use_sim_time", value=True)])
    skill = ActionClient(node, Say, "endless_skill")  # before its node spins: see RosClient.action_client
    client.add(node)
    clock_pub = client.node.create_publisher(Clock, "/clock", 10)
    released = threading.Event()

    def execute(goal_handle):
        while not goal_handle.is_cancel_requested and not released.is_set():
            time.sleep(0.02)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return Say.Result(success=not goal_handle.is_cancel_requested)

    ActionServer(client.node, Say, "endless_skill", execute, cancel_callback=lambda _: CancelResponse.ACCEPT)

    def publish_clock(seconds: float):
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = int(seconds), int(seconds % 1 * 1e9)
        clock_pub.publish(msg)

    try:
        yield node, skill, publish_clock, released
    finally:
        released.set()
        client.close()


def run_in_background(node, skill, timeout_s: float):
    """An ActionCall on `node`'s clock to the endless skill; what it raised or returned."""
    from planner.action import Say
    from planner.ros.futures import ActionCall

    outcome: dict = {}

    def call():
        try:
            outcome["result"] = ActionCall(skill, "endless_skill", node.get_clock()).run(Say.Goal(text="x"), timeout_s)
        except Exception as error:  # noqa: BLE001 - the test looks at what it was
            outcome["error"] = error

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, outcome


def test_a_skill_time_limit_counts_simulated_seconds(sim_time_node):
    from planner.ros.futures import CallKind

    node, skill, publish_clock, _ = sim_time_node
    publish_clock(100.0)
    wait_for(lambda: node.get_clock().now().nanoseconds == 100 * 10**9)
    thread, outcome = run_in_background(node, skill, timeout_s=1.0)
    # Three wall seconds with the simulation paused: the skill is still running.
    thread.join(timeout=3.0)
    assert thread.is_alive() and not outcome
    publish_clock(100.5)
    thread.join(timeout=2.0)
    assert thread.is_alive() and not outcome
    # Past the limit in simulated time: the call gives up at once, as a timeout.
    publish_clock(101.5)
    thread.join(timeout=10.0)
    assert not thread.is_alive()
    assert outcome["error"].kind == CallKind.TIMEOUT and "no answer within 1 s" in str(outcome["error"])


def test_before_the_first_clock_message_time_limits_run_on_the_wall_clock(sim_time_node):
    """A stack started with use_sim_time and no simulator publishing /clock reports the timeout
    instead of waiting for ever."""
    from planner.ros.futures import CallKind

    node, skill, _, _ = sim_time_node
    thread, outcome = run_in_background(node, skill, timeout_s=1.0)
    thread.join(timeout=15.0)
    assert not thread.is_alive() and outcome["error"].kind == CallKind.TIMEOUT


@pytest.mark.timeout(120)
def test_with_the_built_in_simulator_the_stack_runs_on_the_clock_it_publishes(ros):
    """use_sim_time:=true sim:=true: the simulator keeps its own clock and publishes it on /clock; a
    node on simulated time follows it."""
    import os
    import subprocess

    import rclpy
    from rclpy.parameter import Parameter

    from conftest import DATA
    from planner.cli.stack import node_command
    from planner.ros.stack import stack_nodes

    nodes = {node.name: node for node in stack_nodes({"use_sim_time": "true", "config": str(DATA / "scripted.yaml")})}
    assert nodes["simulator"].parameters["use_sim_time"] is False and nodes["simulator"].parameters["publish_clock"]
    assert all(node.parameters["use_sim_time"] is True for name, node in nodes.items() if name != "simulator")
    simulator = subprocess.Popen(node_command(nodes["simulator"], "warn"), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env={**os.environ, **nodes["simulator"].env})
    client = RosClient("clock_follower_spinner")
    follower = client.add(rclpy.create_node("clock_follower", parameter_overrides=[Parameter("use_sim_time", value=True)]))
    try:
        assert follower.get_clock().now().nanoseconds == 0   # no /clock yet
        wait_for(lambda: follower.get_clock().now().nanoseconds > 0, 60)
        assert abs(follower.get_clock().now().nanoseconds * 1e-9 - time.time()) < 5.0   # the simulator's own clock
    finally:
        simulator.terminate()
        simulator.wait(timeout=30)
        client.close()
