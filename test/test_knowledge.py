"""The knowledge graph (the scene graph's facts as triplets of the PDDL domain), the verification of
changes people tell against the domain and the map, and telling a change through a model."""

import json

import pytest

from conftest import CONFIG, ROBOT
from planner.adapters.llm import ScriptedPolicy
from planner.core.knowledge import Change, Triplet, apply_change, change_errors, knowledge
from planner.core.planning.pddl import make_domain, make_problem
from planner.core.skills import SkillPlanner, load_skill_library
from planner.core.telling import TELL_PROMPT, TellSettings, tell
from planner.core.world import load_world
from planner.sim.in_process import SimulatedRobot

APARTMENT = CONFIG / "worlds" / "apartment.yaml"


@pytest.fixture(scope="module")
def skills():
    return SkillPlanner(load_skill_library(CONFIG / "skills.yaml"), ROBOT)


@pytest.fixture
def scene(skills):
    return SimulatedRobot(load_world(APARTMENT).with_robot_at("counter_1", ROBOT.standoff_m), [], skills).graph


def t(subject, relation, obj=True):
    return Triplet(subject=subject, relation=relation, object=obj)


def test_the_graph_holds_the_same_facts_as_the_planning_problem(skills, scene):
    graph = {str(x) for x in knowledge(skills, scene)}
    assert {"(robot, at, counter_1)", "(left, hand_empty, true)", "(milk_1, on, fridge_1)",
            "(milk_1, inside, fridge_1)", "(bottle_1, on, table_1)"} <= graph
    problem = make_problem(make_domain(skills.library), skills, scene, [], relevant_only=False).text
    # Each triplet is one atom of the problem's initial state.
    for triplet in knowledge(skills, scene):
        atom = f"(at {triplet.object})" if triplet.subject == "robot" else \
            f"({triplet.relation} {triplet.subject})" if triplet.object is True else \
            f"({triplet.relation} {triplet.subject} {triplet.object})"
        assert atom in problem, atom


@pytest.mark.parametrize("change, error", [
    (Change(add=[t("bottle_1", "under", "table_2")]), "no relation 'under'; the relations are on, inside, is_open"),
    (Change(add=[t("left", "holding", "bottle_1")]), "'holding' is the robot's own state"),
    (Change(add=[t("fridge_1", "is_open", "kitchen")]), "is_open is a property: its object is true"),
    (Change(add=[t("bottle_1", "on")]), "on relates two things: its object is a furniture's id"),
    (Change(add=[t("bottle_9", "on", "table_2")]), "no 'bottle_9' in the map"),
    (Change(add=[t("table_1", "on", "table_2")]), "table_1 is a furniture, and on needs an item there"),
    (Change(add=[t("bottle_1", "on", "table_2"), t("bottle_1", "inside", "table_2")]),
     "table_2 is a furniture, and inside needs an openable there"),
    (Change(add=[t("table_1", "is_open")]), "table_1 is a furniture, and is_open needs an openable there"),
    (Change(remove=[t("bottle_1", "on", "desk_1")]), "(bottle_1, on, desk_1) is not in the graph"),
    (Change(add=[t("bottle_1", "on", "table_2")]), "bottle_1 would be on table_1 and table_2: a thing is in one "
                                                  "place; remove where it was"),
    (Change(remove=[t("bottle_1", "on", "table_1")], add=[t("bottle_1", "inside", "fridge_1")]),
     "(bottle_1, inside, fridge_1) needs (bottle_1, on, fridge_1)"),
])
def test_each_kind_of_invalid_change_is_named(skills, scene, change, error):
    errors = change_errors(change, knowledge(skills, scene), scene)
    assert any(error in e for e in errors), errors


def test_a_held_thing_cannot_be_told_elsewhere(skills):
    robot = SimulatedRobot(load_world(APARTMENT).with_robot_at("table_1", ROBOT.standoff_m), [], skills)
    assert robot.execute_skill("PICK(bottle_1, left)").success
    errors = change_errors(Change(add=[t("bottle_1", "on", "table_2")]), knowledge(skills, robot.graph), robot.graph)
    assert errors == ["(bottle_1, on, table_2): the robot is holding bottle_1"]


