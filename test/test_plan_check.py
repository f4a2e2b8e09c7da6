"""The plan check: an LLM+P plan scored against the plans that worked for similar requests before
it runs; said in the trace, put to the user in confirm mode; kept when it worked."""

from __future__ import annotations

import pytest

from conftest import CONFIG, ROBOT
from planner.adapters.embeddings import SentenceEmbedder
from planner.adapters.language import SpacyParser
from planner.adapters.llm import ScriptedPolicy
from planner.core.case_store import CaseStore
from planner.core.explainer import CaseMemory
from planner.core.plan_check import PlanChecker, PlanCheckSettings
from planner.core.plan_score import PlanScorer
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.task_planner import TaskPlanner
from planner.core.skills import SkillPlanner, load_skill_library
from planner.core.types import EpisodeOutcome
from planner.core.world import load_world
from planner.sim.in_process import SimulatedRobot

SKILLS = SkillPlanner(load_skill_library(CONFIG / "skills.yaml"), ROBOT)
APARTMENT = load_world(CONFIG / "worlds" / "apartment.yaml")
MUG_TO_TABLE = {"goals": [{"kind": "object_on", "object": "mug", "object_id": "mug_1", "target": "coffee_table"}]}
PAST_REQUEST = "Put the mug from the counter on the coffee table"
PAST_PLAN = ["Go to the counter.", "Pick up the mug.", "Go to the coffee table.", "Put the mug on the coffee table."]


@pytest.fixture(scope="module")
def scorer():
    return PlanScorer(SpacyParser(), SentenceEmbedder())


def checker(scorer, mode="warn"):
    return PlanChecker(CaseMemory(CaseStore(":memory:"), scorer.embedder), scorer, PlanCheckSettings(mode=mode))


def run(check, replies, request, answers=()):
    robot = SimulatedRobot(APARTMENT.with_robot_at("counter_1", ROBOT.standoff_m), [], SKILLS, request=request,
                           answers=list(answers), plan_checker=check)
    trace = []
    settings = PlannerSettings(mode="llm_p", confirm_timeout_s=0, need_check_threshold=0, plan_check=check.settings)
    result = TaskPlanner(ScriptedPolicy(replies), robot, SKILLS, settings,
                         on_step=lambda step: trace.append((step.kind, step.text))).run(request)
    return result, trace, robot


def test_a_plan_is_judged_only_against_plans_for_similar_requests(scorer):
    check = checker(scorer)
    assert check.check(PAST_REQUEST, PAST_PLAN).score is None  # nothing has worked yet
    check.record(PAST_REQUEST, PAST_PLAN)
    alike = check.check("Could you put the cup from the counter on the coffee table?",
                        ["Go to the counter.", "Pick up the cup.", "Go to the coffee table.", "Put the cup on the coffee table."])
    assert alike.score is not None and alike.score > 0.6 and not alike.low and alike.like == PAST_REQUEST
    unlike = check.check("Put the mug from the counter on the coffee table, please",
                         ["Go to the sofa.", "Pick up the remote."])
    assert unlike.low and unlike.score is not None and unlike.score < 0.5
    assert check.check("Open the wardrobe in the bedroom", ["Go to the wardrobe.", "Open the wardrobe."]).score is None


def test_a_plan_that_worked_is_kept_and_later_plans_are_checked_against_it(scorer):
    check = checker(scorer)
    first, trace, _ = run(check, [MUG_TO_TABLE], PAST_REQUEST)
    assert first.success and first.plan_check is not None and first.plan_check.score is None
    assert ("check", "no similar request has worked before: nothing to compare the plan with") in trace
    assert check.memory.store.plans() == [(PAST_REQUEST, PAST_PLAN[1:])]  # it starts at the counter
    again, trace, _ = run(check, [MUG_TO_TABLE], "Please put the mug from the counter onto the coffee table")
    assert again.success and not again.plan_check.low and again.plan_check.like == PAST_REQUEST
    assert any(kind == "check" and "is like the one that worked" in text for kind, text in trace)


