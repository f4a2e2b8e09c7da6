"""The rooms, holders, neighbours and excluded kinds a query names, checked against the map rather
than asked of the model: what the finder answers when the model's choice breaks one of them."""

import pytest

from planner.adapters.embeddings import SentenceEmbedder
from planner.adapters.lexicon import WordNetLexicon
from planner.adapters.llm import ScriptedPolicy
from planner.core.object_finder import FinderSettings, ObjectFinder
from planner.core.planning.grounding import Grounder
from planner.core.query_constraints import read_query
from planner.core.scene_graph import SceneGraph
from planner.core.voxeland import parse_voxeland

ROOMS = {"kitchen": [(0, 0), (5, 0), (5, 4), (0, 4)], "office": [(5, 0), (10, 0), (10, 4), (5, 4)]}


def _instance(center, size, results):
    return {"bbox": {"center": center, "size": size}, "n_observations": 10, "results": results}


@pytest.fixture(scope="module")
def home():
    return SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "chair1": _instance([1.0, 1.0, 0.45], [0.45, 0.45, 0.9], {"chair": 80.0, "stool": 20.0}),
        "stool1": _instance([3.0, 3.0, 0.35], [0.4, 0.4, 0.7], {"stool": 70.0, "chair": 30.0}),
        "sofa1": _instance([1.0, 3.0, 0.4], [2.0, 0.9, 0.8], {"sofa": 90.0, "bed": 10.0}),
        "chair2": _instance([6.0, 1.0, 0.45], [0.45, 0.45, 0.9], {"chair": 75.0, "stool": 25.0}),
        "desk1": _instance([6.8, 1.0, 0.37], [1.2, 0.7, 0.74], {"desk": 85.0, "table": 15.0}),
        "fridge1": _instance([4.5, 0.5, 0.9], [0.7, 0.7, 1.8], {"refrigerator": 90.0, "cabinet": 10.0}),
        "milk1": _instance([4.5, 0.5, 0.6], [0.1, 0.1, 0.25], {"milk_carton": 90.0}),
        "cup1": _instance([6.9, 1.0, 0.79], [0.08, 0.08, 0.1], {"cup": 60.0, "mug": 40.0}),
        "cup2": _instance([2.0, 1.0, 0.05], [0.08, 0.08, 0.1], {"cup": 70.0, "mug": 30.0}),
    }}), ROOMS)


def finder(replies, grounder=None, embedder=None, **settings):
    """The finder that takes the model's answer as it is unless a test gives it an embedder to match
    the kinds the model names with."""
    policy = ScriptedPolicy(replies)
    return ObjectFinder(policy, FinderSettings(**settings), embedder, grounder), policy


@pytest.fixture(scope="module")
def embedder():
    return SentenceEmbedder()


def answer(ids):
    return {"query": "x", "ids": ids}


def test_a_thing_in_another_room_than_the_one_named_gives_way_to_one_of_its_kind_in_that_room(home):
    find, _ = finder([answer(["chair1"])])
    found = find.find(home, "Can you point me to the chair in the office?")
    assert found.relevant_objects == ["chair2"] and found.unchecked == ["chair1"]
    assert found.calls == 1 and found.rounds[-1]["reply"]["ruled_out"] == ["chair1 is in the kitchen, not the office"]


def test_a_room_said_before_a_thing_is_where_it_is_unless_the_words_make_a_label(home):
    find, _ = finder([answer(["chair1"]), answer(["cup2"]), answer(["milk_carton_1"])])
    assert find.find(home, "the office chair, please").relevant_objects == ["chair2"]
    reading = read_query("the kitchen cup", home, find._labels_named)
    assert [(c.kind, c.targets) for c in reading.constraints] == [("room", {"kitchen"})]
    assert reading.wanted == "the cup"
    assert find.find(home, "the kitchen cup").relevant_objects == ["cup2"]
    # "the office is ..." names the room, not a thing in it; a label said whole is that label.
    assert not read_query("the office is cold", home, find._labels_named).constraints
    assert not read_query("the milk carton", home, find._labels_named).constraints
    assert find.find(home, "the milk carton").relevant_objects == ["milk1"]


