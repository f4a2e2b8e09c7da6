"""The emergency stop through the ROS stack: true on /emergency_stop cancels a navigation and a
grasp at once, fails the skill with EMERGENCY_STOP, ends the running task and refuses new work
until false releases it."""

import threading
import time

import pytest
from std_msgs.msg import Bool, String

from conftest import RosClient, config_with_events, wait_for
from planner.action import ExecuteSkill
from planner.msg import ExecutionEvent, PlanStep
from planner.ros.stack import NODES, node_class
from planner.srv import GetRobotState

GRASP_HANGS_S = 60.0


@pytest.fixture(scope="module")
def stack(ros, tmp_path_factory):
    config = config_with_events(tmp_path_factory.mktemp("estop"), [
        {"trigger": {"command_started": {"command": "grasp", "object": "book_1"}}, "hang_command": {"command": "grasp"}}],
        grasp_timeout_s=GRASP_HANGS_S, simulator={"time_scale": 2.0})
    client = RosClient("estop_client")
    topics = {"events": client.collect(ExecutionEvent, "/executor/feedback"),
              "trace": client.collect(PlanStep, "/planner/trace"),
              "status": client.collect(String, "/planner/status")}
    for name in NODES:
        client.add(node_class(name)(config))
    wait_for(lambda: client.node.count_publishers("/scene_graph") > 0)
    wait_for(lambda: client.call(GetRobotState, "/perception/get_robot_state", GetRobotState.Request()).state.room)
    estop = client.node.create_publisher(Bool, "/emergency_stop", 10)
    wait_for(lambda: client.node.count_subscribers("/emergency_stop") >= 2)

    def set_estop(engaged: bool) -> None:
        """Engage, or release and wait until the executor and the task planner both took it: a
        request sent before the task planner heard the release would be refused."""
        mark = len(topics["status"])
        estop.publish(Bool(data=engaged))
        if not engaged:
            wait_for(lambda: {s.data.split("]")[0] for s in topics["status"][mark:] if "emergency stop released" in s.data}
                     == {"[executor", "[task_planner"})
    yield client, topics, set_estop
    client.close()


def skill(client, call: str):
    return client.action(ExecuteSkill, "/skill_planner/execute_skill",
                         ExecuteSkill.Goal(skill=call, task_id="estop", request="e-stop test"), timeout=90)


def in_background(function, *args):
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", function(*args)), daemon=True)
    thread.start()
    return thread, outcome


def robot_pose(client):
    state = client.call(GetRobotState, "/perception/get_robot_state", GetRobotState.Request()).state
    return state.base_pose.x, state.base_pose.y


def started(topics, command: str, after: int) -> bool:
    return any(e.command == command and e.state == "started" for e in topics["events"][after:])


def test_estop_during_navigation_stops_the_robot_and_refuses_motion_until_released(stack):
    client, topics, estop = stack
    mark = len(topics["events"])
    thread, outcome = in_background(skill, client, "GOTO(table_1)")
    wait_for(lambda: started(topics, "navigate", mark), timeout=20)
    time.sleep(0.5)  # under way
    estop(True)
    thread.join(timeout=10)
    result = outcome["value"]
    assert not result.success and result.failure.code == "EMERGENCY_STOP"
    time.sleep(0.5)  # the last robot state of the drive reaches perception
    stopped_at = robot_pose(client)
    time.sleep(1.0)
    assert robot_pose(client) == pytest.approx(stopped_at, abs=0.05)  # it does not drive on
    refused = skill(client, "GOTO(table_1)")
    assert not refused.success and refused.failure.code == "EMERGENCY_STOP"
    estop(False)
    assert skill(client, "GOTO(table_1)").success


def test_estop_during_a_grasp_ends_it_at_once_not_at_its_timeout(stack):
    client, topics, estop = stack
    to_the_book = skill(client, "GOTO(table_3)")
    assert to_the_book.success or to_the_book.failure.code == "ALREADY_THERE"
    mark = len(topics["events"])
    began = time.monotonic()
    thread, outcome = in_background(skill, client, "PICK(book_1, right)")
    wait_for(lambda: started(topics, "grasp", mark), timeout=30)
    estop(True)
    thread.join(timeout=15)
    result = outcome["value"]
    assert not result.success and result.failure.code == "EMERGENCY_STOP" and result.failure.command == "grasp"
    assert time.monotonic() - began < GRASP_HANGS_S / 2
    estop(False)


def test_estop_ends_the_running_task_and_refuses_requests_until_released(stack):
    client, topics, estop = stack
    mark = len(topics["trace"])
    events = len(topics["events"])
    client.node.create_publisher(String, "/planner/command", 10).publish(
        String(data="Go to the table in the kitchen, pick up the bottle and place it on the table in the bedroom"))
    wait_for(lambda: started(topics, "navigate", events), timeout=60)
    estop(True)
    wait_for(lambda: any(s.kind == "result" and "canceled" in s.text for s in topics["trace"][mark:]), timeout=30)
    publisher = client.node.create_publisher(String, "/planner/command", 10)
    wait_for(lambda: client.node.count_subscribers("/planner/command") > 0)
    publisher.publish(String(data="Go to the kitchen"))
    wait_for(lambda: any(s.kind == "error" and "the emergency stop is engaged" in s.text
                                for s in topics["trace"][mark:]), timeout=10)
    estop(False)
