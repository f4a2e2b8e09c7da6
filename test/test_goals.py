"""Goals the world state can confirm: every kind checked against the map, the reply schema that
keeps each kind to its own fields, and requests whose goals would already be true."""

import json

import pytest
from pydantic import ValidationError

from conftest import CONFIG, ROBOT
from planner.adapters.language import SpacyParser
from planner.adapters.llm import ScriptedPolicy
from planner.config import load_config
from planner.core.errors import PolicyError
from planner.core.goals import Goal, GoalReply, goal_met, goal_schema, goal_status
from planner.core.planning.action_space import allowed_actions
from planner.core.planning.goal_reading import (
    GOAL_CHECKS,
    GoalReader,
    chosen_for_need,
    destinations,
    furniture_destinations,
    goal_problems,
    named_otherwise,
    names_only_its_modifier,
    room_places,
    things_asked_about,
    unknown_things,
)
from planner.core.planning.moved_things import moved_things
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.task_planner import TaskPlanner
from planner.core.world import load_world
from planner.sim.in_process import SimulatedRobot
from planner.wiring import load_skill_planner

APARTMENT = load_world(CONFIG / "worlds" / "apartment.yaml")
DINING_TABLES = APARTMENT.model_copy(update={"furniture": [  # no furniture called just "table"
    f.model_copy(update={"label": "dining_table"}) if f.label == "table" else f for f in APARTMENT.furniture]})
GIVE_UP = {"thought": "stop here", "action": "GIVE_UP()"}
PARSER = SpacyParser()


# The reading's functions with the things a request moves read off its parse, as the reader reads them.
def problems_of(request: str, goals: list[Goal], scene, part: bool = False) -> tuple[list[str], list[str]]:
    return goal_problems(request, goals, scene, part, moved_things(PARSER, request))


def called_otherwise(request: str, goals: list[Goal], scene) -> dict[str, list[str]]:
    return named_otherwise(request, goals, scene, moved_things(PARSER, request))


def things_unknown(request: str, scene) -> list[str]:
    return unknown_things(moved_things(PARSER, request), scene)


def chosen_for_a_need(request: str, goals: list[Goal]) -> list[str]:
    return chosen_for_need(moved_things(PARSER, request), request, goals)


def robot_at(place: str, world=APARTMENT, answers=()) -> SimulatedRobot:
    return SimulatedRobot(world.with_robot_at(place, ROBOT.standoff_m), [],
                          load_skill_planner(load_config(CONFIG / "planner.yaml")), answers=list(answers))


def run(robot: SimulatedRobot, request: str, replies: list):
    trace = []
    policy = ScriptedPolicy(replies)
    planner = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                          on_step=lambda step: trace.append((step.kind, step.text)), parser=PARSER)
    return planner.run(request), trace, policy


def test_the_schema_gives_each_kind_only_its_own_fields_and_openable_targets_only():
    schema = goal_schema(["cup", "milk"], ["fridge", "table"], ["fridge"], ["kitchen"])
    kinds = {alt["properties"]["kind"]["const"]: alt for alt in schema["properties"]["goals"]["items"]["anyOf"]}
    assert set(kinds) == {"object_on", "object_in", "holding", "bring_to_user", "robot_in_room", "is_open", "is_closed",
                          "clear"}
    assert kinds["holding"]["required"] == ["kind", "object"]
    assert kinds["is_open"]["properties"]["target"] == {"enum": ["fridge"]}
    assert kinds["object_in"]["properties"]["target"] == {"enum": ["fridge"]}
    assert kinds["object_on"]["properties"]["room"] == {"enum": ["kitchen", ""]}  # a room is optional there
    # A thing put in a room may go on any furniture there; one put inside needs what it goes in.
    assert "" in kinds["object_on"]["properties"]["target"]["enum"]
    assert "" not in kinds["object_in"]["properties"]["target"]["enum"]
    nothing_opens = goal_schema(["cup"], ["table"], [], ["kitchen"])
    assert "is_open" not in json.dumps(nothing_opens) and "object_in" not in json.dumps(nothing_opens)


def test_a_goal_missing_what_its_kind_needs_is_invalid():
    with pytest.raises(ValidationError, match="goal is_open needs target"):
        GoalReply.model_validate({"goals": [{"kind": "is_open", "room": "kitchen"}]})
    with pytest.raises(ValidationError, match="object_on needs a target, or a room"):
        GoalReply.model_validate({"goals": [{"kind": "object_on", "object": "cup", "target": "", "room": ""}]})


def test_a_goal_that_puts_a_thing_nowhere_is_read_as_the_thing_wanted_not_sent_back():
    """{"kind": "object_on", "object": "towel", "target": "", "room": ""}: the reply names the thing
    and no place. Sent back as incomplete, the 1.5B gave it again until the repairs were spent and
    the request failed (a development home); it is the thing brought to a user who speaks of
    themselves, else held, and where the request names a place, that reading is doubted."""
    scene = robot_at("sofa_1").scene()
    nowhere = json.dumps({"goals": [{"kind": "object_on", "object": "towel", "target": "", "room": ""}]})
    [brought] = GoalReader("I spilled my tea all over myself", scene, parser=PARSER).parse(nowhere)
    assert (brought.kind, brought.object) == ("bring_to_user", "towel")
    assert GoalReader("Grab the towel", scene, parser=PARSER).parse(nowhere) == [Goal(kind="holding", object="towel")]
    with pytest.raises(ValueError, match="names the bedroom"):
        GoalReader("The towel is wanted in the bedroom, carry it over", scene, parser=PARSER).parse(nowhere)


def test_open_closed_clear_and_bring_are_judged_on_the_map():
    robot = robot_at("fridge_1")
    scene = robot.scene()
    fridge_open = Goal(kind="is_open", target="fridge")
    assert not goal_met(fridge_open, scene) and goal_met(Goal(kind="is_closed", target="fridge"), scene)
    assert "fridge_1 in the kitchen is closed" in goal_status(fridge_open, scene)[0]
    assert robot.execute_skill("OPEN(fridge_1)").success
    assert goal_met(fridge_open, robot.scene())

    robot = robot_at("coffee_table_1")
    clear = Goal(kind="clear", target="coffee_table")
    line, ids = goal_status(clear, robot.scene())
    assert not goal_met(clear, robot.scene()) and {"remote_1", "magazine_1", "cup_2", "can_1"} <= set(ids)
    bring = Goal(kind="bring_to_user", object="cup", room="bedroom")
    assert robot.execute_skill("PICK(cup_2, right)").success
    assert not goal_met(bring, robot.scene())  # held, but the user is in the bedroom
    assert goal_met(bring.model_copy(update={"room": "living_room"}), robot.scene())
    assert "the user is in the bedroom" in goal_status(bring, robot.scene())[0]


def test_a_request_to_open_something_is_done_when_the_map_shows_it_open():
    robot = robot_at("fridge_1")
    result, trace, _ = run(robot, "Open the fridge", [
        {"goals": [{"kind": "is_open", "target": "fridge", "room": ""}]},
        {"thought": "The fridge is in front of me.", "action": "OPEN(fridge_1)"}])
    assert result.success and robot.sim.open_state["fridge_1"]


def test_the_goal_step_may_have_a_model_of_its_own_and_the_steps_keep_the_main_one():
    robot = robot_at("fridge_1")
    reader = ScriptedPolicy([{"goals": [{"kind": "is_open", "target": "fridge", "room": ""}]}])
    actor = ScriptedPolicy([{"thought": "The fridge is in front of me.", "action": "OPEN(fridge_1)"}])
    result = TaskPlanner(actor, robot, robot.skills, PlannerSettings(confirm_timeout_s=0), goal_policy=reader,
                         parser=PARSER).run("Open the fridge")
    assert result.success and len(reader.prompts) == len(actor.prompts) == 1
    assert "Turn the user's request into goals" in reader.prompts[0][0]["content"]


def checked_run(request: str, replies: list, answers=()):
    robot = robot_at("fridge_1", answers=answers)
    trace = []
    policy = ScriptedPolicy(replies)
    planner = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0, goal_check_threshold=0.5),
                          on_step=lambda step: trace.append((step.kind, step.text)), parser=PARSER)
    return planner.run(request), trace, robot, policy


OPEN_FRIDGE = {"goals": [{"kind": "is_open", "target": "fridge", "room": ""}]}
OPEN_DRESSER = {"goals": [{"kind": "is_open", "target": "dresser", "room": ""}]}


def test_a_reading_the_check_doubts_is_read_again_with_the_doubt_said():
    result, trace, robot, policy = checked_run("Open the fridge, not the dresser", [
        OPEN_DRESSER, {"fits": False, "p": 0.1},
        OPEN_FRIDGE, {"fits": True, "p": 0.8},
        {"thought": "The fridge is in front of me.", "action": "OPEN(fridge_1)"}])
    assert result.success and robot.sim.open_state["fridge_1"] and not robot.log.questions
    reread = policy.prompts[2]
    assert "A check doubts" in reread[-1]["content"] and "the dresser is open" in reread[-1]["content"]
    assert ("check", "the fridge is open: 0.80 likely what was asked") in trace


def test_a_reading_still_doubted_is_put_to_the_user_and_only_a_yes_lets_the_robot_act():
    doubted_twice = [OPEN_FRIDGE, {"fits": False, "p": 0.3}, OPEN_FRIDGE, {"fits": False, "p": 0.3}]
    result, trace, robot, policy = checked_run("Open the fridge", doubted_twice, answers=["no, the cupboard"])
    assert result.outcome == "impossible" and "not what you asked" in result.summary
    assert robot.log.questions == ["Do you want this: the fridge is open?"] and not robot.sim.open_state["fridge_1"]
    # No answer in time: the robot does not act on a reading it doubts, and says why.
    result, trace, robot, _ = checked_run("Open the fridge", doubted_twice, answers=[])
    assert result.outcome == "impossible" and "I am not sure what you want" in result.summary
    assert "the fridge is open" in result.summary and not robot.sim.open_state["fridge_1"]
    act = [{"thought": "The fridge is in front of me.", "action": "OPEN(fridge_1)"}]
    result, trace, robot, _ = checked_run("Open the fridge", doubted_twice + act, answers=["yes please"])
    assert result.success and robot.sim.open_state["fridge_1"]


def test_clearing_a_table_puts_everything_on_it_somewhere_else():
    robot = robot_at("side_table_1")
    on_it = [o.id for o in robot.scene().objects() if (s := robot.scene().support(o.id)) and s[1] == "side_table_1"]
    assert len(on_it) == 2
    replies = [{"goals": [{"kind": "clear", "target": "side_table", "room": ""}]},
               {"thought": "take one", "action": f"PICK({on_it[0]}, right)"},
               {"thought": "and the other", "action": f"PICK({on_it[1]}, left)"},
               {"thought": "put them away", "action": "GOTO(sofa_1)"},
               {"thought": "leave it here", "action": f"PLACE({on_it[0]}, sofa_1, right)"},
               {"thought": "and this one", "action": f"PLACE({on_it[1]}, sofa_1, left)"}]
    result, trace, policy = run(robot, "Clear the side table", replies)
    assert result.success, trace
    assert all(robot.sim.support[obj] == "sofa_1" for obj in on_it)
    offered = [p[-1]["content"].split("Valid actions: ")[1].split(" | ") for p in policy.prompts[1:]]
    assert {f"PICK({obj}, right)" for obj in on_it} <= set(offered[0])
    # Cleared things go anywhere but back, and while a hand is free for the next one, nowhere yet:
    # next to the table holding one thing, nothing can be placed and the robot does not drive off.
    assert not [a for a in offered[1] if a.startswith(("PLACE", "GOTO"))]
    assert "GOTO(sofa_1)" in offered[2]  # both hands full


def test_goals_that_are_already_true_are_sent_back_until_every_repair_is_spent():
    already = {"goals": [{"kind": "object_on", "object": "orange", "target": "table", "room": ""}]}
    scene = robot_at("table_2").scene()
    assert 'true already, so table is not where the request wants the orange; if the request is to take the orange, ' \
           'the goal is {"kind": "holding", "object": "orange"}' in " ".join(problems_of(
               "Take the orange", [Goal.model_validate(already["goals"][0])], scene)[1])
    # One goal of several true already is named with why: often the model took where the object is
    # for where it must go.
    robot = robot_at("table_2")
    result, trace, policy = run(robot, "Take the orange from the table and bring it to the kitchen counter", [
        {"goals": [{"kind": "object_on", "object": "orange", "target": "table", "room": ""},
                   {"kind": "robot_in_room", "room": "kitchen"}]},
        {"goals": [{"kind": "object_on", "object": "orange", "target": "counter", "room": "kitchen"}]}, GIVE_UP])
    assert "'an orange on a table' is true already, so table is not where the request wants the orange; the " \
           'request sends the orange to "the kitchen counter"' in policy.prompts[1][-1]["content"]
    assert ("goal", "an orange on a counter in the kitchen") in trace
    # A model that insists to the last repair, and again when told its reading is doubted, may be right
    # (the request really needs nothing) or have misread it ("throw the orange"): the user is asked, and
    # without a yes the robot does nothing and says what it read, not "Done.". (The map has one
    # coffee table: a request for a thing on one of several tables asks for another.)
    remote_there = {"goals": [{"kind": "object_on", "object": "remote", "target": "coffee_table", "room": ""}]}

    def insisted(answers):
        robot = robot_at("coffee_table_1", answers=answers)
        trace = []
        result = TaskPlanner(ScriptedPolicy([remote_there] * 6), robot, robot.skills,
                             PlannerSettings(confirm_timeout_s=0), on_step=lambda step: trace.append((step.kind, step.text)),
                             parser=PARSER).run("Make sure the remote is on the coffee table")
        assert robot.log.questions == ["Do you want this: a remote on a coffee_table?"]
        return result, trace
    result, trace = insisted(["yes"])
    assert result.success and result.steps == 0
    assert result.summary == "as I read the request, a remote on a coffee_table is so already"
    assert ("say", "Nothing to do: as I read the request, a remote on a coffee_table is so already.") in trace
    result, trace = insisted([])
    assert result.outcome == "impossible" and "I am not sure what you want" in result.summary
    assert "a remote on a coffee_table" in result.summary