def test_next_to_is_measured_between_footprints_and_nothing_fits_when_no_such_neighbour_is_there(home):
    find, _ = finder([answer(["chair1"]), answer(["sofa1"])])
    assert find.find(home, "a chair next to the desk").relevant_objects == ["chair2"]
    found = find.find(home, "a sofa next to the desk, please")
    assert found.relevant_objects == [] and not found.query_achievable
    assert "no desk stands within 0.5 m of sofa1" in found.explanation


def test_an_excluded_kind_is_dropped_by_the_items_most_likely_label_and_the_kinds_are_asked_for_the_rest(home, embedder):
    find, policy = finder([{"need": "a seat", "kinds": ["chair", "stool"]}], embedder=embedder)
    found = find.find(home, "Something to sit on that is not a stool, please")
    assert found.relevant_objects[:2] == ["chair1", "chair2"]
    assert "stool1" not in found.relevant_objects  # most likely a stool, whatever the kinds
    # The model is asked what kinds of things are meant, without the negation it reads badly.
    assert policy.prompts[-1][-1]["content"] == "Request: Something to sit on, please"


def test_each_excluded_kind_the_map_has_is_excluded_and_the_words_of_a_kind_not_grounded_stay_in_the_query(home):
    find, _ = finder([answer(["chair1", "stool1", "sofa1"]), answer(["stool1", "chair1", "sofa1"]), answer(["sofa1", "chair1"])])
    assert find.find(home, "any seat, but no chair or stool").relevant_objects == ["sofa1"]
    assert find.find(home, "a seat that is not a chair, a stool or a bed").relevant_objects == ["sofa1"]
    # No piano in the map: the chair is still excluded, and the words stay for the kinds to be asked with.
    assert find.find(home, "any seat, but no chair or piano").relevant_objects == ["sofa1"]
    assert read_query("any seat, but no chair or piano", home, find._labels_named).wanted == "any seat, but no chair or piano"
    assert read_query("any seat, but no chair or stool", home, find._labels_named).wanted == "any seat"


def test_a_kind_excluded_in_brackets_or_after_a_colon_is_excluded(home):
    find, _ = finder([answer(["stool1", "chair1", "sofa1"]), answer(["stool1", "chair1", "sofa1"])])
    assert find.find(home, "I need to sit down (not the stool)").relevant_objects[0] != "stool1"
    assert "stool1" not in find.find(home, "somewhere to sit: not a stool").relevant_objects
    assert read_query("I need to sit down (not the stool) quickly", home, find._labels_named).wanted == \
        "I need to sit down quickly"


def test_what_a_thing_stands_on_or_in_is_read_from_the_map_and_a_refrigerator_holds_things(home):
    assert ("in", "fridge1") in home.relation_edges("milk1")  # no door state in a semantic map: the label says
    find, _ = finder([answer(["cup2"]), answer(["cup2"]), answer(["milk_carton_1"]), answer(["cup1"])])
    assert find.find(home, "the cup on the desk").relevant_objects == ["cup1"]
    assert find.find(home, "the cup in the office on the desk").relevant_objects == ["cup1"]
    assert find.find(home, "the milk in the refrigerator").relevant_objects == ["milk1"]
    assert find.find(home, "a cup in the refrigerator").relevant_objects == []  # it holds only milk
    assert read_query("the milk in the refrigerator", home, lambda phrase, labels: {phrase} & set(labels)
                      ).constraints[0].targets == {"refrigerator"}


def test_a_compound_names_a_kind_of_its_last_noun_when_nothing_else_grounds_it(home):
    find, _ = finder([answer(["chair1"]), answer(["stool1", "chair1"])])
    assert find.find(home, "a chair next to the writing desk").relevant_objects == ["chair2"]
    assert find.find(home, "somewhere to sit that is not a bar stool").relevant_objects == ["chair1"]
    assert find._labels_named("reading lamp", ["desk", "stool"]) == set()  # no lamp in this map


