"""`planner bench context`: does the planner's prompt grow with the house? The same requests run
in two generated homes with the same rooms and furniture, one holding `factor` times more
objects; the figure is prompt tokens per LLM call (as the server counts them) in each, and the
growth from the small home to the large one (target: under 20% for ten times the objects)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from planner.bench.common import machine_info, write_results
from planner.bench.suite import LoadedSuite, Suite, Task
from planner.bench.tasks import BenchSetup, run_episode
from planner.core.robot_profile import RobotProfile
from planner.core.world import World
from planner.core.worldgen import generate_world

GROWTH_TARGET = 0.20


def _requests(small: World, large: World) -> list[dict]:
    """Requests every home of the pair can carry out, from where the robot is put."""
    def labels_on(world: World, furniture: str) -> set[str]:
        return {o.label for o in world.objects if o.placed_on == furniture and not o.inside}

    rooms = [r.name for r in small.rooms if r.name != "hallway"]
    shared = sorted({o.label for o in small.objects} & {o.label for o in large.objects})
    pick_from = next(((f.id, label) for f in small.furniture if not f.openable
                      for label in sorted(labels_on(small, f.id) & labels_on(large, f.id))), None)
    fridge = next((f.id for f in small.furniture if f.label == "fridge"), None)
    requests = [{"id": "go", "request": f"Go to the {rooms[-1].replace('_', ' ')}", "success": {"robot_in": rooms[-1]}}]
    if pick_from:
        furniture, label = pick_from
        requests.append({"id": "pick", "robot_at": furniture, "request": f"Pick up a {label}", "success": {"holding": label}})
    if fridge:
        requests.append({"id": "open", "robot_at": fridge, "request": "Open the fridge", "success": {"is_open": fridge}})
    for label in shared[:2]:
        requests.append({"id": f"bring-{label}", "robot_at": rooms[0], "request": f"Bring me a {label}",
                         "success": {"all_of": [{"holding": label}, {"robot_in": rooms[0]}]}})
    return requests


def make_suite(rooms: int, objects: int, factor: int, seed: int, robot: RobotProfile) -> LoadedSuite:
    small = generate_world(rooms, objects, robot, seed, name="small")
    large = generate_world(rooms, objects * factor, robot, seed, name="large")
    tasks = [Task(tier="simple", world=world, **{**request, "id": f"{request['id']}-{world}"})
             for request in _requests(small, large) for world in ("small", "large")]
    suite = Suite(name="context", description=f"{objects} and {objects * factor} objects in {rooms} rooms",
                  worlds={"small": "generated", "large": "generated"}, tasks=tasks)
    return LoadedSuite(suite, Path("generated"), {"small": small, "large": large})


def summarize(episodes: list[dict]) -> dict:
    per_world = {}
    for world in ("small", "large"):
        group = [e for e in episodes if e["world"] == world]
        calls = sum(e["llm_calls"] for e in group)
        per_world[world] = {"episodes": len(group), "successes": sum(e["success"] for e in group), "llm_calls": calls,
                            "prompt_tokens_per_call": round(sum(e["prompt_tokens"] for e in group) / max(calls, 1), 1)}
    small, large = per_world["small"]["prompt_tokens_per_call"], per_world["large"]["prompt_tokens_per_call"]
    growth = (large - small) / small if small else 0.0
    return {**per_world, "growth": round(growth, 3), "target": GROWTH_TARGET, "target_met": growth < GROWTH_TARGET}


def run(setup: BenchSetup, out_dir: Path, name: str, header: dict, progress: Callable[[str], None] = print) -> dict:
    suite = setup.suite
    results = {"benchmark": "context", "machine": machine_info(), "suite": suite.suite.description, **header,
               "worlds": {w: {"rooms": len(world.rooms), "furniture": len(world.furniture), "objects": len(world.objects),
                              "labels": len({o.label for o in world.objects})} for w, world in suite.worlds.items()},
               "episodes": []}
    started = time.monotonic()
    tasks = suite.suite.tasks
    for number, task in enumerate(tasks, start=1):
        episode = run_episode(setup, task, 0)
        results["episodes"].append(episode)
        per_call = episode["prompt_tokens"] / max(episode["llm_calls"], 1)
        left = (time.monotonic() - started) / number * (len(tasks) - number)
        progress(f"[{number:>2}/{len(tasks)}] {task.id:<18} {'ok  ' if episode['success'] else 'FAIL'} "
                 f"{episode['llm_calls']:>2} calls {per_call:>7.0f} prompt tokens per call (about {left / 60:.0f} min left)")
    results["summary"] = summarize(results["episodes"])
    progress("written: " + ", ".join(map(str, write_results(results, out_dir, name, plot, report))))
    return results


def report(results: dict) -> str:
    summary, worlds = results["summary"], results["worlds"]
    lines = [f"# Prompt size against house size: {results['suite']}", "",
             f"Command: `{results.get('command')}`  ",
             f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores; LLM: "
             f"{results['llm']['backend']} {results['llm']['model']}", "",
             "| home | rooms | furniture | objects | object labels | episodes | succeeded | LLM calls | prompt tokens per call |",
             "|---|---|---|---|---|---|---|---|---|"]
    for world in ("small", "large"):
        w, s = worlds[world], summary[world]
        lines.append(f"| {world} | {w['rooms']} | {w['furniture']} | {w['objects']} | {w['labels']} | {s['episodes']} "
                     f"| {s['successes']} | {s['llm_calls']} | {s['prompt_tokens_per_call']} |")
    lines += ["", f"Growth of prompt tokens per call: **{summary['growth']:+.1%}** "
                  f"(target: under {summary['target']:.0%}; {'met' if summary['target_met'] else 'NOT met'})."]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    requests = sorted({e["task"].rsplit("-", 1)[0] for e in results["episodes"]})
    per_call = {(e["task"].rsplit("-", 1)[0], e["world"]): e["prompt_tokens"] / max(e["llm_calls"], 1)
                for e in results["episodes"]}
    fig, ax = plt.subplots(figsize=(8, 4))
    x = range(len(requests))
    for offset, world in ((-0.2, "small"), (0.2, "large")):
        label = f"{world}: {results['worlds'][world]['objects']} objects"
        ax.bar([i + offset for i in x], [per_call.get((r, world), 0) for r in requests], 0.4, label=label)
    ax.set_xticks(list(x), requests)
    ax.set_ylabel("prompt tokens per LLM call")
    ax.set_title(f"Prompt size, {results['summary']['growth']:+.1%} with "
                 f"{results['worlds']['large']['objects'] // max(results['worlds']['small']['objects'], 1)}x the objects")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
