"""Plans from a scene by one agent or a team of three, with recorded replies: what each agent is
shown, how a bad reply is sent back, the image path; the generated plan tasks and the benchmark
and generate commands end to end."""

from __future__ import annotations

import base64
import json

import pytest
import yaml

from conftest import CONFIG, ROBOT
from planner.adapters.llm import ScriptedPolicy
from planner.bench import plan_tasks
from planner.cli import main
from planner.core.errors import InputError
from planner.core.planning.scene_plans import ScenePlanner, SceneTask, call_sentence, load_tasks
from planner.core.skills import SkillPlanner, load_skill_library
from planner.sim.in_process import SimulatedRobot

SKILLS = SkillPlanner(load_skill_library(CONFIG / "skills.yaml"), ROBOT)
TABLE = [{"name": "mug", "room": "kitchen", "on": "counter"}, {"name": "counter", "room": "kitchen"},
         {"name": "shelf", "room": "living room"}, {"name": "sofa", "room": "living room"},
         {"name": "remote", "room": "living room", "on": "sofa"}]
TASK = SceneTask(id="t1", task="Put the mug on the shelf", scene_table=TABLE,
                 reference_steps=["Go to the counter.", "Pick up the mug.", "Go to the shelf.", "Put the mug on the shelf."])
PLAN = {"steps": ["Go to the counter.", "Pick up the mug.", "Go to the shelf.", "Put the mug on the shelf."]}
GRAPH = {"objects": ["mug", "counter", "shelf"], "relations": [{"subject": "mug", "relation": "on", "object": "counter"}]}
DESCRIPTIONS = {"descriptions": [{"object": "mug", "description": "On the kitchen counter."},
                                 {"object": "shelf", "description": "In the living room, empty."}]}
# The smallest PNG there is: one transparent pixel.
PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def text_of(message: dict) -> str:
    content = message["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def test_one_agent_sees_the_whole_table_and_writes_the_steps():
    policy = ScriptedPolicy([PLAN])
    plan = ScenePlanner(policy).plan(TASK, "single", "table")
    assert plan.steps == PLAN["steps"] and plan.usage.calls == 1 and not plan.error
    prompt = text_of(policy.prompts[0][0])
    assert "Put the mug on the shelf" in prompt and "name: remote; room: living room; on: sofa" in prompt


def test_three_agents_each_see_their_own_part_and_the_planner_sees_no_table():
    policy = ScriptedPolicy([GRAPH, DESCRIPTIONS, PLAN])
    plan = ScenePlanner(policy).plan(TASK, "multi", "table")
    assert plan.steps == PLAN["steps"] and plan.usage.calls == 3
    miner, describer, planner = (text_of(p[0]) for p in policy.prompts)
    assert "name: remote" in miner and "name: remote" in describer
    assert "mug, counter, shelf" in describer  # the describer is asked about what the miner found
    assert "(mug, on, counter)" in planner and "mug: On the kitchen counter." in planner
    assert "remote" not in planner and "sofa" not in planner  # the planner's context is what the miners found
    assert plan.agents["objects"] == ["mug", "counter", "shelf"]


def test_what_the_scene_lacks_is_dropped_from_the_miners_graph_and_a_graph_of_nothing_else_asked_again():
    nothing = {"objects": ["cupboard"], "relations": []}
    lacking = {"objects": ["mug", "cupboard", "shelf"], "relations": [
        {"subject": "mug", "relation": "on", "object": "counter_1"}, {"subject": "mug", "relation": "in", "object": "cupboard"},
        {"subject": "shelf", "relation": "in", "object": "room"}]}
    policy = ScriptedPolicy([nothing, lacking, DESCRIPTIONS, PLAN])
    plan = ScenePlanner(policy, retries=2).plan(TASK, "multi", "table")
    assert plan.steps == PLAN["steps"] and plan.usage.calls == 4
    assert "cupboard not in the scene" in text_of(policy.prompts[1][-1])
    # The counter a relation names by its id is listed, so the describer is asked where it is too.
    assert plan.agents["objects"] == ["mug", "shelf", "counter_1"]
    assert plan.agents["relations"] == [{"subject": "mug", "relation": "on", "object": "counter_1"}]
    assert "mug, shelf, counter_1" in text_of(policy.prompts[2][0])


def test_a_miner_may_name_the_rooms_and_places_the_table_gives():
    rooms = {"objects": ["mug", "kitchen", "living_room", "shelf"],
             "relations": [{"subject": "mug", "relation": "in", "object": "kitchen"}]}
    policy = ScriptedPolicy([rooms, DESCRIPTIONS, PLAN])
    assert ScenePlanner(policy, retries=0).plan(TASK, "multi", "table").steps == PLAN["steps"]


def test_a_plan_that_stays_invalid_is_no_plan_with_the_reason():
    policy = ScriptedPolicy([{"steps": []}, {"steps": [""]}, {"plan": "go"}])
    plan = ScenePlanner(policy, retries=2).plan(TASK, "single", "table")
    assert plan.steps == [] and plan.usage.calls == 3 and "stayed invalid" in plan.error


def test_an_image_goes_to_the_miners_inline_and_not_to_the_planner(tmp_path):
    (tmp_path / "kitchen.png").write_bytes(PIXEL)
    task = SceneTask(id="t2", task="Put the mug on the shelf", image="kitchen.png")
    seen = {"objects": ["mug"], "relations": [{"subject": "mug", "relation": "on", "object": "cupboard"}]}
    policy = ScriptedPolicy([seen, DESCRIPTIONS, PLAN])  # a recorded vision reply
    plan = ScenePlanner(policy).plan(task, "multi", "image", tmp_path)
    assert plan.steps == PLAN["steps"]  # nothing to check the miner's names against in a picture
    assert plan.agents["objects"] == ["mug", "cupboard"]
    for prompt in policy.prompts[:2]:
        parts = prompt[0]["content"]
        assert parts[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PIXEL).decode()}}
    assert isinstance(policy.prompts[2][0]["content"], str)
    with pytest.raises(InputError, match="no image"):
        ScenePlanner(policy).plan(TASK, "single", "image")
    with pytest.raises(InputError, match="not an image file"):
        ScenePlanner(policy).plan(task.model_copy(update={"image": "notes.txt"}), "single", "image", tmp_path)