def test_furniture_asked_for_with_nothing_on_it_is_checked_against_what_rests_on_it_in_the_map(home, embedder):
    desk, chair = {"need": "a desk", "kinds": ["desk"]}, {"need": "a chair", "kinds": ["chair"]}
    fridge = {"need": "a fridge", "kinds": ["refrigerator"]}
    # Each query nothing fits has its kinds read again: the same, here.
    find, policy = finder([desk, desk, chair, fridge, fridge, {"need": "a surface", "kinds": ["desk", "chair"]}],
                          embedder=embedder)
    found = find.find(home, "Can you point me to a desk with nothing on it?")
    assert found.relevant_objects == [] and "cup1 is on desk1" in found.explanation  # the one desk bears a cup
    # The stool, 30% a chair, comes last.
    assert find.find(home, "a chair that is not covered in things").relevant_objects == ["chair1", "chair2", "stool1"]
    assert find.find(home, "an empty refrigerator").relevant_objects == []  # "empty": nothing in it either
    # The kinds are asked of what is meant, without the words about the top; the desk bears a cup.
    assert find.find(home, "a bare desk or a chair with nothing on top of it").relevant_objects == ["chair1", "chair2", "stool1"]
    assert policy.prompts[-1][-1]["content"] == "Request: a desk or a chair"
    reading = read_query("a table that's not covered in things", home, lambda phrase, labels: {phrase} & set(labels))
    assert [c.kind for c in reading.constraints] == ["bare"]  # not read as excluding a kind "covered"
    assert not read_query("somewhere to empty my pockets", home, lambda phrase, labels: set()).constraints


def test_the_user_is_told_what_rules_out_an_item_one_reading_took_for_what_is_asked(home, embedder):
    # The first reading names a desk, which bears a cup; the second, asked as nothing fits, names
    # something nothing in the map is like, so no item's fit over the two readings reaches the
    # threshold. The user still hears why the desk is not the answer.
    work = {"need": "a place to work"}
    find, _ = finder([{**work, "kinds": ["desk"]}, {**work, "kinds": ["garden hose"]}], embedder=embedder)
    found = find.find(home, "somewhere to work with nothing on it")
    assert found.relevant_objects == [] and [r["role"] for r in found.rounds][-3:] == ["kinds", "kinds again", "fit"]
    assert "cup1 is on desk1" in found.explanation


def test_a_place_or_excluded_kind_that_grounds_in_nothing_of_the_map_or_a_place_said_not_to_be_constrains_nothing(home):
    find, _ = finder([answer(["chair1"])] * 3)
    for query in ("a chair on the floor in the garden", "a chair that is not in the office",
                  "a chair to sit on that is not a piano"):
        found = find.find(home, query)
        assert found.relevant_objects == ["chair1"]
        assert all(round_["role"] != "constraints" for round_ in found.rounds)


def test_a_neighbour_the_map_has_nothing_like_is_next_to_nothing_so_nothing_fits(home):
    find, _ = finder([answer(["chair1"])])
    found = find.find(home, "a chair next to the piano")
    assert found.relevant_objects == [] and found.unchecked == ["chair1"]
    assert "the map has no piano for anything to stand next to" in found.explanation


def test_other_names_are_grounded_by_meaning_and_the_rest_of_the_query_is_what_the_kinds_are_asked_of(home):
    grounder = Grounder(SentenceEmbedder(), lexicon=WordNetLexicon())
    find, _ = finder([answer(["chair1"]), answer(["chair2"])], grounder=grounder)
    assert find.find(home, "the chair close to the couch").relevant_objects == []  # chair1 is 0.53 m from it
    assert find.find(home, "a chair beside the writing desk").relevant_objects == ["chair2"]
    # "on" followed by no place is no place: only the negation is read.
    reading = read_query("I'm looking for something to sit on that isn't a couch", home, find._labels_named)
    assert [(c.kind, c.phrase, set(c.targets)) for c in reading.constraints] == [("not", "couch", {"sofa"})]
    assert reading.wanted == "I'm looking for something to sit on"


