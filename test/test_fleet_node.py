"""The fleet node over DDS: /fleet/ask answered from the scene graphs of two robots in their own
namespaces, each robot's answer from its own graph, with evidence; where a thing was seen, from
the graphs alone, as a robot's task planner asks it; questions it cannot read are refused with why."""

import json
import time

import pytest

from conftest import RosClient, wait_for, write_config
from planner.adapters.llm import ScriptedPolicy
from planner.config import load_config
from planner.core.scene_graph import Entity
from planner.msg import SceneGraph
from planner.ros.convert import entity_to_msg
from planner.ros.qos import LATCHED
from planner.srv import AskFleet

KITCHEN = [(0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0)]
BATHROOM = [(4.0, 0.0), (8.0, 0.0), (8.0, 4.0), (4.0, 4.0)]


def graph(now, *objects):
    """A robot's scene graph: the two rooms, a counter it saw 2 min ago, and `objects` as
    (id, label, room, status)."""
    entities = [Entity("kitchen", "room", "kitchen", {"kitchen": 1.0}, polygon=KITCHEN),
                Entity("bathroom", "room", "bathroom", {"bathroom": 1.0}, polygon=BATHROOM),
                Entity("counter_1", "furniture", "counter", {"counter": 1.0}, (1.0, 1.0, 0.45), (1.0, 0.6, 0.9),
                       room="kitchen", last_seen=now - 120)]
    for object_id, label, room, status in objects:
        entities.append(Entity(object_id, "object", label, {label: 0.9}, (1.0, 1.0, 0.95), (0.1, 0.1, 0.1), room=room,
                               status=status, last_seen=now - 120))
    return SceneGraph(nodes=[entity_to_msg(e) for e in entities])


@pytest.fixture
def config(tmp_path):
    return load_config(write_config(tmp_path, fleet={"robots": ["robot1", "robot2"]}))


def test_a_question_is_answered_from_both_robots_scene_graphs_with_evidence(ros, config):
    from planner.ros.nodes.fleet import FleetNode
    from planner.ros.nodes.task_planner import RosTools, TaskPlannerNode

    # robot1 is asked first, then robot2 (fleet.robots order); then the next question.
    policy = ScriptedPolicy([{"fits": True, "p": 0.9}, {"fits": False, "p": 0.2},
                             {"fits": False, "p": 0.1}, {"fits": False, "p": 0.3}])
    client = RosClient("fleet_test")
    try:
        fleet = client.add(FleetNode(config, policy))
        now = fleet.get_clock().now().nanoseconds / 1e9
        for robot, scene in (("robot1", graph(now, ("mug_1", "mug", "kitchen", "seen"))),
                             ("robot2", graph(now, ("mug_1", "mug", "kitchen", "missing")))):
            client.node.create_publisher(SceneGraph, f"/{robot}/scene_graph", LATCHED).publish(scene)
        wait_for(lambda: len(fleet.graphs) == 2, 20)
        assert {s.topic_name for s in fleet.subscriptions} >= {"/robot1/scene_graph", "/robot2/scene_graph"}

        answer = client.call(AskFleet, "/fleet/ask", AskFleet.Request(question="Is there a mug in the kitchen?"), 30)
        # Both looked as long ago: the latest look is their vote, a tie, and robot1 is surer (mean p 0.55).
        assert answer.answered and answer.yes and answer.aggregator == "latest look"
        assert [v.robot for v in answer.votes] == ["robot1", "robot2"]
        first, second = answer.votes
        assert first.yes and first.saw and first.evidence == "saw a mug in the kitchen 2 min ago"
        assert not second.yes and not second.saw and second.evidence == "looked into the kitchen 2 min ago and saw no mug"
        assert first.seconds_since == pytest.approx(120, abs=30)
        assert answer.message == "Yes: 1 of 2 robots say there is a mug in the kitchen."
        # Each robot was asked with its own graph only.
        assert "kitchen (last looked 2 min ago): mug" in policy.prompts[0][0]["content"]
        assert "kitchen (last looked 2 min ago): nothing" in policy.prompts[1][0]["content"]

        by_fields = client.call(AskFleet, "/fleet/ask", AskFleet.Request(thing="toothbrush", room="bathroom"), 30)
        assert by_fields.answered and not by_fields.yes
        assert by_fields.votes[0].evidence == "never looked into the bathroom"

        # Where a thing is comes from the graphs alone, no model: robot2 found the mug missing.
        where = client.call(AskFleet, "/fleet/ask", AskFleet.Request(question="Where is my mug?"), 30)
        assert where.answered and where.yes and where.aggregator == "sightings"
        assert where.message == "robot1 saw a mug in the kitchen 2 min ago."
        assert [v.evidence for v in where.votes] == ["saw a mug in the kitchen 2 min ago", "saw no mug anywhere"]
        assert client.call(AskFleet, "/fleet/ask", AskFleet.Request(thing="vase"), 30).message == "No robot has seen a vase."

        for request, problem in ((AskFleet.Request(question="Tell me about the mug"), "ask as 'Is there a THING"),
                                 (AskFleet.Request(question="Is there a mug in the garage?"), "no room 'garage'"),
                                 (AskFleet.Request(room="kitchen"), "give a thing")):
            refused = client.call(AskFleet, "/fleet/ask", request, 30)
            assert not refused.answered and problem in refused.message
        assert not policy._replies

        # A robot's task planner asks the fleet where a thing is before it goes searching for it.
        planner = client.add(TaskPlannerNode(config, ScriptedPolicy([]), namespace="robot2"))
        wait_for(lambda: planner.clients_["fleet"].service_is_ready(), 20)
        assert RosTools(planner, "t1", "bring me the mug").where_seen("mug") == "robot1 saw a mug in the kitchen 2 min ago."
        # robot1 asking hears only robot2's graph: its own sighting it knows.
        own = client.add(TaskPlannerNode(config, ScriptedPolicy([]), namespace="robot1"))
        wait_for(lambda: own.clients_["fleet"].service_is_ready(), 20)
        assert RosTools(own, "t2", "bring me the mug").where_seen("mug") == "No robot has seen a mug."
    finally:
        client.close()


