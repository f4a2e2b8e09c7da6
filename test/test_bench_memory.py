"""The lifelong memory benchmark: episodes of told changes in generated homes, the true state kept
beside the robot's memory, each update scored on what it changed."""

import json

import pytest

from conftest import CONFIG, ROBOT
from planner.adapters.llm import ScriptedPolicy
from planner.bench import memory
from planner.core.planning.settings import PlannerSettings
from planner.core.skills import SkillPlanner, load_skill_library
from planner.sim.in_process import SimulatedRobot

SKILLS = SkillPlanner(load_skill_library(CONFIG / "skills.yaml"), ROBOT)


@pytest.fixture(scope="module")
def skills():
    return SKILLS


@pytest.fixture(scope="module")
def grounder():
    """As the stack grounds requests: "the throw" names the map's blanket."""
    from planner.config import load_config
    from planner.wiring import make_grounder

    return make_grounder(load_config(CONFIG / "planner.yaml"))


@pytest.fixture(scope="module")
def episode():
    return memory.make_episode(7, SKILLS, changes=12, tasks=3)


SETTINGS = PlannerSettings(confirm_timeout_s=0, robot_state_wait_s=0, goal_check_threshold=0, need_check_threshold=0)


def true_changes(episode):
    """What a model that reads every sentence right would answer: each change as the facts that went
    and came, each request as its goal."""
    replies, before = [], memory.true_facts(episode.home.world)
    for step in episode.steps:
        if step.kind == "task":
            fields = {"kind": step.goal.kind, "object": step.goal.object}
            replies.append({"goals": [{**fields, "target": step.goal.target} if step.goal.target else fields]})
            continue
        after = memory.true_facts(step.world)
        triplet = lambda fact: {"subject": fact[0], "relation": fact[1], "object": fact[2]}  # noqa: E731
        replies.append({"remove": [triplet(f) for f in sorted(before - after, key=str)],
                        "add": [triplet(f) for f in sorted(after - before, key=str)]})
        before = after
    return replies


def test_an_episode_is_told_changes_with_requests_between_and_the_same_seed_gives_the_same(episode):
    kinds = [s.kind for s in episode.steps]
    assert kinds.count("change") == 12 and kinds.count("task") == 3
    again = memory.make_episode(7, SKILLS, changes=12, tasks=3)
    assert [s.sentence for s in again.steps] == [s.sentence for s in episode.steps]
    # Each change changes the home.
    worlds = [episode.home.world] + [s.world for s in episode.steps if s.kind == "change"]
    assert all(memory.true_facts(a) != memory.true_facts(b) for a, b in zip(worlds, worlds[1:]))


def test_the_memory_starts_as_the_home_is(skills, episode):
    robot = SimulatedRobot(episode.home.world, [], skills)
    assert memory.memory_facts(skills, robot) == memory.true_facts(episode.home.world)


def test_a_model_that_reads_every_change_right_scores_every_update(skills, grounder):
    episode = memory.make_episode(7, SKILLS, changes=12, tasks=0)
    replies = [json.dumps(r) for r in true_changes(episode)]
    run = memory.run_episode(episode, skills, ScriptedPolicy(replies), "full+verify", SETTINGS, grounder, lambda line: None)
    assert [u["ok"] for u in run["updates"]] == [True] * 12, [u for u in run["updates"] if not u["ok"]]
    assert run["final_state_equal"]
    summary = memory.summarize([run])["full+verify"]
    assert summary["update_success"] == 1.0 and summary["calls_per_update"] == 1


def test_a_model_that_changes_nothing_scores_no_update(skills, episode, grounder):
    nothing = json.dumps({"remove": [], "add": []})
    replies = [nothing if "remove" in r else r for r in true_changes(episode)]
    run = memory.run_episode(episode, skills, ScriptedPolicy(replies), "full", SETTINGS, grounder, lambda line: None)
    assert all(u["expected"] and not u["got"] and not u["same_change"] for u in run["updates"])
    assert not run["final_state_equal"]
    # A memory that never changes is right only where the home went back to how it started.
    start = memory.true_facts(episode.home.world)
    worlds = [start] + [memory.true_facts(s.world) for s in episode.steps if s.kind == "change"]
    went_back = [(before ^ after) & after == (before ^ after) & start for before, after in zip(worlds, worlds[1:])]
    assert [u["ok"] for u in run["updates"]] == went_back and not went_back[0]


