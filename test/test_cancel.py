"""Canceling /planner/execute_task stops the task between steps and reports it canceled; with a
queue, later requests wait their turn and can be canceled before they start."""

import threading
from contextlib import contextmanager

from conftest import RosClient, wait_for, write_config
from planner.action import ExecuteTask
from planner.config import load_config
from planner.core.types import PolicyReply
from planner.ros.nodes.perception import PerceptionNode
from planner.ros.nodes.simulator import SimulatorNode
from planner.ros.nodes.task_planner import TaskPlannerNode

GOAL = '{"goals": [{"kind": "object_on", "object": "bottle", "target": "table", "room": "bedroom"}]}'


class SlowPolicy:
    """Thinks for a while before every step, like a large model on a CPU."""

    def __init__(self):
        self.calls = 0
        self.thinking = threading.Event()

    def complete(self, messages, schema):
        self.calls += 1
        if self.calls == 1:
            return PolicyReply(GOAL)
        self.thinking.set()
        threading.Event().wait(1.0)
        return PolicyReply('{"thought": "look", "action": "get_rooms()"}')


@contextmanager
def planner_thinking_slowly(tmp_path, name: str, **sections):
    """A simulator, perception and a task planner with a slow policy, and an action client to it."""
    config = load_config(write_config(tmp_path, **sections))
    client = RosClient(name)
    try:
        policy = SlowPolicy()
        for node in (SimulatorNode(config), PerceptionNode(config), TaskPlannerNode(config, policy=policy)):
            client.add(node)
        actions = client.action_client(ExecuteTask, "/planner/execute_task")
        assert actions.wait_for_server(timeout_sec=10)
        yield policy, actions
    finally:
        client.close()


def test_cancel_a_running_task(ros, tmp_path):
    with planner_thinking_slowly(tmp_path, "cancel_client") as (policy, actions):
        feedback = []
        handle_future = actions.send_goal_async(ExecuteTask.Goal(request="put the bottle on the table in the bedroom"),
                                                feedback_callback=lambda fb: feedback.append(fb.feedback.step.kind))
        wait_for(lambda: handle_future.done())
        handle = handle_future.result()
        wait_for(policy.thinking.is_set)
        handle.cancel_goal_async()
        result_future = handle.get_result_async()
        wait_for(result_future.done, timeout=30)
        result = result_future.result()
        assert result.result.outcome == "canceled" and not result.result.success
        assert "request" in feedback and "goal" in feedback
        # The node takes the next request.
        second = actions.send_goal_async(ExecuteTask.Goal(request="again"))
        wait_for(second.done)
        assert second.result().accepted
        second.result().cancel_goal_async()


def test_requests_wait_their_turn_and_beyond_the_queue_are_rejected(ros, tmp_path):
    with planner_thinking_slowly(tmp_path, "queue_client", tasks={"queue_size": 1}) as (policy, actions):
        def send(request, feedback=None):
            future = actions.send_goal_async(ExecuteTask.Goal(request=request), feedback_callback=feedback)
            wait_for(future.done)
            return future.result()

        running = send("put the bottle on the table in the bedroom")
        wait_for(policy.thinking.is_set)
        queued_feedback = []
        waiting = send("then go to the kitchen", lambda fb: queued_feedback.append(fb.feedback.step))
        assert waiting.accepted
        wait_for(lambda: queued_feedback)
        assert queued_feedback[0].kind == "queued" and "1 task ahead" in queued_feedback[0].text
        assert not send("and make me a sandwich").accepted  # one runs, one waits: the queue is full
        waiting.cancel_goal_async()
        waited = waiting.get_result_async()
        wait_for(waited.done, timeout=30)
        assert waited.result().result.outcome == "canceled" and waited.result().result.steps == 0
        assert not running.get_result_async().done()  # canceling the waiting task left the running one alone
        running.cancel_goal_async()
        ran = running.get_result_async()
        wait_for(ran.done, timeout=30)
        assert ran.result().result.outcome == "canceled"