def test_without_a_fleet_a_task_planner_has_nobody_to_ask(ros, config):
    from planner.ros.nodes.task_planner import RosTools, TaskPlannerNode

    client = RosClient("no_fleet_test")
    try:
        planner = client.add(TaskPlannerNode(config, ScriptedPolicy([])))
        assert RosTools(planner, "t1", "bring me the mug").where_seen("mug") is None
    finally:
        client.close()


def test_with_no_robots_configured_the_fleet_finds_them(ros, tmp_path):
    from planner.ros.nodes.fleet import FleetNode

    client = RosClient("fleet_discovery_test")
    try:
        fleet = client.add(FleetNode(load_config(write_config(tmp_path)), ScriptedPolicy([])))
        empty = client.call(AskFleet, "/fleet/ask", AskFleet.Request(question="Is there a mug in the kitchen?"), 30)
        assert not empty.answered and "no robot has sent a scene graph yet" in empty.message
        now = time.time()
        client.node.create_publisher(SceneGraph, "/robot7/scene_graph", LATCHED).publish(graph(now))
        wait_for(lambda: "robot7" in fleet.graphs, 30)
        assert fleet.robots == ["robot7"]
        # A robot alone asking the fleet hears nothing it does not know.
        alone = client.call(AskFleet, "/fleet/ask", AskFleet.Request(thing="mug", asking_robot="/robot7"), 30)
        assert not alone.answered and alone.message == "no robot but /robot7 has sent a scene graph"
    finally:
        client.close()


def test_a_fleet_configured_with_an_answer_model_answers_by_it_and_one_it_cannot_train_falls_back_to_the_rule(ros, tmp_path):
    from planner.core.answer_model import Example, Question, RobotAnswer, example_record
    from planner.ros.nodes.fleet import FleetNode

    # Other homes' questions, where the truth is whether some robot saw the thing, whatever they said.
    examples = [Example(Question("cup", "kitchen", index % 2 == 0),
                        (RobotAnswer("robot_1", index % 3 == 0, 0.5, True, 60.0, index % 2 == 0),
                         RobotAnswer("robot_2", index % 5 == 0, 0.5, True, 90.0, False))) for index in range(40)]
    (tmp_path / "other-homes.json").write_text(json.dumps(
        {"homes": [{"seed": 7, "examples": [example_record(e) for e in examples]}]}))
    trained = load_config(write_config(tmp_path, fleet={"robots": ["robot1", "robot2"], "answer_model": {
        "examples": ["other-homes.json"], "learner": "decision_tree"}}))
    # Both robots say no, though robot1 saw a mug there.
    client = RosClient("fleet_model_test")
    try:
        fleet = client.add(FleetNode(trained, ScriptedPolicy([{"fits": False, "p": 0.3}, {"fits": False, "p": 0.1}])))
        now = fleet.get_clock().now().nanoseconds / 1e9
        for robot, scene in (("robot1", graph(now, ("mug_1", "mug", "kitchen", "seen"))), ("robot2", graph(now))):
            client.node.create_publisher(SceneGraph, f"/{robot}/scene_graph", LATCHED).publish(scene)
        wait_for(lambda: len(fleet.graphs) == 2, 20)
        answer = client.call(AskFleet, "/fleet/ask", AskFleet.Request(question="Is there a mug in the kitchen?"), 30)
        assert answer.answered and answer.yes
        assert answer.aggregator == "central answer model (decision_tree, pooled features, 40 questions from 1 home)"
        assert answer.message == "Yes: 0 of 2 robots say there is a mug in the kitchen."
    finally:
        client.close()

    broken = load_config(write_config(tmp_path, fleet={"answer_model": {"examples": ["missing.json"]}}))
    client = RosClient("fleet_broken_model_test")
    try:
        fleet = client.add(FleetNode(broken, ScriptedPolicy([])))
        assert fleet.decision.model is None and "missing.json: not a readable results file" in fleet.decision.problem
        assert fleet.decision.name == "latest look"
    finally:
        client.close()