def test_a_plan_unlike_the_past_ones_is_a_warning_and_in_confirm_mode_waits_for_the_user(scorer):
    check = checker(scorer, mode="confirm")
    check.record(PAST_REQUEST, PAST_PLAN)
    misread = {"goals": [{"kind": "holding", "object": "remote", "object_id": "remote_1"}]}
    request = "Take what is on the counter over to the coffee table"  # read as: hold the remote
    declined, trace, robot = run(check, [misread], request, answers=["no"])
    assert declined.outcome == EpisodeOutcome.CANCELED and "did not confirm" in declined.summary
    assert any(kind == "warning" and "unlike the plans that worked" in text for kind, text in trace)
    assert robot.log.questions and robot.log.questions[0].endswith("Shall I carry it out?")
    assert robot.log.skills == []  # nothing moved
    accepted, _, robot = run(check, [misread], request, answers=["yes, go ahead"])
    assert accepted.success and "remote_1" in robot.sim.held.values()
    warned, trace, _ = run(checker(scorer, mode="warn"), [misread], request)
    assert warned.success and warned.plan_check.score is None  # a fresh history: nothing to warn about


def test_the_check_is_off_by_default_and_then_costs_nothing():
    robot = SimulatedRobot(APARTMENT.with_robot_at("counter_1", ROBOT.standoff_m), [], SKILLS, request=PAST_REQUEST)
    result = TaskPlanner(ScriptedPolicy([MUG_TO_TABLE]), robot, SKILLS,
                         PlannerSettings(mode="llm_p", confirm_timeout_s=0)).run(PAST_REQUEST)
    assert result.success and result.plan_check is None


def run_react(check, replies, request, answers=()):
    robot = SimulatedRobot(APARTMENT.with_robot_at("counter_1", ROBOT.standoff_m), [], SKILLS, request=request,
                           answers=list(answers), plan_checker=check)
    trace = []
    settings = PlannerSettings(mode="react", confirm_timeout_s=0, need_check_threshold=0, name_check_threshold=0,
                               plan_check=check.settings)
    result = TaskPlanner(ScriptedPolicy(replies), robot, SKILLS, settings,
                         on_step=lambda step: trace.append((step.kind, step.text))).run(request)
    return result, trace, robot


def test_react_is_checked_on_its_first_steps_against_the_first_steps_of_past_plans(scorer):
    check = checker(scorer, mode="confirm")
    check.record(PAST_REQUEST, PAST_PLAN[1:])
    step = [{"thought": "do it", "action": action} for action in
            ("PICK(mug_1, left)", "GOTO(coffee_table_1)", "PLACE(mug_1, coffee_table_1, left)")]
    alike, trace, robot = run_react(check, [MUG_TO_TABLE, *step], "Please bring the mug from the counter to the "
                                                                  "coffee table")
    assert alike.success and robot.log.questions == []
    checks = [text for kind, text in trace if kind in ("check", "warning")]
    assert len(checks) == 1 and checks[0].startswith("the first 2 steps: the plan is like the one that worked")
    assert alike.plan_check is not None and not alike.plan_check.low

    # A similar request that worked from a cabinet: starting otherwise is unlike it.
    from_cabinet = checker(scorer, mode="confirm")
    from_cabinet.record("Put the mug from the cabinet on the coffee table",
                        ["Go to the cabinet.", "Open the cabinet.", "Pick up the mug.", "Go to the coffee table.",
                         "Put the mug on the coffee table."])
    declined, trace, robot = run_react(from_cabinet, [MUG_TO_TABLE, *step], PAST_REQUEST, answers=["no"])
    assert declined.outcome == EpisodeOutcome.CANCELED and declined.plan_check.low
    assert any(kind == "warning" and text.startswith("the first 2 steps: this plan is unlike") for kind, text in trace)
    assert robot.log.questions[0].endswith("Shall I carry on?")
    assert robot.log.skills == ["PICK(mug_1, left)"]  # stopped before the second step
