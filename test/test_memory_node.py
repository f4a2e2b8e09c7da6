"""Changes people tell, over ROS: /memory/tell (service, topic and `planner tell`) puts them into
perception's scene graph as told facts, saved before the answer; what the camera then sees wins;
a told change survives kill -9 of perception."""

import json
import os
import signal
import subprocess

import psutil
import yaml
from std_msgs.msg import String

from conftest import CONFIG, PLANNER, RosClient, wait_for, write_config
from planner.config import load_config
from planner.ros.futures import CallFailed
from planner.ros.qos import RELIABLE
from planner.srv import GetObject, GetRobotState, Tell
from test_perception_node import Perception, camera_frame, robot_state

APPLE_TO_COUNTER = {"remove": [{"subject": "apple_1", "relation": "on", "object": "table_2"}],
                    "add": [{"subject": "apple_1", "relation": "on", "object": "counter_1"}]}
# Not what the model should say: the apple is on table_2, so removing it from table_1 fails the check.
WRONG = {"remove": [{"subject": "apple_1", "relation": "on", "object": "table_1"}],
         "add": [{"subject": "apple_1", "relation": "on", "object": "counter_1"}]}


def scripted(tmp_path, replies, **sections):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(replies))
    return write_config(tmp_path, llm={"provider": "scripted", "script": str(script)}, **sections)


def test_a_told_change_is_in_the_graph_until_the_camera_sees_otherwise(ros, tmp_path):
    state_file = tmp_path / "scene_graph.json"
    config = load_config(scripted(tmp_path, [WRONG, APPLE_TO_COUNTER, WRONG, WRONG, WRONG, APPLE_TO_COUNTER],
                                  perception={"state_file": str(state_file), "full_graph_period_s": 0.2}))
    perception = Perception(config)
    try:
        perception.states.publish(robot_state(500.0))
        wait_for(lambda: perception.node.scene.robot is not None)
        told = perception.client.call(Tell, "/memory/tell", Tell.Request(sentence="I put the apple on the counter"),
                                      timeout=30)
        # The first reading failed the check and went back to the model with the error.
        assert told.applied and told.llm_calls == 2 and told.changed == ["apple_1 on counter_1"]
        assert told.removed == ["(apple_1, on, table_2)"] and told.added == ["(apple_1, on, counter_1)"]
        apple = perception.get("apple_1").object
        assert apple.parent == "counter_1" and apple.told.sec > 0
        # Saved before the answer: a kill now would keep it.
        saved = {n["id"]: n for n in json.loads(state_file.read_text())["graph"]["nodes"]}
        assert saved["apple_1"]["told"] > 0
        # A change that stays wrong changes nothing and says why.
        refused = perception.client.call(Tell, "/memory/tell", Tell.Request(sentence="The apple is on the counter"),
                                         timeout=30)
        assert not refused.applied and "(apple_1, on, table_1) is not in the graph" in refused.errors[0]
        assert perception.get("apple_1").object.parent == "counter_1"
        # The camera sees the apple on table_2 after all (robot at (4, 2.5) facing +y; camera 0.1 m
        # ahead, 1.3 m up): what it sees wins.
        perception.states.publish(robot_state(501.0))
        perception.detections.publish(camera_frame(501.0, ("apple", (1.4, 1.8, -0.51), (0.08, 0.08, 0.08))))
        wait_for(lambda: perception.get("apple_1").object.parent == "table_2")
        assert perception.get("apple_1").object.told.sec == 0
        assert not perception.get("apple_2").success  # the same apple, not a second one
        # Seen on table_2 just now, it is not moved by a person's word: the change is flagged.
        now = perception.client.node.get_clock().now().nanoseconds / 1e9
        perception.states.publish(robot_state(now))
        perception.detections.publish(camera_frame(now, ("apple", (1.4, 1.8, -0.51), (0.08, 0.08, 0.08))))
        wait_for(lambda: perception.node.scene.entity("apple_1").last_seen >= now - 1)
        flagged = perception.client.call(Tell, "/memory/tell", Tell.Request(sentence="I put the apple on the counter"),
                                         timeout=30)
        assert not flagged.applied and flagged.errors[0].startswith("flagged: the robot saw apple_1"), flagged.errors
        assert perception.get("apple_1").object.parent == "table_2"
        # An empty sentence on the topic is refused and said on the status.
        perception.client.node.create_publisher(String, "/memory/tell", RELIABLE).publish(String(data="  "))
        wait_for(lambda: any("told change refused" in s.data for s in perception.status))
    finally:
        perception.client.close()