def test_the_furnitures_room_is_the_one_the_request_names_for_it():
    """The model often gives the room the object is in now; the request says where the target is."""
    for request, reply_room, goal in [
            ("Go to the bathroom, pick up the towel and put it on the bed", "bathroom", "a towel on a bed"),
            ("Get the juice from the fridge and put it on the coffee table", "kitchen", "a juice on a coffee_table"),
            ("Take the plate from the counter and put it on the dining table", "kitchen",
             "plate_1 on a table in the dining_room"),
            ("Move the towel from the bathroom to the table in the hallway", "bathroom", "a towel on a table in the hallway")]:
        target = goal.split(" on a ")[1].split(" in the ")[0]
        _, trace, policy = run(robot_at("table_2"), request, [
            {"goals": [{"kind": "object_on", "object": goal.split(" on a ")[0].split()[-1].split("_")[0],
                        "target": target, "room": reply_room}]}, GIVE_UP])
        assert trace[1] == ("goal", goal), (request, trace)  # at once, with no repair
    # A room the request names for furniture that is not there stays, and is sent back.
    _, trace, policy = run(robot_at("table_2"), "Put the towel on the table in the bathroom", [
        {"goals": [{"kind": "object_on", "object": "towel", "target": "table", "room": "bathroom"}]},
        {"goals": [], "impossible": "there is no table in the bathroom"},
        {"goals": [], "impossible": "there is no table in the bathroom"}])
    assert "there is no table in the bathroom (room is where the table is; a table is in the dining_room, hallway, " \
           "kitchen)" in policy.prompts[1][-1]["content"]
    assert any(kind == "result" and text.startswith("impossible: there is no table in the bathroom")
               for kind, text in trace)


def test_a_request_to_take_something_read_as_putting_it_somewhere_is_taken():
    """The words decide: a request with no putting verb that names no furniture for the towel, or
    names the thing and where it is now, asks for it taken (or brought to the user who asks)."""
    _, trace, policy = run(robot_at("table_2"), "Take the towel", [
        {"goals": [{"kind": "object_on", "object": "towel", "target": "table", "room": "bathroom"}]}, GIVE_UP])
    assert ("goal", "the robot holds a towel") in trace
    # "On the bookcase" after a verb of taking says where the vase is, whatever furniture the model
    # took the bookcase for.
    _, trace, policy = run(robot_at("table_2"), "Take the vase on the bookcase", [
        {"goals": [{"kind": "object_on", "object": "vase", "target": "desk", "room": ""}]}, GIVE_UP])
    assert ("goal", "the robot holds a vase") in trace
    _, trace, policy = run(robot_at("table_2"), "Could you bring the hat on the bench to me?", [
        {"goals": [{"kind": "object_on", "object": "hat", "target": "bench", "room": ""}]}, GIVE_UP])
    assert ("goal", "the robot brings a hat to the user in the dining_room") in trace
    # A thing brought to the user goes to them, wherever the model put it, and to the room they say
    # they are in; that room's name ends at the comma, it is no "bedroom bring me the".
    request = "I'm in the bedroom, bring me the hat on the bench"
    _, trace, policy = run(robot_at("table_2"), request, [
        {"goals": [{"kind": "object_on", "object": "hat", "target": "desk", "room": ""}]}, GIVE_UP])
    assert ("goal", "the robot brings a hat to the user in the bedroom") in trace
    assert "The user is in the bedroom." in policy.prompts[0][0]["content"]
    assert destinations(request) == ["bedroom", "bench"]
    # A request that puts the thing somewhere is the model's to read again, told why.
    _, trace, policy = run(robot_at("table_2"), "Put the towel away", [
        {"goals": [{"kind": "object_on", "object": "towel", "target": "table", "room": "bathroom"}]},
        {"goals": [{"kind": "object_on", "object": "towel", "target": "shelf", "room": "bathroom"}]}, GIVE_UP])
    assert ("the request names no furniture for the towel to go to; if the request is to take the towel, the goal is "
            '{"kind": "holding", "object": "towel"}') in policy.prompts[1][-1]["content"]


def test_goals_that_leave_out_the_object_the_user_talks_about_are_sent_back():
    _, trace, policy = run(robot_at("table_3"), "I'm about to leave the house and can't find my keys", [
        {"goals": [{"kind": "is_open", "target": "fridge", "room": ""}]},
        {"goals": [{"kind": "bring_to_user", "object": "keys"}]}, GIVE_UP])
    assert ('the request is about the keys, and no goal has it as its object; if the keys must be brought to the user, '
            'the goal is {"kind": "bring_to_user", "object": "keys"}') in policy.prompts[1][-1]["content"]
    assert ("goal", "the robot brings a keys to the user in the hallway") in trace
    # A label that is also a common word is no object the request names: "can you ..." is no can.
    _, trace, policy = run(robot_at("table_3"), "Can you open the fridge?", [
        {"goals": [{"kind": "is_open", "target": "fridge", "room": ""}]}, GIVE_UP])
    assert trace[1] == ("goal", "the fridge is open") and len(policy.prompts) == 2


def test_a_model_that_never_reads_the_thing_the_request_moves_does_not_get_another_thing_moved():
    """"Grab the pillow" read as a clock held through every repair (a development home): the robot
    fetched the clock and said Done. A thing the request moves by its label, left out of the goals,
    is wrong, not doubtful; once the repairs are spent the words give the reading."""
    clock = {"goals": [{"kind": "holding", "object": "remote"}]}
    result, trace, policy = run(robot_at("table_3"), "Could you go to the living room and grab the magazine?",
                                [clock] * 4 + [GIVE_UP])
    assert "the request is about the magazine, and no goal has it" in policy.prompts[1][-1]["content"]
    assert ("goal", "the robot holds a magazine") in trace
    assert not any(text == "the robot holds a remote" for kind, text in trace if kind == "goal")
    # To the user who speaks of themselves; and a thing talked about but not moved is only doubted.
    _, trace, _ = run(robot_at("table_3"), "Bring me the magazine", [clock] * 4 + [GIVE_UP])
    assert ("goal", "the robot brings a magazine to the user in the hallway") in trace
    scene = robot_at("table_3").scene()
    problems, doubts = problems_of("I can't find my magazine", [Goal(kind="holding", object="remote")], scene)
    assert not problems and any("the request is about the magazine" in doubt for doubt in doubts)


def test_a_thing_moved_by_a_word_of_its_label_is_not_read_as_a_thing_without_that_word():
    """"Grab the can of cola" read as a clock held (a development home with a soda_can): no word of
    the thing is the clock's, and the robot said Done. The label with that word is the reading
    offered; a label holding a word of the thing inside its own ("the pot of tea": a teapot) is no
    misreading."""
    clock = {"goals": [{"kind": "holding", "object": "clock"}]}
    _, trace, policy = run(robot_at("table_3"), "Could you grab the frame of the photo?",
                                [clock, {"goals": [{"kind": "holding", "object": "photo_frame"}]}, GIVE_UP])
    assert ("the request asks for the frame of the photo, which no goal's object is called; the map's photo frame is called so"
            in policy.prompts[1][-1]["content"])
    assert ("goal", "the robot holds a photo_frame") in trace
    scene = robot_at("table_3").scene()
    assert not problems_of("Grab the pot of paper", [Goal(kind="holding", object="toilet_paper")], scene)[0]
    # The backpack is no label with "frame" or "pack" as a word, yet holds "pack" inside its own name.
    assert not problems_of("Grab the frame of the pack", [Goal(kind="holding", object="backpack")], scene)[0]
    assert problems_of("Grab the frame of the pack", [Goal(kind="holding", object="clock")], scene)[0]


def test_putting_something_into_furniture_that_opens_is_an_object_in_goal_met_only_inside():
    robot = robot_at("table_1")
    result, trace, policy = run(robot, "Put the apple from the kitchen table into the fridge", [
        {"goals": [{"kind": "object_on", "object": "apple", "target": "fridge", "room": ""}]},
        {"thought": "take it", "action": "PICK(apple_1, right)"},
        {"thought": "to the fridge", "action": "GOTO(fridge_1)"},
        {"thought": "open it", "action": "OPEN(fridge_1)"},
        {"thought": "put it in", "action": "PLACE(apple_1, fridge_1, right)"}])
    # Read as on the fridge however often it is told: the request's "into" makes it inside.
    assert trace[1] == ("goal", "an apple inside a fridge")
    assert result.success and robot.sim.support["apple_1"] == "fridge_1" and "apple_1" in robot.sim.inside
    offered = [prompt[-1]["content"].split("Valid actions: ")[1].split(" | ") for prompt in policy.prompts[1:]]
    # At the closed fridge: putting the apple on top of it is not offered, opening it is, and driving off is not.
    assert "OPEN(fridge_1)" in offered[2] and not any(a.startswith(("PLACE", "GOTO")) for a in offered[2])
    assert "PLACE(apple_1, fridge_1, right)" in offered[3]
    scene = robot.scene()
    on_top = Goal(kind="object_in", object="apple", target="table")
    assert not goal_met(on_top, scene) and goal_met(Goal(kind="object_in", object="apple", target="fridge"), scene)


def test_putting_something_in_furniture_the_request_calls_otherwise_is_putting_it_inside():
    """"Put the apple in the icebox" read as the apple on the fridge: the request sends it in."""
    from planner.core.planning.goal_reading import inside_from_request

    scene = robot_at("table_1").scene()
    on_fridge = [Goal(kind="object_on", object="apple", target="fridge")]
    assert inside_from_request("Please put the apple in the icebox", on_fridge, scene)[0].kind == "object_in"
    assert inside_from_request("Please put the apple on the icebox", on_fridge, scene)[0].kind == "object_on"
    # The fridge named where the apple comes from: "in the icebox" is not said of the fridge.
    assert inside_from_request("Put the apple from the fridge in the icebox", on_fridge, scene)[0].kind == "object_on"


def test_a_hand_stays_free_while_the_fridge_the_fruit_goes_into_is_closed():
    """Both hands full at the closed fridge, nothing could open it: the second fruit waits."""
    robot = robot_at("table_1")
    into_fridge = {"goals": [{"kind": "object_in", "object": "apple", "target": "fridge", "room": ""},
                             {"kind": "object_in", "object": "banana", "target": "fridge", "room": ""}]}
    steps = ["PICK(apple_1, left)", "GOTO(fridge_1)", "OPEN(fridge_1)", "PLACE(apple_1, fridge_1, left)", "GOTO(table_1)",
             "PICK(banana_1, left)", "GOTO(fridge_1)", "PLACE(banana_1, fridge_1, left)"]
    result, _, policy = run(robot, "The fruit on the kitchen table should go in the fridge",
                            [into_fridge, *({"thought": "next", "action": step} for step in steps)])
    assert result.success and {"apple_1", "banana_1"} <= robot.sim.inside
    holding_apple = policy.prompts[2][-1]["content"].split("Valid actions: ")[1].split(" | ")
    assert not any(action.startswith("PICK(banana_1") for action in holding_apple)
    at_the_table_again = policy.prompts[6][-1]["content"].split("Valid actions: ")[1].split(" | ")
    assert "PICK(banana_1, left)" in at_the_table_again  # the fridge is open now


def test_with_every_skill_ruled_out_for_the_goals_the_robot_may_still_put_things_down():
    robot = robot_at("table_1")
    for call in ("PICK(apple_1, left)", "PICK(banana_1, right)", "GOTO(fridge_1)"):
        assert robot.execute_skill(call).success
    scene = robot.scene()
    goals = [Goal(kind="object_in", object=label, target="fridge") for label in ("apple", "banana")]
    actions = allowed_actions(scene, {e.id for e in scene.objects()} | {f.id for f in scene.furniture()}, set(),
                              robot.skills, goals, set())
    assert any(action.startswith("PLACE(apple_1") for action in actions) and "OPEN(fridge_1)" not in actions


