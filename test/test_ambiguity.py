"""A request naming one thing when the map holds several: the robot asks which one, understands
the answer, and without an answer takes the nearest."""

import pytest

from conftest import CONFIG, ROBOT
from planner.adapters.llm import ScriptedPolicy
from planner.config import load_config
from planner.core.ambiguity import ambiguous_goals, chosen_candidate, pin_named_objects
from planner.core.goals import Goal
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.task_planner import TaskPlanner
from planner.core.world import load_world
from planner.sim.in_process import SimulatedRobot
from planner.wiring import load_skill_planner

APARTMENT = load_world(CONFIG / "worlds" / "apartment.yaml")
HOLD_GLASS = {"goals": [{"kind": "holding", "object": "glass", "target": "", "room": ""}]}


def robot_at(place: str, answers=()) -> SimulatedRobot:
    skills = load_skill_planner(load_config(CONFIG / "planner.yaml"))
    return SimulatedRobot(APARTMENT.with_robot_at(place, ROBOT.standoff_m), [], skills, answers=list(answers))


def holding(label: str) -> list[Goal]:
    return [Goal(kind="holding", object=label)]


@pytest.mark.parametrize("request_text, asked", [
    ("Pick up the glass", True),
    ("Pick up a glass", False),                           # any glass will do
    ("Pick up the glass from the coffee table", True),     # no glass there: the place rules out none
    ("Pick up the glass in the kitchen", False),           # the room singles one out
    ("Pick up the glass in the dining room", True),        # one on the table, one in the cabinet
    ("Pick up the glass from the cabinet", False),
    ("Bring me the tall glass", True),
    # Where it is comes right after it; where it goes later does not make it ambiguous again.
    ("Pick up the glass in the kitchen and bring it to the dining room", False),
    # The dining table is the table in the dining room, though the kitchen has a table too.
    ("Take the glass from the dining table", False),
])
def test_a_definite_request_with_several_candidates_is_ambiguous(request_text, asked):
    scene = robot_at("table_2").scene()
    questions = ambiguous_goals(request_text, holding("glass"), scene)
    assert bool(questions) == asked


def test_the_question_lists_the_candidates_nearest_first():
    scene = robot_at("table_2").scene()
    question = ambiguous_goals("Pick up the glass", holding("glass"), scene)[0]
    assert question.candidates[0] == "glass_2"  # on the table the robot stands at
    assert set(question.candidates) == {"glass_1", "glass_2", "glass_3"}
    assert question.text.startswith("Which glass do you mean? 1) the one on the table in the dining room")


def test_where_an_object_must_end_does_not_pick_which_one_is_meant():
    scene = robot_at("counter_1").scene()
    goals = [Goal(kind="object_on", object="cup", target="counter")]
    question = ambiguous_goals("Put the cup on the counter", goals, scene)
    assert question and set(question[0].candidates) == {"cup_1", "cup_2"}


def test_the_place_right_after_the_object_says_which_one_even_when_the_destination_holds_another():
    scene = robot_at("table_2").scene()
    request = "Pick up the mug from the desk in the office and bring it to the kitchen counter"
    assert not ambiguous_goals(request, [Goal(kind="object_on", object="mug", target="counter", room="kitchen")], scene)
    assert not ambiguous_goals(request, holding("mug"), scene)


def test_the_object_the_request_singles_out_is_the_goal_so_another_already_there_does_not_count():
    robot = robot_at("table_2")
    request = "Pick up the mug from the desk in the office and bring it to the kitchen counter"
    trace = []
    policy = ScriptedPolicy([{"goals": [{"kind": "object_on", "object": "mug", "target": "counter", "room": "kitchen"}]},
                             {"thought": "stop", "action": "GIVE_UP()"}])
    result = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0, step_budget=1),
                         on_step=lambda step: trace.append((step.kind, step.text))).run(request)
    # mug_1 stands on the kitchen counter already; the request is about mug_2 on the desk.
    assert ("goal", "mug_2 on a counter in the kitchen") in trace and not result.success


def test_the_room_named_with_the_furniture_picks_the_object_on_it():
    scene = robot_at("counter_1").scene()  # in the kitchen, by its table's bottle_1
    goals = [Goal(kind="object_in", object="bottle", target="fridge")]
    request = "Take the bottle from the dining table and put it in the fridge"
    assert not ambiguous_goals(request, goals, scene)
    assert pin_named_objects(request, goals, scene)[0].object_id == "bottle_2"


def test_furniture_called_by_the_last_word_of_its_name_picks_the_object_on_it():
    """"The cup from the table" where one cup is on the coffee table and one on the counter: the
    one on the coffee table, with no question (a development home fetched the water bottle in the
    cabinet for "the water from the table", and said Done.)."""
    scene = robot_at("counter_1").scene()
    goals = [Goal(kind="object_on", object="cup", target="sink")]
    request = "Take the cup from the table to the sink"
    assert not ambiguous_goals(request, goals, scene)
    assert pin_named_objects(request, goals, scene)[0].object_id == "cup_2"


