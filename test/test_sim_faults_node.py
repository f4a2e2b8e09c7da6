"""Faults through the ROS stack: the simulator node aborts a navigation and leaves a grasp
unanswered, the executor's per-command timeout ends it, and the controller names both."""

import pytest

from conftest import RosClient, config_with_events, wait_for
from planner.action import ExecuteSkill
from planner.msg import FailureMessage
from planner.ros.stack import node_class
from planner.srv import GetRobotState

NODES = ("simulator", "perception", "executor", "controller", "skill_planner")


@pytest.fixture(scope="module")
def stack(ros, tmp_path_factory):
    config = config_with_events(tmp_path_factory.mktemp("faults"), [
        {"trigger": {"command_started": {"command": "navigate"}}, "abort_navigation": {"after_fraction": 0.5}},
        {"trigger": {"command_started": {"command": "grasp", "object": "bottle_1"}}, "hang_command": {"command": "grasp"}}],
        grasp_timeout_s=2.0)  # a short wait for the hung grasp
    client = RosClient("fault_client")
    failures = client.collect(FailureMessage, "/controller/failure")
    for name in NODES:
        client.add(node_class(name)(config))
    wait_for(lambda: client.node.count_publishers("/scene_graph") > 0)
    # Skills are refused until perception has the robot's state.
    wait_for(lambda: client.call(GetRobotState, "/perception/get_robot_state", GetRobotState.Request()).state.room)
    yield client, failures
    client.close()


def skill(client, call: str):
    return client.action(ExecuteSkill, "/skill_planner/execute_skill",
                         ExecuteSkill.Goal(skill=call, task_id="faults", request="fetch the bottle"), timeout=60)


def test_an_aborted_navigation_and_a_grasp_that_never_answers(stack):
    client, failures = stack
    aborted = skill(client, "GOTO(table_1)")
    assert not aborted.success and aborted.failure.code == "NAVIGATION_ABORTED"
    assert aborted.failure.reason.startswith("navigation stopped before the goal: the controller gave up")
    assert skill(client, "GOTO(table_1)").success  # the fault fired once
    hung = skill(client, "PICK(bottle_1, right)")
    assert not hung.success and hung.failure.code == "TIMEOUT" and hung.failure.command == "grasp"
    wait_for(lambda: {f.code for f in failures} >= {"NAVIGATION_ABORTED", "TIMEOUT"})
    # The hung grasp was canceled and the robot is free again; the arm answers, the next grasp works.
    wait_for(lambda: not client.call(GetRobotState, "/perception/get_robot_state", GetRobotState.Request()).state.busy,
             timeout=10)
    again = skill(client, "PICK(bottle_1, right)")
    assert again.success, again.failure.reason