def perception_process(bringup: subprocess.Popen) -> psutil.Process | None:
    for child in psutil.Process(bringup.pid).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "perception" in child.cmdline():
                return child
        except psutil.Error:  # gone, or killed and not yet reaped
            continue
    return None


def test_planner_tell_and_the_told_change_survives_kill_9(ros, tmp_path):
    config = scripted(tmp_path, [APPLE_TO_COUNTER], perception={"state_file": str(tmp_path / "scene_graph.json")},
                      scenario=str(CONFIG / "scenarios" / "kitchen_bottle_moved.yaml"))
    stack = subprocess.Popen([PLANNER, "bringup", "--config", str(config), "--nodes", "simulator", "perception"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    client = RosClient("tell_test")
    try:
        def robot_known() -> bool:   # a change is read against where the robot is: tell once perception knows
            try:
                return bool(client.call(GetRobotState, "/perception/get_robot_state", GetRobotState.Request(),
                                        timeout=10).state.arms)
            except CallFailed:  # not up yet
                return False

        wait_for(robot_known, 120)
        told = subprocess.run([PLANNER, "tell", "I put the apple on the kitchen counter", "--wait", "120"],
                              capture_output=True, text=True, timeout=180)
        assert told.returncode == 0, told.stdout + told.stderr
        assert "[added]      (apple_1, on, counter_1)" in told.stdout and "[map]        apple_1 on counter_1" in told.stdout
        first = perception_process(stack)
        os.kill(first.pid, signal.SIGKILL)
        # planner bringup starts it again; the robot is in the bedroom, the counter out of its view.
        wait_for(lambda: (p := perception_process(stack)) is not None and p.pid != first.pid, 60)

        def apple():
            try:
                return client.call(GetObject, "/perception/get_object", GetObject.Request(id="apple_1"), timeout=30).object
            except CallFailed:  # not up again yet
                return None

        wait_for(lambda: (seen := apple()) is not None and seen.parent == "counter_1", 120)
        assert apple().told.sec > 0
    finally:
        client.close()
        stack.send_signal(signal.SIGTERM)
        stack.communicate(timeout=60)


def test_a_flood_of_told_changes_is_refused_before_the_model_is_asked(ros, tmp_path):
    """300 messages on /memory/tell in a second made 153 model calls: minutes of CPU on two cores.
    Changes beyond memory.per_minute are refused at once, without a model call."""
    config = load_config(scripted(tmp_path, [APPLE_TO_COUNTER] * 10, memory={"per_minute": 2}))
    perception = Perception(config)
    try:
        perception.states.publish(robot_state(500.0))
        wait_for(lambda: perception.node.scene.robot is not None)
        answers = [perception.client.call(Tell, "/memory/tell", Tell.Request(sentence="I put the apple on the counter"),
                                          timeout=30) for _ in range(5)]
        flooded = ["more than 2 changes told in a minute (memory.per_minute); say it again later"]
        assert [a.errors == flooded for a in answers] == [False, False, True, True, True]
        assert answers[0].llm_calls > 0 and all(a.llm_calls == 0 for a in answers[2:])
    finally:
        perception.client.close()


def test_a_rate_limit_admits_again_once_a_minute_has_passed():
    from planner.core.telling import RateLimit

    now = [0.0]
    limit = RateLimit(2, clock=lambda: now[0])
    assert [limit.admit() for _ in range(3)] == [True, True, False]
    now[0] = 59.9
    assert not limit.admit()
    now[0] = 60.0
    assert [limit.admit() for _ in range(3)] == [True, True, False]
