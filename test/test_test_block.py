"""The test protocol in the code: which seeds are development data, the ledger of test blocks, and
`planner bench test`, which runs a block once and keeps only its aggregates."""

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROBOT, chat_server, write_config
from planner.bench import seeds, test_block
from planner.bench.seeds import Block, Ledger, development_seeds
from planner.bench.suite import load_suite
from planner.bench.tasks import summarize
from planner.cli import main


def test_development_data_is_below_1020_and_test_seeds_are_blocks_from_2000():
    assert development_seeds("0,999-1001,1019") == [0, 999, 1000, 1001, 1019]
    with pytest.raises(ValueError, match="2003 is a test seed .* only by planner bench test"):
        development_seeds("1010-1019,2003")
    with pytest.raises(ValueError, match="1020 is neither development data"):
        development_seeds("1020")
    assert Block(2020).seeds == list(range(2020, 2040)) and str(Block(2020)) == "2020–2039"


def test_the_ledger_spends_each_block_once_in_order_and_says_where_it_is_damaged(tmp_path):
    ledger = Ledger(tmp_path / "TEST-SEEDS.md")
    assert ledger.next_block() == Block(2000) and ledger.rows() == []
    drawn = ledger.draw("abc1234", "tasks", "planner bench test tasks --llm embedded")
    assert drawn == Block(2000) and ledger.next_block() == Block(2020)   # spent before it has run
    assert ledger.rows()[0]["figures"] == "running"
    ledger.report(drawn, "simple 90% / moderate 80% | complex 60%")
    row = ledger.rows()[0]
    assert (row["commit"], row["benchmark"], row["figures"]) == ("abc1234", "tasks", "simple 90% / moderate 80% / complex 60%")
    assert ledger.draw("abc1234", "objects", "planner bench test objects") == Block(2020)
    with pytest.raises(ValueError, match="block 2000–2019 is not running"):
        ledger.report(Block(2000), "again")
    text = ledger.path.read_text()
    ledger.path.write_text(text + "| 2005–2024 | 2026-12-06 00:00 | abc | tasks | x | y |\n")
    with pytest.raises(ValueError, match=r"TEST-SEEDS.md:\d+: 2005–2024 is not a test block"):
        ledger.next_block()
    ledger.path.write_text(text + "| 2040 | half a row\n")
    with pytest.raises(ValueError, match=r"TEST-SEEDS.md:\d+: not a ledger row"):
        ledger.next_block()


def test_the_projects_ledger_reads():
    ledger = Ledger(Path(__file__).resolve().parents[1] / "bench" / "TEST-SEEDS.md")
    assert all(int(row["first"]) >= seeds.TEST_FROM for row in ledger.rows())


def test_a_test_run_shows_how_far_it_is_and_nothing_of_what_it_ran():
    shown = []
    blind = test_block.counts_only(shown.append)
    blind("[  3/480] base            home-2003    q-affordance-2             miss ['cup_1'] truth [] 2 calls 1.2 s "
          "(about 12 min left)")
    blind("[ 7/36] t-0004 simple   FAIL impossible  3 steps  4 calls  1200+40 tokens 12.0 s faults: none "
          "(about 5 min left)")
    blind("written: /tmp/x/run.json")
    assert shown == ["[3/480] (about 12 min left)", "[7/36] (about 5 min left)"]


def test_task_figures_keep_the_rates_per_tier_and_the_two_worst_outcomes():
    def episode(tier, success, outcome):
        return {"tier": tier, "success": success, "outcome": outcome, "failures": [], "steps": 3, "llm_calls": 4,
                "prompt_tokens": 100, "completion_tokens": 10, "seconds": 5.0, "replans": 0, "recovered": 0}
    episodes = [episode("simple", True, "succeeded"), episode("simple", False, "succeeded"),
                episode("moderate", False, "impossible"), episode("moderate", True, "impossible"),
                episode("complex", True, "succeeded")]
    figures, line = test_block.task_figures(summarize(episodes))
    assert figures["all"]["false_successes"] == 1 and figures["all"]["false_impossible"] == 1
    assert "request" not in json.dumps(figures)
    assert line == "simple 50% / moderate 50% / complex 100%; said done, was not 20.0%; false impossible 20.0% " \
                   "(5 requests)"


def test_a_block_of_tasks_is_a_suite_of_its_seeds(tmp_path):
    suite = load_suite(test_block.generate_block("tasks", Block(2000), tmp_path, ROBOT), ROBOT)
    assert len(suite.worlds) == 20 and "test data" in (tmp_path / "worlds" / "home-2000.yaml").read_text()
    tiers = [task.tier for task in suite.suite.tasks]   # a request of each tier a home, drawn by its seed
    assert {tier: tiers.count(tier) for tier in tiers} == {"simple": 20, "moderate": 20, "complex": 20}
    assert sum(task.success.gave_up for task in suite.suite.tasks) < 20   # not each home's refusal first