def test_a_verified_change_moves_things_in_the_scene_graph_as_told_facts(skills, scene):
    change = Change(remove=[t("milk_1", "on", "fridge_1"), t("milk_1", "inside", "fridge_1")],
                    add=[t("milk_1", "on", "table_1")])
    assert change_errors(change, knowledge(skills, scene), scene) == []
    assert apply_change(scene, change, stamp=42.0) == ["milk_1 on table_1"]
    assert scene.support("milk_1") == ("on", "table_1") and scene.entity("milk_1").told == 42.0
    back = Change(remove=[t("milk_1", "on", "table_1")], add=[t("milk_1", "on", "fridge_1"),
                                                               t("milk_1", "inside", "fridge_1"), t("fridge_1", "is_open")])
    assert change_errors(back, knowledge(skills, scene), scene) == []
    assert apply_change(scene, back, stamp=43.0) == ["milk_1 in fridge_1", "fridge_1 open"]
    assert scene.support("milk_1") == ("in", "fridge_1") and scene.entity("fridge_1").state == "open"
    # Taken away to somewhere not said: no longer where the map put it.
    gone = Change(remove=[t("bottle_1", "on", "table_1")])
    assert apply_change(scene, gone, stamp=44.0) == ["bottle_1 no longer where it was"]
    assert scene.entity("bottle_1").status == "missing"


def test_told_through_the_model_a_wrong_change_goes_back_with_the_errors(skills, scene):
    wrong = {"remove": [], "add": [{"subject": "bottle_1", "relation": "on", "object": "fridge_1"}]}
    right = {"remove": [{"subject": "bottle_1", "relation": "on", "object": "table_1"}],
             "add": [{"subject": "bottle_1", "relation": "on", "object": "fridge_1"},
                     {"subject": "bottle_1", "relation": "inside", "object": "fridge_1"}]}
    policy = ScriptedPolicy([json.dumps(wrong), json.dumps(right)])
    result = tell("I put the bottle in the fridge", scene, skills, policy, stamp=7.0)
    assert result.applied and result.llm_calls == 2 and result.done == ["bottle_1 in fridge_1"]
    assert "bottle_1 would be on fridge_1 and table_1" in policy.prompts[1][-1]["content"]
    assert scene.support("bottle_1") == ("in", "fridge_1") and scene.entity("bottle_1").told == 7.0
    assert "(bottle_1, on, table_1)" in policy.prompts[0][0]["content"]  # the model saw the graph


def test_a_change_still_wrong_after_the_retries_leaves_the_graph_as_it_was(skills, scene):
    wrong = json.dumps({"remove": [], "add": [{"subject": "bottle_1", "relation": "on", "object": "fridge_1"}]})
    before = knowledge(skills, scene)
    result = tell("I put the bottle in the fridge", scene, skills, ScriptedPolicy([wrong] * 3), stamp=7.0,
                  settings=TellSettings(retries=2))
    assert not result.applied and result.llm_calls == 3
    assert result.errors == ["bottle_1 would be on fridge_1 and table_1: a thing is in one place; remove where it was"]
    assert knowledge(skills, scene) == before


def test_without_verification_the_change_is_applied_as_the_model_gave_it(skills, scene):
    # A removal of a fact that does not hold is applied too: the bottle is taken off the map.
    wrong = json.dumps({"remove": [{"subject": "milk_1", "relation": "on", "object": "table_1"}], "add": []})
    result = tell("I drank the milk", scene, skills, ScriptedPolicy([wrong]), stamp=7.0,
                  settings=TellSettings(verify=False))
    assert result.applied and result.llm_calls == 1
    assert scene.entity("milk_1").status == "missing"


def test_the_neighbourhood_of_the_things_named_is_all_the_model_is_shown(skills, scene):
    from planner.core.knowledge import neighbourhood

    graph = knowledge(skills, scene)
    near_fridge = {str(x) for x in neighbourhood(graph, {"fridge_1"})}
    assert {"(milk_1, on, fridge_1)", "(milk_1, inside, fridge_1)"} <= near_fridge
    assert all("fridge_1" in x for x in near_fridge)
    # Two hops: what else the things on the table stand on or in (nothing) and the table's other things.
    table = {str(x) for x in neighbourhood(graph, {"bottle_1"}, depth=2)}
    assert "(bottle_1, on, table_1)" in table and len(table) > 1 and all("table_1" in x for x in table)

    choice = {"labels": ["bottle", "fridge"]}
    right = {"remove": [{"subject": "bottle_1", "relation": "on", "object": "table_1"}],
             "add": [{"subject": "bottle_1", "relation": "on", "object": "fridge_1"},
                     {"subject": "bottle_1", "relation": "inside", "object": "fridge_1"}]}
    policy = ScriptedPolicy([choice, right])
    result = tell("I put the bottle in the fridge", scene, skills, policy, stamp=7.0,
                  settings=TellSettings(context="selected"))
    assert result.applied and result.llm_calls == 2
    shown = policy.prompts[1][0]["content"]
    assert "(bottle_1, on, table_1)" in shown and "(milk_1, inside, fridge_1)" in shown
    assert "remote_1" not in shown and "sofa_1" not in shown
    assert len(shown) < len(TELL_PROMPT) + 600  # a handful of triplets, not the home