def test_a_holder_or_thing_named_may_be_mapped_under_another_name_or_as_a_kind_of_it(home):
    grounder = Grounder(SentenceEmbedder(), lexicon=WordNetLexicon())
    find, _ = finder([answer(["cup2"]), answer(["chair1"])], grounder=grounder)
    # A desk is a table: the cup on it is "the cup on the table", though the map thinks desk1 a table at 15%.
    assert find.find(home, "the cup on the table").relevant_objects == ["cup1"]
    assert find._labels_named("wardrobe", ["closet", "wardrobe", "dresser"]) == {"closet", "wardrobe"}
    assert find._labels_named("bin", ["trash_can", "basket", "bin"]) == {"trash_can", "bin"}
    assert find._subject_names("the wardrobe", ["closet", "wardrobe", "dresser"]) == {"wardrobe": 1.0, "closet": 1.0}
    # Not the other way: a chair is no armchair in particular, so "not an armchair" leaves chairs be.
    assert find._labels_named("armchair", ["chair", "armchair", "sofa"]) == {"armchair"}


def test_a_question_opened_with_a_verb_that_is_also_a_label_does_not_name_that_thing(home, embedder):
    with_a_can = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "can1": _instance([1.0, 1.0, 0.8], [0.07, 0.07, 0.12], {"can": 90.0}),
        "cup1": _instance([2.0, 1.0, 0.8], [0.08, 0.08, 0.1], {"cup": 90.0}),
        "table1": _instance([1.5, 1.0, 0.37], [1.2, 0.7, 0.74], {"table": 90.0})}}), ROOMS)
    kinds = {"need": "a drink", "kinds": ["cup", "glass"]}
    find, _ = finder([kinds] * 4, grounder=Grounder(embedder, lexicon=WordNetLexicon()), embedder=embedder,
                     kind_threshold=0.5)
    assert find.find(with_a_can, "can you find me something to drink from").relevant_objects == ["cup1"]
    assert find.find(with_a_can, "where can I get something to drink from?").relevant_objects == ["cup1"]
    assert find._subject_names("the can you opened", ["can", "cup"]) == {"can": 1.0}


def test_constraints_can_be_left_to_the_model(home):
    find, _ = finder([answer(["chair1"])], constraints=False)
    assert find.find(home, "the chair in the office").relevant_objects == ["chair1"]


def test_typos_are_mended_before_the_query_is_read_so_a_misspelt_room_or_negation_still_counts(home):
    find, policy = finder([answer(["chair1"]), answer(["sofa1"]), answer(["chair1"])])
    found = find.find(home, "Can you point me to the chair in the ofifce?")
    assert found.relevant_objects == ["chair2"]  # the office is read, so the kitchen's chair gives way
    assert policy.prompts[0][1]["content"] == "Query: Can you point me to the chair in the office?"
    assert found.rounds[0] == {"role": "typos", "reply": {"ofifce": "office"}}
    assert find.find(home, "Something to sit on excpet a sofa").relevant_objects == []  # "except" read
    # Without mending, the misspelt room names nothing and constrains nothing.
    find, _ = finder([answer(["chair1"])], mend_typos=False)
    assert find.find(home, "Can you point me to the chair in the ofifce?").relevant_objects == ["chair1"]


