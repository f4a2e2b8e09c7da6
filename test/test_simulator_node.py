"""The simulator's navigation server behaves as Nav2's: a new goal preempts the one under way. An
executor that died mid-drive left its goal running, and the restarted one was refused every drive."""

from conftest import RosClient, wait_for, write_config
from planner.action import Navigate
from planner.config import load_config
from planner.core.geometry import Pose2D
from planner.ros.convert import pose_to_msg
from planner.ros.stack import node_class


def test_a_new_navigation_goal_preempts_the_one_under_way(ros, tmp_path):
    config = load_config(write_config(tmp_path, simulator={"time_scale": 1.0}))  # a drive of many seconds
    client = RosClient("preempt_client")
    client.add(node_class("simulator")(config))
    navigate = client.action_client(Navigate, "/sim/navigate")
    try:
        assert navigate.wait_for_server(timeout_sec=10)
        feedback = []
        first = navigate.send_goal_async(Navigate.Goal(goal=pose_to_msg(Pose2D(3.5, 1.5, 0.0))),
                                         feedback_callback=feedback.append)
        wait_for(lambda: first.done() and feedback, 10)
        second = navigate.send_goal_async(Navigate.Goal(goal=pose_to_msg(Pose2D(-3.0, 2.5, 0.0))))
        wait_for(second.done, 10)
        assert second.result().accepted
        preempted = first.result().get_result_async()
        wait_for(preempted.done, 10)
        assert not preempted.result().result.success and "preempted" in preempted.result().result.detail
        arrived = second.result().get_result_async()
        wait_for(arrived.done, 30)
        assert arrived.result().result.success, arrived.result().result.detail
    finally:
        navigate.destroy()
        client.close()