def test_what_the_robot_then_sees_outranks_what_it_was_told(skills):
    robot = SimulatedRobot(load_world(APARTMENT).with_robot_at("counter_1", ROBOT.standoff_m), [], skills)
    scene = robot.graph
    told = Change(remove=[t("bottle_1", "on", "table_1")], add=[t("bottle_1", "on", "table_3")])
    apply_change(scene, told, stamp=1.0)
    assert scene.support("bottle_1") == ("on", "table_3") and scene.entity("bottle_1").room == "hallway"
    bottles = {e.id for e in scene.objects() if e.label == "bottle"}
    # Nobody moved it in the world: at the kitchen table the camera sees it where it always was.
    assert robot.execute_skill("GOTO(table_1)").success
    assert scene.support("bottle_1") == ("on", "table_1") and scene.entity("bottle_1").told == 0.0
    assert {e.id for e in scene.objects() if e.label == "bottle"} == bottles  # the same bottle, not a new one


def test_a_query_graph_the_model_writes_finds_what_the_sentence_speaks_of(skills, scene):
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.telling import QueryGraph, search

    embedder = SentenceEmbedder()
    # In the person's words, not the map's: "refrigerator" is the map's fridge.
    query = QueryGraph.model_validate({"things": [{"words": "water bottle"}, {"words": "refrigerator"}],
                                       "relations": [{"thing": 0, "relation": "inside", "place": 1}]})
    found = search(query, scene, embedder, threshold=0.5)
    assert {"bottle_1", "fridge_1"} <= found and "sofa_1" not in found
    # A room said narrows the things to it.
    in_dining = QueryGraph.model_validate({"things": [{"words": "bottle", "room": "dining room"}]})
    dining = search(in_dining, scene, embedder, threshold=0.5)
    assert "bottle_2" in dining and "bottle_1" not in dining
    assert all(scene.entity(i).room == "dining_room" for i in dining)

    right = {"remove": [{"subject": "bottle_1", "relation": "on", "object": "table_1"}],
             "add": [{"subject": "bottle_1", "relation": "on", "object": "fridge_1"},
                     {"subject": "bottle_1", "relation": "inside", "object": "fridge_1"}]}
    policy = ScriptedPolicy([query.model_dump_json(), right])
    result = tell("The water bottle went into the refrigerator", scene, skills, policy, stamp=3.0,
                  settings=TellSettings(context="search"), embedder=embedder)
    assert result.applied and result.llm_calls == 2
    assert "(milk_1, inside, fridge_1)" in policy.prompts[1][0]["content"]
    assert "remote_1" not in policy.prompts[1][0]["content"]


def test_told_inside_furniture_it_already_stands_on_puts_the_thing_in(skills, scene):
    # The milk is in the fridge; told it is only on it now (on top), then back inside.
    out = Change(remove=[t("milk_1", "inside", "fridge_1")])
    assert change_errors(out, knowledge(skills, scene), scene) == []
    assert apply_change(scene, out, stamp=5.0) == ["milk_1 on fridge_1"]
    assert scene.support("milk_1") == ("on", "fridge_1")
    back = Change(add=[t("milk_1", "inside", "fridge_1")])
    assert change_errors(back, knowledge(skills, scene), scene) == []
    assert apply_change(scene, back, stamp=6.0) == ["milk_1 in fridge_1"]
    assert scene.support("milk_1") == ("in", "fridge_1")