def test_a_superlative_is_read_from_the_sizes_in_the_map_among_the_kinds_the_model_chose(embedder):
    scene = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "shelf1": _instance([1.0, 1.0, 0.5], [1.0, 0.4, 1.0], {"shelf": 90.0}),
        "box1": _instance([0.8, 1.0, 1.1], [0.2, 0.2, 0.2], {"box": 80.0, "basket": 20.0}),
        "box2": _instance([3.0, 3.0, 0.15], [0.5, 0.4, 0.3], {"box": 70.0, "basket": 30.0}),
        "lamp1": _instance([3.0, 1.0, 0.8], [0.3, 0.3, 1.6], {"floor_lamp": 90.0}),
        "lamp2": _instance([1.0, 1.2, 1.2], [0.2, 0.2, 0.4], {"table_lamp": 90.0}),
    }}))
    find, _ = finder([answer(["box1"])])
    found = find.find(scene, "Could you find the biggest box?")
    assert found.relevant_objects == ["box2"] and found.unchecked == ["box1"]
    assert found.rounds[-1]["reply"]["ruled_out"] == ["box2 is a bigger box than box1"]
    assert read_query("the biggest box", scene, find._labels_named).wanted == "the box"  # what the kinds are asked of
    # Compared among the boxes that keep the rest of the query: the bigger one is not on the shelf.
    find, _ = finder([answer(["box2"])])
    assert find.find(scene, "the biggest box on the shelf").relevant_objects == ["box1"]
    # Of the things that fit, the smallest comes first, whichever kind the model named first.
    lights = {"need": "light", "kinds": ["floor lamp", "table lamp"]}
    find, _ = finder([lights] * 2, embedder=embedder)
    assert find.find(scene, "The smallest light").relevant_objects == ["lamp2", "lamp1"]
    assert find.find(scene, "The tallest light").relevant_objects == ["lamp1", "lamp2"]


def test_a_holder_or_neighbour_the_map_is_unsure_of_counts_as_each_kind_it_may_well_be():
    scene = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "top1": _instance([1.0, 1.0, 0.45], [1.2, 0.8, 0.9], {"counter": 55.0, "dining_table": 45.0}),
        "mug1": _instance([1.0, 1.0, 0.95], [0.08, 0.08, 0.1], {"mug": 90.0}),
        "fridge1": _instance([2.2, 1.0, 0.9], [0.7, 0.7, 1.8], {"refrigerator": 90.0}),
        "seat1": _instance([4.0, 3.0, 0.4], [2.0, 0.9, 0.8], {"sofa": 85.0, "bed": 15.0}),
        "pillow1": _instance([4.0, 3.0, 0.85], [0.4, 0.3, 0.1], {"pillow": 90.0}),
    }}))
    find, _ = finder([answer(["mug1"]), answer(["refrigerator_1"]), answer(["pillow1"])])
    # Probably a counter, but nearly as likely a dining table: the map rules out neither.
    assert find.find(scene, "the mug on the dining table").relevant_objects == ["mug1"]
    assert find.find(scene, "a refrigerator next to the dining table").relevant_objects == ["fridge1"]
    # A sofa with a 15% chance of being a bed is no bed.
    found = find.find(scene, "the pillow on the bed")
    assert found.relevant_objects == [] and "pillow1 is not on or in a bed" in found.explanation



def test_a_numbered_room_is_that_room_and_a_thing_stacked_on_another_is_on_what_bears_the_stack():
    rooms = {"office": [(0, 0), (4, 0), (4, 4), (0, 4)], "office_2": [(4, 0), (8, 0), (8, 4), (4, 4)]}
    scene = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "desk1": _instance([1.0, 1.0, 0.37], [1.2, 0.7, 0.74], {"desk": 90.0}),
        "pen1": _instance([1.0, 1.0, 0.755], [0.14, 0.02, 0.01], {"pen": 90.0}),
        "desk2": _instance([6.0, 1.0, 0.37], [1.2, 0.7, 0.74], {"desk": 90.0}),
        "box2": _instance([6.0, 1.0, 0.79], [0.3, 0.3, 0.1], {"box": 90.0}),
        "pen2": _instance([6.0, 1.0, 0.845], [0.14, 0.02, 0.01], {"pen": 90.0}),
        "shelf3": _instance([7.5, 3.5, 0.9], [0.8, 0.3, 1.8], {"shelf": 90.0}),
    }}), rooms)
    assert ("on", "box2") in scene.relation_edges("pen2")
    find, _ = finder([answer(["pen1"]), answer(["pen1"]), answer(["pen1"])])
    assert find.find(scene, "the pen in the office 2").relevant_objects == ["pen2"]
    # On a box on the desk: on the desk too; on no shelf.
    assert find.find(scene, "the pen on the desk in the office 2").relevant_objects == ["pen2"]
    found = find.find(scene, "the pen on the shelf")
    assert found.relevant_objects == [] and "pen1 is not on or in a shelf" in found.explanation