def test_a_tasks_file_names_each_bad_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(TASK.model_dump(exclude_none=True)) + "\n" + json.dumps({"id": "t3", "task": "Sing"}) + "\n"
                    + json.dumps({"id": "t4", "task": "Go", "scene_table": [{"room": "hall"}]}) + "\n"
                    + json.dumps(TASK.model_dump(exclude_none=True)) + "\n")
    with pytest.raises(InputError) as error:
        load_tasks(path)
    assert "tasks.jsonl:2: give scene_table or image" in str(error.value)
    assert "tasks.jsonl:3: every scene_table row needs a name" in str(error.value)
    assert "tasks.jsonl:4: id 't1' is already on line 1" in str(error.value)


def test_a_skill_call_reads_as_a_plan_step():
    from planner.core.world import load_world

    scene = SimulatedRobot(load_world(CONFIG / "worlds" / "apartment.yaml"), [], SKILLS).graph
    assert call_sentence("GOTO(fridge_1)", scene) == "Go to the fridge."
    assert call_sentence("PICK(mug_1, left)", scene) == "Pick up the mug."
    assert call_sentence("PLACE(mug_1, fridge_1, left)", scene) == "Put the mug in the fridge."  # a door: into it
    assert call_sentence("PLACE(mug_1, coffee_table_1, left)", scene) == "Put the mug on the coffee table."
    assert call_sentence("SAY(Hello)", scene) == "Say: Hello"


def test_generated_tasks_have_a_reference_plan_and_a_scene_table_and_differ_by_seed():
    tasks = plan_tasks.make_plan_tasks(11, SKILLS, 5)
    assert len({t["task"] for t in tasks}) == 5
    for task in tasks:
        SceneTask.model_validate(task)
        assert task["reference_steps"][0].startswith("Go to the ") and len(task["reference_steps"]) >= 2
        assert any(step.startswith(("Pick up", "Put")) for step in task["reference_steps"])
    assert [t["task"] for t in plan_tasks.make_plan_tasks(12, SKILLS, 5)] != [t["task"] for t in tasks]


def test_generated_tasks_are_written_as_a_tasks_file_the_benchmark_reads(tmp_path):
    assert main(["bench", "generate", "plans", "--seeds", "11,1000", "--per-home", "2", "--out", str(tmp_path)]) == 0
    tasks = load_tasks(tmp_path / "tasks.jsonl")
    assert [t.split for t in tasks] == ["development"] * 4   # 1000-1019 are development data too


def test_bench_plans_runs_both_arms_and_scores_them(tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASK.model_dump(exclude_none=True)) + "\n")
    # single: the reference itself; multi: miner, describer, then a plan to the wrong place.
    wrong = {"steps": ["Go to the counter.", "Pick up the mug.", "Go to the sofa.", "Put the mug on the sofa."]}
    (tmp_path / "replies.yaml").write_text(yaml.safe_dump([json.dumps(r) for r in (PLAN, GRAPH, DESCRIPTIONS, wrong)]))
    assert main(["bench", "plans", "--suite", str(tasks), "--llm", "scripted", "--replies", str(tmp_path / "replies.yaml"),
                 "--out", str(tmp_path / "out"), "--name", "run"]) == 0
    results = json.loads((tmp_path / "out" / "run.json").read_text())
    single, multi = results["arms"]["single/table"], results["arms"]["multi/table"]
    assert single["pg2s"] == pytest.approx(1) and single["kas"] == pytest.approx(1)
    assert 0 < multi["pg2s"] < 0.9 and multi["llm_calls"] == 3
    assert (tmp_path / "out" / "run.png").stat().st_size > 0 and "| multi/table |" in (tmp_path / "out" / "run.md").read_text()
    assert main(["bench", "plans", "--suite", str(tasks), "--arms", "multi/image", "--out", str(tmp_path)]) == 2
    assert "reads no images" in capsys.readouterr().err


def test_plans_generate_writes_what_plans_score_reads(tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASK.model_dump(exclude_none=True)) + "\n")
    (tmp_path / "replies.yaml").write_text(yaml.safe_dump([json.dumps(r) for r in (GRAPH, DESCRIPTIONS, PLAN)]))
    out = tmp_path / "predicted.jsonl"
    assert main(["plans", "generate", "--suite", str(tasks), "--agents", "multi", "--llm", "scripted",
                 "--replies", str(tmp_path / "replies.yaml"), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == {"id": "t1", "steps": PLAN["steps"]}
    capsys.readouterr()
    assert main(["plans", "score", "--reference", str(tasks), "--predicted", str(out)]) == 0  # the tasks file is the reference
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("mean over 1 plans: PG2S 1.000; KAS 1.000")
