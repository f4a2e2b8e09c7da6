"""The explainer benchmarks write their results, report and plot."""

import json

from planner.cli import main


def test_bench_explainer_times_retrieval_at_each_size(tmp_path, capsys):
    assert main(["bench", "explainer", "--sizes", "50", "500", "--retrievals", "5", "--pool", "60",
                 "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "explainer.json").read_text())
    rows = results["results"]
    assert [(r["cases"], r["one_class"]) for r in rows] == [(50, False), (500, False), (50, True), (500, True)]
    assert all(0 < r["top5_ms_median"] < r["top5_with_embedding_ms_median"] for r in rows)
    assert rows[1]["vectors_mib"] > rows[0]["vectors_mib"]
    assert all(r["clustered_classes"] == 0 and r["recall_at_5"] == 1.0 for r in rows)  # every class scanned in full
    assert (tmp_path / "explainer.png").stat().st_size > 0 and "| 500 | one |" in capsys.readouterr().out


def test_bench_ablation_runs_off_seed_and_learned_on_the_same_tasks(tmp_path, capsys):
    assert main(["bench", "ablation", "--suite", "smoke", "--llm", "scripted", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "ablation-smoke-scripted-task-faults.json").read_text())
    arms = results["arms"]
    assert list(arms) == ["off", "seed", "seed+learned"]
    assert len({arm["episodes"] for arm in arms.values()}) == 1 and arms["off"]["episodes"] == len(results["tasks"])
    assert arms["off"]["cases"] == 0
    # What the seed run learned is what the third run has on top of the seeds.
    assert arms["seed+learned"]["cases"] == arms["seed"]["cases"] + sum("learned case" in line for line in arms["seed"]["learned"])
    assert arms["seed+learned"]["cases"] > arms["seed"]["cases"]
    # Failures are told apart by the fault the task carries, each arm against the same episodes.
    assert sum(results["episodes_by_fault"].values()) == arms["off"]["episodes"]
    assert all(sum(arm["failed_by_fault"].values()) == arm["failed"] for arm in arms.values())
    assert all(arm["failed_by_fault"].keys() == results["episodes_by_fault"].keys() for arm in arms.values())
    assert (tmp_path / "ablation-smoke-scripted-task-faults.png").exists()
    report = capsys.readouterr().out
    assert "| seed+learned |" in report and "| fault | episodes | off | seed | seed+learned |" in report