def test_the_place_the_request_names_wins_over_the_one_the_model_chose():
    scene = robot_at("counter_1").scene()
    chose = [Goal(kind="holding", object="glass", object_id="glass_2")]  # on the dining table
    assert pin_named_objects("Pick up the glass from the cabinet", chose, scene)[0].object_id == "glass_3"
    assert pin_named_objects("Pick up the glass", chose, scene)[0].object_id == "glass_2"  # no place: its choice stands


def test_a_place_that_leaves_several_of_a_thing_not_called_by_its_label_keeps_the_nearest_of_those():
    """"A glass in the dining room" (one on the table, one in the cabinet) or "the tumbler from the
    dining room" read as a glass: either of the two will do, not the one in the kitchen, though the
    robot stands nearer to it; "the glass in the dining room" is asked about instead."""
    scene = robot_at("counter_1").scene()
    for request in ("Pick up a glass in the dining room", "Fetch the tumbler from the dining room"):
        pinned = pin_named_objects(request, holding("glass"), scene)[0].object_id
        assert pinned in ("glass_2", "glass_3") and pinned == scene.nearest_to_robot(["glass_2", "glass_3"])[0]
    assert not pin_named_objects("Pick up the glass in the dining room", holding("glass"), scene)[0].object_id
    assert not pin_named_objects("Pick up a glass", holding("glass"), scene)[0].object_id


@pytest.mark.parametrize("answer, chosen", [
    ("the second one", 1), ("3", 2), ("glass_1", "glass_1"), ("the one in the kitchen", "glass_1"),
    ("the one on the table in the dining room", "glass_2"), ("the last", 2), ("from the cabinet", "glass_3"),
    ("the blue one", None), ("the one on the table", None),  # two glasses stand on tables
    ("the one on the dining table", "glass_2"),
])
def test_an_answer_picks_a_candidate_by_number_id_or_place(answer, chosen):
    scene = robot_at("table_2").scene()
    question = ambiguous_goals("Pick up the glass", holding("glass"), scene)[0]
    expected = question.candidates[chosen] if isinstance(chosen, int) else chosen
    assert chosen_candidate(answer, question, scene) == expected


def plan(robot: SimulatedRobot, replies: list, request: str = "Pick up the glass"):
    trace = []
    skills = robot.skills
    planner = TaskPlanner(ScriptedPolicy(replies), robot, skills, PlannerSettings(confirm_timeout_s=0, question_timeout_s=5),
                          on_step=lambda step: trace.append((step.kind, step.text)))
    return planner.run(request), trace


def test_the_users_answer_decides_which_object_the_robot_fetches():
    robot = robot_at("table_2", answers=["the one in the kitchen"])
    result, trace = plan(robot, [HOLD_GLASS,
                                 {"thought": "go there", "action": "GOTO(table_1)"},
                                 {"thought": "take it", "action": "PICK(glass_1, right)"}])
    assert result.success and robot.sim.held["right"] == "glass_1"
    assert robot.log.questions and "Which glass" in robot.log.questions[0]
    assert ("goal", "the robot holds glass_1") in trace
    # The nearer glass is not offered once the user chose: holding it would not meet the goal.
    assert robot.log.said[-1] == "Done."


def test_without_an_answer_the_nearest_is_taken_and_the_user_is_told():
    robot = robot_at("table_2")
    result, trace = plan(robot, [HOLD_GLASS, {"thought": "take it", "action": "PICK(glass_2, right)"}])
    assert result.success and robot.sim.held["right"] == "glass_2"
    assert any(kind == "answer" and "no answer" in text and "glass_2" in text for kind, text in trace)
    assert robot.log.said[0] == "I will take the glass on the table in the dining room."
    assert robot.clock >= 5  # it waited for the answer


def test_a_thing_called_by_another_name_is_singled_out_by_its_place_as_if_called_by_its_label():
    """"The tumbler in the dining room" is one of the dining room's glasses, asked about like "the
    glass in the dining room", not any glass: the kitchen's, nearer, would have met the goal."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.lexicon import WordNetLexicon
    from planner.core.planning.grounding import Grounder

    robot = robot_at("table_1")
    trace = []
    TaskPlanner(ScriptedPolicy([HOLD_GLASS]), robot, robot.skills, PlannerSettings(confirm_timeout_s=0, question_timeout_s=5),
                on_step=lambda step: trace.append((step.kind, step.text)),
                grounder=Grounder(SentenceEmbedder(), lexicon=WordNetLexicon())).run("Pick up the tumbler in the dining room")
    assert ("perception", "the request in the map's words: tumbler = glass") in trace
    assert robot.log.questions and "Which glass" in robot.log.questions[0]
    goal = next(text for kind, text in trace if kind == "goal")
    assert goal in {"the robot holds glass_2", "the robot holds glass_3"}
