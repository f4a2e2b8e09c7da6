"""One request, two transports: the planner driven in process (what the benchmarks measure) and
through the real nodes over DDS (what a robot runs) must take the same skills, meet the same
failures and end the same way."""

from std_msgs.msg import String

from conftest import RosClient, wait_for, write_config
from fakes import KITCHEN_REQUEST, kitchen_plan, run_kitchen_request
from planner.config import load_config
from planner.msg import PlanStep
from planner.ros.stack import NODES, node_class


def what_happened(trace: list[tuple[str, str]]) -> dict:
    """The skills in order, the failures' codes, the outcome."""
    return {"skills": [text for kind, text in trace if kind == "skill"],
            "failures": [text.split("[")[1].split("]")[0] for kind, text in trace if kind == "failure"],
            "outcome": next(text.split(":")[0] for kind, text in trace if kind == "result")}


def over_ros(ros, tmp_path) -> dict:
    config = load_config(write_config(tmp_path))  # the same scenario and recorded replies
    client = RosClient("transport_client")
    steps = client.collect(PlanStep, "/planner/trace")
    try:
        for name in NODES:
            client.add(node_class(name)(config))
        publisher = client.node.create_publisher(String, "/planner/command", 10)
        wait_for(lambda: client.node.count_subscribers("/planner/command") > 0)
        publisher.publish(String(data=KITCHEN_REQUEST))
        wait_for(lambda: any(s.kind == "result" for s in steps), timeout=120)
    finally:
        client.close()
    return what_happened([(s.kind, s.text) for s in steps])


def test_a_request_takes_the_same_course_in_process_and_over_ros(ros, tmp_path, skill_planner):
    local = what_happened(run_kitchen_request(kitchen_plan(), skill_planner)[1])
    assert local["failures"] == ["OBJECT_NOT_FOUND"] and local["outcome"] == "succeeded"  # the bottle was moved
    assert over_ros(ros, tmp_path) == local

