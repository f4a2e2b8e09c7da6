"""`planner bench generate pddl` and `planner bench pddl`: household tasks in words with their
ground-truth problems, the model's problems planned by Fast Downward and validated against them."""

import json

import yaml

from planner.cli import main
from planner.core.planning.classical import plan_pddl, validate_plan


def generated(tmp_path, seeds="0-3"):
    assert main(["bench", "generate", "pddl", "--seeds", seeds, "--out", str(tmp_path / "set")]) == 0
    return tmp_path / "set" / "domain.pddl", tmp_path / "set" / "tasks"


def test_generated_tasks_say_in_words_what_their_problems_say_and_can_be_planned(tmp_path):
    domain, tasks = generated(tmp_path)
    names = sorted(p.stem for p in tasks.glob("*.nl"))
    assert names == ["task-0", "task-1", "task-2", "task-3"]
    for name in names:
        words, truth = (tasks / f"{name}.nl").read_text(), (tasks / f"{name}.pddl").read_text()
        found = plan_pddl(domain.read_text(), truth)
        assert found.status == "plan" and found.actions, name
        assert validate_plan(domain.read_text(), truth, found.actions) == ""
        # Every thing and piece of furniture of the problem is named in the words.
        objects = truth.split("(:objects", 1)[1].split("(:init", 1)[0]
        for line in objects.strip().splitlines():
            for thing in line.strip(" )").rsplit(" - ", 1)[0].split():
                assert thing in words, (name, thing)
        assert words.splitlines()[-1].startswith("Goal: ")


def test_a_plan_that_misses_the_goal_is_caught_by_the_validator(tmp_path):
    domain, tasks = generated(tmp_path, "0")
    truth = (tasks / "task-0.pddl").read_text()
    assert "keys_1" in truth and "(on keys_1 sofa_1)" in truth
    wrong = validate_plan(domain.read_text(), truth, [("do_goto", ["nightstand_1", "hallway"])])
    assert wrong and "goal" in wrong.lower()
    assert validate_plan(domain.read_text(), truth, [("do_fly", ["hallway"])]) == "step 1: no action do_fly in the domain"


def run_bench(tmp_path, domain, tasks, replies, *extra):
    (tmp_path / "replies.yaml").write_text(yaml.safe_dump([json.dumps({"pddl": r}) for r in replies]))
    code = main(["bench", "pddl", "--domain", str(domain), "--suite", str(tasks), "--llm", "scripted",
                 "--replies", str(tmp_path / "replies.yaml"), "--out", str(tmp_path / "out"), "--name", "run", *extra])
    return code, json.loads((tmp_path / "out" / "run.json").read_text()), (tmp_path / "out" / "run.md").read_text()


def test_problems_the_model_writes_are_planned_validated_and_mended_when_they_do_not_parse(tmp_path):
    domain, tasks = generated(tmp_path, "0-1")
    truth = {n: (tasks / f"{n}.pddl").read_text() for n in ("task-0", "task-1")}
    other_goal = truth["task-1"].split("(:goal", 1)[0] + "(:goal (and (on banana_1 sofa_1))))\n"
    code, results, report = run_bench(tmp_path, domain, tasks, [
        truth["task-0"],                               # right at once
        truth["task-1"].replace("(:init", "(:inot"),   # does not parse: said back, written again
        other_goal])                                   # parses, but its plan misses the real goal
    assert code == 0
    episodes = {e["task"]: e for e in results["episodes"]}
    assert episodes["task-0"]["outcome"] == "success" and episodes["task-0"]["optimal"]
    assert episodes["task-0"]["llm_calls"] == 1
    assert episodes["task-1"]["outcome"] == "wrong_plan" and episodes["task-1"]["llm_calls"] == 2
    assert results["summary"]["success_rate"] == 0.5 and results["summary"]["outcomes"] == {"success": 1, "wrong_plan": 1}
    assert report.rstrip().splitlines()[-1] == "success rate: 50.0%"
    assert (tmp_path / "out" / "run.png").stat().st_size > 5_000


def test_a_problem_with_a_type_the_domain_lacks_is_counted_invalid_and_the_run_goes_on(tmp_path):
    from planner.bench.pddl_tasks import MAX_REPAIRS

    domain, tasks = generated(tmp_path, "0-1")
    truth = {n: (tasks / f"{n}.pddl").read_text() for n in ("task-0", "task-1")}
    undeclared = truth["task-0"].replace("(:objects", "(:objects crate_1 - crate", 1)
    code, results, _ = run_bench(tmp_path, domain, tasks, [undeclared] * (MAX_REPAIRS + 1) + [truth["task-1"]])
    episodes = {e["task"]: e for e in results["episodes"]}
    assert code == 0 and episodes["task-0"]["outcome"] == "invalid_pddl"
    assert "'crate' is not declared" in episodes["task-0"]["reason"]
    assert episodes["task-1"]["outcome"] == "success"


def test_when_the_model_writes_only_the_goal_its_errors_are_named_and_mended(tmp_path):
    domain, tasks = generated(tmp_path, "1")
    code, results, _ = run_bench(tmp_path, domain, tasks, ["(and (held banana_9) (at living_room))",
                                                           "(and (held banana_1) (at living_room))"], "--write", "goal")
    episode = results["episodes"][0]
    assert code == 0 and episode["outcome"] == "success" and episode["llm_calls"] == 2
    assert results["write"] == "goal"
    # One ')' too many at the end closes nothing: the goal is read without it, in one call.
    code, results, _ = run_bench(tmp_path, domain, tasks, ["(and (held banana_1) (at living_room)))"], "--write",
                                 "goal")
    assert code == 0 and results["episodes"][0]["outcome"] == "success" and results["episodes"][0]["llm_calls"] == 1
