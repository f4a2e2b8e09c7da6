"""LLM+P's symbolic half: the PDDL domain made from the skill library, problems made from the scene
graph, and plans from Fast Downward that the simulated robot then carries out."""

import json

import pytest
import yaml

from conftest import CONFIG, DATA, ROBOT
from planner.cli import main
from planner.core.goals import Goal, goal_met
from planner.core.planning import classical
from planner.core.planning.classical import plan_goals
from planner.core.planning.pddl import CHECK_MEANINGS, STATIC_CHECKS, DomainError, Names, Unmeetable, make_domain, make_problem
from planner.core.robot_profile import RobotProfile
from planner.core.skills import PRECONDITIONS, SkillPlanner, load_skill_library
from planner.core.world import load_world
from planner.sim.in_process import SimulatedRobot
from test_skills import WIPE, write_library

APARTMENT = CONFIG / "worlds" / "apartment.yaml"


@pytest.fixture(scope="module")
def skills():
    return SkillPlanner(load_skill_library(CONFIG / "skills.yaml"), ROBOT)


@pytest.fixture(scope="module")
def domain(skills):
    return make_domain(skills.library)


def robot_in(world_path, skills, at=""):
    return SimulatedRobot(load_world(world_path).with_robot_at(at, ROBOT.standoff_m), [], skills)


def carry_out(robot, calls):
    for call in calls:
        result = robot.execute_skill(call)
        assert result.success, f"{call}: {result.failure}"


def profile_with(skills, **changes) -> SkillPlanner:
    return SkillPlanner(skills.library, RobotProfile.model_validate({**ROBOT.model_dump(), **changes}))


def test_every_skill_a_planner_can_use_is_an_action_and_the_rest_are_named(domain, skills):
    for skill, spec in skills.library.skills.items():
        if skill == "SAY":
            continue
        assert f"(:action do_{skill.lower()}" in domain.text
        assert domain.skill_params[skill] == [p.name for p in spec.params]
    assert domain.left_out == ["SAY"] and "left out (not for a classical planner): SAY" in domain.text


def test_every_precondition_check_has_a_symbolic_meaning():
    """A new check in planner.core.skills without one would make its skills unplannable."""
    assert set(PRECONDITIONS) == set(CHECK_MEANINGS) | set(STATIC_CHECKS)


def test_a_skill_added_to_the_library_is_in_the_domain_and_plans_use_it(tmp_path):
    def add_stash(library):
        library["skills"]["WIPE"] = WIPE
        library["skills"]["STASH"] = {
            "description": "Put a held object away in open furniture within reach.",
            "params": [{"name": "object", "type": "object"}, {"name": "box", "type": "openable"}],
            "choose": {"arm": "holding_arm(object)"},
            "preconditions": [{"check": "held", "args": ["object"]}, {"check": "is_open", "args": ["box"]},
                              {"check": "reachable", "args": ["box"]}],
            "effects": ["on(object, box)", "not holding(arm, object)"],
            "methods": [{"name": "drop_in", "steps": ["release(arm, object, box)"]}]}
        del library["skills"]["PLACE"]
        library["hazards"] = []
    library = load_skill_library(write_library(tmp_path, add_stash))
    skills = SkillPlanner(library, ROBOT)
    domain = make_domain(library)
    assert "(:action do_stash" in domain.text and "(:action do_wipe" in domain.text
    assert "(:action do_place" not in domain.text
    robot = robot_in(APARTMENT, skills, at="table_1")
    goals = [Goal(kind="object_in", object="apple", target="cabinet", room="kitchen")]
    outcome = plan_goals(domain, skills, robot.graph, goals)
    assert outcome.found, outcome.reason
    assert [c.split("(")[0] for c in outcome.calls] == ["PICK", "GOTO", "OPEN", "STASH"]


