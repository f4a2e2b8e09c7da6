"""Consumers keep a mirror of perception's scene graph instead of pulling it: at 10,000 objects a
stream of skills costs one whole-graph fetch per consumer, and the mirror stays equal to
perception's graph under a stream of updates, one of them lost on the way (a sequence gap, so a
fetch)."""

import json
import time

import pytest
import yaml

from conftest import RosClient, wait_for, write_config
from planner.action import ExecuteSkill
from planner.config import load_config
from planner.core.synthetic import synthetic_map
from planner.msg import Detection3D, Detection3DArray, LabelScore, RobotState
from planner.ros.convert import to_stamp
from planner.ros.node import PlannerNode
from planner.ros.nodes.controller import ControllerNode
from planner.ros.nodes.perception import PerceptionNode
from planner.ros.nodes.skill_planner import SkillPlannerNode
from planner.ros.qos import RELIABLE
from planner.ros.scene_mirror import SceneMirror

OBJECTS = 10_000


class CountingPerception(PerceptionNode):
    """Perception that counts whole-graph requests."""

    def __init__(self, config):
        self.graph_requests = 0
        super().__init__(config)

    def _get_scene_graph(self, request, response):
        self.graph_requests += 1
        return super()._get_scene_graph(request, response)


class LossyMirror(SceneMirror):
    """A mirror whose subscription loses the second update it is sent."""

    def __init__(self, node, group):
        self.received = 0
        super().__init__(node, group)

    def _on_update(self, msg):
        self.received += 1
        if self.received != 2:
            super()._on_update(msg)


@pytest.fixture(scope="module")
def big_map(tmp_path_factory):
    directory = tmp_path_factory.mktemp("big_map")
    data, rooms = synthetic_map(OBJECTS, seed=0)
    (directory / "map.json").write_text(json.dumps(data))
    (directory / "rooms.yaml").write_text(yaml.safe_dump({name: [list(p) for p in polygon] for name, polygon in rooms.items()}))
    return directory, rooms


def robot_in(rooms: dict, room: str, stamp: float) -> RobotState:
    xs, ys = zip(*rooms[room])
    msg = RobotState(room=room, arms=["left", "right"], held=["", ""])
    msg.header.stamp, msg.header.frame_id = to_stamp(stamp), "map"
    msg.base_pose.x, msg.base_pose.y = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
    return msg


def seen_in_map(stamp: float, sensor: tuple[float, float], label: str, center: tuple[float, float, float]) -> Detection3DArray:
    msg = Detection3DArray(fov_deg=360.0, range_m=6.0)
    msg.header.stamp, msg.header.frame_id = to_stamp(stamp), "map"
    msg.sensor_pose.position.x, msg.sensor_pose.position.y, msg.sensor_pose.position.z = *sensor, 1.3
    msg.sensor_pose.orientation.w = 1.0
    item = Detection3D(labels=[LabelScore(label=label, probability=0.9)])
    item.center.x, item.center.y, item.center.z = center
    item.size.x, item.size.y, item.size.z = 0.1, 0.1, 0.2
    msg.detections.append(item)
    return msg


def graph_of(scene) -> tuple[dict, list]:
    """Every node's place, status, labels and room; every relation."""
    return ({node_id: (e.center, e.status, e.labels, e.room) for node_id, e in scene._by_id.items()},
            sorted(scene.graph.edges(data="relation")))


def equal_to_perception(scene, perception) -> bool:
    """The same graph, label probabilities to the float32 the messages carry."""
    with perception.lock:
        (nodes, edges), (expected_nodes, expected_edges) = graph_of(scene), graph_of(perception.scene)
    return edges == expected_edges and nodes.keys() == expected_nodes.keys() and all(
        nodes[i][0::3] == expected_nodes[i][0::3] and nodes[i][1] == expected_nodes[i][1]
        and nodes[i][2] == pytest.approx(expected_nodes[i][2], rel=1e-6) for i in nodes)


def has(perception, entity_id: str) -> bool:
    with perception.lock:
        return perception.scene.has(entity_id)


def test_skills_on_a_10000_object_map_do_not_pull_the_graph_and_the_mirror_survives_a_lost_update(ros, tmp_path, big_map):
    directory, rooms = big_map
    config = load_config(write_config(tmp_path, perception={
        "voxeland_map": str(directory / "map.json"), "rooms": str(directory / "rooms.yaml"), "full_graph_period_s": 5.0}))
    client = RosClient("mirror_test")
    try:
        perception = client.add(CountingPerception(config))
        client.add(ControllerNode(config))
        client.add(SkillPlannerNode(config))
        states = client.node.create_publisher(RobotState, "/robot/state", RELIABLE)
        detections = client.node.create_publisher(Detection3DArray, "/perception/detections", RELIABLE)
        wait_for(lambda: client.node.count_subscribers("/robot/state") >= 3)
        states.publish(robot_in(rooms, "room_0", 10.0))
        wait_for(lambda: perception.scene.robot is not None)

        # Objects two rooms away: each PICK is planned against the skill planner's mirror and
        # refused, and the controller describes the refusal from its own mirror.
        far = [e.id for e in perception.scene._by_id.values() if e.kind == "object" and e.room == "room_2"][:5]
        for object_id in far:
            result = client.action(ExecuteSkill, "/skill_planner/execute_skill",
                                   ExecuteSkill.Goal(skill=f"PICK({object_id}, left)", task_id="t"), timeout=60)
            assert not result.success and result.failure.skill == f"PICK({object_id}, left)", result.message
            assert result.failure.code and result.failure.reason
        assert perception.graph_requests == 2   # one per consumer, not one per skill and check

        # A stream of changes, the mirror's second update lost: a gap, so one more fetch.
        mirror_node = PlannerNode("lossy_mirror", config)  # a mirror lives in a stack node
        mirror = LossyMirror(mirror_node, None)
        client.add(mirror_node)
        with mirror.current() as scene:
            assert equal_to_perception(scene, perception) and mirror.fetches == 1
        here = robot_in(rooms, "room_0", 0).base_pose
        sensor = (here.x, here.y)
        for step, label in enumerate(["vase", "lamp", "plant", "clock", "candle", "globe"]):
            stamp = 20.0 + step
            states.publish(robot_in(rooms, "room_0", stamp))
            detections.publish(seen_in_map(stamp, sensor, label, (sensor[0] + 0.5 * step - 1.5, sensor[1] + 1.0, 0.5)))
            wait_for(lambda label=label: has(perception, f"{label}_1"))
            time.sleep(0.3)   # one update per frame
        assert mirror.received >= 3
        wait_for(lambda: mirror.wait_until(lambda scene: equal_to_perception(scene, perception), 5.0), timeout=20)
        assert mirror.fetches == 2
        # Every fused frame is announced, so a consumer can wait for the robot to have looked.
        assert mirror.wait_for_look(25.0, 5.0) and not mirror.wait_for_look(26.0, 0.5)
    finally:
        client.close()
