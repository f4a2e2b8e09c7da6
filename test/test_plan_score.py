"""PG2S and KAS on plans we wrote in the spirit of the paper's worked examples: a correct plan in
another order, a step to the wrong place, a plan with its objects swapped; and `planner plans score`
on files, good and bad."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.adapters.embeddings import SentenceEmbedder
from planner.adapters.language import SpacyParser
from planner.cli import main
from planner.core.errors import InputError
from planner.core.plan_score import PlanScorer, frame, matched, readable_step

SOCKS_AND_SHOES = ["Put on the left sock.", "Put on the right sock.", "Put on the left shoe.", "Put on the right shoe."]
# The same outcome, in other words and another order: right foot first.
SOCKS_AND_SHOES_REORDERED = ["Pull the right sock on.", "Get the right shoe on your foot.", "Pull on the left sock.",
                             "Slip your foot into the left shoe."]
CHILL_THE_JUICE = ["Go to the kitchen counter.", "Pick up the juice.", "Go to the fridge.",
                   "Put the juice in the fridge, close it, wait, then take the juice out.", "Go to the sink.",
                   "Put the juice down next to the sink."]
CHILL_THE_JUICE_LONGER = ["Walk to the counter in the kitchen.", "Grab the juice from the counter.", "Walk over to the refrigerator.",
                          "Open the refrigerator.", "Place the juice inside the refrigerator.", "Close the refrigerator.",
                          "Wait until the juice is cold.", "Open the refrigerator.", "Take out the juice.",
                          "Walk back to the counter.", "Set the juice down beside the sink."]


@pytest.fixture(scope="module")
def parser():
    return SpacyParser()


@pytest.fixture(scope="module")
def scorer(parser):
    return PlanScorer(parser, SentenceEmbedder())


def actions(parser, step):
    return [str(a) for a in frame(parser.parse([readable_step(step)])[0])]


def test_a_correct_plan_in_another_order_scores_higher_with_pg2s_than_with_kas(scorer):
    score = scorer.score(SOCKS_AND_SHOES, SOCKS_AND_SHOES_REORDERED)
    assert score.kas is not None and score.pg2s > score.kas + 0.15
    assert score.sentence > 0.8  # every step has its counterpart somewhere in the other plan


def test_the_same_action_on_another_thing_scores_nothing_with_pg2s_but_most_with_kas(scorer):
    score = scorer.score(["Walk to the desk."], ["Walk to the moon."])
    assert score.pg2s == 0
    assert score.kas == pytest.approx(2 / 3)  # walk, to: two of its three key words


def test_swapping_the_place_and_the_thing_of_a_plan_halves_its_pg2s(scorer):
    right = scorer.score(CHILL_THE_JUICE, CHILL_THE_JUICE_LONGER)
    swapped = [step.replace("kitchen", "bathroom").replace("juice", "towel") for step in CHILL_THE_JUICE_LONGER]
    wrong = scorer.score(CHILL_THE_JUICE, swapped)
    assert right.pg2s > 0.45
    assert wrong.pg2s < 0.5 * right.pg2s
    assert right.kas is None  # plans of different lengths: KAS has no value


def test_identical_plans_score_one_and_no_plan_scores_zero(scorer):
    same = scorer.score(CHILL_THE_JUICE, CHILL_THE_JUICE)
    assert (same.pg2s, same.sentence, same.goal, same.kas) == pytest.approx((1, 1, 1, 1))
    empty = scorer.score(CHILL_THE_JUICE, [])
    assert (empty.pg2s, empty.kas) == (0, None)
    with pytest.raises(InputError, match="no steps"):
        scorer.score([], CHILL_THE_JUICE)


def test_alpha_weighs_the_goal_score_against_the_sentence_score(parser):
    from planner.core.plan_score import ScoreSettings

    embedder = SentenceEmbedder()
    by_sentence = PlanScorer(parser, embedder, ScoreSettings(alpha=0)).score(CHILL_THE_JUICE, CHILL_THE_JUICE_LONGER)
    by_goal = PlanScorer(parser, embedder, ScoreSettings(alpha=1)).score(CHILL_THE_JUICE, CHILL_THE_JUICE_LONGER)
    assert by_sentence.pg2s == pytest.approx(by_sentence.sentence)
    assert by_goal.pg2s == pytest.approx(by_goal.goal)


def test_an_action_is_the_verb_with_what_it_acts_on_and_where(parser):
    assert actions(parser, "Pick up the tomato, which is on the kitchen island.") == ["pick up(tomato)"]
    assert actions(parser, "Walk back to the counter.") == ["walk(counter)"]
    assert actions(parser, "Put the mug in the kitchen cupboard") == ["put(mug, kitchen cupboard)"]
    assert actions(parser, "Open the fridge, take the milk and close the door") == ["open(fridge)", "take(milk)", "close(door)"]
    assert actions(parser, "navigate to kitchen_table_1") == ["navigate(kitchen table)"]  # map ids read as words


def test_each_part_of_the_predicted_plan_matches_at_most_one_reference_part():
    similarity = np.array([[0.9, 0.8], [0.95, 0.0], [0.0, 0.0]])
    assert matched(similarity) == [0.9, 0.0, 0.0]  # row 2 finds its best column taken and nothing else alike


def write_plans(path, plans):
    path.write_text("".join(json.dumps({"id": plan_id, "steps": steps}) + "\n" for plan_id, steps in plans.items()))


def test_score_command_matches_plans_by_id_and_prints_the_means_last(tmp_path, capsys):
    reference, predicted, out = tmp_path / "reference.jsonl", tmp_path / "predicted.jsonl", tmp_path / "scores.json"
    write_plans(reference, {"chill": CHILL_THE_JUICE, "desk": ["Walk to the desk."], "keys": ["Find the keys."]})
    write_plans(predicted, {"desk": ["Walk to the moon."], "chill": CHILL_THE_JUICE, "extra": ["Sing."]})
    assert main(["plans", "score", "--reference", str(reference), "--predicted", str(predicted), "--scores", str(out)]) == 0
    printed = capsys.readouterr()
    lines = printed.out.strip().splitlines()
    assert lines[1].split()[:2] == ["chill", "1.000"] and lines[2].split()[:2] == ["desk", "0.000"]
    assert lines[-1].startswith("mean over 3 plans: PG2S 0.333; KAS 0.833")
    assert "scored as empty plans: keys" in printed.err and "not scored: extra" in printed.err
    written = json.loads(out.read_text())
    assert [row["id"] for row in written["plans"]] == ["chill", "desk", "keys"]
    assert written["plans"][1]["predicted_actions"] == ["walk(moon)"]


def test_score_command_names_each_bad_line_and_refuses_a_repeated_id(tmp_path, capsys):
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_text('{"id": "a", "steps": ["Go."]}\n{"id": 3, "steps": "Go."}\n\nnot json\n')
    write_plans(good, {"a": ["Go."]})
    assert main(["plans", "score", "--reference", str(bad), "--predicted", str(good)]) == 2
    error = capsys.readouterr().err
    assert "bad.jsonl:2: id: Input should be a valid string" in error
    assert "bad.jsonl:2: steps: Input should be a valid array" in error
    assert "bad.jsonl:4: Invalid JSON" in error
    good.write_text('{"id": "a", "steps": ["Go."]}\n{"id": "a", "steps": ["Stay."]}\n')
    assert main(["plans", "score", "--reference", str(good), "--predicted", str(good)]) == 2
    assert "good.jsonl:2: id 'a' is already on line 1" in capsys.readouterr().err
    assert main(["plans", "score", "--reference", str(tmp_path / "none.jsonl"), "--predicted", str(good)]) == 2
    assert "none.jsonl: file not found" in capsys.readouterr().err