def test_furniture_is_opened_only_when_a_goal_object_is_in_it_or_goes_in_it():
    """Glasses to be put on the nightstand: opening its drawer first would put them inside it."""
    robot = robot_at("side_table_1")
    _, _, policy = run(robot, "Take the glasses from the side table and put them on the nightstand", [
        {"goals": [{"kind": "object_on", "object": "glasses", "target": "nightstand", "room": ""}]},
        {"thought": "take them", "action": "PICK(glasses_1, left)"},
        {"thought": "to the nightstand", "action": "GOTO(nightstand_1)"},
        {"thought": "put them down", "action": "PLACE(glasses_1, nightstand_1, left)"}])
    at_nightstand = policy.prompts[3][-1]["content"].split("Valid actions: ")[1].split(" | ")
    assert "PLACE(glasses_1, nightstand_1, left)" in at_nightstand and "OPEN(nightstand_1)" not in at_nightstand
    assert robot.sim.support["glasses_1"] == "nightstand_1" and "glasses_1" not in robot.sim.inside
    # The medicine is in the nightstand's drawer: there, opening it is the way.
    robot = robot_at("nightstand_1")
    _, _, policy = run(robot, "Take the medicine", [{"goals": [{"kind": "holding", "object": "medicine"}]}, GIVE_UP])
    assert "OPEN(nightstand_1)" in policy.prompts[1][-1]["content"].split("Valid actions: ")[1].split(" | ")


def test_bringing_to_the_user_is_refused_when_the_request_names_furniture_not_the_user():
    robot = robot_at("table_2")
    result, trace, policy = run(robot, "Bring the book from the bedroom to a table in the kitchen", [
        {"goals": [{"kind": "bring_to_user", "object": "book"}]},
        {"goals": [{"kind": "object_on", "object": "book", "target": "table", "room": "kitchen"}]}, GIVE_UP])
    assert "use object_on" in policy.prompts[1][-1]["content"]
    assert ("goal", "book_3 on a table in the kitchen") in trace  # the one book in the bedroom


def test_a_destination_the_request_does_not_name_is_sent_back():
    robot = robot_at("table_2")
    _, trace, policy = run(robot, "Go to the counter, take the cup and bring it to the hallway table", [
        {"goals": [{"kind": "object_on", "object": "cup", "target": "bench", "room": "hallway"}]},
        {"goals": [{"kind": "object_on", "object": "cup", "target": "table", "room": "hallway"}]}, GIVE_UP])
    assert "the request names no bench; it names table" in policy.prompts[1][-1]["content"]
    assert any(kind == "goal" and "on a table in the hallway" in text for kind, text in trace)
    # Where the robot is sent is no place for the thing: "go to the den and get the laptop" read as
    # the laptop put on furniture (the 1.5B held a desk 0.64 likely an "office") is a taking.
    for request in ("Would you go to the den and get the laptop?", "Make your way to the den and get the laptop"):
        _, trace, policy = run(robot_at("table_2"), request, [
            {"goals": [{"kind": "object_on", "object": "laptop", "target": "sofa", "room": ""}]}, GIVE_UP])
        assert trace[1] == ("goal", "the robot holds a laptop"), trace
    # A thing said to go somewhere goes there: "it should go to the sofa" is no robot sent.
    assert furniture_destinations("The laptop should go to the sofa", []) == ["sofa"]


def test_an_object_that_must_end_on_furniture_is_not_also_brought_to_the_user():
    robot = robot_at("table_2")
    _, trace, _ = run(robot, "Get me the juice from the fridge and put it on the coffee table", [
        {"goals": [{"kind": "bring_to_user", "object": "juice"},
                   {"kind": "object_on", "object": "juice", "target": "coffee_table", "room": ""}]}, GIVE_UP])
    assert ("goal", "a juice on a coffee_table") in trace


def test_a_request_nothing_in_the_map_can_meet_is_looked_at_again_then_declined():
    umbrella = {"goals": [], "impossible": "There is no umbrella in the map."}
    result, trace, policy = run(robot_at("table_2"), "Bring me an umbrella", [umbrella, umbrella])
    assert result.outcome == "impossible" and result.steps == 0 and "no umbrella" in result.summary
    assert "look again" in policy.prompts[1][-1]["content"]
    assert ("say", "I cannot do that: There is no umbrella in the map.") in trace
    # Looking again can find something that does: then the robot goes on with it.
    result, trace, _ = run(robot_at("table_2"), "I'm thirsty", [
        {"goals": [], "impossible": "there are no drinks"}, {"goals": [{"kind": "bring_to_user", "object": "juice"}]},
        GIVE_UP])
    assert ("goal", "the robot brings a juice to the user in the dining_room") in trace
    # A reason the map contradicts is sent back however often it is given.
    no_fridge = {"goals": [], "impossible": "there is no fridge in the map"}
    result, trace, policy = run(robot_at("table_2"), "I'm about to leave the house and can't find my keys", [
        no_fridge, no_fridge, {"goals": [{"kind": "bring_to_user", "object": "keys"}]}, GIVE_UP])
    assert "the map has a fridge: look again" in policy.prompts[1][-1]["content"]
    assert result.outcome != "impossible" and ("goal", "the robot brings a keys to the user in the dining_room") in trace
    # A reason that says nothing (a small model copying a placeholder) is not believed.
    placeholder = {"goals": [], "impossible": "why"}
    result, _, policy = run(robot_at("table_2"), "Take the towel", [
        placeholder, placeholder, {"goals": [{"kind": "holding", "object": "towel"}]}, GIVE_UP])
    assert "say in a few words why" in policy.prompts[1][-1]["content"]
    assert result.outcome != "impossible"


def test_giving_up_is_offered_only_when_the_map_cannot_meet_a_goal_or_something_failed():
    robot = robot_at("table_2")
    _, _, policy = run(robot, "Pick up the orange", [{"goals": [{"kind": "holding", "object": "orange"}]},
                                                     {"thought": "look", "action": "get_rooms()"}, GIVE_UP])
    assert "GIVE_UP()" not in policy.prompts[1][-1]["content"]
    # The only juice is not where the map had it: nothing is known that could meet the goal.
    robot = robot_at("table_2")
    robot.scene().mark_missing("juice_1")
    _, _, policy = run(robot, "Pick up the juice", [{"goals": [{"kind": "holding", "object": "juice"}]}, GIVE_UP])
    assert "GIVE_UP()" in policy.prompts[1][-1]["content"]


def test_something_brought_to_the_user_goes_to_the_room_where_they_asked():
    robot = robot_at("sofa_1")
    result, trace, _ = run(robot, "I'm thirsty", [
        {"goals": [{"kind": "bring_to_user", "object": "can"}]}, {"fits": True, "p": 0.6},
        {"thought": "There is a can on the coffee table.", "action": "GOTO(coffee_table_1)"},
        {"thought": "take it", "action": "PICK(can_1, right)"}])
    assert ("goal", "the robot brings a can to the user in the living_room") in trace
    assert result.success and robot.sim.held["right"] == "can_1"


def test_a_destination_named_otherwise_than_its_label_is_checked_unless_the_request_is_grounded():
    from planner.core.planning.grounding import Grounding, Match

    scene = robot_at("sofa_1").scene()
    request = "Put the juice on the couch, please"
    reply = json.dumps({"goals": [{"kind": "object_on", "object": "juice", "target": "sofa", "room": ""}]})
    goals = [Goal(kind="object_on", object="juice", target="sofa", room="")]
    # Read as said, the request names no sofa: the model's sofa is to be checked as another name for a couch.
    assert GoalReader(request, scene, parser=PARSER).parse(reply) == goals
    assert called_otherwise(request, goals, scene) == {"sofa": ["couch"]}
    grounded = Grounding(request, "put the juice on the sofa please", (Match("couch", "sofa", 0.86),))
    reader = GoalReader(request, scene, grounded, parser=PARSER)
    assert reader.parse(reply) == goals and called_otherwise(reader.request, goals, scene) == {}
    assert reader.messages()[1]["content"] == "Put the juice on the couch, please\n(In the map's labels: couch = sofa)"


def test_a_thing_taken_for_one_the_map_calls_otherwise_is_checked_as_another_name():
    """"Put the pineapple on the bed" in a home without one: a magazine moved onto the bed is no
    other name for a pineapple, so the reading is doubted and the model, told so, declines. "The
    specs" for the glasses passes the same check; things the user only mentions are not checked."""
    magazine_on_bed = {"goals": [{"kind": "object_on", "object": "magazine", "target": "bed", "room": ""}]}
    no_pineapple = {"goals": [], "impossible": "there is no pineapple in this home"}
    result, trace, policy = run(robot_at("table_2"), "Put the pineapple on the bed", [
        magazine_on_bed, {"fits": False, "p": 0.12}, no_pineapple, no_pineapple])
    assert policy.prompts[1][0]["content"] == ('Is "pineapple" another name for a magazine? Answer with JSON: fits '
                                               'true or false.')
    assert ("check", 'a magazine: 0.12 likely called "pineapple"') in trace
    assert "A check doubts that this is what the request asks" in policy.prompts[2][-1]["content"]
    assert result.outcome == "impossible" and "no pineapple" in result.summary
    result, trace, policy = run(robot_at("table_2"), "Could you pick up the specs?", [
        {"goals": [{"kind": "holding", "object": "glasses"}]}, {"fits": True, "p": 0.81}, GIVE_UP])
    assert ("check", 'a glasses: 0.81 likely called "specs"') in trace
    assert ("goal", "the robot holds a glasses") in trace
    scene = robot_at("table_2").scene()
    assert things_unknown("Could you bring me my pineapple, please?", scene) == ["pineapple"]
    # A room's or furniture's word before a word no label has names a thing, not the place: the
    # model's laptop for "the kitchen roll" is put to the check.
    assert things_unknown("Go to the bathroom and grab the kitchen roll", scene) == ["kitchen roll"]
    assert called_otherwise("Grab the kitchen roll", [Goal(kind="holding", object="laptop")], scene) == {
        "laptop": ["kitchen roll"]}
    for request in ("Grab the kitchen towel", "Bring me the bedroom lamp please", "Take the sofa to the hallway"):
        assert things_unknown(request, scene) == [], request
    # The second of two things is a thing too; a place's words name no thing ("the end table" no table
    # lamp, which the 1.5B had taken for a tangerine with no check).
    assert things_unknown("Put the book and the pullover on the bed", scene) == ["pullover"]
    tangerine = "Could you bring the tangerine on the end table to me?"
    assert called_otherwise(tangerine, [Goal(kind="bring_to_user", object="table_lamp")], scene) == {
        "table_lamp": ["tangerine"]}
    assert chosen_for_a_need("Bring me something to read from the side table", [
        Goal(kind="bring_to_user", object="table_lamp")]) == ["table_lamp"]
    # Furniture to open, close or clear that the request calls otherwise is checked too.
    for request, goal, said in (("Could you open up the chest of drawers?", "is_open", "chest of drawers"),
                                ("Shut the cupboard in the kitchen", "is_closed", "cupboard"),
                                ("Tidy everything off the worktop", "clear", "worktop")):
        assert called_otherwise(request, [Goal(kind=goal, target="cabinet")], scene) == {"cabinet": [said]}, request
    assert called_otherwise("Open the cabinet", [Goal(kind="is_open", target="cabinet")], scene) == {}
    # A word of the furniture's name is not its name: "the low table" does not name the side table (a
    # development home's "clear the low table" read as the side table cleared, told "Done."), nor "the
    # end table" the dining table; "the table" names a dining table, "the kitchen table" a table.
    dining = robot_at("sofa_1", DINING_TABLES).scene()
    assert called_otherwise("Would you clear the low table in the living room?",
                           [Goal(kind="clear", target="side_table")], dining) == {"side_table": ["low table"]}
    assert called_otherwise("Move the pillow to the end table", [Goal(kind="object_on", object="pillow",
                                                                     target="dining_table")], dining) == {
        "dining_table": ["end table"]}
    assert called_otherwise("Clear the table, then move the pillow to the table", [Goal(
        kind="clear", target="dining_table"), Goal(kind="object_on", object="pillow", target="dining_table")],
        dining) == {}
    assert called_otherwise("Clear the kitchen table", [Goal(kind="clear", target="table")], scene) == {}
    for request in ("I spilled the coffee, can you help?", "Bring me something for the headache",
                    "Put the book on the bed", "Take the books to the bedroom", "Bring me the pen from the desk"):
        assert things_unknown(request, scene) == [], request
        assert called_otherwise(request, [Goal(kind="holding", object="stapler")], scene) == {}, request


