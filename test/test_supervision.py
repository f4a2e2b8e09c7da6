"""A node that dies while another waits on it: the wait ends promptly, naming what went away, instead of
running out a long time limit (a dead skill planner wedged the task planner for five minutes)."""

import threading
import time

from conftest import RosClient


def test_a_call_whose_server_dies_ends_at_once_as_unavailable(ros):
    import rclpy
    from rclpy.action import ActionClient, ActionServer

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
            ActionCall(ActionClient(client.node, Say, "doomed_skill"), "doomed_skill").run(Say.Goal(text="x"), 300.0)
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