@pytest.mark.parametrize("change, where", [
    (lambda lib: lib["skills"]["PICK"]["effects"].append("gripper_open(arm)"), "skills.PICK.effects[1]"),
    (lambda lib: lib["skills"]["OPEN"]["preconditions"].append({"check": "reachable"}), "skills.OPEN.preconditions[3]"),
    (lambda lib: lib["skills"]["PICK"]["preconditions"].append({"check": "payload", "args": ["object"]}),
     "skills.PICK.preconditions[7]"),
    # a parameter named like a predicate of the domain
    (lambda lib: lib["skills"]["CLOSE"].update(choose={"arm": "free_arm", "held": "holding_arm(thing)"}),
     "skills.CLOSE"),
])
def test_a_library_the_domain_cannot_express_names_the_skill(tmp_path, change, where):
    library = load_skill_library(write_library(tmp_path, change))
    with pytest.raises(DomainError, match=where.replace(".", r"\.").replace("[", r"\[")):
        make_domain(library)


def test_a_plan_from_the_scene_graph_is_carried_out_by_the_simulated_robot(domain, skills):
    robot = robot_in(APARTMENT, skills)
    goals = [Goal(kind="object_on", object="milk", target="table", room="kitchen"),
             Goal(kind="is_closed", target="fridge")]
    outcome = plan_goals(domain, skills, robot.graph, goals)
    assert outcome.status == "plan" and not outcome.full_state
    # The shortest plan: the milk is behind the fridge door, which must be shut again.
    assert outcome.calls == ["GOTO(fridge_1)", "OPEN(fridge_1)", "PICK(milk_1, left)", "CLOSE(fridge_1)",
                             "GOTO(table_1)", "PLACE(milk_1, table_1, left)"]
    carry_out(robot, outcome.calls)
    assert all(goal_met(g, robot.graph) for g in goals)


def test_when_the_shortest_plan_takes_too_long_the_first_plan_found_is_carried_out(domain, skills, monkeypatch):
    """Proving a plan shortest can outlast the time given where finding one is quick (clearing a
    desk with two arms and many places to put things): the robot acts on the first plan found
    rather than giving up. The optimal search is given too little time to end, for real."""
    plan_pddl = classical.plan_pddl
    monkeypatch.setattr(classical, "plan_pddl", lambda domain_text, problem_text, engine, timeout_s: plan_pddl(
        domain_text, problem_text, engine, 0.001 if engine == "optimal" else timeout_s))
    robot = robot_in(APARTMENT, skills)
    goals = [Goal(kind="object_on", object="milk", target="table", room="kitchen"),
             Goal(kind="is_closed", target="fridge")]
    outcome = plan_goals(domain, skills, robot.graph, goals)
    assert outcome.found and outcome.shortest_timed_out and outcome.engine == "fast-downward"
    carry_out(robot, outcome.calls)
    assert all(goal_met(g, robot.graph) for g in goals)
    monkeypatch.setattr(classical, "plan_pddl", lambda *args: plan_pddl(*args[:3], 0.001))
    assert plan_goals(domain, skills, robot.graph, [Goal(kind="holding", object="milk")]).status == "timeout"


def test_plans_start_from_what_the_robot_holds_and_where_it_stands(domain, skills):
    robot = robot_in(APARTMENT, skills, at="coffee_table_1")
    carry_out(robot, ["PICK(remote_1, left)", "PICK(cup_2, right)"])
    goals = [Goal(kind="bring_to_user", object="juice", room="bedroom")]
    outcome = plan_goals(domain, skills, robot.graph, goals)
    # Both hands are full: one thing must be put down before the fridge can be opened.
    assert outcome.found
    names = [call.split("(")[0] for call in outcome.calls]
    assert names.index("PLACE") < names.index("OPEN") < names.index("PICK")
    carry_out(robot, outcome.calls)
    assert goal_met(goals[0], robot.graph)


