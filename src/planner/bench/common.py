"""What every benchmark shares: a description of the machine and writing results + plot."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from planner.core.files import write_json_atomic


def machine_info() -> dict:
    cpu = platform.processor() or platform.machine()
    memory_gib = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory_gib = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass  # not Linux: platform's answer stands
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": cores, "memory_gib": memory_gib, "python": platform.python_version(),
            "platform": platform.platform(), "source": source_revision()}


def source_revision() -> str:
    """The git commit the code runs from (with "+changes" when the tree differs), or "" outside git."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit + ("+changes" if dirty else "")


def write_results(results: dict, out_dir: Path, name: str, plot: Callable[[dict, Path], None],
                  report: Callable[[dict], str] | None = None) -> list[Path]:
    """The results as JSON (with the command that made them), a plot, and a report (.md) when
    asked for; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # `planner ...` or `python -m planner.cli ...`: the command that made these results.
    by_cli = Path(sys.argv[0]).name == "planner" or sys.argv[0].endswith(("planner/cli.py", "planner.cli"))
    results = {"command": shlex.join(["planner", *sys.argv[1:]]) if by_cli else None,
               "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **results}
    json_path, plot_path = out_dir / f"{name}.json", out_dir / f"{name}.png"
    write_json_atomic(json_path, results, indent=1)  # it may replace an interrupted run's episodes
    plot(results, plot_path)
    if report is None:
        return [json_path, plot_path]
    report_path = out_dir / f"{name}.md"
    report_path.write_text(report(results))
    return [json_path, plot_path, report_path]
