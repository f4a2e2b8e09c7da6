"""planner bench objects: metric definitions, bad input, and a scripted run through the CLI."""

import json
import os
import shutil
import subprocess
import sys
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
    maps = load_bench(bench / "maps", bench / "queries.yaml", bench / "truth", errors.append)
    assert [m.name for m in maps] == ["studio"]
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
    # The scripted model answers the truth except for the first query, where it names a wrong item
    # first; its answers are taken as they are.
    replies = [{"query": query.text, "ids": [names[i] for i in (truth[query.id] if number else ["obj1", *truth[query.id]])]}
               for number, query in enumerate(queries)]
    (bench / "replies.yaml").write_text(yaml.safe_dump(replies))
    # The map's own check of rooms, neighbours and exclusions, and the kinds the model names for a
    # query, would change the scripted answers; each has its own tests.
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "planner.yaml").read_text())
    config["object_finder"].update(constraints=False, kinds=0)
    (bench / "planner.yaml").write_text(yaml.safe_dump(config))
    assert main(["bench", "objects", "--maps", str(bench / "maps"), "--queries", str(bench / "queries.yaml"),
                 "--truth", str(bench / "truth"), "--llm", "scripted", "--replies", str(bench / "replies.yaml"),
                 "--config", str(bench / "planner.yaml"), "--out", str(bench / "out"), "--name", "run"]) == 0
    results = json.loads((bench / "out" / "run.json").read_text())
    summary = results["summary"]["base"]
    count = len(queries)
    assert summary["all"]["queries"] == count
    assert summary["all"]["top1"] == round(100 * (count - 1) / count, 1)
    assert summary["all"]["top2"] == 100.0 and summary["all"]["top_any"] == 100.0
    assert summary["descriptive"]["top1"] < 100 and summary["negation"]["top1"] == 100.0
    assert results["maps"] == {"studio": 20}
    empty = sum(not truth[q.id] for q in queries)  # right empty answers: all precise, all recalled
    assert summary["all"]["no_answer_share"] == summary["all"]["abstained"] == round(100 * empty / count, 1)
    assert summary["all"]["abstention_precision"] == summary["all"]["abstention_recall"] == 100.0
    assert (bench / "out" / "run.png").stat().st_size > 10_000
    report = (bench / "out" / "run.md").read_text()
    assert "| base | 15 |" in report and "| workflow | studio (20) |" in report
    assert "[ 15/15] base" in capsys.readouterr().err
    assert "| base | 20.0 | 20.0 | 100.0 | 100.0 | 91.7 | 93.3 / 20.0 |" in report


def test_generated_homes_are_reproducible_and_their_queries_and_truth_load_per_map(tmp_path, capsys):
    # Each run in its own process with its own order of sets (string hashes differ between processes).
    for folder, seeds, hash_seed in (("a", "7-8", "1"), ("b", "7,8", "2")):
        subprocess.run([sys.executable, "-c", "import sys; from planner.cli import main; sys.exit(main(sys.argv[1:]))",
                        "bench", "generate", "objects", "--seeds", seeds, "--out", str(tmp_path / folder)],
                       env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True)
    for relative in ("maps/home-7.json", "queries/home-7.yaml", "queries/home-8.yaml", "truth/home-8.yaml"):
        assert (tmp_path / "a" / relative).read_text() == (tmp_path / "b" / relative).read_text()
    assert (tmp_path / "a" / "maps" / "home-7.json").read_text() != (tmp_path / "a" / "maps" / "home-8.json").read_text()
    assert main(["bench", "generate", "objects", "--seeds", "8", "--out", str(tmp_path / "e")]) == 0
    assert "[1/1] home-8:" in capsys.readouterr().err
    maps = load_bench(tmp_path / "a" / "maps", tmp_path / "a" / "queries", tmp_path / "a" / "truth", pytest.fail)
    assert [m.name for m in maps] == ["home-7", "home-8"]
    for bench_map in maps:
        types = [q.type for q in bench_map.queries]
        assert all(types.count(t) == 8 for t in ("descriptive", "affordance", "negation"))
        assert sum(not bench_map.truth[q.id] for q in bench_map.queries) / len(types) >= 0.3
        assert "development data" in (tmp_path / "a" / "queries" / f"{bench_map.name}.yaml").read_text()
    assert main(["bench", "generate", "objects", "--seeds", "1000", "--items", "220",
                 "--out", str(tmp_path / "c")]) == 0
    large = load_bench(tmp_path / "c" / "maps", tmp_path / "c" / "queries", tmp_path / "c" / "truth", pytest.fail)[0]
    assert len(large.scene.furniture()) + len(large.scene.objects()) >= 200
    assert len(large.scene.rooms()) >= 10
    assert main(["bench", "generate", "objects", "--seeds", "x-2", "--out", str(tmp_path / "d")]) == 2
    assert "'x-2' is not a seed" in capsys.readouterr().err


