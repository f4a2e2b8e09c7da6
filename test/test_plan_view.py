"""The plan a viewer shows (/planner/plan and its markers), kept from the task's trace: the same
for a plan made ahead (LLM+P) and for one made a step at a time (ReAct)."""

from planner.core.planning.plan_view import PlanView, skill_place
from planner.core.types import TraceStep


def states(view: PlanView) -> list[tuple[str, str]]:
    return [(skill.call, skill.state) for skill in view.skills]


def test_a_plan_made_ahead_shows_what_is_done_under_way_and_to_come_and_a_replan_replaces_the_rest():
    view = PlanView()
    for step in (TraceStep("request", "Bring the bottle to the bedroom"), TraceStep("goal", "bottle_1 on table_3"),
                 TraceStep("plan", "planned: …", ("GOTO(table_1)", "PICK(bottle_1, right)", "GOTO(table_3)")),
                 TraceStep("skill", "GOTO(table_1)"), TraceStep("observation", "GOTO(table_1) succeeded")):
        assert view.update(step)
    assert states(view) == [("GOTO(table_1)", "done"), ("PICK(bottle_1, right)", "planned"), ("GOTO(table_3)", "planned")]
    view.update(TraceStep("skill", "PICK(bottle_1, right)"))
    assert states(view)[1] == ("PICK(bottle_1, right)", "running")
    view.update(TraceStep("failure", "PICK(bottle_1, right) failed at approach [OBJECT_NOT_FOUND]: …"))
    view.update(TraceStep("plan", "replanned: …", ("GOTO(table_2)", "PICK(bottle_1, right)", "GOTO(table_3)")))
    assert states(view) == [("GOTO(table_1)", "done"), ("PICK(bottle_1, right)", "failed"), ("GOTO(table_2)", "planned"),
                            ("PICK(bottle_1, right)", "planned"), ("GOTO(table_3)", "planned")]
    assert not view.update(TraceStep("llm", "412+18 tokens"))
    view.update(TraceStep("result", "succeeded: the world state satisfies the request (5 steps)"))
    assert view.state == "succeeded" and all(state != "planned" for _, state in states(view))
    assert (view.request, view.goals) == ("Bring the bottle to the bedroom", "bottle_1 on table_3")


def test_a_step_off_the_plan_drops_what_was_left_of_it():
    view = PlanView()
    view.update(TraceStep("plan", "planned", ("GOTO(table_1)", "PICK(bottle_1, right)")))
    view.update(TraceStep("skill", "LOOK_AROUND(kitchen)"))
    assert states(view) == [("LOOK_AROUND(kitchen)", "running")]


def test_a_skill_is_drawn_at_the_place_it_takes_the_robot_to(scene):
    assert skill_place("PLACE(bottle_1, table_3, right)", scene) == "table_3"
    assert skill_place("PICK(bottle_1, right)", scene) == "bottle_1"
    assert skill_place("GOTO(kitchen)", scene) == "kitchen"
    assert skill_place('SAY("hello")', scene) == "" and skill_place("not a call", scene) == ""