def test_a_place_said_in_other_words_is_checked_as_another_name_not_refused():
    """"Over to the sideboard" names no furniture of the map, but says where the thing goes: the
    model's dresser is put to the same check rather than turned into only taking the book; a room
    the map calls otherwise ("the lounge") is checked too, and a wrong one read again."""
    result, trace, policy = run(robot_at("table_2"), "Carry the book over to the sideboard in the bedroom", [
        {"goals": [{"kind": "object_on", "object": "book", "target": "dresser", "room": "bedroom"}]},
        {"fits": True, "p": 0.74}, GIVE_UP])
    assert policy.prompts[1][0]["content"].startswith('Is "sideboard" another name for a dresser?')
    assert ("goal", "book_3 on a dresser in the bedroom") in trace  # the nearest of several books
    result, trace, policy = run(robot_at("table_2"), "Head over to the lounge", [
        {"goals": [{"kind": "robot_in_room", "room": "bedroom"}]}, {"fits": False, "p": 0.08},
        {"goals": [{"kind": "robot_in_room", "room": "living_room"}]}, {"fits": True, "p": 0.83}, GIVE_UP])
    assert ("check", 'a bedroom: 0.08 likely called "lounge"') in trace
    assert ("check", 'a living_room: 0.83 likely called "lounge"') in trace
    assert ("goal", "the robot is in the living_room") in trace
    # Where nothing says where a thing goes, a place the model adds is still doubted.
    scene = robot_at("table_2").scene()
    assert "names no furniture for the book to go to" in problems_of(
        "Grab the book", [Goal(kind="object_on", object="book", target="dresser")], scene)[1][0]
    # A reading that places nothing anywhere, for a request that names a room, is doubted; where the
    # user says they are is no place to put things.
    held = [Goal(kind="holding", object="plate")]
    assert "names the office, and no goal has a room" in " ".join(
        problems_of("The plate is wanted in the office, carry it over", held, scene)[1])
    assert not any("no goal has a room" in doubt for doubt in problems_of(
        "I'm in the office, grab the plate", held, scene)[1])
    assert destinations("Bring the fork from the counter over to the chest of drawers in the kids' room") == [
        "chest of drawers", "kids room"]


def test_furniture_named_as_where_a_thing_comes_from_is_not_taken_for_where_it_goes():

    scene = robot_at("sofa_1").scene()
    request = "Put the pillow from the desk and the book on the worktop"
    goals = [Goal(kind="object_on", object="pillow", target="counter"), Goal(kind="object_on", object="book",
                                                                            target="counter")]
    assert GoalReader(request, scene, parser=PARSER).parse(json.dumps({"goals": [g.model_dump() for g in goals]})) == goals
    assert called_otherwise(request, goals, scene) == {"counter": ["worktop"]}
    with pytest.raises(ValueError, match="the request names no desk; it names counter"):
        GoalReader("Put the pillow from the bed on the counter", scene, parser=PARSER).parse(json.dumps(
            {"goals": [{"kind": "object_on", "object": "pillow", "target": "desk", "room": ""}]}))


def test_a_thing_the_request_does_not_name_moved_for_a_request_about_furniture_is_doubted():
    scene = robot_at("sofa_1").scene()
    candle_on_desk = [Goal(kind="object_on", object="candle", target="desk")]
    doubts = problems_of("Could you tidy everything off the desk?", candle_on_desk, scene)[1]
    assert 'the request names no candle, only the desk; if it asks to take everything off the desk, the goal is ' \
           '{"kind": "clear", "target": "desk"}' in doubts
    for request in ("Put the candle on the desk", "I need a light on my desk"):
        assert not any("only the desk" in doubt for doubt in problems_of(request, candle_on_desk, scene)[1]), request


def test_a_request_to_take_everything_off_furniture_is_read_as_clearing_it_whatever_the_model_read():
    """"Tidy everything off the table in the kitchen" read as a remote held (a development home's
    reading of such a request, however often the doubt was said): the words decide."""
    from planner.core.planning.goal_reading import cleared_from_request

    robot = robot_at("sofa_1", DINING_TABLES)
    remote = [Goal(kind="holding", object="remote")]
    kitchen_table = Goal(kind="clear", target="dining_table", room="kitchen")
    scene = robot.scene()
    for request in ("Could you tidy everything off the table in the kitchen?",
                    "Take all the things from the table in the kitchen, please", "Clear off the dining table, please"):
        assert cleared_from_request(request, remote, scene)[:1] in ([kitchen_table], [kitchen_table.model_copy(
            update={"room": ""})]), request
    # Which table is not said (a dining, a coffee and a side table), things go somewhere, or the thing
    # is named: the model's reading stands.
    for request in ("Could you tidy everything off the table?", "Put everything from the table in the kitchen on the sofa",
                    "Take the remote off the table in the kitchen"):
        assert cleared_from_request(request, remote, scene) == remote, request
    # In a room with a dining table and a side table, "the table in the dining room" is the dining table;
    # in one with a coffee table and a side table, no table is the living room's: the reading stands.
    side_table_too = robot_at("sofa_1", DINING_TABLES.model_copy(update={"furniture": [
        f.model_copy(update={"label": "side_table"}) if f.id == "chair_1" else f for f in DINING_TABLES.furniture]}))
    assert cleared_from_request("Tidy everything off the table in the dining room", remote, side_table_too.scene()) == [
        Goal(kind="clear", target="dining_table", room="dining_room")]
    assert cleared_from_request("Tidy everything off the table in the living room", remote, scene) == remote
    # So does furniture the model cleared that the request does not name (a development home's
    # "clear the table in the kitchen" read as a cabinet cleared, then declined as no cabinet there).
    assert cleared_from_request("Could you clear the table in the kitchen?",
                                [Goal(kind="clear", target="cabinet", room="kitchen")], scene) == [kitchen_table]
    # A thing the request names stays beside the clearing.
    assert cleared_from_request("Clear everything off the desk and bring me the remote", remote, scene) == [
        Goal(kind="clear", target="desk"), *remote]
    # "The table in the kitchen" names the dining table there: no doubt about a furniture not named.
    assert problems_of("Could you tidy everything off the table in the kitchen?", [kitchen_table], scene) == ([], [])
    result, trace, _ = run(robot, "Could you tidy everything off the table in the kitchen?",
                           [{"goals": [{"kind": "holding", "object": "remote"}]}, GIVE_UP])
    assert ("goal", "nothing is left on the dining_table in the kitchen and the robot's hands are empty") in trace


def test_a_thing_put_back_on_the_furniture_the_request_takes_it_from_is_a_misreading():
    """"The fork from the dining table ... on the worktop" read as the fork on a dining table (a
    development home's reading, told "Done." once another fork had been moved there)."""
    scene = robot_at("sofa_1").scene()
    back = [Goal(kind="object_on", object="remote", target="coffee_table")]
    problems, _ = problems_of("Put the remote from the coffee table on the worktop", back, scene)
    assert any("the coffee table is where the request takes things from" in problem for problem in problems)
    # Sent to the furniture it comes from by name, or somewhere else: not this problem.
    for request, goals in (("Take the remote from the coffee table to the shelf", [
            Goal(kind="object_on", object="remote", target="shelf")]),
            ("Move the remote from the coffee table to the other coffee table", back)):
        assert not any("takes things from" in problem for problem in problems_of(request, goals, scene)[0]), request


def test_a_thing_already_on_the_furniture_the_request_sends_it_to_is_no_doubt_beside_things_to_move():
    """"Put the pillow and the medical kit on the desk" with the pillow on a desk already: the doubt
    that the goal is true already had the model read both as held, told "Done." (a development home)."""
    scene = robot_at("sofa_1").scene()
    remote_there = Goal(kind="object_on", object="remote", target="coffee_table")
    laptop_too = Goal(kind="object_on", object="laptop", target="coffee_table")
    assert problems_of("Put the remote and the laptop on the coffee table", [remote_there, laptop_too], scene) \
        == ([], [])
    # Alone, or with every goal true already, it is still doubted: the request asks for a change.
    assert any("true already" in doubt for doubt in problems_of("Put the remote on the coffee table",
                                                                  [remote_there], scene)[1])
    # Unless the request is one thing of several read apart, the others still to be met.
    assert problems_of("Put the remote on the coffee table", [remote_there], scene, part=True) == ([], [])
    # A place said in other words is the furniture the things still to be moved go to; not furniture
    # the others do not go to.
    assert problems_of("First the remote, then the laptop: both on the footrest", [remote_there, laptop_too],
                         scene) == ([], [])
    laptop_to_shelf = Goal(kind="object_on", object="laptop", target="shelf")
    assert any("true already" in doubt for doubt in problems_of(
        "First the remote, then the laptop: both on the footrest", [remote_there, laptop_to_shelf], scene)[1])


def test_things_sent_to_furniture_of_the_label_they_are_on_go_to_another_where_the_map_has_more():
    """"Both on the shelf" with both on one of three shelves asks for a change: they go to another
    shelf. Before, the reading was doubted as true already, read again as the two things held, and
    the robot said "Done." with them in its hands (two development homes of each source)."""
    request = "First the vase, then the photo frame: both on the shelf, please"
    reply = {"goals": [{"kind": "object_on", "object": "vase", "target": "shelf", "room": ""},
                       {"kind": "object_on", "object": "photo_frame", "target": "shelf", "room": ""}]}
    robot = robot_at("shelf_1")
    goals = GoalReader(request, robot.scene(), parser=PARSER).parse(json.dumps(reply))
    assert [str(goal) for goal in goals] == ["a vase on a shelf other than shelf_1",
                                             "a photo_frame on a shelf other than shelf_1"]
    trace = []
    result = TaskPlanner(ScriptedPolicy([reply]), robot, robot.skills, PlannerSettings(confirm_timeout_s=0, mode="llm_p"),
                         on_step=lambda step: trace.append((step.kind, step.text)), parser=PARSER).run(request)
    scene = robot.scene()
    assert result.success, trace
    assert {scene.furniture_support(thing)[1] for thing in ("vase_1", "photo_frame_1")} <= {"shelf_2", "shelf_3"}
    # A request that sends the thing nowhere, or to the one furniture of its label, is still doubted
    # as asking for nothing; one thing of several read apart may be meant to join the others there.
    scene = robot_at("sofa_1").scene()
    vase_there = Goal(kind="object_on", object="vase", target="shelf")
    assert any("true already" in doubt for doubt in problems_of("Take the vase", [vase_there], scene)[1])
    remote_there = {"goals": [{"kind": "object_on", "object": "remote", "target": "coffee_table", "room": ""}]}
    with pytest.raises(ValueError, match="true already"):
        GoalReader("Put the remote on the coffee table", scene, parser=PARSER).parse(json.dumps(remote_there))
    assert GoalReader("Put the vase on the shelf", scene, part=True, parser=PARSER).parse(
        json.dumps({"goals": [vase_there.model_dump()]})) == [vase_there]


def test_two_things_asked_for_and_one_left_out_of_the_goals_is_doubted_and_read_again():
    """"The pillow and the book" read as the pillow alone would end "Done." with the book where it was."""
    scene = robot_at("sofa_1").scene()
    labels = {o.label for o in scene.objects()}
    assert things_asked_about("Put the pillow from the desk and the book on the counter", labels) == ["pillow", "book"]
    assert things_asked_about("Put the pillow on the desk and bring me the book", labels) == ["pillow", "book"]
    pillow = [Goal(kind="object_on", object="pillow", target="counter")]
    doubts = problems_of("Put the pillow and the red book on the counter", pillow, scene)[1]
    assert "the request names the pillow and the book, and no goal has the book; each thing the request asks " \
           "about needs a goal of its own" in doubts
    both = [*pillow, Goal(kind="object_on", object="book", target="counter")]
    assert not any("needs a goal of its own" in d for d in problems_of("Put the pillow and the book on the counter",
                                                                         both, scene)[1])
    result, trace, policy = run(robot_at("sofa_1"), "Put the pillow and the book on the counter", [
        {"goals": [g.model_dump() for g in pillow]}, {"goals": [g.model_dump() for g in both]}, GIVE_UP])
    assert "no goal has the book" in policy.prompts[1][-1]["content"]
    assert any(kind == "goal" and "pillow" in text and "book" in text for kind, text in trace), trace



def test_two_things_the_model_keeps_reading_as_one_are_both_sent_or_read_one_at_a_time():
    """The model keeps one of "the pillow and the book" through every repair: the book, which the
    request names with the pillow, is sent where the pillow goes when the checks then find nothing
    to doubt, and the robot does both. A thing no label names ("the drum") is found by reading the
    request a thing at a time: "put the pillow on the counter", "put the drum on the counter"."""
    from planner.core.planning.goal_reading import joined_halves

    assert joined_halves("Would you put the mug from the desk and the plate on the shelf?") == (
        "Would you put the mug from the desk on the shelf?", "Would you put the plate on the shelf?")
    assert joined_halves("Put the pillow on the desk and bring me the book") is None
    assert joined_halves("Put the bottle of water and the box of tissues on the desk") == (
        "Put the bottle of water on the desk", "Put the box of tissues on the desk")
    pillow = {"goals": [{"kind": "object_on", "object": "pillow", "target": "counter"}]}
    result, trace, policy = run(robot_at("sofa_1"), "Put the pillow and the book on the counter, please",
                                [pillow, pillow, pillow, GIVE_UP])
    assert all("Put the pillow on the counter" not in str(prompt) for prompt in policy.prompts)
    goals = next(text for kind, text in trace if kind == "goal")
    assert "on a counter" in goals and "pillow" in goals and "book" in goals

    # A half that asks for what the home lacks makes the whole request impossible.
    no_drum = {"goals": [], "impossible": "there is no drum in this home"}
    result, trace, policy = run(robot_at("sofa_1"), "Put the pillow and the drum on the counter",
                                [pillow, pillow, pillow, pillow, no_drum, no_drum])
    assert "Put the pillow on the counter" in str(policy.prompts[3])
    assert "Put the drum on the counter" in str(policy.prompts[4])
    assert result.outcome == "impossible" and "drum" in result.summary

    # A thing on the furniture its half sends it to is no doubt, as in the whole request: the other
    # half is still to be met (read as held, it was picked up and Done. said with it in the hand).
    laptop = {"goals": [{"kind": "object_on", "object": "laptop", "target": "coffee_table"}]}
    remote = {"goals": [{"kind": "object_on", "object": "remote", "target": "coffee_table"}]}
    result, trace, policy = run(robot_at("sofa_1"), "Put the laptop and the remote on the coffee table",
                                [laptop, laptop, laptop, laptop, remote, GIVE_UP])
    goals = next(text for kind, text in trace if kind == "goal")
    assert "a laptop on a coffee_table" in goals and "a remote on a coffee_table" in goals


