"""The request in the map's words, with the real sentence model: other names for what the map has
are written as its labels; unrelated words and things the map lacks are left alone."""

import pytest

from planner.adapters.embeddings import SentenceEmbedder
from planner.adapters.lexicon import WordNetLexicon
from planner.core.planning.grounding import Grounder, Grounding, Match

LABELS = ["refrigerator", "dining_table", "sofa", "milk_carton", "cell_phone", "tv_monitor", "cup", "mug", "apple"]


@pytest.fixture(scope="module")
def grounder():
    return Grounder(SentenceEmbedder())


def test_other_names_for_what_the_map_has_are_written_as_its_labels(grounder):
    grounding = grounder.ground("Put the milk from the dining table into the fridge", LABELS)
    assert grounding.text == "put the milk carton from the dining table into the refrigerator"
    assert grounding.note() == "milk = milk_carton; fridge = refrigerator"
    assert grounder.ground("Bring my phone to the couch", LABELS).note() == "phone = cell_phone; couch = sofa"


def test_words_the_map_uses_and_things_it_lacks_are_left_as_said(grounder):
    for request in ("Pick up the cup", "Take the mug and the apple", "Bring me the piano", "I'm thirsty"):
        grounding = grounder.ground(request, LABELS)
        assert grounding.text == request and not grounding.matches, grounding


def test_room_names_are_left_alone(grounder):
    grounding = grounder.ground("Put the bottle on the table in the bedroom", ["bed", "bottle", "table"],
                                ["kitchen", "bedroom"])
    assert grounding.text == "Put the bottle on the table in the bedroom" and not grounding.matches


def test_a_kind_of_thing_is_not_taken_for_one_of_its_kind(grounder):
    """"The fruit" with an apple and a banana in the map is either: the model must choose, not the
    grounder for it, and "a drink" is not the water."""
    for request in ("The fruit on the table goes in the fridge", "Can I have a drink"):
        grounding = grounder.ground(request, ["apple", "banana", "water_bottle", "refrigerator", "table"])
        assert all(m.label in {"refrigerator", "water_bottle"} and m.phrase in {"fridge"} for m in grounding.matches), \
            grounding


def test_part_of_a_name_inside_another_compound_is_not_that_label(grounder):
    """"Table" names a coffee_table where the map has no other table, but a bedside table is not one,
    and a phone charger is no phone; a room word beside it only says where."""
    labels = ["coffee_table", "nightstand", "guitar", "cell_phone"]
    for request in ("Put the guitar in the bedside table", "Bring me the phone charger"):
        grounding = grounder.ground(request, labels, ["bedroom", "kitchen"])
        assert not grounding.matches, grounding
    assert grounder.ground("Put the guitar on the table", labels).note() == "table = coffee_table"
    assert grounder.ground("Put the guitar on the kitchen table", labels, ["kitchen"]).note() == "table = coffee_table"
    # Part of two labels' names, it is neither: which table is the model's to choose.
    assert not grounder.ground("Grab the fork on the table", [*labels, "side_table", "fork"]).matches


def test_a_room_the_request_calls_with_room_after_its_name_and_words_across_and_are_no_phrase(grounder):
    """"The laundry room" is the room the map calls laundry, and no thing's name spans "and": neither
    "room" nor "room and grab" is put to the model as another name for a bed."""
    asked = []
    grounder.ground("Go to the laundry room and grab the blanket", ["bed", "paper_towels", "laptop"],
                    ["laundry", "kitchen"], loose=0.4, accept=lambda match: asked.append(match.phrase) and False)
    assert asked == ["blanket"], asked


@pytest.fixture(scope="module")
def grounder_with_lexicon(grounder):
    return Grounder(grounder.embedder, lexicon=WordNetLexicon())


def test_names_a_lexicon_knows_are_written_as_the_label_or_room_they_name(grounder, grounder_with_lexicon):
    """Other names the sentence model does not know well enough are known to WordNet, rooms' among
    them; the same word read as a verb is left alone ("to drink": no beverage)."""
    labels, rooms = ["dresser", "eyeglasses", "lamp", "shirt"], ["living_room", "kitchen"]
    request = "Put my specs on the chest of drawers in the sitting room"
    assert grounder.ground(request, labels, rooms).note() != "specs = eyeglasses; chest of drawers = dresser; " \
                                                             "sitting room = living_room"
    grounding = grounder_with_lexicon.ground(request, labels, rooms)
    assert grounding.note() == "specs = eyeglasses; chest of drawers = dresser; sitting room = living_room"
    assert grounding.text == "put my eyeglasses on the dresser in the living room"
    assert grounder_with_lexicon.ground("Could you bring me a drink", ["beverage", "cup"]).note() == "drink = beverage"
    assert not grounder_with_lexicon.ground("I would like to drink from the cup", ["beverage", "cup"]).matches
    # A kind of one label names it ("the pullover": the sweater), the label it is a kind of first of
    # all (a recliner is an armchair before it is a chair); a label is no kind of what the request says
    # ("a fruit" is no particular orange).
    grounding = grounder_with_lexicon.ground("Put the pullover and the biro on the bed", ["sweater", "pen", "bed"])
    assert grounding.note() == "pullover = sweater; biro = pen"
    assert grounder_with_lexicon.ground("Fetch the recliner", ["armchair", "chair"]).note() == "recliner = armchair"
    assert not grounder_with_lexicon.ground("Bring me a fruit", ["orange", "bed"]).matches
    # Where the embeddings hold the phrase close to another label, they overrule: WordNet's cupboard
    # is a closet, but beside a cabinet it is that.
    grounding = grounder_with_lexicon.ground("Put the cup in the cupboard", ["closet", "cabinet", "cup"])
    assert all(match.label != "closet" for match in grounding.matches), grounding