def test_the_truth_follows_what_things_are_not_what_the_map_labels_them():
    from planner.bench.generate import make_home, make_queries, voxeland

    home = make_home(3, 25)
    instances = voxeland(home)["instances"]
    by_id = {t.id: t for t in home.things}
    mislabelled = [t for t in home.things if max(instances[t.id]["results"], key=instances[t.id]["results"].get)
                   != t.kind.label]
    assert mislabelled  # the mapper's top label is wrong for some things, as in real maps
    for query in make_queries(home):
        for thing_id in query["answer"]:
            assert thing_id in instances
        if query["type"] == "affordance" and query["answer"]:
            uses = [set(by_id[i].kind.uses) for i in query["answer"]]
            assert set.intersection(*uses)  # one need, met by every thing in the answer


def test_the_second_sources_homes_are_large_reproducible_labelled_several_ways_and_answerable(tmp_path, capsys):
    from planner.bench.scan_homes import make_queries, make_scan_home
    from planner.bench.scan_vocabulary import CATEGORIES

    said = [name for category in CATEGORIES for name in category.said]
    assert len(said) == len(set(said))   # a name people use picks one category: the truth is not a guess
    assert main(["bench", "generate", "objects", "--source", "scan", "--seeds", "5-6", "--out", str(tmp_path)]) == 0
    maps = load_bench(tmp_path / "maps", tmp_path / "queries", tmp_path / "truth", pytest.fail)
    assert [m.name for m in maps] == ["scan-5", "scan-6"]
    for bench_map in maps:
        assert len(bench_map.scene.objects()) + len(bench_map.scene.furniture()) >= 90   # most of 100-300 placed
        assert len(bench_map.scene.rooms()) >= 4
        types = [q.type for q in bench_map.queries]
        assert all(types.count(t) >= 7 for t in ("descriptive", "affordance", "negation"))
        assert sum(not bench_map.truth[q.id] for q in bench_map.queries) >= 6
    home = make_scan_home(5)
    assert make_queries(home) == make_queries(make_scan_home(5))
    # One category under several spellings in one map, and instances with several labels.
    raw = json.loads((tmp_path / "maps" / "scan-5.json").read_text())["instances"]
    chairs = [i for i in home.items if i.category.name == "chair"]
    labels = {max(raw[i.id]["results"], key=raw[i.id]["results"].get) for i in home.items
              if i.category.name in ("chair", "trash can", "tv", "couch", "nightstand")}
    assert len(labels) >= 4 and all(len(raw[i.id]["results"]) >= 2 for i in chairs)


def test_a_run_logged_with_log_llm_is_answered_again_from_its_log_without_a_model(bench):
    queries = load_queries(bench / "queries.yaml")
    (bench / "replies.yaml").write_text(yaml.safe_dump([{"need": q.text, "kinds": ["lamp", "cup"]} for q in queries]))
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "planner.yaml").read_text())
    config["object_finder"].update(constraints=False, name_check=1.0, second_reading=False)
    (bench / "planner.yaml").write_text(yaml.safe_dump(config))
    common = ["bench", "objects", "--maps", str(bench / "maps"), "--queries", str(bench / "queries.yaml"),
              "--truth", str(bench / "truth"), "--config", str(bench / "planner.yaml"), "--name", "run"]
    log = bench / "calls.jsonl"
    assert main([*common, "--llm", "scripted", "--replies", str(bench / "replies.yaml"), "--out", str(bench / "first"),
                 "--log-llm", str(log)]) == 0
    assert len(log.read_text().splitlines()) == len(queries)
    assert main([*common, "--llm", "replay", "--replay", str(log), "--out", str(bench / "again")]) == 0
    first, again = (json.loads((bench / out / "run.json").read_text()) for out in ("first", "again"))
    assert [r["answer"] for r in again["records"]] == [r["answer"] for r in first["records"]]
    assert again["llm"]["backend"] == "replay"
