"""A node that dies while another waits on it: the wait ends promptly, naming what went away, instead of
running out a long time limit (a dead skill planner wedged the task planner for five minutes)."""

import signal
import subprocess
import sys
import threading
import time

from conftest import RosClient, wait_for

# A server in a process of its own, as every node of a stack runs: it takes 4 s over a goal. Each test
# names its own, so that no test hears of another's killed server, which DDS forgets only slowly.
PAUSABLE_SERVER = """
import sys
import time
import rclpy
from rclpy.action import ActionServer
from std_msgs.msg import Empty
from planner.action import Say
from planner.ros.qos import ALIVE

def execute(goal_handle):
    print("running", flush=True)
    time.sleep(4.0)
    goal_handle.succeed()
    return Say.Result(success=True)

rclpy.init()
name = sys.argv[1]
node = rclpy.create_node(name)
alive = node.create_publisher(Empty, "~/alive", ALIVE)
server = ActionServer(node, Say, f"{name}_skill", execute)
rclpy.spin(node)
"""


def test_a_call_whose_server_dies_ends_at_once_as_unavailable(ros):
    import rclpy
    from rclpy.action import ActionServer

    from planner.action import Say
    from planner.ros.futures import ActionCall, CallFailed, CallKind

    client = RosClient("supervision_client")
    server_node = client.add(rclpy.create_node("doomed_server"))
    running, finished = threading.Event(), threading.Event()

    def execute(goal_handle):
        running.set()
        while not finished.is_set() and not goal_handle.is_cancel_requested:
            time.sleep(0.05)
        goal_handle.abort()
        return Say.Result()

    server = ActionServer(server_node, Say, "doomed_skill", execute)
    outcome = {}

    def call():
        try:
            ActionCall(client.action_client(Say, "doomed_skill"), "doomed_skill").run(Say.Goal(text="x"), 300.0)
        except CallFailed as error:
            outcome["error"], outcome["at"] = error, time.monotonic()

    thread = threading.Thread(target=call, daemon=True)
    try:
        thread.start()
        assert running.wait(10)
        died = time.monotonic()
        server.destroy()
        client.executor.remove_node(server_node)
        server_node.destroy_node()
        client.extra.remove(server_node)
        thread.join(timeout=30)
        assert not thread.is_alive()
        assert outcome["error"].kind == CallKind.UNAVAILABLE and "went away" in str(outcome["error"])
        assert outcome["at"] - died < 15  # not the 300 s limit
    finally:
        finished.set()  # the server's callback still runs on the test's executor
        client.close()


def pausable_call(client, name: str):
    """A pausable server process named `name`, and a call on it from `client` run in a thread of its
    own: (server process, heartbeat on it, thread to start, outcome of the call)."""
    from planner.action import Say
    from planner.ros.futures import ActionCall, Heartbeat

    server = subprocess.Popen([sys.executable, "-c", PAUSABLE_SERVER, name], stdout=subprocess.PIPE, text=True)
    heartbeat = Heartbeat(client.node, f"/{name}")
    action = ActionCall(client.action_client(Say, f"{name}_skill"), f"{name}_skill", heartbeat=heartbeat)
    outcome = {}

    def call():
        try:
            outcome["result"] = action.run(Say.Goal(text="x"), 60.0)
        except Exception as error:  # noqa: BLE001 - the test reports it
            outcome["error"] = error

    return server, heartbeat, threading.Thread(target=call, daemon=True), outcome


def test_a_server_starved_of_the_cpu_for_longer_than_its_lease_is_waited_for_not_given_up(ros):
    """On a loaded machine a node's process can miss its liveliness lease and assert it again: the
    call on it is still running, and its result must be waited for (a CI run gave up on a live
    task planner this way)."""
    from planner.ros.qos import ALIVE_LEASE_S

    client = RosClient("starved_server_client")
    server, _, thread, outcome = pausable_call(client, "starved_server")
    try:
        time.sleep(3.0)  # the heartbeat subscription matches the server's publisher before the goal
        thread.start()
        assert server.stdout.readline().strip() == "running"
        server.send_signal(signal.SIGSTOP)    # as a process no core runs for a while
        time.sleep(ALIVE_LEASE_S * 1.7)
        server.send_signal(signal.SIGCONT)
        thread.join(timeout=30)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["result"].success
    finally:
        server.send_signal(signal.SIGCONT)
        server.kill()
        server.wait()
        client.close()


def test_a_call_begun_while_its_server_is_starved_is_waited_for_once_the_server_runs_again(ros):
    """A call that starts while its server's process has missed its lease (a node restarted on a
    loaded machine sends its first goal so) must not take the server's return for another death: a CI
    run gave up on a live executor this way."""
    client = RosClient("starved_at_start_client")
    server, heartbeat, thread, outcome = pausable_call(client, "starved_at_start_server")
    try:
        # The heartbeat hears a lease run out only once it has matched the server's publisher: after
        # other tests, discovery can take longer than a fixed wait.
        wait_for(lambda: client.node.count_publishers("/starved_at_start_server/alive") > 0, 30.0)
        time.sleep(3.0)
        server.send_signal(signal.SIGSTOP)
        wait_for(lambda: heartbeat.losses > 0)      # the stopped server's lease runs out
        assert heartbeat.losses == 1
        thread.start()
        time.sleep(0.5)
        server.send_signal(signal.SIGCONT)
        thread.join(timeout=30)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["result"].success
        assert heartbeat.losses == 0, "the server's return was not heard"
    finally:
        server.send_signal(signal.SIGCONT)
        server.kill()
        server.wait()
        client.close()


def test_a_just_started_node_waits_for_an_action_server_that_comes_up_late(ros):
    """A restarted node can send its first goal before it has discovered the server (a restarted
    executor refused a command so in CI): any call of a node that new waits longer for its server."""
    import rclpy
    from rclpy.action import ActionClient, ActionServer

    from planner.action import Say
    from planner.ros.node import PlannerNode

    client = RosClient("late_server_client")
    young = PlannerNode("young_caller")
    skill = ActionClient(young, Say, "late_server_skill")  # before it spins: see RosClient.action_client
    client.add(young)

    def start_server():
        server_node = rclpy.create_node("late_server")
        ActionServer(server_node, Say, "late_server_skill", lambda goal: (goal.succeed(), Say.Result(success=True))[1])
        client.add(server_node)

    late = threading.Timer(7.0, start_server)
    try:
        late.start()
        result = young.action_call(skill, "late_server_skill").run(Say.Goal(text="x"), 30.0)
        assert result.success
    finally:
        late.join()
        client.close()
