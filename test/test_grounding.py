"""The request in the map's words, with the real sentence model: other names for what the map has
are written as its labels; unrelated words and things the map lacks are left alone."""

import pytest

from planner.adapters.embeddings import SentenceEmbedder
from planner.core.planning.grounding import Grounder

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
