"""The kitchen -> bedroom bottle request carried out by the whole stack, each node its own
process, as `planner demo`, `planner bringup` and `planner send` run it."""

import json
import os
import signal
import subprocess
import time

import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from conftest import CONFIG, DATA, PLANNER, write_config
from planner.ros.recording import RECORDED

REQUEST = "Go to the table in the kitchen, pick up the bottle, and place it on the table in the bedroom"


def own_domain(offset: int) -> dict:
    """An environment on a DDS domain of its own: stopped stacks of earlier tests stay in
    discovery for a while."""
    return {**os.environ, "ROS_DOMAIN_ID": str((int(os.environ["ROS_DOMAIN_ID"]) + offset) % 232)}


def assert_in_order(lines: list[str], prefixes: tuple[str, ...]) -> None:
    """Each expected line comes after the previous one."""
    position = 0
    for prefix in prefixes:
        found = next((i for i in range(position, len(lines)) if lines[i].startswith(prefix)), None)
        assert found is not None, f"{prefix!r} missing or out of order in:\n" + "\n".join(lines)
        position = found


def test_demo_with_the_recorded_plan_replans_and_succeeds_and_its_recording_holds_the_run(tmp_path):
    recording = tmp_path / "demo.mcap"
    run = subprocess.run([PLANNER, "demo", "--config", str(DATA / "scripted.yaml"), "--record", str(recording)],
                         capture_output=True, text=True, timeout=300, env=own_domain(3))
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    lines = out.splitlines()
    assert_in_order(lines, (
        "[request]", "[goal]", "[skill]      GOTO(table_1)", "[world]      external agent moved bottle_1 onto table_2",
        "[failure]    PICK(bottle_1, right) failed at approach [OBJECT_NOT_FOUND]", "[suggestion]",
        "[perception] get_objects_in_room(kitchen)", "[skill]      GOTO(table_2)", "[skill]      PLACE(bottle_1, table_3, right)",
        "[result]     succeeded", "[recorded]"))
    assert any(line.startswith("[warning]") and "bottle_9" in line for line in lines)
    # The recording decodes with the MCAP reader from the definitions it carries, none of ours.
    messages: dict[str, list] = {}
    with recording.open("rb") as file:
        for _, channel, _, message in make_reader(file, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            messages.setdefault(channel.topic, []).append(message)
    steps = [(step.kind, step.text) for step in messages["/planner/trace"]]
    assert steps[0][0] == "request"
    assert any(kind == "failure" and "OBJECT_NOT_FOUND" in text for kind, text in steps)
    assert any(kind == "result" and text.startswith("succeeded") for kind, text in steps)
    # The graph as perception kept it: the bottle seen where it stood, on the way (a graph is
    # published every period, so the last one may come before the bottle was seen on table_3).
    supports = {edge.target for graph in messages["/scene_graph"] for edge in graph.edges
                if (edge.source, edge.relation) == ("bottle_1", "on")}
    assert supports & {"table_1", "table_2", "table_3"}, supports
    assert messages["/scene_graph/markers"] and {state.room for state in messages["/robot/state"]} >= {"kitchen", "bedroom"}
    assert "external agent moved bottle_1 onto table_2" in [event.data for event in messages["/sim/events"]]
    # The plan as a viewer shows it: each skill and how it went, and a numbered mark where it went.
    plan = messages["/planner/plan"][-1]
    assert plan.state == "succeeded" and plan.request.startswith("Go to the table in the kitchen")
    shown = list(zip(plan.skills, plan.skill_states))
    assert ("PICK(bottle_1, right)", "failed") in shown and shown[-1] == ("PLACE(bottle_1, table_3, right)", "done")
    labels = [marker.text for marker in messages["/planner/plan/markers"][-1].markers if marker.text]
    assert labels[-1] == f"{len(plan.skills)}. PLACE(bottle_1, table_3, right)"


def test_a_request_sent_in_llm_p_mode_plans_with_fast_downward_and_replans_after_the_bottle_moves(tmp_path):
    # The stack is configured for ReAct; the request asks for LLM+P (ExecuteTask's mode).
    run = subprocess.run([PLANNER, "demo", "--config", str(write_config(tmp_path)), "--mode", "llm_p"],
                         capture_output=True, text=True, timeout=300, env=own_domain(7))
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert_in_order(lines, (
        "[goal]", "[problem]", "[plan]       planned", "[skill]      GOTO(table_1)",
        "[failure]    PICK(bottle_1, left) failed at approach [OBJECT_NOT_FOUND]", "[problem]",
        "[plan]       replanned", "[skill]      GOTO(table_2)", "[skill]      PLACE(bottle_1, table_3, left)",
        "[result]     succeeded"))
    # The model read the goal; every step after came from the plans.
    assert "1 LLM calls" in next(line for line in lines if line.startswith("[result]"))


def test_bringup_then_send():
    """Also that the stack stops on SIGINT when started as a script's `cmd &` starts it: with SIGINT
    ignored, which it inherits."""
    env = own_domain(4)
    stack = subprocess.Popen([PLANNER, "bringup", "--config", str(DATA / "scripted.yaml")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        send = subprocess.run([PLANNER, "send", REQUEST, "--wait", "120"], capture_output=True, text=True, timeout=300,
                              env=env)
        assert send.returncode == 0, send.stdout + send.stderr
        assert "[done]       succeeded" in send.stdout
    finally:
        stack.send_signal(signal.SIGINT)
        try:
            assert stack.wait(timeout=30) == 0
        except subprocess.TimeoutExpired:
            stack.kill()  # its nodes go with it (they die with their parent)
            stack.wait()
            pytest.fail("the stack did not stop within 30 s of SIGINT")


def test_send_without_a_stack_says_so():
    send = subprocess.run([PLANNER, "send", REQUEST, "--wait", "2"], capture_output=True, text=True, timeout=60,
                          env=own_domain(1))
    assert send.returncode == 1 and "is the stack running?" in send.stderr


@pytest.mark.embedded
@pytest.mark.timeout(1800)
def test_demo_with_the_embedded_model():
    """The README's first command: the real 1.5B model through a llama.cpp server the stack starts."""
    started = time.monotonic()
    try:
        env = {k: v for k, v in own_domain(2).items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PLANNER_LLM_MODEL")}
        run = subprocess.run([PLANNER, "demo", "--timeout", "1500"], capture_output=True, text=True, timeout=1700, env=env)
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"no result after {timeout.timeout} s; trace so far:\n{(timeout.stdout or b'')[-6000:].decode(errors='replace')}")
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-4000:]
    assert "[result]     succeeded" in run.stdout and "[llm]" in run.stdout
    print(f"embedded demo: {time.monotonic() - started:.0f} s")


def test_the_shipped_foxglove_layout_and_rviz_config_show_topics_a_recording_holds():
    recorded = {f"/{topic}" for topic, _, _ in RECORDED}
    layout = json.loads((CONFIG / "views" / "planner.foxglove.json").read_text())
    panels = layout["configById"]

    def placed(node) -> list[str]:
        return [node] if isinstance(node, str) else placed(node["first"]) + placed(node["second"])
    assert sorted(placed(layout["layout"])) == sorted(panels)
    shown = {config["topicPath"] for config in panels.values() if "topicPath" in config}
    shown |= {topic for config in panels.values() for topic in config.get("topics", {})}
    assert shown and shown <= recorded
    rviz = yaml.safe_load((CONFIG / "views" / "planner.rviz").read_text())
    displays = rviz["Visualization Manager"]["Displays"]
    assert {d["Topic"]["Value"] for d in displays if "Topic" in d} <= recorded
    assert rviz["Visualization Manager"]["Global Options"]["Fixed Frame"] == "map"
