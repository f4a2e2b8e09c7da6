"""One request, two transports: the planner driven in process (what the benchmarks measure) and
through the real nodes over DDS (what a robot runs) must take the same skills, meet the same
failures and end the same way."""

import yaml
from std_msgs.msg import String

from conftest import CONFIG, DATA, RosClient, wait_for, write_config
from fakes import InProcessRobot
from planner.adapters.llm import ScriptedPolicy
from planner.config import load_config
from planner.core.planning.task_planner import PlannerSettings, TaskPlanner
from planner.msg import PlanStep
from planner.ros.stack import NODES, node_class
from planner.wiring import load_skill_planner

SCENARIO = CONFIG / "scenarios" / "kitchen_bottle_moved.yaml"
REQUEST = "Go to the table in the kitchen, pick up the bottle, and place it on the table in the bedroom"


def what_happened(trace: list[tuple[str, str]]) -> dict:
    """The skills in order, the failures' codes, the outcome."""
    return {"skills": [text for kind, text in trace if kind == "skill"],
            "failures": [text.split("[")[1].split("]")[0] for kind, text in trace if kind == "failure"],
            "outcome": next(text.split(":")[0] for kind, text in trace if kind == "result")}


def in_process() -> dict:
    skills = load_skill_planner(load_config(CONFIG / "planner.yaml"))
    trace: list[tuple[str, str]] = []
    replies = yaml.safe_load((DATA / "scripted_kitchen.yaml").read_text())
    planner = TaskPlanner(ScriptedPolicy(replies), InProcessRobot(SCENARIO, skills), skills,
                          PlannerSettings(confirm_timeout_s=0), on_step=lambda step: trace.append((step.kind, step.text)))
    planner.run(REQUEST)
    return what_happened(trace)


def over_ros(ros, tmp_path) -> dict:
    config = load_config(write_config(tmp_path))  # the same scenario and recorded replies
    client = RosClient("transport_client")
    steps = client.collect(PlanStep, "/planner/trace")
    try:
        for name in NODES:
            client.add(node_class(name)(config))
        publisher = client.node.create_publisher(String, "/planner/command", 10)
        wait_for(lambda: client.node.count_subscribers("/planner/command") > 0)
        publisher.publish(String(data=REQUEST))
        wait_for(lambda: any(s.kind == "result" for s in steps), timeout=120)
    finally:
        client.close()
    return what_happened([(s.kind, s.text) for s in steps])


def test_a_request_takes_the_same_course_in_process_and_over_ros(ros, tmp_path):
    local = in_process()
    assert local["failures"] == ["OBJECT_NOT_FOUND"] and local["outcome"] == "succeeded"  # the bottle was moved
    assert over_ros(ros, tmp_path) == local