def test_an_update_is_right_when_the_memory_is_the_home_on_what_it_touched():
    """A mug the memory had on the wrong shelf, told onto the table: right, though the memory took
    away a different fact than the home did; touching anything else, or missing part, is wrong."""
    home_before = {("mug_1", "on", "shelf_1"), ("cup_1", "on", "desk_1")}
    home_after = {("mug_1", "on", "table_1"), ("cup_1", "on", "desk_1")}
    memory_before = {("mug_1", "on", "shelf_2"), ("cup_1", "on", "desk_1")}
    memory_after = {("mug_1", "on", "table_1"), ("cup_1", "on", "desk_1")}
    assert memory.score_update(home_before, home_after, memory_before, memory_after)
    assert not memory.same_change(home_before, home_after, memory_before, memory_after)
    moved_the_cup_too = memory_after - {("cup_1", "on", "desk_1")} | {("cup_1", "on", "table_1")}
    assert not memory.score_update(home_before, home_after, memory_before, moved_the_cup_too)
    assert not memory.score_update(home_before, home_after, memory_before, memory_before)
    assert memory.score_update(home_before, home_after, home_before, home_after)
    assert memory.same_change(home_before, home_after, home_before, home_after)


def test_a_request_is_planned_from_memory_and_carried_out_in_the_true_home(skills, grounder):
    home = memory.make_home(7, ROBOT)
    world = home.world
    thing = next(o for o in world.objects if sum(x.label == o.label for x in world.objects) == 1)
    target = next(f for f in world.furniture if f.id != thing.placed_on and not f.openable
                  and f.id in {o.placed_on for o in world.objects})
    moved = world.model_copy(update={"objects": [o.model_copy(update={"placed_on": target.id, "offset": (0.0, 0.0)})
                                                 if o.id == thing.id else o for o in world.objects]})
    steps = [memory.Step("change", f"I put the {thing.label} on the {target.label}", moved),
             memory.Step("task", f"Bring me the {thing.label}", moved,
                         memory.Goal(kind="holding", object=thing.label, object_id=thing.id))]
    episode = memory.Episode(7, home, steps)
    told = {"remove": [{"subject": thing.id, "relation": "on", "object": thing.placed_on}],
            "add": [{"subject": thing.id, "relation": "on", "object": target.id}]}
    goal = {"goals": [{"kind": "holding", "object": thing.label}]}
    run = memory.run_episode(episode, skills, ScriptedPolicy([told, goal]), "full+verify", SETTINGS, grounder,
                             lambda line: None)
    assert run["plans"][0]["ok"] and f"GOTO({target.id})" in run["plans"][0]["calls"], run["plans"]
    # Not told: the plan goes where the thing was, and in the true home it is not there.
    nothing = {"remove": [], "add": []}
    run = memory.run_episode(episode, skills, ScriptedPolicy([nothing, goal]), "full", SETTINGS, grounder,
                             lambda line: None)
    assert not run["plans"][0]["ok"] and "true home" in run["plans"][0]["why"], run["plans"]