def test_a_change_said_in_words_that_fit_one_thing_each_is_made_by_the_domain(skills, scene):
    """Grounded reading: the thing and the place the model writes in the person's words found in
    the map by meaning, room and where the thing was; the change follows from the domain (a thing
    put somewhere leaves where it was) in one call. Words that fit two things go to the model as
    triplets over what they may be, as the search variant does."""
    from planner.adapters.embeddings import SentenceEmbedder

    embedder = SentenceEmbedder()
    settings = TellSettings(context="grounded")
    mug = {"change": "moved", "thing": "mug", "thing_was_on": "writing desk", "place": "coffee table"}
    result = tell("The mug from the writing desk is on the coffee table now", scene, skills, ScriptedPolicy([mug]),
                  stamp=1.0, settings=settings, embedder=embedder)
    assert result.applied and result.llm_calls == 1, result.errors
    facts = {x.key() for x in knowledge(skills, scene)}
    assert ("mug_2", "on", "coffee_table_1") in facts and ("mug_1", "on", "counter_1") in facts
    bottle = {"change": "moved", "thing": "water bottle", "thing_was_on": "dining room", "place": "refrigerator"}
    assert tell("The bottle from the dining room went into the refrigerator", scene, skills, ScriptedPolicy([bottle]),
                stamp=2.0, settings=settings, embedder=embedder).applied
    assert scene.support("bottle_2") == ("in", "fridge_1") and scene.support("bottle_1") == ("on", "table_1")
    opened = {"change": "opened", "thing": "fridge", "place": ""}
    assert tell("Someone left the fridge open", scene, skills, ScriptedPolicy([opened]), stamp=3.0,
                settings=settings, embedder=embedder).applied
    assert scene.entity("fridge_1").state == "open"
    # Three glasses: the model is asked which one, shown where each is.
    glass = {"change": "moved", "thing": "glass", "place": "sofa"}
    policy = ScriptedPolicy([glass, {"choice": "glass_2: a glass on table_2 in the dining room"}])
    result = tell("The glass from the dinner is on the sofa", scene, skills, policy, stamp=4.0, settings=settings,
                  embedder=embedder)
    assert result.llm_calls == 2 and result.applied and scene.support("glass_2") == ("on", "sofa_1"), result.errors
    assert "- glass_2: a glass on table_2 in the dining room" in policy.prompts[1][0]["content"]
    # Words that fit nothing in the map (the model says none of the labels most like them is meant):
    # the model writes the triplets, shown what the others found.
    gadget = {"change": "moved", "thing": "zorbulator", "place": "sofa"}
    right = {"remove": [t("remote_1", "on", "coffee_table_1").model_dump()],
             "add": [t("remote_1", "on", "sofa_1").model_dump()]}
    policy = ScriptedPolicy([gadget, {"choice": "none of these"}, right])
    result = tell("The zorbulator is on the sofa", scene, skills, policy, stamp=5.0, settings=settings,
                  embedder=embedder)
    assert result.llm_calls == 3 and result.applied and "sofa_1" in policy.prompts[2][0]["content"]


def test_words_the_map_does_not_use_are_asked_of_the_model_and_the_preposition_said_decides_inside(skills, scene):
    """A room by another name ("the eating area"), said after the place though the model left it
    out, is one of the map's rooms the model picks; words like no label enough ("the throw") are one
    of the labels most like them, or none; "into" puts a thing in, whatever the model wrote."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.telling import said_after, said_inside

    assert said_after("The cup in the cupboard in the home office is gone", "cupboard", "in") == "home office"
    assert said_after("The cup is in the cupboard", "cupboard", "in") == ""
    assert said_after("Mum moved the plate from the cupboard to the desk", "plate", "from") == "cupboard"
    assert said_inside("Dad tidied the box away into the fridge", "fridge") is True
    assert said_inside("I left it on top of the fridge", "fridge") is False
    assert said_inside("It went to the fridge", "fridge") is None

    embedder = SentenceEmbedder()
    settings = TellSettings(context="grounded")
    banana = {"change": "moved", "thing": "banana", "place": "table"}
    policy = ScriptedPolicy([banana, {"choice": "dining room"}])
    result = tell("The banana is on the table in the eating area now", scene, skills, policy, stamp=1.0,
                  settings=settings, embedder=embedder)
    assert result.applied and result.llm_calls == 2 and scene.support("banana_1") == ("on", "table_2"), result.errors
    assert 'is "eating area"' in policy.prompts[1][0]["content"] and "- dining room" in policy.prompts[1][0]["content"]

    throw = {"change": "moved", "thing": "throw", "place": "dresser"}
    policy = ScriptedPolicy([throw, {"choice": "blanket"}])
    result = tell("The throw went into the dresser", scene, skills, policy, stamp=2.0, settings=settings,
                  embedder=embedder)
    assert result.applied and scene.support("blanket_1") == ("in", "dresser_1"), result.errors
    # "on top of" puts it on, whatever the model wrote; neither "in" nor "on" said, furniture with a
    # door holds it.
    result = tell("Dad put the throw on top of the dresser", scene, skills,
                  ScriptedPolicy([throw, {"choice": "blanket"}]), stamp=2.2, settings=settings,
                  embedder=embedder)
    assert result.applied and scene.support("blanket_1") == ("on", "dresser_1"), result.errors
    result = tell("Dad moved the throw to the dresser", scene, skills, ScriptedPolicy([throw, {"choice": "blanket"}]),
                  stamp=2.4, settings=settings, embedder=embedder)
    assert result.applied and scene.support("blanket_1") == ("in", "dresser_1"), result.errors
    # Where the cup was, said but left out of the reading, is read from the sentence; the kitchen
    # and counter said of its new place do not make it the kitchen's cup.
    cup = {"change": "moved", "thing": "cup", "place": "counter"}
    result = tell("Mum moved the cup from the coffee table to the counter in the kitchen", scene, skills,
                  ScriptedPolicy([cup]), stamp=2.5, settings=settings, embedder=embedder)
    assert result.applied and result.llm_calls == 1 and scene.support("cup_2") == ("on", "counter_1"), result.errors
    # Nothing of the map's: the model writes the triplets from the graph, as for words that fit nothing.
    policy = ScriptedPolicy([{**throw, "thing": "zorbulator"}, {"choice": "none of these"}, {"remove": [], "add": []}])
    tell("The zorbulator went into the dresser", scene, skills, policy, stamp=3.0, settings=settings, embedder=embedder)
    assert policy.prompts[2][0]["content"].startswith("You keep a home robot's memory")


def test_words_nearly_as_like_two_labels_are_asked_of_the_model_among_the_things_of_both(skills, scene):
    """"Purse" is about as like wallet as backpack (the sentence embedder's similarities are 0.61
    and 0.59): the model picks among the things of both labels, shown where each is; "couch" is so
    much more like sofa than anything else that nothing is asked."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.telling import describe_candidate

    embedder = SentenceEmbedder()
    settings = TellSettings(context="grounded")
    wallet = describe_candidate(scene, "wallet_1")
    purse = {"change": "moved", "thing": "purse", "place": "bed"}
    policy = ScriptedPolicy([purse, {"choice": wallet}])
    result = tell("Mum left her purse on the bed", scene, skills, policy, stamp=1.0, settings=settings,
                  embedder=embedder)
    assert result.applied and result.llm_calls == 2 and scene.support("wallet_1") == ("on", "bed_1"), result.errors
    asked = policy.prompts[1][0]["content"]
    assert f"- {wallet}" in asked and f"- {describe_candidate(scene, 'backpack_1')}" in asked
    pillow = {"change": "moved", "thing": "pillow", "thing_was_on": "bed", "place": "couch"}
    result = tell("The pillow from the bed is on the couch now", scene, skills, ScriptedPolicy([pillow]), stamp=2.0,
                  settings=settings, embedder=embedder)
    assert result.applied and result.llm_calls == 1, result.errors