def test_goals_beside_an_impossible_the_map_contradicts_stand():

    reader = GoalReader("Would you put the book on the counter?", robot_at("sofa_1").scene(), parser=PARSER)
    goal = {"kind": "object_on", "object": "book", "target": "counter", "room": ""}
    assert reader.parse(json.dumps({"goals": [goal], "impossible": "there is no counter in the map"})) == [
        Goal(kind="object_on", object="book", target="counter")]
    with pytest.raises(ValueError, match="give either goals or why"):
        reader.parse(json.dumps({"goals": [goal], "impossible": "the robot cannot reach it"}))


def test_a_thing_chosen_for_a_need_that_a_search_of_the_map_does_not_find_is_read_again_with_what_it_found():
    """"I'm cold" read as the magazine, which the model's yes/no would let pass: the object finder,
    asked what in the map meets the request, finds the blanket. The reading is doubted and read
    again with that said; the blanket, which the search finds first, is a second reading agreeing
    and is brought without the need check's yes (a book for "I'm bored", 0.449 to the 1.5B against
    the check's 0.45 and found first, was put to the user). Without a search the magazine would be."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.object_finder import FinderSettings, ObjectFinder

    finder_policy = ScriptedPolicy([{"need": "warmth", "kinds": ["blanket", "sweater"]}])
    finder = ObjectFinder(finder_policy, FinderSettings(name_check=1.0), SentenceEmbedder())
    robot = SimulatedRobot(APARTMENT.with_robot_at("sofa_1", ROBOT.standoff_m), [],
                           load_skill_planner(load_config(CONFIG / "planner.yaml")), finder=finder)
    magazine = {"goals": [{"kind": "bring_to_user", "object": "magazine"}]}
    blanket = {"goals": [{"kind": "bring_to_user", "object": "blanket"}]}
    policy, trace = ScriptedPolicy([magazine, blanket]), []
    result = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0, mode="llm_p"),
                         on_step=lambda step: trace.append((step.kind, step.text)), parser=PARSER).run("I'm cold")
    assert result.success and ("goal", "the robot brings a blanket to the user in the living_room") in trace
    assert policy.prompts[1][-1]["content"].endswith(
        "A search of the map for what the request asks finds: blanket.")
    assert any(kind == "check" and "blanket_1 (blanket)" in text for kind, text in trace)
    assert not any("likely to meet the request" in text for _, text in trace)  # no need check asked
    assert result.llm_calls == len(policy.prompts) + len(finder_policy.prompts) == 3  # the search's call counts too
    # Without an object finder, the model's reading stands on the yes/no alone.
    result, trace, _ = run(robot_at("sofa_1"), "I'm cold", [magazine, {"fits": True, "p": 0.5}, GIVE_UP])
    assert ("goal", "the robot brings a magazine to the user in the living_room") in trace


class AnswersByQuestion(ScriptedPolicy):
    """The model as a table: the goal step's readings in order, and each yes/no by its question."""

    def __init__(self, readings: list[dict], yes: dict[str, float]):
        super().__init__(readings)
        self.yes = yes

    def judge(self, messages, schema=None):
        from planner.core.ports import PolicyReply

        question = messages[-1]["content"]
        p = next((p for asked, p in self.yes.items() if asked in question), 0.2)
        return PolicyReply(json.dumps({"fits": p >= 0.5}), yes_probability=p)


def test_another_name_a_search_of_the_map_also_finds_is_grounded_from_the_lower_agreement_threshold():
    """"Fetch the portable computer" read twice as a book: the object finder finds the laptop for
    it, and the model's yes that "portable computer" names a laptop (0.5), below what grounding
    alone needs (other_name_threshold 0.6), is a second reading agreeing: the request is read again
    as the laptop, and the laptop is taken."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.object_finder import FinderSettings, ObjectFinder
    from planner.core.planning.grounding import Grounder

    embedder = SentenceEmbedder()
    finder = ObjectFinder(ScriptedPolicy([{"need": "a computer", "kinds": ["laptop"]}]), FinderSettings(name_check=1.0),
                          embedder)
    robot = SimulatedRobot(APARTMENT.with_robot_at("desk_1", ROBOT.standoff_m), [],
                           load_skill_planner(load_config(CONFIG / "planner.yaml")), finder=finder)
    book = {"goals": [{"kind": "holding", "object": "book"}]}
    policy = AnswersByQuestion([book, book, {"goals": [{"kind": "holding", "object": "laptop"}]}, GIVE_UP],
                               {'"portable computer" another name for a laptop': 0.5})
    trace = []
    TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                on_step=lambda step: trace.append((step.kind, step.text)),
                grounder=Grounder(embedder), parser=PARSER).run("Fetch the portable computer")
    assert ("perception", "the request in the map's words: portable computer = laptop") in trace
    assert ("goal", "the robot holds a laptop") in trace


def test_a_thing_called_otherwise_that_the_name_check_does_not_single_out_stands_when_a_search_finds_it():
    """"Grab the specs" read as the glasses: the name check gives them 0.5 and the other things most
    like the word 0.45, too close to single the glasses out, and the reading would be doubted. The
    object finder finds the glasses for the request: two readings agree, and the reading stands."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.object_finder import FinderSettings, ObjectFinder
    from planner.core.planning.grounding import Grounder

    embedder = SentenceEmbedder()
    yes = {'"specs" another name for a glasses': 0.5, '"specs" another name for a': 0.45}
    glasses = {"goals": [{"kind": "holding", "object": "glasses"}]}
    for kinds, doubted in ((["eyeglasses"], False), (["loudspeaker"], True)):
        finder = ObjectFinder(ScriptedPolicy([{"need": "x", "kinds": kinds}]), FinderSettings(name_check=1.0), embedder)
        robot = SimulatedRobot(APARTMENT.with_robot_at("sofa_1", ROBOT.standoff_m), [],
                               load_skill_planner(load_config(CONFIG / "planner.yaml")), finder=finder)
        policy = AnswersByQuestion([glasses, glasses, glasses, glasses, GIVE_UP], yes)
        trace: list[tuple[str, str]] = []
        TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                    on_step=lambda step, trace=trace: trace.append((step.kind, step.text)),
                    grounder=Grounder(embedder), parser=PARSER).run("Grab the specs")
        assert any("A check doubts" in prompt[-1]["content"] for prompt in policy.prompts) == doubted, kinds
        assert (("goal", "the robot holds a glasses") in trace) != doubted, kinds


def test_a_broader_kind_is_no_rival_of_the_thing_a_word_names():
    """"The clicker" in a home whose map calls some things only "object", as scanning data sets do:
    the model, asked which thing the word is, chooses the remote, 0.48 likely another name for it,
    and says yes 0.57 to "an object", as it does to most words. Every remote is an object, so to the
    lexicon the object is no rival of the remote, which stands out from the rest, and the request is
    read in the map's words. Without a lexicon the object outdoes the remote and no thing is named."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.lexicon import WordNetLexicon
    from planner.core.planning.grounding import Grounder

    world = APARTMENT.model_copy(update={"objects": [
        o.model_copy(update={"label": "object"}) if o.id == "socks_1" else o for o in APARTMENT.objects]})
    no_clicker = {"goals": [], "impossible": "there is no clicker in this home"}
    yes = {'"clicker" another name for a remote': 0.48, '"clicker" another name for a object': 0.57}
    for lexicon, named in ((WordNetLexicon(), True), (None, False)):
        policy = AnswersByQuestion([no_clicker, no_clicker, {"meaning": "a remote control", "choice": "remote"},
                                    {"goals": [{"kind": "holding", "object": "remote"}]}, GIVE_UP], yes)
        trace: list[tuple[str, str]] = []
        robot = robot_at("table_2", world)
        result = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                             on_step=lambda step, trace=trace: trace.append((step.kind, step.text)),
                             grounder=Grounder(SentenceEmbedder(), lexicon=lexicon), parser=PARSER).run("Could you get the clicker?")
        assert (("check", 'a object: 0.57 likely called "clicker"') in trace) != named
        assert (("perception", "the request in the map's words: clicker = remote") in trace) == named
        assert (("goal", "the robot holds a remote") in trace) == named
        assert (result.outcome == "impossible") != named


def test_a_doubted_reading_the_model_then_gives_up_is_read_again_with_the_map_s_other_names_first():
    """"The clicker" read as the stapler: the name check doubts it, and the model, told so, says the
    home has no clicker. Before that is said to the user, the word is put to the model as one of the
    labels most like it; it chooses the remote, which the name check singles out, and the request is
    read again in the map's words."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.planning.grounding import Grounder

    no_clicker = {"goals": [], "impossible": "there is no clicker in this home"}
    policy = AnswersByQuestion([{"goals": [{"kind": "holding", "object": "stapler"}]}, no_clicker, no_clicker,
                                {"meaning": "a remote control", "choice": "remote"},
                                {"goals": [{"kind": "holding", "object": "remote"}]}, GIVE_UP],
                               {'"clicker" another name for a remote': 0.48})
    trace: list[tuple[str, str]] = []
    robot = robot_at("table_2")
    result = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                         on_step=lambda step: trace.append((step.kind, step.text)),
                         grounder=Grounder(SentenceEmbedder()), parser=PARSER).run("Could you get the clicker?")
    assert any("A check doubts" in prompt[-1]["content"] for prompt in policy.prompts)
    assert ("perception", "the request in the map's words: clicker = remote") in trace, trace
    assert ("goal", "the robot holds a remote") in trace and result.outcome != "impossible"


def test_a_thing_chosen_for_a_need_is_checked_and_the_request_declined_when_it_does_not_meet_it():
    """'I'm cold' in a home with no blanket: the model takes whatever is there; the narrow check
    that the thing meets the need doubts it, and the model, told so, says it is impossible."""
    robot = robot_at("sofa_1")
    nothing_warm = {"goals": [], "impossible": "nothing in the map keeps a person warm"}
    result, trace, policy = run(robot, "I'm cold, can you help?", [
        {"goals": [{"kind": "bring_to_user", "object": "magazine"}]}, {"fits": False, "p": 0.31},
        nothing_warm, nothing_warm])
    assert result.outcome == "impossible" and "keeps a person warm" in result.summary
    assert ("check", "a magazine: 0.31 likely to meet the request") in trace
    assert policy.prompts[1][0]["content"] == ('A person says to a home robot: "I\'m cold, can you help?"\nWould '
                                               'bringing them a magazine give them what they want? Answer with JSON: '
                                               'fits true or false.')
    assert "A check doubts that this is what the request asks: the robot brings a magazine" in \
        policy.prompts[2][-1]["content"]
    assert not any(robot.sim.held.values())
    # A thing that meets the need goes ahead after one check; with the check off there is none.
    result, trace, _ = run(robot_at("sofa_1"), "I'm thirsty", [
        {"goals": [{"kind": "bring_to_user", "object": "juice"}]}, {"fits": True, "p": 0.58}, GIVE_UP])
    assert ("goal", "the robot brings a juice to the user in the living_room") in trace
    policy = ScriptedPolicy([{"goals": [{"kind": "bring_to_user", "object": "juice"}]}, GIVE_UP])
    TaskPlanner(policy, robot_at("sofa_1"), robot.skills, PlannerSettings(confirm_timeout_s=0, need_check_threshold=0)
                , parser=PARSER).run("I'm thirsty")
    assert "Valid actions" in policy.prompts[1][-1]["content"]
    assert not any("Would bringing them" in prompt[-1]["content"] for prompt in policy.prompts)


def test_only_things_chosen_for_a_need_are_checked_not_things_the_request_names():
    holding = [Goal(kind="holding", object="water_bottle")]
    assert chosen_for_a_need("i'm thirsty", holding) == ["water_bottle"]
    assert chosen_for_a_need("bring me something to drink", [Goal(kind="bring_to_user", object="can", room="x")]) == ["can"]
    assert chosen_for_a_need("can i have some water", holding) == []            # named in part
    assert chosen_for_a_need("bring me the bottles", holding) == []             # named, plural
    assert chosen_for_a_need("get the flask from the desk", holding) == []      # a particular thing: not a need
    assert chosen_for_a_need("i'm thirsty", [Goal(kind="object_on", object="water_bottle", target="table")]) == []


