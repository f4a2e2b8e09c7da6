"""Every node's ROS interface over DDS: the nodes run in this process on one executor and a test
node talks to them through topics, services and actions, as any other ROS node would."""

import json

import pytest
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from conftest import RosClient, wait_for, write_config
from planner.action import ExecuteCommands, ExecuteSkill
from planner.config import load_config
from planner.msg import AudioClip, Command, ExecutionEvent, FailureMessage, PlanStep, SceneGraph, Suggestion
from planner.ros.qos import LATCHED
from planner.ros.stack import NODES, node_class
from planner.srv import Explain, FindObjects, GetObject, GetObjectsInRoom, GetRobotState, GetRooms, GetSceneGraph, MoveObject


@pytest.fixture(scope="module")
def stack(ros, tmp_path_factory):
    # Learning on: a failure of the kitchen task, reported by the controller, is learned from.
    config = load_config(write_config(tmp_path_factory.mktemp("nodes"), explainer={"database": ":memory:", "learn": True}))
    client = RosClient("test_client")
    topics = {
        "status": client.collect(String, "/planner/status"),
        "failures": client.collect(FailureMessage, "/controller/failure"),
        "events": client.collect(ExecutionEvent, "/executor/feedback"),
        "trace": client.collect(PlanStep, "/planner/trace"),
        "suggestions": client.collect(Suggestion, "/explainer/suggestion"),
        "world": client.collect(String, "/sim/events"),
        "truth": client.collect(String, "/sim/ground_truth", LATCHED),
    }
    for name in NODES:
        client.add(node_class(name)(config))
    wait_for(lambda: client.node.count_publishers("/scene_graph") > 0)
    yield client, topics
    client.close()


def test_perception_services(stack):
    client, _ = stack
    assert client.call(GetRooms, "/perception/get_rooms", GetRooms.Request()).rooms == ["bedroom", "kitchen"]
    kitchen = client.call(GetObjectsInRoom, "/perception/get_objects_in_room", GetObjectsInRoom.Request(room="kitchen"))
    assert kitchen.success and "bottle_1 on table_1" in kitchen.relations
    assert {o.id for o in kitchen.objects} >= {"table_1", "table_2", "bottle_1"}
    unknown = client.call(GetObjectsInRoom, "/perception/get_objects_in_room", GetObjectsInRoom.Request(room="attic"))
    assert not unknown.success and "unknown room 'attic'" in unknown.message
    bottle = client.call(GetObject, "/perception/get_object", GetObject.Request(id="bottle_1"))
    assert bottle.success and bottle.object.label == "bottle" and bottle.object.parent == "table_1"
    assert bottle.object.labels[0].label == "bottle"
    missing = client.call(GetObject, "/perception/get_object", GetObject.Request(id="bottle_9"))
    assert not missing.success and "bottle_9" in missing.message
    found = client.call(FindObjects, "/perception/find_objects", FindObjects.Request(query="a bottle"))
    assert [o.id for o in found.objects] == ["bottle_1"]
    wait_for(lambda: client.call(GetRobotState, "/perception/get_robot_state", GetRobotState.Request()).state.room == "bedroom")
    graph = client.call(GetSceneGraph, "/perception/get_scene_graph", GetSceneGraph.Request())
    assert {n.kind for n in graph.graph.nodes} == {"room", "furniture", "object", "person"}
    assert [n.id for n in graph.graph.nodes if n.kind == "person"] == ["user"]
    assert any(e.source == "bottle_1" and e.relation == "on" and e.target == "table_1" for e in graph.graph.edges)


def test_scene_graph_and_markers_reach_late_joiners(stack):
    client, _ = stack
    graphs = client.collect(SceneGraph, "/scene_graph", LATCHED)
    markers = client.collect(MarkerArray, "/scene_graph/markers", LATCHED)
    wait_for(lambda: graphs and markers)
    assert len(graphs[-1].nodes) == 12  # 2 rooms, 5 furniture, 4 objects and the user
    assert any(m.text == "bottle_1: bottle 1.00" for m in markers[-1].markers)


def test_refused_skill_becomes_a_controller_failure_and_an_explanation(stack):
    client, topics = stack
    result = client.action(ExecuteSkill, "/skill_planner/execute_skill",
                           ExecuteSkill.Goal(skill="PICK(bottle_1, right)", task_id="t1", request="bring the bottle"))
    assert not result.success and result.failure.code == "OUT_OF_REACH"
    assert "GOTO a place next to it first" in result.failure.reason
    wait_for(lambda: any(f.task_id == "t1" for f in topics["failures"]))
    assert any(e.state == "refused" and e.code == "OUT_OF_REACH" for e in topics["events"])
    explained = client.call(Explain, "/explainer/explain", Explain.Request(failure=result.failure), timeout=30)
    assert explained.suggestion.case_ids and "GOTO" in explained.suggestion.text
    wait_for(lambda: topics["suggestions"])
    bad = client.action(ExecuteSkill, "/skill_planner/execute_skill", ExecuteSkill.Goal(skill="FLY(kitchen)", task_id="t2"))
    assert bad.failure.code == "INVALID_SKILL" and "unknown skill 'FLY'" in bad.failure.reason