def test_only_the_part_of_the_map_the_goal_needs_is_in_the_problem(domain, skills):
    robot = robot_in(APARTMENT, skills)
    goal = Goal(kind="object_on", object="bottle", target="desk")
    relevant = make_problem(domain, skills, robot.graph, [goal]).text
    full = make_problem(domain, skills, robot.graph, [goal], relevant_only=False).text
    assert "bottle_1 bottle_2 - item" in relevant and "milk_1" not in relevant and "sofa_1" not in relevant
    assert "milk_1" in full and "sofa_1" in full and len(relevant) < len(full) / 4


def test_a_goal_nothing_can_meet_and_a_goal_no_skill_reaches_are_no_plan_with_the_reason(domain, skills):
    robot = robot_in(APARTMENT, skills)
    missing = plan_goals(domain, skills, robot.graph, [Goal(kind="holding", object="piano")])
    assert missing.status == "no_plan" and "nothing in the map can meet the goal: the robot holds a piano" in missing.reason
    weak = profile_with(skills, payload_kg=0.1)
    robot = robot_in(APARTMENT, weak)
    heavy = plan_goals(make_domain(weak.library), weak, robot.graph, [Goal(kind="holding", object="kettle")])
    assert heavy.status == "no_plan" and heavy.full_state
    assert "no sequence of skills reaches the goal" in heavy.reason
    with pytest.raises(Unmeetable):
        make_problem(domain, skills, robot.graph, [Goal(kind="is_open", target="fridge", room="bedroom")])


def test_map_ids_pddl_cannot_spell_are_renamed_and_read_back():
    names = Names(reserved={"at", "item"})
    assert [names.add(i) for i in ("Cup #2", "3d_printer", "at", "cup__2", "cup_#2")] == \
        ["cup__2", "n3d_printer", "at-2", "cup__2-2", "cup__2-3"]
    assert names.scene["cup__2-2"] == "cup__2" and names.add("Cup #2") == "cup__2"