def test_a_need_read_as_furniture_to_open_is_doubted_with_what_a_need_asks_for():
    """'I'm freezing' read as an open fridge: a goal on furniture the request never names."""
    robot = robot_at("sofa_1")
    result, trace, policy = run(robot, "I'm freezing", [
        OPEN_FRIDGE, {"goals": [{"kind": "bring_to_user", "object": "magazine"}]}, {"fits": False, "p": 0.2},
        {"goals": [], "impossible": "nothing here keeps a person warm"},
        {"goals": [], "impossible": "nothing here keeps a person warm"}])
    assert ("the request names no fridge; a need the user states asks for the object that meets it, brought to them "
            "(bring_to_user)") in policy.prompts[1][-1]["content"]
    assert result.outcome == "impossible" and not robot.sim.open_state["fridge_1"]
    # A request that names the furniture is read as said.
    _, trace, policy = run(robot_at("fridge_1"), "Open the fridge", [OPEN_FRIDGE, GIVE_UP])
    assert ("goal", "the fridge is open") in trace and "names no" not in policy.prompts[1][-1]["content"]


def run_grounded(request: str, replies: list, lexicon=None, world=APARTMENT, answers: tuple[str, ...] = ()):
    """A run with the real sentence embeddings (and `lexicon`) grounding the request and ranking other
    names; `answers` reply to the robot's questions in turn."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.planning.grounding import Grounder

    trace = []
    robot = robot_at("table_2", world)
    robot.answers = list(answers)
    policy = ScriptedPolicy(replies)
    result = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                         on_step=lambda step: trace.append((step.kind, step.text)),
                         grounder=Grounder(SentenceEmbedder(), lexicon=lexicon), parser=PARSER).run(request)
    return result, trace, policy


def test_names_wordnet_knows_are_read_in_the_map_s_words_before_the_model_reads_the_request():
    """"The chest of drawers" and "the sitting room" name the dresser and the living room: the model
    reads the request in those words and nothing is put to a name check."""
    from planner.adapters.lexicon import WordNetLexicon

    result, trace, policy = run_grounded("Please put the hat in the chest of drawers", [
        {"goals": [{"kind": "object_in", "object": "hat", "target": "dresser"}]}, GIVE_UP], WordNetLexicon())
    assert ("perception", "the request in the map's words: chest of drawers = dresser") in trace
    assert policy.prompts[0][-1]["content"].endswith("(In the map's labels: chest of drawers = dresser)")
    assert ("goal", "a hat inside a dresser") in trace
    assert policy.prompts[1][-1]["content"].startswith("Request:")  # the first step: no name check before it
    _, trace, policy = run_grounded("Head over to the sitting room", [
        {"goals": [{"kind": "robot_in_room", "room": "living_room"}]}, GIVE_UP], WordNetLexicon())
    assert ("perception", "the request in the map's words: sitting room = living_room") in trace
    assert ("goal", "the robot is in the living_room") in trace
    assert policy.prompts[1][-1]["content"].startswith("Request:")


def test_a_name_wordnet_gives_only_in_a_rare_sense_is_read_in_the_map_s_words_when_the_name_check_agrees():
    """"The jumper" is a sweater only in a sense WordNet has not seen used: before the request is
    read, the sweater is put to the name check, and its yes at the check's own threshold (0.45,
    not the 0.6 a merely alike word needs) reads the request in the map's words from the first
    reading (the 1.5B took "the settee" for a chair, and the robot said Done.). A no leaves it
    impossible, and the check is not asked again. After "in the", where a room may be said, the
    check waits until the request is about to be given up ("clear the piano in the lounge" was read
    as a sofa, 0.66 to the 1.5B)."""
    from planner.adapters.lexicon import WordNetLexicon

    with_sweater = APARTMENT.model_copy(update={"objects": [
        o.model_copy(update={"label": "sweater"}) if o.id == "socks_1" else o for o in APARTMENT.objects]})
    no_jumper = {"goals": [], "impossible": "there is no jumper in this home"}
    result, trace, policy = run_grounded("Could you fetch the jumper?", [
        {"fits": True, "p": 0.46}, {"goals": [{"kind": "holding", "object": "sweater"}]}, GIVE_UP],
        WordNetLexicon(), with_sweater)
    assert policy.prompts[0][0]["content"].startswith('Is "jumper" another name for a sweater?')
    assert ("perception", "the request in the map's words: jumper = sweater") in trace
    assert ("goal", "the robot holds a sweater") in trace and result.outcome != "impossible"
    result, trace, policy = run_grounded("Could you fetch the jumper?", [{"fits": False, "p": 0.3}, *[no_jumper] * 6],
                                         WordNetLexicon(), with_sweater)
    assert result.outcome == "impossible" and not any("map's words" in text for _, text in trace)
    assert sum("another name for a sweater" in str(prompt) for prompt in policy.prompts) == 1
    # Where a room may be said, the first reading is the model's: "the lounge" is a sofa to WordNet.
    _, trace, policy = run_grounded("Could you clear the table in the lounge?", [
        {"goals": [{"kind": "clear", "target": "table"}]}, GIVE_UP], WordNetLexicon())
    assert "another name" not in policy.prompts[0][0]["content"] and ("goal", "nothing is left on the table and the "
                                                                      "robot's hands are empty") in trace, trace


def test_before_a_thing_is_given_up_as_missing_words_less_alike_to_a_label_are_put_to_the_name_check():
    """"The computer" is not close enough to "laptop" to be grounded outright; when the model holds
    that the home has none, or its reading is doubted twice, the laptop is put to the name check,
    and a yes reads the request again in the map's words. A thing the home really lacks stays
    impossible after the check says no."""
    no_computer = {"goals": [], "impossible": "there is no computer in this home"}
    result, trace, policy = run_grounded("Could you fetch the computer?", [
        no_computer, no_computer, {"fits": True, "p": 0.8}, {"goals": [{"kind": "holding", "object": "laptop"}]},
        GIVE_UP])
    assert policy.prompts[2][0]["content"].startswith('Is "computer" another name for a laptop?')
    assert ("perception", "the request in the map's words: computer = laptop") in trace
    assert policy.prompts[3][-1]["content"].endswith("(In the map's labels: computer = laptop)")
    assert ("goal", "the robot holds a laptop") in trace and result.outcome != "impossible"

    # Where the user says they are is a room, whatever the map calls it: "the workroom" is put to no
    # name check as the desk it is most like (0.6); the model finds no room of the map it names.
    result, trace, policy = run_grounded("Could you fetch the computer? I'm in the workroom", [
        {"choice": "none of these"}, no_computer, no_computer, {"fits": True, "p": 0.8},
        {"goals": [{"kind": "holding", "object": "laptop"}]}, GIVE_UP])
    assert not any(str(prompt[0]["content"]).startswith('Is "workroom"') for prompt in policy.prompts)
    assert ("perception", "the request in the map's words: computer = laptop") in trace

    # A wrong thing taken for a word the map does not use is put to the name check beside the labels
    # most like the word; the one the word names best (its yes plus its similarity) is read instead.
    notebook = {"goals": [{"kind": "holding", "object": "notebook"}]}
    result, trace, policy = run_grounded("Could you fetch the computer?", [
        notebook, *({"fits": p > 0.5, "p": p} for p in (0.8, 0.2, 0.1, 0.3, 0.1)),  # laptop, phone, apple, notebook,
        {"goals": [{"kind": "holding", "object": "laptop"}]}, GIVE_UP])             # remote
    assert ("check", 'a notebook: 0.30 likely called "computer"') in trace
    assert ("check", 'a laptop: 0.80 likely called "computer"') in trace
    assert ("perception", "the request in the map's words: computer = laptop") in trace
    assert ("goal", "the robot holds a laptop") in trace and not any(kind == "question" for kind, _ in trace)
    # The model's yes alone does not decide: a notebook it holds a little likelier to be called
    # "computer" than a laptop stays behind the laptop, which the embeddings hold far nearer.
    result, trace, policy = run_grounded("Could you fetch the computer?", [
        notebook, *({"fits": p > 0.5, "p": p} for p in (0.6, 0.2, 0.1, 0.65, 0.1)),
        {"goals": [{"kind": "holding", "object": "laptop"}]}, GIVE_UP])
    assert ("goal", "the robot holds a laptop") in trace
    # A label the word names best, but that the model is not sure the word names (0.49 that "the
    # apple" is a juice carton, where there is no apple), doubts the reading and is no reading of
    # its own: what was read is not swapped for it.
    result, trace, policy = run_grounded("Could you fetch the computer?", [
        notebook, *({"fits": p > 0.5, "p": p} for p in (0.55, 0.2, 0.1, 0.3, 0.1)), notebook, GIVE_UP])
    assert ("check", 'a laptop: 0.55 likely called "computer"') in trace
    assert not any(kind == "perception" for kind, _ in trace) and not any(kind == "goal" for kind, _ in trace)
    assert "A check doubts that this is what the request asks" in policy.prompts[6][-1]["content"]

    # A thing the model says yes to hardly more than to the other things most like the word is not
    # singled out by it ("the melon" where there is none: an orange 0.48, a banana 0.41), unless the
    # embeddings hold it close; the reading is doubted and, unconfirmed, declined.
    orange = {"goals": [{"kind": "holding", "object": "orange"}]}
    result, trace, policy = run_grounded("Could you fetch the melon?", [
        orange, *({"fits": False, "p": p} for p in (0.48, 0.41, 0.38, 0.36, 0.35)), orange])
    assert ("check", 'a orange: 0.48 likely called "melon"') in trace
    assert ("question", "Do you want this: the robot holds an orange?") in trace
    assert result.outcome == "impossible" and not any(kind == "goal" for kind, _ in trace)

    # Less alike to any label than a grounding takes ("throw": blanket 0.32, behind bowl and towel):
    # the model chooses among the labels most like it, and the name check must agree as surely as
    # it must for a grounding (0.6): a choice it only half agrees with is no reading of the request.
    no_throw = {"goals": [], "impossible": "the home does not have a throw"}
    result, trace, policy = run_grounded("Could you fetch the throw?", [
        no_throw, no_throw, {"choice": "blanket"}, {"fits": True, "p": 0.65},
        {"goals": [{"kind": "holding", "object": "blanket"}]}, GIVE_UP])
    assert "- blanket\n" in policy.prompts[2][0]["content"] and "- none of these" in policy.prompts[2][0]["content"]
    assert ("check", 'which of bowl, towel, can, blanket, sink is "throw": blanket, the model chose') in trace
    assert ("check", 'a blanket: 0.65 likely called "throw"') in trace
    assert ("goal", "the robot holds a blanket") in trace and result.outcome != "impossible"
    # Below that, a thing chosen stands only when the name check singles it out among those offered
    # too: a blanket at 0.45 beside a towel at 0.4 is no agreement ...
    result, trace, policy = run_grounded("Could you fetch the throw?", [
        no_throw, no_throw, {"choice": "blanket"}, {"fits": False, "p": 0.45},
        *({"fits": False, "p": p} for p in (0.3, 0.4, 0.2, 0.1))])  # bowl, towel, can, sink
    assert ("check", 'a towel: 0.40 likely called "throw"') in trace
    assert result.outcome == "impossible" and not any(kind == "goal" for kind, _ in trace)
    # ... nor is a label the check cannot be asked about ruled out (here the policy has no more answers) ...
    result, trace, policy = run_grounded("Could you fetch the throw?", [
        no_throw, no_throw, {"choice": "blanket"}, {"fits": False, "p": 0.45}])
    assert result.outcome == "impossible" and not any(kind == "goal" for kind, _ in trace)
    # ... and furniture keeps the absolute check: the sink is not asked beside the others.
    result, trace, policy = run_grounded("Could you fetch the throw?", [
        no_throw, no_throw, {"choice": "sink"}, {"fits": False, "p": 0.47}])
    assert len(policy.prompts) == 4 and result.outcome == "impossible"
    # ... while a blanket at 0.45, the rest at most 0.3, is: the request is read with the blanket.
    result, trace, policy = run_grounded("Could you fetch the throw?", [
        no_throw, no_throw, {"choice": "blanket"}, {"fits": False, "p": 0.45},
        *({"fits": False, "p": p} for p in (0.3, 0.25, 0.2, 0.1)),  # bowl, towel, can, sink
        {"goals": [{"kind": "holding", "object": "blanket"}]}, GIVE_UP])
    assert ("perception", "the request in the map's words: throw = blanket") in trace
    assert ("goal", "the robot holds a blanket") in trace and result.outcome != "impossible"

    # What the home lacks stays impossible: the name check says no to each label alike enough, the
    # model chooses none of the others (its answer to a label already judged is not asked again).
    no_pineapple = {"goals": [], "impossible": "there is no pineapple in this home"}
    result, trace, policy = run_grounded("Could you fetch the pineapple?", [
        no_pineapple, no_pineapple, {"fits": False, "p": 0.1}, {"choice": "banana"}])
    assert policy.prompts[2][0]["content"].startswith('Is "pineapple" another name for a banana?')
    assert policy.prompts[3][0]["content"].startswith('A person told a home robot: "Could you fetch the pineapple?"')
    assert result.outcome == "impossible" and "no pineapple" in result.summary and len(policy.prompts) == 4


def test_a_room_taken_for_one_the_request_calls_otherwise_must_be_the_one_the_word_names_best():
    """"The lounge" read as the kitchen: the rooms most like the word are put to the name check, and
    the living room, which the model holds the lounge most likely to be, is read instead."""
    result, trace, policy = run_grounded("Head over to the lounge", [
        {"goals": [{"kind": "robot_in_room", "room": "kitchen"}]},
        # dining_room, bedroom, hallway, kitchen, living_room: the rooms most like "lounge"
        *({"fits": p > 0.5, "p": p} for p in (0.3, 0.35, 0.1, 0.2, 0.75)),
        {"goals": [{"kind": "robot_in_room", "room": "living_room"}]}, GIVE_UP])
    assert ("check", 'a kitchen: 0.20 likely called "lounge"') in trace
    assert ("perception", "the request in the map's words: lounge = living_room") in trace
    assert ("goal", "the robot is in the living_room") in trace


def test_a_place_where_only_a_room_can_be_is_read_as_the_room_of_the_map_the_model_and_name_check_agree_on():
    """"The shelf in the den": the apartment has no den. The model chooses among the map's rooms, each
    shown with its furniture (what few other rooms hold first), the name check agrees, and the request
    is read as the shelf in the living room, not the shelf in the bathroom or the office; the goal
    reads no other room."""
    shelf_in = {"goals": [{"kind": "object_on", "object": "cup", "target": "shelf", "room": "living_room"}]}
    living_room = "living room (holds armchair, coffee table, side table, sofa)"
    result, trace, policy = run_grounded("Put the cup on the shelf in the den", [
        {"meaning": "a cosy sitting room", "choice": living_room}, {"fits": True, "p": 0.7}, shelf_in, GIVE_UP])
    offered = policy.prompts[0][0]["content"]
    assert f"- {living_room}\n" in offered and "- none of these" in offered
    assert "- kitchen (holds counter, fridge, stove, cabinet)\n" in offered  # cabinets stand in two rooms
    assert policy.prompts[1][0]["content"].startswith('Is "den" another name for a living room?')
    assert ("perception", "the request in the map's words: den = living_room") in trace
    assert policy.prompts[2][-1]["content"].endswith("(In the map's labels: den = living_room)")
    assert ("goal", "cup_1 on a shelf in the living_room") in trace

    # The model's choice alone reads nothing: below room_name_threshold the place stays as said (a
    # room the home lacks got at most 0.44 from the 1.5B for the room it chose), and so does a place
    # the model says is none of the rooms. The name check is not asked again for the same place.
    for replies in ([{"choice": "office (holds desk, chair, shelf)"}, {"fits": False, "p": 0.44}],
                    [{"choice": "none of these"}]):
        result, trace, policy = run_grounded("Go to the garage", [*replies, *[{"goals": [], "impossible": "there is no garage"}] * 2])
        assert not any(kind == "perception" for kind, _ in trace)
        assert result.outcome == "impossible"
        assert sum("- hallway (holds" in str(prompt[0]["content"]) for prompt in policy.prompts) == 1  # the rooms offered


def test_a_room_a_thing_is_sent_to_that_the_map_lacks_is_asked_for_and_never_left_out():
    """"Take the cup to the games room", where no room of the map is the den to the model: the robot asks
    the user which room it is. Named, the den is that room; unanswered, the task ends saying the den
    is no room here, where goals that put the cup nowhere would have ended in "Done." holding it."""
    holding = {"goals": [{"kind": "holding", "object": "cup"}]}
    result, trace, _ = run_grounded("Take the cup to the games room", [{"choice": "none of these"}, holding, GIVE_UP])
    question = next(text for kind, text in trace if kind == "question")
    assert question.startswith("Which room is the games room? 1) ") and "living room (holds" in question
    assert result.outcome == "impossible" and "sends it to the games room, and no room here is known by that name" in result.summary
    in_bedroom = {"goals": [{"kind": "object_on", "object": "cup", "target": "", "room": "bedroom"}]}
    result, trace, _ = run_grounded("Take the cup to the games room", [{"choice": "none of these"}, in_bedroom, GIVE_UP],
                                    answers=("It's the bedroom",))
    assert ("perception", "the request in the map's words: games room = bedroom") in trace
    assert any(kind == "goal" and "in the bedroom" in text for kind, text in trace)
    # A room the thing is taken from is not asked about: the cup is found by the map.
    result, trace, _ = run_grounded("Get the cup in the games room", [{"choice": "none of these"}, holding, GIVE_UP])
    assert not any(kind == "question" and text.startswith("Which room") for kind, text in trace)


def test_only_places_where_a_room_must_be_are_read_as_rooms():
    """Where the user is, where the robot goes, a place that ends in "room", and where furniture a
    thing goes to stands; not where a thing goes after the furniture it comes from ("the plant from
    the shelf in the cupboard" puts it in a cupboard), nor a room or furniture the map has."""
    furniture, rooms = ["shelf", "counter", "coffee_table", "desk"], ["kitchen", "living_room", "kids_room"]
    assert room_places("I'm in the den, bring me the cup", furniture, rooms) == ["den"]
    assert room_places("Make your way to the parlour", furniture, rooms) == ["parlour"]
    assert room_places("Leave it on the counter in the scullery", furniture, rooms) == ["scullery"]
    assert room_places("Leave it on the sideboard in the guest room", furniture, rooms) == ["guest room"]
    assert room_places("Carry the lamp over to the sitting room", furniture, rooms) == ["sitting room"]
    assert room_places("Put the plant from the shelf in the cupboard", furniture, rooms) == []
    assert room_places("Leave the towel in the cupboard", furniture, rooms) == []
    assert room_places("Put it on the table in the kids' room, then go to the kitchen", furniture, rooms) == []
    assert room_places("Go to the coffee table", furniture, rooms) == []


def test_a_thing_put_back_where_it_is_is_sent_where_the_request_puts_it_or_to_the_user():
    """A placing goal true already is a misreading: "put the hat from the bench in the chest of
    drawers" read as the hat on the bench is sent to the place the request names, "bring the hat on
    the bench to me" to the user, "fetch the hat on the bench" to the robot's hand."""
    scene = robot_at("table_2").scene()
    on_bench = [Goal(kind="object_on", object="hat", target="bench")]
    doubts = " ".join(problems_of("Please put the hat from the bench in the chest of drawers", on_bench, scene)[1])
    assert 'the request sends the hat to "the chest of drawers", not where it is now' in doubts
    doubts = " ".join(problems_of("Could you bring the hat on the bench to me?", on_bench, scene)[1])
    assert '{"kind": "bring_to_user", "object": "hat"}' in doubts and "sends" not in doubts
    doubts = " ".join(problems_of("Fetch the hat on the bench", on_bench, scene)[1])
    assert '{"kind": "holding", "object": "hat"}' in doubts and "sends" not in doubts


def test_a_reading_that_leaves_out_a_thing_the_request_moves_is_not_carried_out_without_a_yes():
    """"Could the pillow and the trumpet go on the counter", read as the pillow alone through every
    repair: the robot moved the pillow and said Done. Now it asks, and without an answer does nothing;
    with a yes it does what was read."""
    pillow = {"goals": [{"kind": "object_on", "object": "pillow", "target": "counter"}]}
    request = "Could the pillow and the trumpet go on the counter?"
    robot = robot_at("sofa_1")
    result, trace, policy = run(robot, request, [pillow] * 8)
    assert ("check", "a pillow on a counter: leaves out the trumpet the request asks to move") in trace
    assert "no goal moves the trumpet" in str(policy.prompts[1])
    assert result.outcome == "impossible" and "I am not sure what you want" in result.summary
    assert robot.log.questions == ["Do you want this: a pillow on a counter?"] and not robot.log.skills

    robot = robot_at("sofa_1", answers=["yes"])
    steps = ["PICK(pillow_1, left)", "GOTO(counter_1)", "PLACE(pillow_1, counter_1, left)"]
    result, _, _ = run(robot, request, [pillow] * 8 + [{"thought": "next", "action": step} for step in steps])
    assert result.success


def test_two_things_one_of_them_called_by_a_word_no_label_has_need_two_goals():
    scene = robot_at("table_2").scene()
    book = [Goal(kind="object_on", object="book", target="counter")]
    doubts = problems_of("Put the cap from the bench and the book on the counter", book, scene)[1]
    assert ("the request asks for the cap and the book, and no goal moves the cap; each thing the request "
            "asks about needs a goal of its own") in doubts
    both = [*book, Goal(kind="object_on", object="hat", target="counter")]
    assert not any("no goal moves" in d for d in problems_of("Put the cap from the bench and the book on the counter",
                                                                both, scene)[1])
    assert not any("no goal moves" in d for d in problems_of("Take the book and go to the kitchen", book, scene)[1])


def test_no_thing_is_missing_that_the_request_names_by_a_word_grounded_in_the_map():
    """"There is no loaf" beside goals for the bread the loaf was grounded as: the goals stand."""
    from planner.core.planning.grounding import Grounding, Match

    request = "Would you put the loaf on the table?"
    grounding = Grounding(request, request, ()).with_match(Match("loaf", "bread", 0.85))
    reader = GoalReader(request, robot_at("sofa_1").scene(), grounding, parser=PARSER)
    goal = {"kind": "object_on", "object": "bread", "target": "table", "room": ""}
    assert reader.parse(json.dumps({"goals": [goal], "impossible": "there is no loaf in the map"})) == [
        Goal(kind="object_on", object="bread", target="table")]
    with pytest.raises(ValueError, match="the map has a bread"):
        reader.parse(json.dumps({"goals": [], "impossible": "there is no loaf in the map"}))


def test_a_reason_for_impossible_that_a_room_lacks_a_thing_it_has_is_not_believed():
    """"No cabinet in the kitchen" where the kitchen has a kitchen cabinet, and "no sofa in the
    living room" where one stands there, are contradicted by the map. "No fridge in the bedroom" may
    well be so, and stands."""
    scene = robot_at("sofa_1").scene()
    kitchen_cabinet = next(f for f in scene.furniture() if f.label == "cabinet" and f.room == "kitchen")
    reader = GoalReader("Put the cup on the kitchen cabinet", scene, parser=PARSER)
    with pytest.raises(ValueError, match=f"the map has a {kitchen_cabinet.label}"):
        reader.parse(json.dumps({"goals": [], "impossible": "There is no cabinet in the kitchen."}))
    with pytest.raises(ValueError, match="the map has a sofa"):
        reader.parse(json.dumps({"goals": [], "impossible": "there is no sofa in the living room"}))
    with pytest.raises(ValueError, match="answer impossible again"):
        reader.parse(json.dumps({"goals": [], "impossible": "there is no fridge in the bedroom"}))


def test_typos_in_a_typed_request_are_mended_before_it_is_read():
    """"The cuonter" is read as the counter; words the word list lacks ("hoodie", "countertop") and
    the map's own labels stay as typed."""
    from planner.core.planning.spelling import Speller

    speller = Speller()
    assert speller.mended("Plaese put the csuhion on the countertop", ["sofa"]) == (
        "Please put the cushion on the countertop", {"plaese": "please", "csuhion": "cushion"})
    assert speller.mended("Bring me my hoodie", []) == ("Bring me my hoodie", {})
    assert speller.mended("Open the cabinett", ["cabinett"]) == ("Open the cabinett", {})
    # A noun the dictionary knows is no typo of a commoner word one letter away.
    from planner.adapters.lexicon import WordNetLexicon
    lexicon = WordNetLexicon()
    assert Speller().mended("Put the landline on the desk", [])[1] == {"landline": "landmine"}
    assert Speller(lambda word: bool(lexicon.senses(word, every=True))).mended(
        "Put the landline on the desk and the cusihon on the bed", []) == (
        "Put the landline on the desk and the cushion on the bed", {"cusihon": "cushion"})
    book_on_counter = {"goals": [{"kind": "object_on", "object": "book", "target": "counter"}]}
    result, trace, policy = run(robot_at("sofa_1"), "Put the book on the cuonter", [book_on_counter, GIVE_UP])
    assert ("perception", 'typed words read as "counter" ("cuonter")') in trace
    assert "Put the book on the counter" in str(policy.prompts[0]) and "cuonter" not in str(policy.prompts[0])


def test_furniture_taken_for_a_word_the_labels_of_other_furniture_have_is_read_as_the_one_it_names_best():
    """"The table" read as a chair where the tables are dining tables and a coffee table: the chair
    is not put to the name check (the 1.5B held a desk 0.62 likely a "table"), the furniture whose
    name has the word is, and the request is read again with the one it names best."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.planning.grounding import Grounder

    robot = robot_at("sofa_1", DINING_TABLES)
    on_chair = {"goals": [{"kind": "object_on", "object": "book", "target": "chair"}]}
    # Each as likely a table by the model's yes: the one most like "table" is read.
    best = max(("dining_table", "coffee_table", "side_table"), key=lambda label: float(
        Grounder(SentenceEmbedder()).nearest("table", [label], 1)[0].similarity))
    on_table = {"goals": [{"kind": "object_on", "object": "book", "target": best}]}
    trace, policy = [], ScriptedPolicy([on_chair, *[{"fits": True, "p": 0.7}] * 3, on_table, GIVE_UP])
    TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                on_step=lambda step: trace.append((step.kind, step.text)),
                grounder=Grounder(SentenceEmbedder()), parser=PARSER).run("Please put the book on the table")
    asked = [prompt[0]["content"].split("?")[0] for prompt in policy.prompts[1:4]]
    assert sorted(asked) == sorted(f'Is "table" another name for a {name}'
                                       for name in ("dining table", "coffee table", "side table")), asked
    assert ("perception", f"the request in the map's words: table = {best}") in trace, trace
    assert any(kind == "goal" and best in text for kind, text in trace), trace


def test_furniture_a_compound_names_by_the_word_before_its_head_is_not_what_it_names():
    """"The bedside table" read as the bed: a bedside table is a table, so the bed is not put to
    the name check (the 1.5B holds it 0.69 likely another name), and the furniture the phrase
    names best among the rest is read instead."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.planning.grounding import Grounder

    robot = robot_at("sofa_1", DINING_TABLES)
    others = sorted({f.label for f in robot.scene().furniture()} - {"bed"})
    nearest = [match.label for match in Grounder(SentenceEmbedder()).nearest("bedside table", others, 5)]
    assert "nightstand" in nearest
    on_bed = {"goals": [{"kind": "object_on", "object": "mug", "target": "bed"}]}
    on_nightstand = {"goals": [{"kind": "object_on", "object": "mug", "target": "nightstand"}]}
    trace, policy = [], ScriptedPolicy([on_bed, *({"fits": label == "nightstand", "p": 0.8 if label == "nightstand"
                                                  else 0.3} for label in nearest), on_nightstand, GIVE_UP])
    TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                on_step=lambda step: trace.append((step.kind, step.text)),
                grounder=Grounder(SentenceEmbedder()), parser=PARSER).run("Please put the mug on the bedside table")
    asked = [prompt[0]["content"] for prompt in policy.prompts[1:6]]
    assert not any("for a bed?" in question for question in asked), asked
    assert ("perception", "the request in the map's words: bedside table = nightstand") in trace, trace
    assert any(kind == "goal" and text.endswith("on a nightstand") for kind, text in trace), trace
    assert names_only_its_modifier("dining chair", "dining_table") and not names_only_its_modifier(
        "chest of drawers", "chest") and not names_only_its_modifier("coffee table", "coffee_table")


