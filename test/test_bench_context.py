"""The prompt-size benchmark's homes and requests: the same requests in a home and in one with ten
times the objects, each carried out by the simulated robot when the plan is right."""

import pytest

from conftest import ROBOT
from planner.bench import context
from planner.bench.suite import _task_problems


@pytest.fixture(scope="module")
def suite():
    return context.make_suite(rooms=12, objects=30, factor=10, seed=0, robot=ROBOT)


def test_the_two_homes_differ_only_in_their_objects(suite):
    small, large = suite.worlds["small"], suite.worlds["large"]
    assert (len(small.objects), len(large.objects)) == (30, 300)
    assert [f.id for f in small.furniture] == [f.id for f in large.furniture]
    assert [r.name for r in small.rooms] == [r.name for r in large.rooms]


def test_every_request_runs_in_both_homes_and_names_what_they_hold(suite):
    by_request = {}
    for task in suite.suite.tasks:
        assert not _task_problems(task, suite.worlds[task.world], ROBOT), task.id
        by_request.setdefault(task.request, set()).add(task.world)
    assert len(by_request) >= 4 and all(worlds == {"small", "large"} for worlds in by_request.values())


def test_growth_is_prompt_tokens_per_call_from_the_small_home_to_the_large():
    episodes = [{"world": "small", "success": True, "llm_calls": 4, "prompt_tokens": 4000},
                {"world": "large", "success": True, "llm_calls": 2, "prompt_tokens": 2300}]
    summary = context.summarize(episodes)
    assert summary["small"]["prompt_tokens_per_call"] == 1000 and summary["large"]["prompt_tokens_per_call"] == 1150
    assert summary["growth"] == 0.15 and summary["target_met"]


def test_a_step_prompt_stays_the_same_size_in_a_home_with_ten_times_the_objects(suite):
    """Characters as a stand-in for tokens: the model sees the request, the robot, the goals' nearest
    candidates and a room's contents counted, never the whole map."""
    from conftest import CONFIG
    from planner.adapters.llm import ScriptedPolicy
    from planner.config import load_config
    from planner.core.planning.settings import PlannerSettings
    from planner.core.planning.task_planner import TaskPlanner
    from planner.sim.in_process import SimulatedRobot
    from planner.wiring import load_skill_planner

    skills = load_skill_planner(load_config(CONFIG / "planner.yaml"))
    sizes = {}
    for name, world in suite.worlds.items():
        robot = SimulatedRobot(world.with_robot_at("kitchen", ROBOT.standoff_m), [], skills)
        policy = ScriptedPolicy([{"goals": [{"kind": "bring_to_user", "object": "cup"}]},
                                 {"thought": "look", "action": "get_objects_in_room(kitchen)"}, "stop"])
        TaskPlanner(policy, robot, skills, PlannerSettings(confirm_timeout_s=0, max_repairs=0, step_budget=2)).run(
            "Bring me a cup")
        sizes[name] = [len(prompt[-1]["content"]) for prompt in policy.prompts[1:]]
    assert all(large <= 1.2 * small for small, large in zip(sizes["small"], sizes["large"])), sizes