def test_the_command_line_prints_the_domain_the_problem_and_the_plan(tmp_path, capsys):
    assert main(["pddl", "domain", "--out", str(tmp_path / "domain.pddl")]) == 0
    assert "(define (domain household)" in (tmp_path / "domain.pddl").read_text()
    goals = json.dumps([{"kind": "object_on", "object": "book", "target": "desk"}])
    assert main(["pddl", "problem", "--world", str(APARTMENT), "--goals", goals]) == 0
    assert "(:goal (and (or (on book_1 desk_1) (on book_2 desk_1) (on book_3 desk_1) (on book_4 desk_1)" in capsys.readouterr().out
    assert main(["pddl", "plan", "--world", str(APARTMENT), "--robot-at", "shelf_1", "--goals", goals, "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["status"] == "plan" and len(reply["calls"]) == 3  # the books on the shelf are at hand
    assert reply["calls"][0] in ("PICK(book_1, left)", "PICK(book_2, left)") and reply["calls"][1] == "GOTO(desk_1)"
    # A request is read into goals by the configured model (here the recorded kitchen replies).
    request = "Go to the table in the kitchen, pick up the bottle, and place it on the table in the bedroom"
    assert main(["pddl", "plan", "--config", str(DATA / "scripted.yaml"), "--request", request]) == 0
    shown = capsys.readouterr()
    assert "goals: a bottle on a table in the bedroom" in shown.err
    assert shown.out.splitlines()[:4] == ["1. GOTO(table_1)", "2. PICK(bottle_1, left)", "3. GOTO(table_3)",
                                          "4. PLACE(bottle_1, table_3, left)"]
    already = json.dumps([{"kind": "object_on", "object": "book", "target": "bed"}])
    assert main(["pddl", "plan", "--world", str(APARTMENT), "--goals", already, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == []
    assert main(["pddl", "plan", "--world", str(APARTMENT), "--goals", '[{"kind": "holding"}]']) == 2
    assert "--goals" in capsys.readouterr().err
    assert main(["pddl", "plan", "--world", str(APARTMENT), "--robot-at", "nowhere", "--goals", goals]) == 2
    assert "the robot cannot start at 'nowhere': it is neither a room nor a piece of furniture" in capsys.readouterr().err
    skills = yaml.safe_load((CONFIG / "skills.yaml").read_text())
    skills["skills"]["PICK"]["effects"].append("gripper_open(arm)")
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(skills))
    assert main(["pddl", "domain", "--skills", str(tmp_path / "bad.yaml")]) == 2
    assert "skills.PICK.effects[1]" in capsys.readouterr().err


# ---- the task planner in llm_p and auto mode ----------------------------------------------------
def planner_in(robot, skills, replies, **settings):
    from planner.adapters.llm import ScriptedPolicy
    from planner.core.planning.settings import PlannerSettings
    from planner.core.planning.task_planner import TaskPlanner

    trace = []
    policy = ScriptedPolicy(replies)
    planner = TaskPlanner(policy, robot, skills, PlannerSettings(confirm_timeout_s=0, **settings),
                          on_step=lambda step: trace.append((step.kind, step.text)))
    return planner, trace, policy


def test_llm_p_reads_the_goal_once_and_replans_when_the_bottle_is_moved_away(skills):
    from fakes import KITCHEN_REQUEST, KITCHEN_SCENARIO, InProcessRobot

    robot = InProcessRobot(KITCHEN_SCENARIO, skills)
    goal = {"goals": [{"kind": "object_on", "object": "bottle", "target": "table", "room": "bedroom"}]}
    planner, trace, _ = planner_in(robot, skills, [goal], mode="llm_p")
    result = planner.run(KITCHEN_REQUEST)
    assert result.success and result.llm_calls == 1
    assert robot.sim.object_on("bottle_1") == "table_3"
    plans = [text for kind, text in trace if kind == "plan"]
    assert plans[0].startswith("planned") and "PICK(bottle_1, left)" in plans[0]
    # The bottle was moved as the arm approached it: the pick failed, and the plan was made again
    # from where perception saw it then.
    assert any(kind == "failure" and "OBJECT_NOT_FOUND" in text for kind, text in trace)
    assert plans[1].startswith("replanned") and "GOTO(table_2)" in plans[1]
    assert any(kind == "problem" and "(:goal" in text for kind, text in trace)


@pytest.mark.parametrize("fault", ["grasp_slip", "nav_blocked"])
def test_llm_p_replans_after_an_injected_fault(skills, fault):
    import random

    from planner.sim.faults import Fault, fault_events

    world = load_world(APARTMENT).with_robot_at("", ROBOT.standoff_m)
    events, _ = fault_events([Fault(kind=fault)], world, ROBOT, ["apple_1"], random.Random(3))
    robot = SimulatedRobot(world, events, skills)
    goal = {"goals": [{"kind": "object_on", "object": "apple", "target": "desk"}]}
    planner, trace, _ = planner_in(robot, skills, [goal], mode="llm_p")
    result = planner.run("Put the apple on the desk")
    assert result.success and result.llm_calls == 1, trace
    assert robot.sim.object_on("apple_1") == "desk_1"
    assert any(kind == "failure" for kind, _ in trace)
    assert [text.split()[0] for kind, text in trace if kind == "plan"][:2] == ["planned", "replanned"]


def test_llm_p_plans_around_a_call_that_keeps_failing(skills):
    import random

    from planner.sim.faults import Fault, fault_events

    world = load_world(APARTMENT).with_robot_at("", ROBOT.standoff_m)
    events, _ = fault_events([Fault(kind="worn_gripper")], world, ROBOT, ["apple_1"], random.Random(3))
    robot = SimulatedRobot(world, events, skills)
    goal = {"goals": [{"kind": "object_on", "object": "apple", "target": "desk"}]}
    planner, trace, _ = planner_in(robot, skills, [goal], mode="llm_p")
    assert planner.run("Put the apple on the desk").success, trace
    # The left gripper slips every time: after two slips the plan takes the right arm.
    assert [s for s in robot.log.skills if s.startswith("PICK")] == ["PICK(apple_1, left)", "PICK(apple_1, left)",
                                                                      "PICK(apple_1, right)"]
    assert any(kind == "plan" and "avoiding PICK(apple_1, left)" in text for kind, text in trace)


def test_llm_p_plans_around_a_thing_higher_than_the_arms_work_at_once_with_every_arm(skills):
    """A vase higher than the arms work (1.35 m, on a 1.2 m shelf the arms reach up to 1.3 m): the
    pick fails before the arm moves, and no arm nor second try does better, so the next plan leaves
    it out; none is left, and the request is declined after one try."""
    short = profile_with(skills, workspace_z_m=(0.05, 1.3))
    robot = robot_in(APARTMENT, short, at="table_1")
    goal = {"goals": [{"kind": "holding", "object": "vase"}]}
    planner, trace, _ = planner_in(robot, short, [goal, goal], mode="llm_p")
    result = planner.run("Fetch the vase")
    assert result.outcome == "impossible", trace
    assert [s for s in robot.log.skills if s.startswith("PICK")] == ["PICK(vase_1, left)"]
    assert result.summary.startswith("vase_1 is 1.35 m above the floor; the left arm works between 0.05 and 1.30 m")


def test_a_thing_named_by_its_kind_is_fetched_from_the_nearest_place(skills, domain):
    """Two mugs, each two steps away (drive there, pick it up): equally short plans to the planner,
    so the one chosen is the one the robot drives least to reach."""
    goal = [Goal(kind="holding", object="mug")]
    for start, nearest in (("table_1", "mug_1"), ("chair_2", "mug_2")):
        robot = robot_in(APARTMENT, skills, at=start)
        outcome = plan_goals(domain, skills, robot.graph, goal)
        assert outcome.found and outcome.calls[-1].startswith(f"PICK({nearest}"), (start, outcome.calls)
        carry_out(robot, outcome.calls)
    # One the user chose is fetched wherever it is.
    chosen = plan_goals(domain, skills, robot_in(APARTMENT, skills, at="table_1").graph,
                        [Goal(kind="holding", object="mug", object_id="mug_2")])
    assert chosen.calls[-1].startswith("PICK(mug_2")


def test_plans_use_a_tall_fridge_by_its_door_and_leave_out_tops_the_arms_miss(skills):
    """The fridge's top (1.8 m) is above a short robot's workspace, but its handle and lowest shelf
    are not: the plan opens it and puts the apple inside, and the simulator carries that out. A
    robot that cannot reach as low as the fridge's shelf has no plan into it, and one that cannot
    reach the 1.2 m shelf's top puts nothing on it."""
    short = profile_with(skills, workspace_z_m=(0.05, 1.5))
    domain = make_domain(short.library)
    robot = robot_in(APARTMENT, short, at="table_1")
    fridge = plan_goals(domain, short, robot.graph, [Goal(kind="object_on", object="apple", target="fridge")])
    assert fridge.found, fridge.reason
    assert fridge.calls.index("OPEN(fridge_1)") < next(i for i, c in enumerate(fridge.calls) if c.startswith("PLACE"))
    problem = make_problem(domain, short, robot.graph, [Goal(kind="object_on", object="apple", target="shelf")],
                           relevant_only=False).text
    assert "(within_workspace fridge_1)" not in problem and "(opening_within_workspace fridge_1)" in problem
    carry_out(robot, fridge.calls)
    assert robot.graph.support("apple_1") == ("in", "fridge_1")

    stiff = profile_with(skills, workspace_z_m=(0.3, 1.5))
    robot = robot_in(APARTMENT, stiff, at="table_1")
    into = plan_goals(make_domain(stiff.library), stiff, robot.graph,
                      [Goal(kind="object_in", object="apple", target="fridge")])
    assert not into.found and into.status == "no_plan"
    assert robot.execute_skill("GOTO(fridge_1)").success
    assert "fridge_1's inner shelf is 0.10 m above the floor" in robot.execute_skill("OPEN(fridge_1)").message

    low = profile_with(skills, workspace_z_m=(0.05, 1.1))
    robot = robot_in(APARTMENT, low, at="table_1")
    shelf = plan_goals(make_domain(low.library), low, robot.graph, [Goal(kind="object_on", object="apple", target="shelf")])
    assert not shelf.found and shelf.status == "no_plan"


def test_llm_p_declines_what_no_plan_reaches_and_auto_hands_it_to_react(skills):
    weak = profile_with(skills, payload_kg=0.1)
    goal = {"goals": [{"kind": "holding", "object": "kettle"}]}
    robot = robot_in(APARTMENT, weak, at="counter_1")
    # No plan: the model reads the request again, told why, and gives the same reading.
    planner, trace, policy = planner_in(robot, weak, [goal, goal], mode="llm_p")
    result = planner.run("Hold the kettle")
    assert result.outcome == "impossible" and "no sequence of skills reaches the goal" in result.summary
    assert result.llm_calls == 2 and "no sequence of skills reaches the goal" in policy.prompts[1][-1]["content"]
    assert robot.log.skills == []
    robot = robot_in(APARTMENT, weak, at="counter_1")
    planner, trace, policy = planner_in(robot, weak, [goal, goal, {"thought": "look", "action": "GOTO(table_1)"}],
                                        mode="auto")
    result = planner.run("Hold the kettle")
    assert ("plan", "handing the task to the ReAct loop") in trace
    assert "The planner found no plan" in policy.prompts[2][-1]["content"]
    assert robot.log.skills == ["GOTO(table_1)"]


def test_llm_p_reads_the_request_again_when_no_plan_reaches_its_reading(skills):
    # The kettle is too heavy for this robot's hands: told so, the model reads "something to pour
    # water into" as the mug it can lift, and that plan is carried out.
    weak = profile_with(skills, payload_kg=0.5)
    robot = robot_in(APARTMENT, weak, at="counter_1")
    kettle, mug = ({"goals": [{"kind": "holding", "object": label}]} for label in ("kettle", "mug"))
    planner, trace, policy = planner_in(robot, weak, [kettle, mug], mode="llm_p", need_check_threshold=0)
    result = planner.run("Hold something I can pour water into")
    assert result.success and result.llm_calls == 2, trace
    assert "no sequence of skills reaches the goal" in policy.prompts[1][-1]["content"]
    assert ("goal", "read again: the robot holds a mug") in trace
    assert robot.log.skills[-1].startswith("PICK(mug_")


def test_a_reading_read_again_that_the_checks_doubt_is_not_carried_out(skills):
    # As above, but the need check doubts the mug read the second time: the robot does not act on it.
    weak = profile_with(skills, payload_kg=0.5)
    robot = robot_in(APARTMENT, weak, at="counter_1")
    kettle, mug = ({"goals": [{"kind": "holding", "object": label}]} for label in ("kettle", "mug"))
    planner, trace, policy = planner_in(robot, weak, [kettle, {"fits": True, "p": 0.9}, mug, {"fits": False, "p": 0.1}],
                                        mode="llm_p")
    result = planner.run("Hold something I can pour water into")
    assert result.outcome == "impossible" and "no sequence of skills reaches the goal" in result.summary, trace
    assert not any(step == ("goal", "read again: the robot holds a mug") for step in trace)
    assert robot.log.skills == []


def test_a_failure_and_its_advice_are_told_to_the_model_when_no_plan_is_left(skills):
    from planner.core.types import SuggestionInfo

    class AdvisedRobot(SimulatedRobot):
        def explain(self, failure):
            return SuggestionInfo("Fetch a gripper technician before lifting again.", ["case_7"], [0.9])

    # One arm, and its gripper slips every time: after two slips no plan is left.
    one_arm = ROBOT.model_copy(update={"arms": {"left": ROBOT.arms["left"]}})
    planner_one = SkillPlanner(skills.library, one_arm)
    import random

    from planner.sim.faults import Fault, fault_events

    world = load_world(APARTMENT).with_robot_at("counter_1", ROBOT.standoff_m)
    events, _ = fault_events([Fault(kind="worn_gripper")], world, one_arm, ["kettle_1"], random.Random(3))
    robot = AdvisedRobot(world, events, planner_one)
    goal = {"goals": [{"kind": "holding", "object": "kettle"}]}
    declined = {"goals": [], "impossible": "the only gripper keeps slipping"}
    planner, trace, policy = planner_in(robot, planner_one, [goal, declined, declined], mode="llm_p")
    result = planner.run("Hold the kettle")
    told = policy.prompts[1][-1]["content"]
    assert "PICK(kettle_1, left) failed" in told and "Fetch a gripper technician" in told
    assert result.outcome == "impossible" and "keeps slipping" in result.summary


@pytest.mark.parametrize("goal, error", [
    ("(held cup_1)", None),
    ("(and (on cup_1 table_1) (not (is_open fridge_1)))", None),
    ("(forall (?o - item) (imply (on ?o table_1) (held ?o)))", None),
    ("(exists (?f - furniture) (on cup_1 ?f))", None),
    ("(holdz cup_1)", "(holdz cup_1): unknown predicate 'holdz'; predicates: at, on, inside"),
    ("(held cup_1 left)", "(held cup_1 left): held takes 1 argument(s) (item), got 2"),
    ("(and (held cup_99))", "(held cup_99): unknown id not in the map: cup_99"),
    ("(held table_1)", "(held table_1): table_1 is a furniture, and held wants an item there"),
    ("(is_open ?f)", "(is_open ?f): unknown variable not bound by forall/exists: ?f"),
    ("(forall (?o - thing) (held ?o))", "unknown type 'thing'"),
    ("(and (held cup_1)", "the goal is not one balanced (…) formula: it has 2 '(' and 1 ')'"),
])
def test_a_goal_written_in_pddl_is_checked_against_the_domain_and_the_map(domain, skills, goal, error):
    from planner.core.planning.pddl import goal_errors

    robot = robot_in(APARTMENT, skills)
    problem = make_problem(domain, skills, robot.graph, [Goal(kind="holding", object="cup")], relevant_only=False)
    errors = goal_errors(goal, problem.types)
    if error is None:
        assert errors == []
    else:
        assert len(errors) == 1 and error in errors[0], errors


EITHER_DOMAIN = """(define (domain stacking) (:requirements :strips :typing) ; either-typed parameters
 (:types block table - surface surface)
 (:predicates (on ?x - block ?y - (either block table)) (clear ?x - (either table block)))
 (:action move :parameters (?b - block ?from - (either block table) ?to - (either block table))
  :precondition (and (on ?b ?from) (clear ?b) (clear ?to))
  :effect (and (on ?b ?to) (clear ?from) (not (on ?b ?from)) (not (clear ?to)))))"""
EITHER_PROBLEM = """(define (problem two) (:domain stacking) (:objects a b - block t - table)
 (:init (on a t) (on b t) (clear a) (clear b) (clear t)) (:goal (on a b)))"""


def test_a_domain_with_either_types_is_read_and_planned():
    """PDDL's (either A B) types, which unified-planning's reader refused: a published domain that
    uses them could not be read at all."""
    from planner.core.planning.classical import PddlError, plan_pddl, without_either

    assert plan_pddl(EITHER_DOMAIN, EITHER_PROBLEM).actions == [("move", ["a", "t", "b"])]
    assert without_either(EITHER_PROBLEM) == EITHER_PROBLEM  # nothing to do: the text as it was
    apart = EITHER_DOMAIN.replace("(:types block table - surface surface)", "(:types block - surface table)")
    with pytest.raises(PddlError, match=r"\(either block table\): the types have different parents \(object, surface\)"):
        without_either(apart)