def test_the_command_line_writes_results_a_report_and_a_plot(tmp_path, capsys):
    import yaml

    from planner.cli import main

    episode = memory.make_episode(1000, SKILLS, changes=6, tasks=1)
    replies = tmp_path / "replies.yaml"
    replies.write_text(yaml.safe_dump([json.dumps(r) for r in true_changes(episode)]))
    assert main(["bench", "memory", "--seed", "1000", "--changes", "6", "--requests", "1", "--variants", "full+verify",
                 "--llm", "scripted", "--replies", str(replies), "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "memory-1000-scripted-scripted-replies.json").read_text())
    assert results["summary"]["full+verify"]["update_success"] == 1.0
    assert "| full graph, verified | 100% | 100% | 6/6 |" in capsys.readouterr().out
    assert (tmp_path / "memory-1000-scripted-scripted-replies.png").exists()
    # Interrupted after a variant, a run with --resume keeps it and runs only the rest (the replies
    # here are one variant's: a second run of the first would leave none for the next).
    results["runs"][0]["updates"][0]["sentence"] = "kept from the first run"
    (tmp_path / "memory-1000-scripted-scripted-replies.json").write_text(json.dumps({**results, "complete": False}))
    assert main(["bench", "memory", "--seed", "1000", "--changes", "6", "--requests", "1", "--variants", "full+verify",
                 "full", "--resume", "--llm", "scripted", "--replies", str(replies), "--out", str(tmp_path)]) == 0
    resumed = json.loads((tmp_path / "memory-1000-scripted-scripted-replies.json").read_text())
    assert resumed["runs"][0]["updates"][0]["sentence"] == "kept from the first run"
    assert resumed["summary"]["full"]["update_success"] == 1.0
    assert main(["bench", "memory", "--variants", "telepathy", "--llm", "scripted", "--replies", str(replies)]) == 2


def test_each_sentence_singles_out_what_it_speaks_of():
    """A thing whose kind the home has twice is named with where it is; two of a kind on the same
    furniture in one room cannot be told apart, and no sentence speaks of them."""
    episode = memory.make_episode(1002, SKILLS, changes=40, tasks=0)
    before = episode.home.world
    qualified = 0
    for step in episode.steps:
        moved = [o for o in step.world.objects if o != next(b for b in before.objects if b.id == o.id)]
        if moved and sum(o.label == moved[0].label for o in before.objects) > 1:
            assert " from the " in step.sentence, step.sentence
            qualified += 1
        before = step.world
    assert qualified, "the home should have a kind twice"
    world = episode.home.world
    twin = next(o for o in world.objects if sum(x.label == o.label for x in world.objects) == 1)
    beside = world.model_copy(update={"objects": [*world.objects, twin.model_copy(update={"id": twin.id + "_twin"})]})
    words = memory.Words(memory.random.Random(0), episode.home,
                         {f.id: memory.SceneGraph.from_world(world).entity(f.id).room for f in world.furniture})
    assert words.thing(world, twin.id) == f"the {twin.label.replace('_', ' ')}" or words.thing(world, twin.id)
    assert words.thing(beside, twin.id) is None


def test_requests_are_ones_the_robot_can_carry_out_in_the_true_home():
    """A robot too short for high furniture is never asked for what stands on it."""
    short = SkillPlanner(SKILLS.library, ROBOT.model_copy(update={"workspace_z_m": (0.05, 0.8)}))
    episode = memory.make_episode(1002, short, changes=30, tasks=10)
    requests = [s for s in episode.steps if s.kind == "task"]
    assert len(requests) == 10
    for step in requests:
        scene = memory.SceneGraph.from_world(step.world)
        support = scene.entity(scene.furniture_support(step.goal.object_id)[1])
        assert support.center[2] + support.size[2] / 2 <= 0.8, step.sentence
        if step.goal.target:
            assert any(f.center[2] + f.size[2] / 2 <= 0.8 for f in scene.furniture() if f.label == step.goal.target)


def test_an_episode_exported_to_files_runs_from_them_on_a_symbolic_memory(tmp_path, capsys):
    """The file layout others' episodes come in: a generated episode written to it and run back,
    with a model that reads every change right and writes every goal right, keeps a memory equal to
    the home at every request and plans right; a broken folder is refused naming the file."""
    import shutil

    import yaml

    from planner.bench import memory_files
    from planner.cli import main

    assert main(["bench", "memory", "--seed", "1000", "--changes", "6", "--requests", "2", "--export", str(tmp_path)]) == 0
    folder, domain = tmp_path / "episode-1000", tmp_path / "domain.pddl"
    episode = memory_files.load_episode(domain, folder)
    assert [s.kind for s in episode.steps].count("change") == 6 and [s.kind for s in episode.steps].count("goal") == 2
    replies, previous = [], memory.make_home(1000, ROBOT).world
    generated = memory.make_episode(1000, SKILLS, changes=6, tasks=2)
    for step, told in zip(episode.steps, generated.steps):
        if step.kind == "goal":
            replies.append({"pddl": step.problem.split("(:goal", 1)[1].strip()[:-2].strip()})
            continue
        before, after = memory.true_facts(previous), memory.true_facts(told.world)
        triplet = lambda fact: {"subject": fact[0], "relation": fact[1], "object": fact[2]}  # noqa: E731
        replies.append({"remove": [triplet(f) for f in sorted(before - after, key=str)],
                        "add": [triplet(f) for f in sorted(after - before, key=str)]})
        previous = told.world
    replies_file = tmp_path / "replies.yaml"
    replies_file.write_text(yaml.safe_dump([json.dumps(r) for r in replies]))
    assert main(["bench", "memory", "--domain", str(domain), "--episode", str(folder), "--variants", "full+verify",
                 "--llm", "scripted", "--replies", str(replies_file), "--out", str(tmp_path)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "full+verify: memory right 100%, plans 100%;", last
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    goal = next(broken.glob("time_*_goal"))
    (goal / "goal.txt").unlink()
    assert main(["bench", "memory", "--domain", str(domain), "--episode", str(broken), "--llm", "scripted",
                 "--replies", str(replies_file), "--variants", "full"]) == 1
    assert f"{goal / 'goal.txt'}: missing" in capsys.readouterr().err


FLAT_DOMAIN = """(define (domain flat)
 (:requirements :typing)
 (:types place thing area - object cupboard - place)
 (:predicates (ontop ?t - thing ?p - place) (within ?t - thing ?p - place) (door_open ?p - place)
              (located ?p - place ?a - area))
 (:action carry :parameters (?t - thing ?from ?to - place) :precondition (ontop ?t ?from)
  :effect (and (not (ontop ?t ?from)) (ontop ?t ?to))))
"""
FLAT_OBJECTS = "galley den - area shelf_1 sink_1 - place larder_1 - cupboard cup_1 apple_1 book_1 - thing"
FLAT_START = ["(located shelf_1 den)", "(located sink_1 galley)", "(located larder_1 galley)",
              "(ontop apple_1 larder_1)", "(within apple_1 larder_1)", "(ontop book_1 shelf_1)"]


def flat_problem(name: str, facts: list[str], goal: str = "(and)") -> str:
    return f"(define (problem {name}) (:domain flat)\n (:objects {FLAT_OBJECTS})\n (:init {' '.join(facts)})\n (:goal {goal}))\n"


def test_the_grounded_reading_runs_an_episode_from_files_of_a_domain_with_its_own_predicates(tmp_path, capsys):
    """An episode from files has no scene graph: one is built from its state through a scene mapping
    (which predicates say on, inside, open and room), the stack's grounded reading finds what each
    sentence names there, and its changes come back in the domain's predicates."""
    import yaml

    from planner.cli import main

    folder = tmp_path / "episode"
    for step in ("time_0001_state_change", "time_0002_state_change", "time_0003_goal"):
        (folder / step).mkdir(parents=True)
    (tmp_path / "domain.pddl").write_text(FLAT_DOMAIN)
    (folder / "initial_problem.pddl").write_text(flat_problem("start", [*FLAT_START, "(ontop cup_1 sink_1)"]))
    (folder / "time_0001_state_change" / "state_change.txt").write_text("I took the cup from the sink to the shelf in the den.")
    (folder / "time_0002_state_change" / "state_change.txt").write_text("Someone opened the larder.")
    (folder / "time_0003_goal" / "goal.txt").write_text("Put the book by the sink.")
    (folder / "time_0003_goal" / "problem.pddl").write_text(flat_problem(
        "later", [*FLAT_START, "(ontop cup_1 shelf_1)", "(door_open larder_1)"], "(ontop book_1 sink_1)"))
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(yaml.safe_dump({"on": "ontop", "inside": "within", "open": "door_open", "room": "located",
                                       "openable_types": ["cupboard"]}))
    replies = [{"change": "moved", "thing": "cup", "thing_was_on": "sink", "place": "shelf", "place_room": "den"},
               {"change": "opened", "thing": "larder", "place": ""},
               {"pddl": "(ontop book_1 sink_1)"}]
    replies_file = tmp_path / "replies.yaml"
    replies_file.write_text(yaml.safe_dump([json.dumps(r) for r in replies]))
    run = ["bench", "memory", "--domain", str(tmp_path / "domain.pddl"), "--episode", str(folder), "--variants",
           "grounded+verify", "--llm", "scripted", "--replies", str(replies_file), "--out", str(tmp_path)]
    assert main([*run, "--scene-mapping", str(mapping)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "grounded+verify: memory right 100%, plans 100%;", last
    # Without the mapping the domain's predicates are not the stack's: said before anything runs.
    assert main(run) == 1
    assert "the default scene mapping: on: the domain has no predicate 'on' of 2 parameter(s)" in capsys.readouterr().err


def test_a_generated_homes_state_becomes_a_home_with_its_supports_doors_and_rooms():
    from planner.bench.episode_scene import EpisodeScene, SceneMapping
    from planner.bench.memory_files import SymbolicMemory
    from planner.core.knowledge import Change, Triplet

    memory = SymbolicMemory(FLAT_DOMAIN, flat_problem("start", [*FLAT_START, "(ontop cup_1 sink_1)",
                                                                  "(door_open larder_1)"]))
    scene = EpisodeScene(SceneMapping(on="ontop", inside="within", open="door_open", room="located",
                                      openable_types=["cupboard"]), memory.predicates, memory.objects, "test")
    world = scene.world(memory.facts)
    assert sorted(r.name for r in world.rooms) == ["den", "galley"]
    assert {f.id: (f.label, world.room_at(*f.center[:2]), f.openable, f.open) for f in world.furniture} == {
        "larder_1": ("larder", "galley", "door", True), "shelf_1": ("shelf", "den", "", False),
        "sink_1": ("sink", "galley", "", False)}
    assert {(o.id, o.label, o.placed_on, o.inside) for o in world.objects} == {
        ("apple_1", "apple", "larder_1", True), ("book_1", "book", "shelf_1", False), ("cup_1", "cup", "sink_1", False)}
    read = Change(remove=[Triplet(subject="cup_1", relation="on", object="sink_1")],
                  add=[Triplet(subject="cup_1", relation="inside", object="larder_1"),
                       Triplet(subject="larder_1", relation="is_open")])
    assert scene.in_domain(read) == Change(remove=[Triplet(subject="cup_1", relation="ontop", object="sink_1")],
                                           add=[Triplet(subject="cup_1", relation="within", object="larder_1"),
                                                Triplet(subject="larder_1", relation="door_open")])