class ImpossiblePolicy:
    """Finds the request impossible at once, so the planner's next word is to the user."""

    def complete(self, messages, schema):
        return PolicyReply('{"goals": [], "impossible": "there is no piano in the map"}')


def test_closing_the_planner_ends_a_request_that_waits_on_speech(ros, tmp_path):
    """A speech node that never finishes saying something must not keep a request's thread calling
    into the planner node after it is destroyed."""
    from rclpy.action import ActionServer, CancelResponse
    from std_msgs.msg import String

    from planner.action import Say

    before = set(threading.enumerate())
    config = load_config(write_config(tmp_path))
    speech = RosClient("silent_speech")  # spun apart from the planner, as a speech node is
    client = RosClient("close_client")
    speaking = threading.Event()

    def never_done(goal_handle):
        speaking.set()
        for _ in range(600):  # until canceled; 30 s at most, so a failing test still ends
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                break
            threading.Event().wait(0.05)
        return Say.Result()

    ActionServer(speech.node, Say, "/speech/say", never_done, cancel_callback=lambda handle: CancelResponse.ACCEPT)
    try:
        for node in (SimulatorNode(config), PerceptionNode(config)):
            client.add(node)
        planner = client.add(TaskPlannerNode(config, policy=ImpossiblePolicy()))
        wait_for(lambda: planner.say_client.server_is_ready())
        client.node.create_publisher(String, "/planner/command", 10).publish(String(data="bring me the piano"))
        wait_for(speaking.is_set, timeout=30)
    finally:
        client.close()
        speech.close()
    # tqdm's monitor starts with the first progress bar of the process (loading a model) and stays.
    assert [thread for thread in threading.enumerate() if thread not in before and type(thread).__name__ != "TMonitor"] == []


def test_twenty_goals_at_once_queue_five_reject_the_rest_and_the_planner_stays_responsive(ros, tmp_path):
    """Queued goals used to hold the node's executor threads (four, as spin_node runs a node): with one
    running and three waiting nothing else was heard — the next goal got no answer, the running task
    froze waiting for replies, and the e-stop was ignored."""
    from rclpy.executors import MultiThreadedExecutor
    from std_msgs.msg import Bool

    from planner.ros.qos import ESTOP_TOPIC, GOAL_REQUESTS, RELIABLE

    config = load_config(write_config(tmp_path, tasks={"queue_size": 5}))
    client = RosClient("load_client")
    policy = SlowPolicy()
    planner = TaskPlannerNode(config, policy=policy)
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(planner)
    spinning = threading.Thread(target=executor.spin, daemon=True)
    spinning.start()
    try:
        for node in (SimulatorNode(config), PerceptionNode(config)):
            client.add(node)
        actions = client.action_client(ExecuteTask, "/planner/execute_task", goal_service_qos_profile=GOAL_REQUESTS)
        assert actions.wait_for_server(timeout_sec=10)
        first = actions.send_goal_async(ExecuteTask.Goal(request="put the bottle on the table in the bedroom"))
        wait_for(first.done)
        wait_for(policy.thinking.is_set)
        sent = [actions.send_goal_async(ExecuteTask.Goal(request=f"go to the kitchen {i}")) for i in range(19)]
        wait_for(lambda: all(future.done() for future in sent), timeout=30)
        queued = [future.result() for future in sent if future.result().accepted]
        assert len(queued) == 5
        calls = policy.calls  # the running task still thinks and acts
        wait_for(lambda: policy.calls >= calls + 2, timeout=30)
        client.node.create_publisher(Bool, ESTOP_TOPIC, RELIABLE).publish(Bool(data=True))
        results = [handle.get_result_async() for handle in [first.result(), *queued]]
        wait_for(lambda: all(result.done() for result in results), timeout=30)
        assert [result.result().result.outcome for result in results] == ["canceled"] * 6
        assert results[0].result().result.summary == "stopped by the emergency stop"
    finally:
        executor.shutdown()
        planner.close()
        planner.destroy_node()
        client.close()
