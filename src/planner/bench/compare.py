"""Task-bench runs side by side (`planner bench compare`): the planning modes, or any two
settings, on the same suite. Per tier: success, and what each task cost — LLM calls, tokens and
seconds per episode, and per successful episode, since a cheap mode that fails more is not cheaper."""

from __future__ import annotations

from pathlib import Path

from planner.bench.suite import TIERS


class CompareError(ValueError):
    """Runs that cannot be compared: another suite, other tasks, an unfinished run."""


def arm_name(results: dict) -> str:
    return results.get("mode") or "react"


def _tier(episodes: list[dict]) -> dict:
    successes = sum(e["success"] for e in episodes)
    totals = {key: sum(e[key] for e in episodes) for key in ("llm_calls", "prompt_tokens", "completion_tokens", "seconds")}
    row = {"episodes": len(episodes), "successes": successes,
           "success_rate": round(successes / len(episodes), 3),
           "false_successes": sum(e["outcome"] == "succeeded" and not e["success"] for e in episodes),
           **{f"{key}_per_episode": round(total / len(episodes), 2) for key, total in totals.items()}}
    for key in ("llm_calls", "seconds"):
        row[f"{key}_per_success"] = round(totals[key] / successes, 2) if successes else None
    return row


def compare(runs: list[dict], labels: list[str] | None = None) -> dict:
    """The runs' episodes summed per tier and arm; CompareError says why runs do not compare."""
    if len(runs) < 2:
        raise CompareError("give at least two results files")
    labels = labels or [arm_name(r) for r in runs]
    if len(set(labels)) != len(labels):
        raise CompareError(f"the runs need different names (they are {', '.join(labels)}); give --labels")
    first = runs[0]
    for label, run in zip(labels, runs):
        if run.get("benchmark") != "tasks" or not run.get("complete"):
            raise CompareError(f"{label}: not a finished task-bench run")
        if (run["suite"], run["faults"], run["seed"]) != (first["suite"], first["faults"], first["seed"]):
            raise CompareError(f"{label}: suite {run['suite']}, faults {run['faults']}, seed {run['seed']}; "
                               f"{labels[0]} has {first['suite']}, {first['faults']}, {first['seed']}")
        if sorted(e["task"] for e in run["episodes"]) != sorted(e["task"] for e in first["episodes"]):
            raise CompareError(f"{label}: other tasks than {labels[0]}")
    tiers = [t for t in TIERS if any(e["tier"] == t for e in first["episodes"])]
    arms = {label: {tier: _tier([e for e in run["episodes"] if tier == "all" or e["tier"] == tier])
                    for tier in [*tiers, "all"]} for label, run in zip(labels, runs)}
    machines = sorted({f"{r['machine']['cpu']}, {r['machine']['cores']} cores" for r in runs})
    return {"benchmark": "tasks-compare", "suite": first["suite"], "faults": first["faults"], "seed": first["seed"],
            "machines": machines, "llm": first.get("llm", {}), "tiers": tiers,
            "runs": {label: {"command": run.get("command"), "finished": run.get("finished")}
                     for label, run in zip(labels, runs)}, "arms": arms}


def _ratio(base: float | None, other: float | None) -> str:
    return f"{base / other:.1f}×" if base and other else "–"


def report(results: dict) -> str:
    labels = list(results["arms"])
    lines = [f"# Task bench compared: {' vs '.join(labels)}", "",
             f"Suite {results['suite']}, faults {results['faults']}, seed {results['seed']}; "
             f"{results['llm'].get('backend', '')} {results['llm'].get('model', '')}; "
             f"machine: {'; '.join(results['machines'])}", ""]
    lines += [f"- {label}: `{run['command'] or 'command not recorded'}` (finished {run['finished']})"
              for label, run in results["runs"].items()]
    lines += ["", "| tier | arm | success | said done, was not | LLM calls | tokens (prompt + completion) | s / episode "
                  "| LLM calls / success | s / success |", "|---|---|---|---|---|---|---|---|---|"]
    for tier in [*results["tiers"], "all"]:
        for label in labels:
            row = results["arms"][label][tier]
            lines.append(f"| {tier} | {label} | {row['success_rate']:.0%} ({row['successes']}/{row['episodes']}) "
                         f"| {row['false_successes']} | {row['llm_calls_per_episode']} "
                         f"| {row['prompt_tokens_per_episode']:.0f} + {row['completion_tokens_per_episode']:.0f} "
                         f"| {row['seconds_per_episode']} | {row['llm_calls_per_success'] or '–'} "
                         f"| {row['seconds_per_success'] or '–'} |")
    base, *others = labels
    for other in others:
        a, b = results["arms"][base]["all"], results["arms"][other]["all"]
        lines += ["", f"{base} / {other}, all tiers: LLM calls per success "
                      f"{_ratio(a['llm_calls_per_success'], b['llm_calls_per_success'])}, seconds per success "
                      f"{_ratio(a['seconds_per_success'], b['seconds_per_success'])}"]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels, tiers = list(results["arms"]), [*results["tiers"], "all"]
    fig, panels = plt.subplots(1, 3, figsize=(15, 4.5))
    width = 0.8 / len(labels)
    x = np.arange(len(tiers))
    metrics = [("success_rate", "success (%)", 100), ("llm_calls_per_success", "LLM calls per successful task", 1),
               ("seconds_per_success", "seconds per successful task", 1)]
    for panel, (key, title, scale) in zip(panels, metrics):
        for i, label in enumerate(labels):
            values = [(results["arms"][label][t][key] or 0) * scale for t in tiers]
            bars = panel.bar(x + (i - (len(labels) - 1) / 2) * width, values, width, label=label)
            panel.bar_label(bars, fmt="%.0f" if scale == 100 else "%.1f", fontsize=7)
        panel.set_xticks(list(x), [f"{t}\n({results['arms'][labels[0]][t]['episodes']})" for t in tiers])
        panel.set_title(title, fontsize=10)
        panel.set_ylim(0, panel.get_ylim()[1] * 1.2)  # room for the legend above the bars
        panel.legend(fontsize=8, ncol=len(labels), loc="upper center")
    fig.suptitle(f"planner bench compare: {results['suite']} suite, faults {results['faults']}, "
                 f"{results['llm'].get('model', '')} on {'; '.join(results['machines'])}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