def test_furniture_the_model_takes_a_name_for_gives_way_to_furniture_the_name_is_closer_to_and_no_less_likely():
    """"Pull open the bedside table" read as the cabinet (a development home): the 1.5B held a
    cabinet 0.50 likely a "bedside table", past the name check, and the robot opened the bathroom's
    cabinet and said Done. The nightstand, far closer in meaning and no less likely to the model,
    is read instead."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.planning.grounding import Grounder

    robot = robot_at("sofa_1", DINING_TABLES)
    on_cabinet = {"goals": [{"kind": "object_on", "object": "mug", "target": "cabinet"}]}
    on_nightstand = {"goals": [{"kind": "object_on", "object": "mug", "target": "nightstand"}]}
    trace, policy = [], ScriptedPolicy([on_cabinet, {"fits": True, "p": 0.5}, {"fits": True, "p": 0.8}, on_nightstand,
                                        GIVE_UP])
    TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0),
                on_step=lambda step: trace.append((step.kind, step.text)),
                grounder=Grounder(SentenceEmbedder()), parser=PARSER).run("Please put the mug on the bedside table")
    assert [prompt[0]["content"].split("?")[0] for prompt in policy.prompts[1:3]] == [
        'Is "bedside table" another name for a cabinet', 'Is "bedside table" another name for a nightstand']
    assert ("perception", "the request in the map's words: bedside table = nightstand") in trace, trace
    assert any(kind == "goal" and text.endswith("on a nightstand") for kind, text in trace), trace


def test_furniture_the_embeddings_also_hold_a_name_names_is_read_so_whatever_the_model_s_yes():
    """"The writing desk" read as the computer desk: the 1.5B's yes (0.41) is under the name check,
    and the reading was put to the user, who did not answer (a development home). The embeddings
    hold the phrase most like the computer desk, and by far: two readings agree, and the vase goes
    there unasked. Furniture the embeddings hold less like it than another still needs the yes."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.planning.grounding import Grounder

    world = APARTMENT.model_copy(update={"furniture": [
        f.model_copy(update={"label": "computer_desk"}) if f.label == "desk" else f for f in APARTMENT.furniture]})

    def read(target: str):
        robot, trace = robot_at("sofa_1", world), []
        policy = AnswersByQuestion([{"goals": [{"kind": "object_on", "object": "vase", "target": target}]}] * 6, {})
        result = TaskPlanner(policy, robot, robot.skills, PlannerSettings(confirm_timeout_s=0, mode="llm_p"),
                             on_step=lambda step: trace.append((step.kind, step.text)),
                             grounder=Grounder(SentenceEmbedder()), parser=PARSER).run("Put the vase on the writing desk")
        return result, trace, robot.log.questions

    result, trace, questions = read("computer_desk")
    assert result.success and ("goal", "a vase on a computer_desk") in trace and not questions, trace
    result, trace, _ = read("shelf")
    assert not result.success and not any(kind == "goal" for kind, _ in trace), trace


