"""The things a request asks to move, read off its parse: the same things in any wording, and
none where the user asks for any thing, talks of their own doing, or names only places."""

import pytest

from planner.adapters.language import SpacyParser
from planner.core.planning.moved_things import moved_things

PARSER = SpacyParser()


def said(request: str) -> list[str]:
    return [thing.said for thing in moved_things(PARSER, request)]


@pytest.mark.parametrize("request_, things", [
    ("Put the mug and the plate on the shelf", ["mug", "plate"]),
    ("Could the drying rack and the mug go on the console?", ["drying rack", "mug"]),  # no verb of moving
    ("The cushion belongs in the bathroom, can you bring it there?", ["cushion"]),
    ("The telephone, can you get hold of it", ["telephone"]),  # not "hold"
    ("Mind fetching the photo frame?", ["photo frame"]),
    ("Could you fetch me the brolly?", ["brolly"]),  # a word the tagger does not know as a noun
    ("Put the cap from the bench and the book on the counter", ["cap", "book"]),  # not a second place
    ("Put the first-aid box on the table", ["first aid box"]),
    ("Could you pick up the bottle of water?", ["bottle of water"]),
    ("Make sure the orange is on the table", ["orange"]),
    ("I left my keys upstairs, can you get them", ["keys"]),
    ("Open the fridge, take out the milk and put it on the table", ["milk"]),  # "it" is the milk, not the fridge
])
def test_the_things_a_request_moves_are_read_in_any_wording(request_, things):
    assert said(request_) == things


@pytest.mark.parametrize("request_", [
    "Bring me a bag or box to hold stuff",  # any bag: a need
    "I cut my finger, can you help?",  # the user's own doing
    "Got anything I can put all this stuff in?",
    "Go to the kitchen and open the fridge",  # places and furniture handled, nothing moved
])
def test_no_particular_thing_is_read_where_the_request_moves_none(request_):
    assert said(request_) == []


def test_a_thing_has_the_words_that_say_what_it_is():
    bottle, = moved_things(PARSER, "Could you pick up the bottle of water?")
    lamp, = moved_things(PARSER, "Grab the reading lamp")
    assert bottle.words == ("bottle", "water") and lamp.words == ("lamp",)
    assert moved_things(None, "Grab the reading lamp") == []  # without a parser, nothing is read
