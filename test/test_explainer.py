import pytest

from conftest import CONFIG
from planner.backends.embeddings import SentenceEmbedder
from planner.core.explainer import CaseMemory, FailureCase, load_cases
from planner.core.files import InputError
from planner.core.react import FailureInfo


@pytest.fixture(scope="module")
def memory():
    return CaseMemory(load_cases(CONFIG / "failure_cases.yaml"), SentenceEmbedder())


def test_a_moved_object_gets_the_re_check_the_map_suggestion(memory):
    failure = FailureInfo("PICK(bottle_1, right)", "approach", "OBJECT_NOT_FOUND",
                          "bottle_1 was not where the map placed it (on table_1); someone may have moved it")
    suggestion = memory.suggest(failure, "Fetch the bottle from the kitchen table and put it on the bedroom table")
    assert suggestion.case_ids[0] == "seed-pick-moved-1"
    assert "Re-check the map" in suggestion.text
    assert suggestion.scores == sorted(suggestion.scores, reverse=True) and suggestion.scores[0] > 0.5


def test_ranking_follows_request_and_reason_similarity(memory):
    ranked = memory.retrieve("PICK", "OUT_OF_REACH", "Go to the table in the kitchen, pick up the bottle and put it away",
                             "bottle_1 is 2.9 m from the robot (bottle_1 on table_2)")
    assert [case.id for case, _ in ranked][0] == "seed-pick-moved-2"


def test_no_similar_case_is_said_rather_than_guessed():
    memory = CaseMemory([FailureCase(id="c1", skill="GOTO", code="PATH_BLOCKED", request="go to the garden",
                                     reason="a ladder blocks the corridor", suggestion="Wait.")],
                        SentenceEmbedder(), threshold=0.99)
    suggestion = memory.suggest(FailureInfo("GOTO(kitchen)", "navigate", "PATH_BLOCKED", "something else"), "make tea")
    assert suggestion.case_ids == [] and "No similar past failure" in suggestion.text
    other_code = memory.suggest(FailureInfo("PICK(cup_1, left)", "grasp", "GRASP_LOST", "slipped"), "tea")
    assert other_code.case_ids == []


def test_a_malformed_case_file_is_rejected_naming_the_entry(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text("- {id: a, skill: PICK, code: X, request: r, reason: q}\n")
    with pytest.raises(InputError, match=r"cases.yaml: 0.suggestion: Field required"):
        load_cases(path)
    path.write_text("- {id: a, skill: PICK, code: X, request: r, reason: q, suggestion: s}\n" * 2)
    with pytest.raises(InputError, match="used more than once: a"):
        load_cases(path)