def test_executor_runs_commands_and_reports_each(stack):
    client, _ = stack
    command = Command(name="navigate", timeout_s=60.0)
    command.base_pose.x, command.base_pose.y = -2.0, 2.5
    feedback = []
    result = client.action(ExecuteCommands, "/executor/execute_commands",
                           ExecuteCommands.Goal(execution_id="e1", skill="GOTO(bedroom)", commands=[command]),
                           feedback=lambda fb: feedback.append(fb.feedback.event.state))
    assert result.success and feedback == ["started", "succeeded"]
    grasp = Command(name="grasp", arm="left", object_id="cup_1", timeout_s=10.0)
    grasp.point.x, grasp.point.y, grasp.point.z = 5.6, 3.9, 0.95
    failed = client.action(ExecuteCommands, "/executor/execute_commands",
                           ExecuteCommands.Goal(execution_id="e2", skill="PICK(cup_1, left)", commands=[grasp]))
    assert not failed.success and failed.code == "OUT_OF_REACH"


def test_say_and_look_around_skills_run_through_the_executor(stack):
    client, topics = stack
    spoken = client.collect(AudioClip, "/speech/audio_out")
    said = client.action(ExecuteSkill, "/skill_planner/execute_skill",
                         ExecuteSkill.Goal(skill='SAY("Hello, I am here")', task_id="t3"))
    assert said.success, said.failure.reason
    wait_for(lambda: spoken)  # the executor sent the text to the speech node, which spoke it
    assert [(e.command, e.state) for e in topics["events"] if e.task_id == "t3"] == [("say", "started"), ("say", "succeeded")]
    looked = client.action(ExecuteSkill, "/skill_planner/execute_skill", ExecuteSkill.Goal(skill="LOOK_AROUND(bedroom)",
                                                                                           task_id="t4"))
    assert looked.success, looked.failure.reason
    assert [e.command for e in topics["events"] if e.task_id == "t4" and e.state == "succeeded"] == ["look_around"]


def test_simulator_external_agent_moves_objects_and_perception_follows(stack):
    client, topics = stack
    moved = client.call(MoveObject, "/sim/move_object", MoveObject.Request(object_id="apple_1", target_id="table_1"))
    assert moved.success
    wait_for(lambda: json.loads(topics["truth"][-1].data)["on"]["apple_1"] == "table_1")
    assert any("moved apple_1 onto table_1" in m.data for m in topics["world"])
    refused = client.call(MoveObject, "/sim/move_object", MoveObject.Request(object_id="apple_1", target_id="moon"))
    assert not refused.success and "moon" in refused.message


def test_task_planner_runs_a_request_and_rejects_a_second_one_meanwhile(stack):
    client, topics = stack
    publisher = client.node.create_publisher(String, "/planner/command", 10)
    wait_for(lambda: client.node.count_subscribers("/planner/command") > 0)
    publisher.publish(String(data="Go to the table in the kitchen, pick up the bottle, and place it on the table in the bedroom"))
    wait_for(lambda: any(s.kind == "skill" for s in topics["trace"]), timeout=30)
    publisher.publish(String(data="make me a sandwich"))
    wait_for(lambda: any("rejected 'make me a sandwich'" in s.data for s in topics["status"]))
    wait_for(lambda: any(s.kind == "result" for s in topics["trace"]), timeout=120)
    assert "succeeded" in next(s.text for s in topics["trace"] if s.kind == "result")
    # The recorded plan holds a reply naming an object that does not exist, repaired: a warning in the
    # trace and on the status.
    assert any(s.kind == "warning" and "bottle_9" in s.text for s in topics["trace"])
    assert any("WARN" in s.data and "bottle_9" in s.data for s in topics["status"])
    assert json.loads(topics["truth"][-1].data)["on"]["bottle_1"] == "table_3"
    # The bottle was moved as the arm reached for it: the controller reported the failure, the explainer
    # gave the task its suggestion and token, and the replan that worked became a case.
    explainer = next(node for node in client.extra if node.get_name() == "explainer")
    wait_for(lambda: any(c.source == "learned" for c in explainer.memory.store.cases()), timeout=20)
    assert not any("not counted" in s.data or "no controller reported" in s.data for s in topics["status"])
