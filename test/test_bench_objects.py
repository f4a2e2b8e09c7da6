"""planner bench objects: metric definitions, bad input, and a scripted run through the CLI."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from planner.bench.objects import hit, load_bench, load_bench_map, load_queries
from planner.cli import main
from planner.core.errors import InputError
from planner.core.object_finder import prompt_names

BENCH = Path(__file__).resolve().parents[1] / "bench" / "objects"


@pytest.mark.parametrize("answer, truth, k, expected", [
    (["a"], ["a", "b"], 1, True),
    (["c", "a"], ["a"], 1, False),          # Top-1 looks at the first answer only
    (["c", "a"], ["a"], 2, True),
    (["c", "d", "a"], ["a"], 2, False),
    (["c", "d", "a"], ["a"], 3, True),
    (["c", "d", "e", "a"], ["a"], None, True),  # Top-Any: any answer
    ([], [], 1, True),                      # both empty: nothing fits, and nothing was named
    ([], [], None, True),
    (["a"], [], 1, False),                  # something named where nothing fits
    (["a"], [], None, False),
    ([], ["a"], 3, False),                  # nothing named where something fits
])
def test_top_k_definitions(answer, truth, k, expected):
    assert hit(answer, truth, k) is expected


@pytest.fixture
def bench(tmp_path):
    shutil.copytree(BENCH / "maps", tmp_path / "maps", ignore=shutil.ignore_patterns("large_house*", "office*",
                                                                                      "family_home*"))
    shutil.copytree(BENCH / "truth", tmp_path / "truth")
    shutil.copy(BENCH / "queries.yaml", tmp_path / "queries.yaml")
    return tmp_path


def test_a_malformed_map_is_named_and_left_out_while_the_others_run(bench):
    (bench / "maps" / "broken.json").write_text('{"instances": {"obj1": {"bbox": {"center": [0, 0]}}}}')
    (bench / "truth" / "broken.yaml").write_text("{}")
    errors = []
    queries, maps = load_bench(bench / "maps", bench / "queries.yaml", bench / "truth", errors.append)
    assert [name for name, _, _ in maps] == ["studio"]
    assert len(errors) == 1 and "broken.json" in errors[0] and "obj1" in errors[0]


def test_truth_naming_an_id_not_in_the_map_or_an_unknown_query_is_refused(bench):
    truth = yaml.safe_load((bench / "truth" / "studio.yaml").read_text())
    truth["mug"] = ["obj4", "obj404"]
    truth["teapot"] = []
    (bench / "truth" / "studio.yaml").write_text(yaml.safe_dump(truth))
    with pytest.raises(InputError) as error:
        load_bench(bench / "maps", bench / "queries.yaml", bench / "truth", lambda line: None)
    assert "no map could be used" in str(error.value)
    errors = []
    with pytest.raises(InputError):
        load_bench(bench / "maps", bench / "queries.yaml", bench / "truth", errors.append)
    assert "mug: 'obj404' is not an object in the map" in errors[0] and "'teapot' is not a query" in errors[0]


def test_a_query_file_with_a_bad_type_or_a_repeated_id_is_refused(tmp_path):
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"queries": [{"id": "a", "type": "poetic", "text": "x"}]}))
    with pytest.raises(InputError, match="type"):
        load_queries(path)
    path.write_text(yaml.safe_dump({"queries": [{"id": "a", "type": "negation", "text": "x"}] * 2}))
    with pytest.raises(InputError, match="appears twice"):
        load_queries(path)


def test_a_scripted_run_scores_every_query_and_writes_results_report_and_plot(bench, capsys):
    queries = load_queries(bench / "queries.yaml")
    truth = yaml.safe_load((bench / "truth" / "studio.yaml").read_text())
    scene = load_bench_map(bench / "maps" / "studio.json")
    names = prompt_names(scene, [e.id for e in [*scene.furniture(), *scene.objects()]])
    # The scripted model answers the truth except for the first query, where it names a wrong item first.
    replies = []
    for number, query in enumerate(queries):
        ids = truth[query.id] if number else ["obj1", *truth[query.id]]
        replies.append({"query": query.text, "ids": [names[i] for i in ids]})
    (bench / "replies.yaml").write_text(yaml.safe_dump(replies))
    assert main(["bench", "objects", "--maps", str(bench / "maps"), "--queries", str(bench / "queries.yaml"),
                 "--truth", str(bench / "truth"), "--llm", "scripted", "--replies", str(bench / "replies.yaml"),
                 "--out", str(bench / "out"), "--name", "run"]) == 0
    results = json.loads((bench / "out" / "run.json").read_text())
    summary = results["summary"]["base"]
    count = len(queries)
    assert summary["all"]["queries"] == count
    assert summary["all"]["top1"] == round(100 * (count - 1) / count, 1)
    assert summary["all"]["top2"] == 100.0 and summary["all"]["top_any"] == 100.0
    assert summary["descriptive"]["top1"] < 100 and summary["negation"]["top1"] == 100.0
    assert results["maps"] == {"studio": 20}
    assert (bench / "out" / "run.png").stat().st_size > 10_000
    report = (bench / "out" / "run.md").read_text()
    assert "| base | 15 |" in report and "| workflow | studio (20) |" in report
    assert "[ 15/15] base" in capsys.readouterr().err
