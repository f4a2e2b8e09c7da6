"""`planner bench checks`: the goal step's need and name checks scored on worded needs and names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from planner.adapters.embeddings import SentenceEmbedder
from planner.adapters.lexicon import WordNetLexicon
from planner.bench.checks import ChecksData, load_checks, run, summarize
from planner.cli import main
from planner.core.errors import InputError, PolicyError
from planner.core.planning.grounding import Grounder
from planner.core.types import PolicyReply

DATA = {"labels": ["blanket", "sweater", "mug", "pen", "apple"],
        "needs": [{"request": "I'm shivering", "right": ["blanket", "sweater"], "also": ["mug"]}],
        "names": [{"word": "jumper", "label": "sweater"}],
        "near_misses": ["pear"]}


class KnowingJudge:
    """Says yes (0.8) to a blanket or a sweater for shivering and to a sweater called a jumper, no
    (0.3) to the rest; gives no answer about a pen."""

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        return self.judge(messages, schema)

    def judge(self, messages: list[dict], schema: dict | None = None) -> PolicyReply:
        question = messages[-1]["content"]
        if re.search(r"\ba pen\b", question):
            raise PolicyError("the server went away")
        right = re.search(r"shivering.*them a (blanket|sweater) |\"jumper\" another name for a sweater", question, re.S)
        return PolicyReply('{"fits": true}' if right else '{"fits": false}', yes_probability=0.8 if right else 0.3)


@pytest.fixture(scope="module")
def grounder():
    return Grounder(SentenceEmbedder(), lexicon=WordNetLexicon())


def test_a_check_that_knows_ranks_every_right_thing_first_and_passes_no_wrong_one(grounder):
    records = run(ChecksData.model_validate(DATA), KnowingJudge(), grounder, wrong=2, seed=0, progress=lambda line: None)
    need = records["needs"][0]
    assert set(need["right"]) == {"blanket", "sweater"} and "mug" not in need["wrong"] and len(need["wrong"]) == 2
    summary = summarize(records, need_threshold=0.45, name_threshold=0.45, name_margin=0.1, rename_threshold=0.6,
                        room_threshold=0.5)
    assert summary["need"]["auc"] == 1.0 and summary["need"]["right_first"] == 100.0
    assert summary["need"]["at_threshold"] == {"right_pass": 100.0, "likeliest_wrong_pass": 0.0}
    assert summary["need"]["sweep"]["0.3"]["likeliest_wrong_pass"] == 100.0  # a no at 0.3 passes a threshold of 0.3
    assert summary["name"]["singled_out"] == {"other_names_right": 100.0, "other_names_wrong": 0.0, "near_misses": 0.0}
    assert summary["name"]["at_threshold"] == {"other_names_pass": 100.0, "near_misses_pass": 0.0}
    # The pen was asked about (drawn as wrong, or most like a word) and got no answer: counted, not scored.
    asked_pen = [p for n in records["needs"] for label, p in n["wrong"].items() if label == "pen"] \
        + [p for n in records["names"] for label, p in n["asked"].items() if label == "pen"]
    assert asked_pen and all(p is None for p in asked_pen) and summary["unanswered"] == len(asked_pen)
    # "Jumper" is a sweater only in a rare sense of WordNet's: read as one once the name check accepts it.
    assert [(n["grounded"], n["rare_sense"]) for n in records["names"]] == [(None, "sweater"), (None, None)]
    assert summary["grounding"]["rare_sense"] == {"other_names_right": 1, "other_names_wrong": 0, "near_misses": 0,
                                                  "accepted_right": 1, "accepted_wrong": 0, "accepted_near_misses": 0}
    assert summary["grounding"]["before_check"]["other_names_right"] == 0.0
    assert summary["grounding"]["with_rare_sense"] == {"other_names_right": 100.0, "other_names_wrong": 0.0,
                                                       "near_misses": 0.0}


def test_a_data_file_naming_a_label_it_does_not_list_is_refused_with_where(tmp_path):
    bad = {**DATA, "needs": [{"request": "I'm shivering", "right": ["duvet"]}]}
    (tmp_path / "checks.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(InputError, match=r"checks\.yaml.*labels not in `labels`: duvet"):
        load_checks(tmp_path / "checks.yaml")


def test_the_command_writes_results_report_and_plot(tmp_path, capsys):
    (tmp_path / "checks.yaml").write_text(yaml.safe_dump(DATA))
    # Every question answered yes at 0.6: 2 right and 2 wrong things, then the five labels for each word.
    (tmp_path / "replies.yaml").write_text(yaml.safe_dump([{"fits": True, "p": 0.6}] * 14))
    config = Path(__file__).resolve().parents[1] / "config" / "planner.yaml"
    assert main(["bench", "checks", "--data", str(tmp_path / "checks.yaml"), "--wrong", "2", "--llm", "scripted",
                 "--replies", str(tmp_path / "replies.yaml"), "--config", str(config), "--out", str(tmp_path / "out"),
                 "--name", "run"]) == 0
    results = json.loads((tmp_path / "out" / "run.json").read_text())
    assert results["summary"]["unanswered"] == 0 and results["summary"]["need"]["threshold"] == 0.45
    assert results["summary"]["need"]["at_threshold"] == {"right_pass": 100.0, "likeliest_wrong_pass": 100.0}
    assert "[3/3] name: pear" in capsys.readouterr().err
    report = (tmp_path / "out" / "run.md").read_text()
    assert "| 0.65 | 0.0 | 0.0 |" in report and "the name check accepts 1 right, 0 wrong" in report
    assert (tmp_path / "out" / "run.png").stat().st_size > 10_000
    assert main(["bench", "checks", "--data", str(tmp_path / "missing.yaml"), "--llm", "scripted"]) == 2


class RoomReader:
    """Chooses the living room for "den" (and says yes to it, 0.7), the bathroom for "scullery" (yes
    0.6: a wrong room read) and for "garage" (yes 0.3: a room the home lacks, left unread)."""
    CHOICES = {"den": "living room", "scullery": "bathroom", "garage": "bathroom"}
    YES = {'"den" another name for a living room': 0.7, '"scullery" another name for a bathroom': 0.6}

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        word = re.search(r'Which of these is "([^"]+)"', messages[-1]["content"])[1]
        self.offered = re.findall(r"^- (.+)$", messages[-1]["content"], re.MULTILINE)
        line = next(line for line in self.offered if line.startswith(self.CHOICES[word]))
        return PolicyReply(json.dumps({"meaning": "a room", "choice": line}))

    def judge(self, messages: list[dict], schema: dict | None = None) -> PolicyReply:
        p = next((p for asked, p in self.YES.items() if asked in messages[-1]["content"]), 0.3)
        return PolicyReply(json.dumps({"fits": p > 0.5}), yes_probability=p)


def test_rooms_are_read_as_the_planner_reads_a_place_where_only_a_room_can_be(grounder):
    data = ChecksData.model_validate({**DATA, "needs": [], "names": [], "near_misses": [],
                                      "rooms": ["kitchen", "living_room", "bathroom"],
                                      "room_furniture": {"kitchen": ["stove", "sink"], "living_room": ["sofa"]},
                                      "room_names": [{"word": "den", "room": "living_room"},
                                                     {"word": "scullery", "room": "kitchen"}],
                                      "absent_rooms": ["garage"]})
    reader = RoomReader()
    records = run(data, reader, grounder, wrong=2, seed=0, progress=lambda line: None)
    # Each room is offered with its furniture, as the planner offers a map's rooms.
    assert reader.offered == ["kitchen (holds stove, sink)", "living room (holds sofa)", "bathroom", "none of these"]
    assert records["rooms"][0] == {"word": "den", "room": "living_room", "chosen": "living_room", "p_yes": 0.7}
    room = summarize(records, 0.45, 0.45, 0.1, 0.6, room_threshold=0.5)["room"]
    assert room["chosen_right"] == 50.0 and room["absent_chosen"] == 100.0
    assert room["at_threshold"] == {"right": 50.0, "wrong": 50.0, "absent_read": 0.0}
    assert room["sweep"]["0.65"] == {"right": 50.0, "wrong": 0.0, "absent_read": 0.0}
    with pytest.raises(ValueError, match="rooms not in `rooms`: study"):
        ChecksData.model_validate({**DATA, "rooms": ["kitchen"], "room_names": [{"word": "den", "room": "study"}]})
    with pytest.raises(ValueError, match="rooms not in `rooms`: study"):
        ChecksData.model_validate({**DATA, "rooms": ["kitchen"], "room_furniture": {"study": ["desk"]}})


def test_the_second_source_s_checks_leave_a_seed_s_things_and_rooms_out_and_ask_about_their_words(tmp_path, capsys):
    """`planner bench generate checks --source scan` writes a data file per seed from the scan
    vocabulary: the words for a category the seed leaves out of the home are near misses, never an
    other name or a label, and its room types left out are rooms the home lacks."""
    out = tmp_path / "checks"
    assert main(["bench", "generate", "checks", "--source", "scan", "--seeds", "100-101", "--out", str(out)]) == 0
    first, second = load_checks(out / "checks-scan-100.yaml"), load_checks(out / "checks-scan-101.yaml")
    assert first.labels != second.labels                      # each seed leaves other things out
    for data in (first, second):
        assert data.names and data.near_misses and data.needs and data.room_names and data.absent_rooms
        said_as_labels = {label.replace("_", " ") for label in data.labels}
        assert not said_as_labels & {name.word for name in data.names}
        assert not said_as_labels & set(data.near_misses)
        assert not {name.word for name in data.names} & set(data.near_misses)
        assert not {room.replace("_", " ") for room in data.rooms} & set(data.absent_rooms)
    assert "run: planner bench checks --data" in capsys.readouterr().out
    # The household checks are written by hand, not generated.
    assert main(["bench", "generate", "checks", "--seeds", "100", "--out", str(out)]) == 2