def test_a_change_to_what_the_robot_just_saw_is_flagged_and_an_old_sighting_is_not(skills, scene):
    move = {"remove": [t("apple_1", "on", "table_1").model_dump()], "add": [t("apple_1", "on", "counter_1").model_dump()]}
    scene.entity("apple_1").last_seen = 100.0
    settings = TellSettings(recent_s=30)
    soon = tell("I put the apple on the counter", scene, skills, ScriptedPolicy([move]), stamp=110.0, settings=settings)
    assert not soon.applied and soon.errors == ["flagged: the robot saw apple_1 10 s ago (apple_1 on table_1), which "
                                                "the change contradicts; not applied"]
    assert scene.support("apple_1") == ("on", "table_1")
    later = tell("I put the apple on the counter", scene, skills, ScriptedPolicy([move]), stamp=200.0, settings=settings)
    assert later.applied and scene.support("apple_1") == ("on", "counter_1")
    # Told since it was last seen: the next change to it is no contradiction of a sighting.
    back = {"remove": [t("apple_1", "on", "counter_1").model_dump()], "add": [t("apple_1", "on", "table_1").model_dump()]}
    assert tell("The apple is back on the table", scene, skills, ScriptedPolicy([back]), stamp=205.0,
                settings=settings).applied


@pytest.mark.embedded
@pytest.mark.timeout(600)
def test_the_embedded_model_picks_the_label_a_word_means_not_one_that_begins_alike():
    """Held to the options alone, the model began "tangerine" and the grammar finished it as
    "tablet"; saying what the words mean first, it picks what they mean."""
    from planner.adapters.llm import LLMSettings, open_policy
    from planner.core.asking import choose_one, label_options

    policy, server = open_policy(LLMSettings(provider="embedded").resolved())
    try:
        def ask(messages, schema):
            return policy.complete(messages, schema)
        assert choose_one(ask, "You'll find the tangerine in the cabinet in the office", "tangerine",
                          label_options(["orange", "blanket", "tablet", "chair", "houseplant"]), 1) == "orange"
        assert choose_one(ask, "Someone put the clicker on top of the settee", "clicker",
                          label_options(["remote", "counter", "stool", "cell_phone", "toy"]), 1) == "remote"
    finally:
        if server is not None:
            server.stop()