def test_a_place_things_are_taken_from_that_names_no_furniture_is_the_furniture_most_like_it():
    """"The lamp from the bedside table" where lamps stand on the nightstand and on a side table is
    the nightstand's: the place picks the thing, and no one is asked which."""
    _, trace, policy = run_grounded("Take the lamp from the bedside table", [
        {"goals": [{"kind": "holding", "object": "lamp"}]}, GIVE_UP])
    assert ("perception", "the request in the map's words: bedside table = nightstand") in trace
    assert ("goal", "the robot holds lamp_2") in trace  # on nightstand_1
    assert not any(kind == "question" for kind, _ in trace)


def test_a_place_things_are_taken_from_named_by_a_word_of_several_labels_is_each_of_them():
    """"The lamp from the table" in a home of a dining table and a side table (no plain table) is
    not pinned to the side table, the table nearest in meaning: the request may mean any table."""
    _, trace, _ = run_grounded("Take the lamp from the table", [
        {"goals": [{"kind": "holding", "object": "lamp"}]}, GIVE_UP], world=DINING_TABLES)
    assert not any(kind == "perception" and "table = " in text for kind, text in trace), trace


def test_a_thing_taken_to_a_room_may_go_on_any_furniture_there():
    """"Take the plate to the office" names no furniture: the model's made-up target (a desk) gives
    way to any furniture of the office, and the planner puts the plate where it reaches first. Where
    the request names no room the thing goes to, the made-up place is still a thing taken."""
    robot = robot_at("counter_1", answers=["the one on the counter"])
    trace = []
    reply = {"goals": [{"kind": "object_on", "object": "plate", "target": "desk", "room": "office"}]}
    planner = TaskPlanner(ScriptedPolicy([reply]), robot, robot.skills, PlannerSettings(confirm_timeout_s=0, mode="llm_p"),
                          on_step=lambda step: trace.append((step.kind, step.text)), parser=PARSER)
    result = planner.run("Take the plate to the office")
    assert [text for kind, text in trace if kind == "goal"] == ["plate_1 on furniture in the office"]
    assert result.success and goal_met(Goal(kind="object_on", object="plate", room="office"), robot.scene())
    scene = robot_at("counter_1").scene()
    # The room the request names decides, whatever furniture the model made up and wherever it stands.
    for made_up in ({"target": "desk", "room": ""}, {"target": "shelf", "room": "living_room"}):
        goal = {"goals": [{"kind": "object_on", "object": "plate", **made_up}]}
        assert GoalReader("Take the plate to the office", scene, parser=PARSER).parse(json.dumps(goal)) == [
            Goal(kind="object_on", object="plate", room="office")], made_up
    assert GoalReader("Grab the plate", scene, parser=PARSER).parse(json.dumps(reply)) == [Goal(kind="holding", object="plate")]
    # Where the thing is already is no room it is taken to: "the plate in the kitchen" says which.
    kitchen = {"goals": [{"kind": "object_on", "object": "plate", "target": "table", "room": "kitchen"}]}
    assert GoalReader("Grab the plate in the kitchen", scene, parser=PARSER).parse(json.dumps(kitchen)) == [
        Goal(kind="holding", object="plate", object_id="plate_1")]


# Each check of a reading, with a reading of a request it finds fault with, and what it says.
CHECK_CASES = {
    "unknown names": ("Grab the cup", [Goal(kind="holding", object="unicorn")], "'unicorn' is not a known label"),
    "furniture not there": ("Put the cup on the sofa in the kitchen",
                            [Goal(kind="object_on", object="cup", target="sofa", room="kitchen")],
                            "there is no sofa in the kitchen"),
    "target not as said": ("Put the cup on the desk", [Goal(kind="object_on", object="cup", target="shelf")],
                           "the request names no shelf; it names desk"),
    "brought to no user": ("Put the cup on the desk", [Goal(kind="bring_to_user", object="cup")],
                           "bring_to_user is for requests to bring something to the user"),
    "moved thing left out": ("Grab the pillow", [Goal(kind="holding", object="clock")], "the request is about the pillow"),
    "moved as not said": ("Could you grab the frame of the photo?", [Goal(kind="holding", object="clock")],
                          "the map's photo frame is called so"),
    "no place named": ("Grab the book", [Goal(kind="object_on", object="book", target="dresser")],
                       "names no furniture for the book to go to"),
    "furniture not named": ("I'm freezing", [Goal(kind="is_open", target="fridge")], "the request names no fridge"),
    "talked-of thing left out": ("I can't find my keys", [Goal(kind="is_open", target="fridge")],
                                 "the request is about the keys"),
    "one of several left out": ("Put the mug and the plate on the shelf",
                                [Goal(kind="object_on", object="mug", target="shelf")], "no goal has the plate"),
    "only furniture named": ("Could you tidy everything off the desk?",
                             [Goal(kind="object_on", object="candle", target="desk")], "only the desk"),
    "room left out": ("The plate is wanted in the office, carry it over", [Goal(kind="holding", object="plate")],
                      "names the office, and no goal has a room"),
    "true already": ("Put the mug on the counter", [Goal(kind="object_on", object="mug", target="counter")],
                     "is true already"),
}


@pytest.mark.parametrize("name, severity", [(name, severity) for name, severity, _ in GOAL_CHECKS])
def test_each_check_of_a_reading_finds_its_fault_and_says_it_with_its_severity(name, severity):
    """Every check in the table has a case: a reading it finds fault with, told to the model as
    wrong (other goals are needed) or as a doubt (the model may insist)."""
    assert set(CHECK_CASES) == {check for check, _, _ in GOAL_CHECKS}
    request, goals, said = CHECK_CASES[name]
    problems, doubts = problems_of(request, goals, robot_at("table_3").scene())
    assert any(said in text for text in (problems if severity == "wrong" else doubts)), (problems, doubts)


def test_the_things_a_request_asks_about_are_those_it_names_as_things_not_as_places():
    """However the things are joined ("and", "first ..., then ...", a list), each is asked about;
    a thing said as where another goes or what it is near is not: a reading that leaves out one of
    the things asked about is doubted."""
    labels = {"mug", "plate", "bowl", "apple", "lamp", "book", "candle", "keys"}
    assert things_asked_about("First the candle, then the keys: both on the desk", labels) == ["candle", "keys"]
    assert things_asked_about("Bring me the mug, the plate and a bowl", labels) == ["mug", "plate", "bowl"]
    assert things_asked_about("Put the apple in the bowl", labels) == ["apple"]
    assert things_asked_about("Fetch the book next to the lamp", labels) == ["book"]
    assert things_asked_about("Put the coffee mug on the shelf", labels | {"coffee_mug"}) == ["coffee_mug"]
    scene = robot_at("table_3").scene()
    one = [Goal(kind="object_on", object="candle", target="desk")]
    assert "no goal has the keys" in " ".join(problems_of("First the candle, then the keys: both on the desk", one,
                                                            scene)[1])
    assert not any("no goal has" in doubt for doubt in problems_of("Put the candle by the keys on the desk", one,
                                                                     scene)[1])


def test_a_request_the_model_never_reads_right_is_read_by_its_words_and_a_room_it_sends_a_thing_to_is_kept():
    """When no reply passes the checks, "take the kettle to the office" is the kettle on furniture in
    the office, not the kettle held ("Done." with the kettle in hand); "grab the kettle" is held."""
    scene = robot_at("sofa_1").scene()
    assert GoalReader("Take the kettle to the office", scene, parser=PARSER).settle(None) == [
        Goal(kind="object_on", object="kettle", room="office")]
    assert GoalReader("Grab the kettle in the kitchen", scene, parser=PARSER).settle(None) == [Goal(kind="holding", object="kettle")]
    assert GoalReader("The kettle belongs in the office", scene, parser=PARSER).settle(None) == [
        Goal(kind="object_on", object="kettle", room="office")]
    # Put on furniture in words that name no verb of putting: held, the robot would say Done. with it in hand.
    with pytest.raises(PolicyError, match="no valid goals"):
        GoalReader("Could the kettle and the plate go on the counter?", scene, parser=PARSER).settle(None)