def test_a_room_said_by_its_kind_is_written_as_the_room_of_the_map_of_that_kind(grounder_with_lexicon):
    """People call a room by its kind where the map names it otherwise: "the bathroom" is the
    lavatory, "the bedroom" the master bedroom 2 before the guest room (its name has the word). A
    more particular name is not read as a more general room, and "the room" names none."""
    labels, rooms = ["towel", "bathroom_sink", "lamp"], ["master_bedroom_2", "guest_room", "lavatory", "kitchen"]
    grounding = grounder_with_lexicon.ground("Leave the towel in the bathroom, then carry the lamp into the bedroom",
                                             labels, rooms)
    assert grounding.note() == "bathroom = lavatory; bedroom = master_bedroom_2", grounding.note()
    assert grounding.text == "leave the towel in the lavatory, then carry the lamp into the master bedroom 2"
    assert not grounder_with_lexicon.ground("Carry the lamp into the nursery", labels, ["bedroom", "kitchen"]).matches
    assert not grounder_with_lexicon.ground("Carry the lamp into the room", labels, rooms).matches
    assert not grounder_with_lexicon.ground("Hang the towel by the bathroom sink", labels, rooms).matches


def test_a_name_a_lexicon_gives_a_label_only_in_a_rare_sense_is_grounded_only_when_a_check_accepts_it(
        grounder_with_lexicon):
    """"Jumper" is a sweater in one of WordNet's eight senses, none of them seen in its tagged texts
    (a dress and a coverall are others): a candidate for the check, not a grounding of its own."""
    labels = ["sweater", "basket", "bed"]
    assert not grounder_with_lexicon.ground("Fetch the jumper on the bed", labels).matches
    asked = []
    grounding = grounder_with_lexicon.ground("Fetch the jumper on the bed", labels, loose=0.4,
                                             accept=lambda match: asked.append(match) or True)
    assert grounding.note() == "jumper = sweater" and grounding.text == "fetch the sweater on the bed"
    assert [(match.phrase, match.label, match.rare_sense) for match in asked] == [("jumper", "sweater", True)]
    assert not grounder_with_lexicon.ground("Fetch the jumper on the bed", labels, loose=0.4,
                                            accept=lambda match: False).matches
    # A name in a usual sense needs no check.
    grounding = grounder_with_lexicon.ground("Fetch the pullover", labels, accept=lambda match: False)
    assert grounding.note() == "pullover = sweater" and not grounding.matches[0].rare_sense


def test_a_word_a_lexicon_gives_to_two_labels_or_that_is_part_of_a_name_in_the_map_is_not_grounded_by_it(
        grounder_with_lexicon):
    """WordNet calls a toilet a pot as well as a flowerpot: beside either, "the pot" is not the toilet."""
    for labels in (["toilet", "cooking_pot"], ["toilet", "flowerpot"]):
        grounding = grounder_with_lexicon.ground("Leave the spoon by the pot", labels)
        assert all(match.label != "toilet" for match in grounding.matches), grounding
    # Nor is a word that is part of a longer name the request says ("the pot plant").
    grounding = grounder_with_lexicon.ground("Put the pot plant on the desk", ["toilet", "houseplant", "desk"])
    assert all(match.label != "toilet" for match in grounding.matches), grounding


def test_a_place_read_with_apostrophes_as_spaces_is_written_as_said():
    """Places are read with "children's" as "children s"; the room read for one replaces the words
    the request has, so the model is told the room, not the words left as they were."""
    said = Grounding("Leave it on the desk in the children's room", "Leave it on the desk in the children's room", ())
    assert said.written("children s room") == "children's room"
    assert said.written("attic") == "attic"
    assert said.with_match(Match(said.written("children s room"), "kids_room", 0.7)).text == \
        "leave it on the desk in the kids room"


def test_a_long_running_grounder_keeps_only_its_latest_vectors_and_still_grounds_right(grounder, monkeypatch):
    """Each request brings new phrases; a node grounding requests for months must not keep them all."""
    from planner.core.planning import grounding as module

    monkeypatch.setattr(module, "CACHED_VECTORS", 40)
    fresh = Grounder(grounder.embedder)
    for number in range(30):
        fresh.ground(f"Bring item number {number} from the pantry shelf to the couch", LABELS)
    assert len(fresh._vectors) <= 40
    assert fresh.ground("Bring my phone to the couch", LABELS).note() == "phone = cell_phone; couch = sofa"
