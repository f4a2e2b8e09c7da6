"""A test measurement: one fresh block of test seeds (planner.bench.seeds), generated where nobody
reads it, run once, reported by its aggregates alone. The homes, requests, traces and per-task
results live in a temporary folder for the length of the run and are deleted with it; what is kept
is the figures, in the results folder and in the ledger's row for the block."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from planner.bench import generate, generate_tasks, scan_homes
from planner.bench.seeds import Block
from planner.bench.tasks import TIERS
from planner.core.robot_profile import RobotProfile

COUNTER = re.compile(r"^\[\s*(\d+)/(\d+)\].*(\(about \d+ min left\))$")


TASKS_PER_TIER = 1   # tasks of each tier a home of a test block gives: 20 homes, 60 requests


def generate_block(what: str, block: Block, out: Path, robot: RobotProfile, source: str = "household") -> Path:
    """The block's homes in `out`: a task suite of TASKS_PER_TIER tasks of each tier a home (its file is
    returned) or object maps, queries and truth, from the `source` generator (household or scan)."""
    if what == "tasks":
        generate_tasks.write_source_suite(source, list(block.seeds), robot, out, TASKS_PER_TIER)
        return out / "tasks.yaml"
    for seed in block.seeds:
        if source == "scan":
            scan_homes.write_scan_home(scan_homes.make_scan_home(seed), out)
        else:
            generate.write_home(generate.make_home(seed, generate.DEFAULT_ITEMS), out)
    return out


def counts_only(progress: Callable[[str], None]) -> Callable[[str], None]:
    """A progress line without what it was about: how far the run is and how long is left."""
    def show(line: str) -> None:
        if match := COUNTER.match(line):
            done, total, left = match.groups()
            progress(f"[{done}/{total}] {left}")
    return show


def task_figures(summary: dict) -> tuple[dict, str]:
    """The aggregates a test report keeps of a task run, and its line for the ledger."""
    kept = ("episodes", "successes", "success_rate", "false_successes", "false_success_rate", "false_impossible",
            "false_impossible_rate", "mean_llm_calls", "mean_seconds")
    figures = {group: {key: summary[group][key] for key in kept if key in summary[group]}
               for group in ("all", *TIERS) if summary[group].get("episodes")}
    overall = summary["all"]
    line = (" / ".join(f"{group} {figures[group]['success_rate']:.0%}" for group in TIERS if group in figures)
            + f"; said done, was not {overall['false_success_rate']:.1%}; false impossible "
              f"{overall['false_impossible_rate']:.1%} ({overall['episodes']} requests)")
    return figures, line


def object_figures(summary: dict) -> tuple[dict, str]:
    """The aggregates a test report keeps of an object-finding run (no per-map rows), and its ledger line."""
    figures = {workflow: {group: rates for group, rates in rows.items() if group != "by_map"}
               for workflow, rows in summary.items()}
    line = "; ".join(f"{workflow}: Top-1 {rows['all']['top1']}, on answerable {rows['all']['top1_answerable']}, "
                     f"\"nothing\" precision {rows['all']['abstention_precision']} ({rows['all']['queries']} queries)"
                     for workflow, rows in figures.items())
    return figures, line


def report(results: dict) -> str:
    lines = [f"# Test block {results['block']}: {results['what']}", "",
             f"Commit {results['commit']}; LLM {results['llm'].get('model')}; machine {results['machine']['cpu']}, "
             f"{results['machine']['cores']} cores. Command: `{results.get('command')}`", "",
             "Aggregates only: the block's homes, requests and per-task results were deleted with the run.", ""]
    if results["what"] == "tasks":
        lines += ["| tier | requests | success | said done, was not | false impossible | calls | s |",
                  "|---|---|---|---|---|---|---|"]
        for group, row in results["figures"].items():
            lines.append(f"| {group} | {row['episodes']} | {row['success_rate']:.0%} | {row['false_success_rate']:.1%} "
                         f"| {row['false_impossible_rate']:.1%} | {row['mean_llm_calls']} | {row['mean_seconds']} |")
    else:
        lines += ["| workflow | group | queries | Top-1 | Top-3 | Top-1 answerable | \"nothing\" precision | recall |",
                  "|---|---|---|---|---|---|---|---|"]
        for workflow, groups in results["figures"].items():
            for group, row in groups.items():
                if isinstance(row, dict):
                    lines.append(f"| {workflow} | {group} | {row['queries']} | {row['top1']} | {row['top3']} "
                                 f"| {row['top1_answerable']} | {row['abstention_precision']} "
                                 f"| {row['abstention_recall']} |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if results["what"] == "tasks":
        groups = [g for g in results["figures"] if g != "all"]
        bars = {"success": [100 * results["figures"][g]["success_rate"] for g in groups],
                "said done, was not": [100 * results["figures"][g]["false_success_rate"] for g in groups],
                "false impossible": [100 * results["figures"][g]["false_impossible_rate"] for g in groups]}
    else:
        workflow = next(iter(results["figures"]))
        rows = {g: r for g, r in results["figures"][workflow].items() if isinstance(r, dict)}
        groups = list(rows)
        bars = {"Top-1": [rows[g]["top1"] for g in groups],
                "Top-1 answerable": [rows[g]["top1_answerable"] or 0 for g in groups],
                "\"nothing\" precision": [rows[g]["abstention_precision"] or 0 for g in groups]}
    figure, axes = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(bars)
    for index, (label, values) in enumerate(bars.items()):
        axes.bar([x + index * width for x in range(len(groups))], values, width, label=label)
    axes.set_xticks([x + width * (len(bars) - 1) / 2 for x in range(len(groups))], groups)
    axes.set_ylabel("%")
    axes.set_ylim(0, 100)
    axes.set_title(f"test block {results['block']} ({results['what']}) at {results['commit']}")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