@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for command in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
                                     "-m", "start"]):
        subprocess.run(["git", "-C", str(repo), *command], check=True)
    return repo


def test_a_test_block_runs_once_out_of_sight_and_leaves_only_aggregates_and_its_ledger_row(
        tmp_path, checkout, monkeypatch, capsys):
    monkeypatch.setattr(seeds, "TEST_BLOCK", 2)   # two homes a block: the mechanism, not a measurement
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temporary"))
    (tmp_path / "temporary").mkdir()
    config = write_config(tmp_path, object_finder={"constraints": False, "kinds": 0})
    # The scripted model says nothing fits, whatever it is asked.
    (tmp_path / "replies.yaml").write_text(json.dumps([{"query": "a thing", "ids": []}] * 2000))
    ledger = tmp_path / "TEST-SEEDS.md"

    def test_run(*more):
        return main(["bench", "test", "objects", "--llm", "scripted", "--replies", str(tmp_path / "replies.yaml"),
                     "--config", str(config), "--repo", str(checkout), "--ledger", str(ledger),
                     "--out", str(tmp_path / "out"), *more])

    assert test_run() == 0
    shown = capsys.readouterr()
    assert "home-2000" not in shown.err + shown.out and "q-" not in shown.err
    assert list((tmp_path / "temporary").iterdir()) == []   # the homes, queries and answers went with the run
    results = json.loads((tmp_path / "out" / "test-block-2000-objects.json").read_text())
    assert set(results) >= {"block", "commit", "figures", "llm", "machine"} and "records" not in results
    assert results["block"] == "2000–2001" and "by_map" not in results["figures"]["base"]
    assert results["figures"]["base"]["all"]["abstained"] == 100.0
    row = Ledger(ledger).rows()[0]
    assert row["commit"] == results["commit"] and row["figures"].startswith("base: Top-1 ")
    assert (tmp_path / "out" / "test-block-2000-objects.png").stat().st_size > 5_000

    assert test_run("--source", "scan") == 0   # the next run draws the next block, here of the second source
    assert [(row["first"], row["benchmark"]) for row in Ledger(ledger).rows()] == [("2000", "objects (household)"),
                                                                                  ("2002", "objects (scan)")]
    assert json.loads((tmp_path / "out" / "test-block-2002-objects-scan.json").read_text())["source"] == "scan"
    (checkout / "file").write_text("x")
    subprocess.run(["git", "-C", str(checkout), "add", "file"], check=True)
    assert test_run() == 2   # a change not committed: nothing drawn
    assert "a test block measures a commit" in capsys.readouterr().err
    assert len(Ledger(ledger).rows()) == 2


def test_no_block_is_spent_on_a_model_that_does_not_answer(tmp_path, checkout, monkeypatch, capsys):
    monkeypatch.setattr(seeds, "TEST_BLOCK", 2)
    ledger = tmp_path / "TEST-SEEDS.md"
    config = write_config(tmp_path, llm={"provider": "openai", "max_retries": 0, "timeout_s": 5})
    assert main(["bench", "test", "objects", "--llm", "openai", "--base-url", "http://127.0.0.1:9/v1",
                 "--config", str(config), "--repo", str(checkout), "--ledger", str(ledger)]) == 1
    said = capsys.readouterr().err
    assert "the model server does not answer" in said and "no block was drawn" in said and Ledger(ledger).rows() == []


def test_a_test_block_of_tasks_keeps_the_rates_per_tier_and_nothing_of_the_requests(tmp_path, checkout, monkeypatch):
    monkeypatch.setattr(seeds, "TEST_BLOCK", 1)   # one home: the mechanism, not a measurement
    sent = []

    def reply(body):   # a model that answers every request with the same empty object
        sent.append(body)
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"], "choices": [
            {"index": 0, "message": {"role": "assistant", "content": '{"ok": true}'}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}
    server = chat_server(reply)
    try:
        config = write_config(tmp_path, llm={"provider": "openai", "max_retries": 0, "timeout_s": 5})
        assert main(["bench", "test", "tasks", "--llm", "openai", "--base-url",
                     f"http://127.0.0.1:{server.server_port}/v1", "--config", str(config), "--repo", str(checkout),
                     "--ledger", str(tmp_path / "TEST-SEEDS.md"), "--out", str(tmp_path / "out")]) == 0
    finally:
        server.shutdown()
    results = json.loads((tmp_path / "out" / "test-block-2000-tasks.json").read_text())
    assert results["figures"]["all"]["episodes"] == 3 and "episodes" not in results
    assert set(results["figures"]) == {"all", "simple", "moderate", "complex"}
    row = Ledger(tmp_path / "TEST-SEEDS.md").rows()[0]
    assert row["benchmark"] == "tasks (household)" and "said done, was not" in row["figures"] and len(sent) > 3
