"""`planner bench tasks`: every task of a suite in a fresh simulated home, with the chosen LLM,
faults and repeats; success judged by each task's predicate over the final world state.

Each episode runs the planner core against the in-process simulated robot (simulated time, the
same skill, controller and explainer code as the nodes), so a run is as fast as its LLM calls
and a seed gives the same faults and world outcomes. Results are written after every task, so
an interrupted run keeps what it measured and `--resume` carries on.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from scipy.stats import binomtest

from planner.adapters.llm import ScriptedPolicy
from planner.bench.common import machine_info, write_results
from planner.bench.suite import TIERS, FinalState, LoadedSuite, Task, check, predicate_objects
from planner.bench.timing import EMBEDDING, MODEL, Stopwatch, TimedPolicy
from planner.core.errors import ServerUnreachable
from planner.core.explainer import CaseMemory
from planner.core.files import load_yaml, write_json_atomic
from planner.core.object_finder import ObjectFinder
from planner.core.plan_check import PlanChecker
from planner.core.planning.grounding import Grounder
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.task_planner import TaskPlanner
from planner.core.ports import JUDGEMENT_SCHEMA, Parser, Policy, fits_of, judged
from planner.core.skills import SkillPlanner
from planner.core.types import PolicyReply, TraceStep
from planner.sim.faults import GarbledPolicy, fault_events, random_faults
from planner.sim.in_process import RobotLog, SimulatedRobot

# The RoBee paper (Llama 3 70B): success rate per tier and the number of tries behind it.
ROBEE = {"simple": (0.90, 30), "moderate": (0.75, 20), "complex": (0.25, 10)}


@dataclass
class BenchSetup:
    suite: LoadedSuite
    skills: SkillPlanner             # the skill library for the configured robot
    settings: PlannerSettings
    policy: Policy | None            # None: each task's own script (the scripted policy)
    memory: CaseMemory | None        # None: explainer off
    faults: str                      # none | task | random
    seed: int
    learner: CaseMemory | None = None  # records what followed failures (None: nothing learned)
    finder: ObjectFinder | None = None  # answers search_map (None: not offered an answer)
    record_replies: bool = False     # keep each episode's raw replies (for a replayable suite)
    grounder: Grounder | None = None  # the request in the map's words (None: as said)
    parser: Parser | None = None  # reads the things a request moves (None: the checks of them are off)
    goal_policy: Policy | None = None  # a model of its own for the goal step (None: `policy`)
    plan_checker: PlanChecker | None = None  # scores plans (ReAct: first steps) against those that worked (None: no check)
    stopwatch: Stopwatch = field(default_factory=Stopwatch)  # the timed model and embedder add to it


class RecordingPolicy:
    """Passes calls on and keeps the text of every reply, in order: a replay script."""

    def __init__(self, policy: Policy, replies: list[str] | None = None):
        self.policy = policy
        self.replies: list[str] = replies if replies is not None else []

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        reply = self.policy.complete(messages, schema)
        self.replies.append(reply.text)
        return reply

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        """Kept with the probability of yes, which a replay needs as much as the text."""
        reply = judged(self.policy, messages, schema)
        recorded = reply.text
        if reply.yes_probability is not None:
            with contextlib.suppress(ValueError):  # a reply the caller refuses is replayed as it came
                recorded = json.dumps({"fits": fits_of(reply.text), "p": reply.yes_probability})
        self.replies.append(recorded)
        return reply


def replayable_suite(suite: LoadedSuite, episodes: list[dict], path: Path) -> Path:
    """The suite written again with each task's recorded replies as its script (first repeat), so
    `--llm scripted` replays the run: the same calls in the same order, whatever model made them."""
    data = load_yaml(suite.path)
    replies = {e["task"]: e["replies"] for e in episodes if e["repeat"] == 0 and "replies" in e}
    data["name"] = f"{data['name']}-recorded"
    data["worlds"] = {name: os.path.relpath((suite.path.parent / relative).resolve(), path.parent.resolve())
                      for name, relative in data["worlds"].items()}
    data["tasks"] = [{**task, "script": replies[task["id"]]} for task in data["tasks"] if task["id"] in replies]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {suite.path.name} with the replies recorded in a run, replayed by --llm scripted\n"
                    + yaml.safe_dump(data, sort_keys=False, width=120, allow_unicode=True))
    return path


def episode_rng(seed: int, task_id: str, repeat: int, purpose: str) -> random.Random:
    """A generator of its own per task, repeat and purpose: adding a task or a fault draw
    elsewhere does not change what this one gets."""
    return random.Random(f"{seed}:{task_id}:{repeat}:{purpose}")


def run_episode(setup: BenchSetup, task: Task, repeat: int, on_step: Callable[[TraceStep], None] | None = None) -> dict:
    world = setup.suite.worlds[task.world].with_robot_at(task.robot_at, setup.skills.robot.standoff_m)
    objects = predicate_objects(task.success, world)
    if setup.faults == "task":
        faults = task.faults
    elif setup.faults == "random":
        faults = random_faults(episode_rng(setup.seed, task.id, repeat, "kind"), objects)
    else:
        faults = []
    events, garbage_calls = fault_events(faults, world, setup.skills.robot, objects,
                                         episode_rng(setup.seed, task.id, repeat, "where"))
    robot = SimulatedRobot(world, events, setup.skills, setup.memory, task.request, task.answers, setup.learner,
                           setup.finder, setup.plan_checker)
    policy: Policy = setup.policy if setup.policy is not None else TimedPolicy(ScriptedPolicy(task.script), setup.stopwatch)
    recorder = RecordingPolicy(policy) if setup.record_replies else None
    policy = recorder or policy  # garbled replies are drawn again from the seed on replay, so the clean ones are kept
    if garbage_calls:
        policy = GarbledPolicy(policy, garbage_calls, episode_rng(setup.seed, task.id, repeat, "garbage"))
    goal_policy = policy
    if setup.goal_policy is not None:  # a model of its own, recorded into the same script in the order of the calls
        goal_policy = RecordingPolicy(setup.goal_policy, recorder.replies) if recorder else setup.goal_policy
    trace: list[list[str]] = []

    def record(step: TraceStep) -> None:
        trace.append([step.kind, step.text])
        if on_step:
            on_step(step)

    planner = TaskPlanner(policy, robot, setup.skills, setup.settings, record, setup.grounder, goal_policy, setup.parser)
    spent = setup.stopwatch.spent.copy()
    started = time.monotonic()
    plan_check = None
    try:
        result = planner.run(task.request)
        outcome, steps, summary = result.outcome, result.steps, result.summary
        calls, prompt, completion = result.llm_calls, result.prompt_tokens, result.completion_tokens
        if result.plan_check is not None:
            plan_check = {"score": result.plan_check.score, "like": result.plan_check.like, "low": result.plan_check.low}
    except ServerUnreachable:
        raise  # no episode can run: the run ends
    except Exception as error:  # a crash is a failed episode with its reason; the run goes on
        trace.append(["error", traceback.format_exc()])
        outcome, steps, summary, calls, prompt, completion = "error", 0, f"internal error: {error!r}", 0, 0, 0
    seconds = time.monotonic() - started
    success, verdict = check(task.success, FinalState(robot.sim, outcome, robot.log.questions))
    failures = robot.log.failures
    return {
        "task": task.id, "tier": task.tier, "world": task.world, "repeat": repeat, "request": task.request,
        "success": success, "verdict": verdict, "outcome": outcome, "summary": summary, "steps": steps,
        "llm_calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
        "seconds": round(seconds, 2), "sim_seconds": round(robot.clock, 1),
        "latency": latency(seconds, started, setup.stopwatch.since(spent), robot.log),
        "skills": len(robot.log.skills), "commands": robot.log.commands,
        "failures": [f"{f.skill} [{f.code}] {f.reason}" for f in failures],
        "suggestions": [f"{s.text} ({', '.join(s.case_ids) or 'no case'})" for s in robot.log.suggestions],
        # A replan: the planner chose again after a failed skill; a recovery: it then succeeded.
        "replans": _replans(trace),
        "recovered": bool(failures) and success,
        "faults": [fault.model_dump(exclude_defaults=True) for fault in faults],
        "world_events": list(robot.sim.log), "garbage_calls": sorted(garbage_calls),
        "questions": robot.log.questions, "said": robot.log.said, "learned": robot.log.learned,
        "plan_check": plan_check,
        "trace": trace,
        **({"replies": recorder.replies} if recorder else {}),
    }


def latency(seconds: float, started: float, spent: dict[str, float], log: RobotLog) -> dict:
    """Where an episode's wall time went: the model's calls, the embedder's, the robot's skills
    (decomposition, checks, the simulator) and the rest (reading, grounding rules, the classical
    planner, the loop); and how long until the robot first moved (None: it never did)."""
    parts = {"model_s": spent[MODEL], "embedding_s": spent[EMBEDDING], "skills_s": log.skill_seconds}
    parts["other_s"] = max(seconds - sum(parts.values()), 0.0)
    first = None if log.first_motion_at is None else log.first_motion_at - started
    return {**{part: round(value, 2) for part, value in parts.items()},
            "first_motion_s": None if first is None else round(first, 2)}


def _replans(trace: list[list[str]]) -> int:
    """Failures the planner went on after: with a new thought (ReAct) or a new plan (LLM+P)."""
    kinds = ["replanned" if kind == "plan" and text.startswith("replanned") else kind for kind, text in trace]
    return sum(1 for i, kind in enumerate(kinds) if kind == "failure" and {"thought", "replanned"} & set(kinds[i + 1:]))


def summarize(episodes: list[dict]) -> dict:
    def stats(group: list[dict]) -> dict:
        if not group:
            return {"episodes": 0}
        with_failures = [e for e in group if e["failures"]]
        successes = sum(e["success"] for e in group)
        interval = binomtest(successes, len(group)).proportion_ci(confidence_level=0.95, method="wilson")
        return {
            "episodes": len(group), "successes": successes,
            "success_rate": round(successes / len(group), 3),
            # Where the success rate lies with 95% confidence, given this many episodes (Wilson score).
            "success_interval_95": [round(float(interval.low), 3), round(float(interval.high), 3)],
            "mean_steps": round(statistics.mean(e["steps"] for e in group), 2),
            "mean_llm_calls": round(statistics.mean(e["llm_calls"] for e in group), 2),
            "mean_prompt_tokens": round(statistics.mean(e["prompt_tokens"] for e in group)),
            "mean_completion_tokens": round(statistics.mean(e["completion_tokens"] for e in group)),
            "mean_seconds": round(statistics.mean(e["seconds"] for e in group), 2),
            **latency_stats(group),
            "seconds_per_step": round(sum(e["seconds"] for e in group) / max(sum(e["steps"] for e in group), 1), 2),
            "replans": sum(e["replans"] for e in group),
            "episodes_with_failures": len(with_failures),
            "recoveries": sum(e["recovered"] for e in group),
            "outcomes": {o: sum(e["outcome"] == o for e in group) for o in sorted({e["outcome"] for e in group})},
            # The robot said "Done." and the request was not done: worse than a failure it reports.
            "false_successes": sum(e["outcome"] == "succeeded" and not e["success"] for e in group),
            "false_success_rate": round(sum(e["outcome"] == "succeeded" and not e["success"] for e in group)
                                        / len(group), 3),
            # A doable request given up as impossible.
            "false_impossible": sum(e["outcome"] == "impossible" and not e["success"] for e in group),
            "false_impossible_rate": round(sum(e["outcome"] == "impossible" and not e["success"] for e in group)
                                           / len(group), 3),
        }
    return {"all": stats(episodes), **{tier: stats([e for e in episodes if e["tier"] == tier]) for tier in TIERS},
            "plan_check": plan_check_stats(episodes)}


LATENCY_PARTS = ("model_s", "embedding_s", "skills_s", "other_s")


def latency_stats(group: list[dict]) -> dict:
    """Seconds per successful episode and where they went (mean per part), and the median time to
    the first motion of the episodes that moved; None where no episode gives one (or none has the
    record, as runs before it was kept)."""
    timed = [e for e in group if "latency" in e]
    succeeded = [e for e in timed if e["success"]]
    moved = [e["latency"]["first_motion_s"] for e in timed if e["latency"]["first_motion_s"] is not None]
    return {"seconds_per_success": round(statistics.mean(e["seconds"] for e in succeeded), 2) if succeeded else None,
            "success_seconds_by_part": {part: round(statistics.mean(e["latency"][part] for e in succeeded), 2)
                                        for part in LATENCY_PARTS} if succeeded else None,
            "median_first_motion_s": round(statistics.median(moved), 2) if moved else None}


def plan_check_stats(episodes: list[dict]) -> dict:
    """Whether a low plan check foretells a failed episode: precision (of the warned episodes, how
    many failed) and recall (of the failed episodes with a verdict, how many were warned about)."""
    judged = [e for e in episodes if (e.get("plan_check") or {}).get("score") is not None]
    warned = [e for e in judged if e["plan_check"]["low"]]
    failed = [e for e in judged if not e["success"]]
    hits = sum(not e["success"] for e in warned)
    return {"checked": sum(e.get("plan_check") is not None for e in episodes), "judged": len(judged),
            "warned": len(warned), "failed": len(failed), "warned_and_failed": hits,
            "precision": round(hits / len(warned), 3) if warned else None,
            "recall": round(hits / len(failed), 3) if failed else None}


def world_outcomes(results: dict) -> list[tuple]:
    """What must be equal between two runs with the same seed and the same replies."""
    return [(e["task"], e["repeat"], e["success"], e["verdict"], tuple(e["world_events"])) for e in results["episodes"]]


def run(setup: BenchSetup, out_dir: Path, name: str, repeat: int, header: dict, only: list[str] | None = None,
        resume: bool = False, progress: Callable[[str], None] = print,
        on_step: Callable[[TraceStep], None] | None = None) -> dict:
    tasks = [t for t in setup.suite.suite.tasks if not only or t.id in only]
    if setup.policy is None:
        unscripted = [t.id for t in tasks if not t.script]
        if unscripted:
            progress(f"skipping {len(unscripted)} task(s) without a script: {', '.join(unscripted)}")
            tasks = [t for t in tasks if t.script]
    results = {"benchmark": "tasks", "machine": machine_info(), "suite": setup.suite.suite.name,
               "suite_file": str(setup.suite.path),
               "faults": setup.faults, "seed": setup.seed, "repeat": repeat,
               **header, "reference": {"robee_llama3_70b": {t: {"success_rate": r, "tries": n} for t, (r, n) in ROBEE.items()}},
               "complete": False, "episodes": []}
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / f"{name}.json"
    done: dict[tuple[str, int], dict] = {}
    if resume and partial.exists():
        previous = json.loads(partial.read_text())
        if (previous.get("suite"), previous.get("faults"), previous.get("seed"), previous.get("llm")) == \
                (results["suite"], results["faults"], results["seed"], results.get("llm")):
            done = {(e["task"], e["repeat"]): e for e in previous["episodes"]}
            progress(f"resuming: {len(done)} episode(s) already in {partial}")
    total = len(tasks) * repeat
    started, ran = time.monotonic(), 0
    for number, (r, task) in enumerate(((r, t) for r in range(repeat) for t in tasks), start=1):
        episode = done.get((task.id, r))
        if episode is None:
            episode = run_episode(setup, task, r, on_step)
            ran += 1
            results["episodes"].append(episode)
            write_json_atomic(partial, results, indent=1)
        else:
            results["episodes"].append(episode)
        # Episodes taken over from a resumed file cost no time here: the estimate comes from the ones run.
        left = (time.monotonic() - started) / max(ran, 1) * (total - number)
        faults = ", ".join(f["kind"] for f in episode["faults"]) or "none"
        progress(f"[{number:>3}/{total}] {task.id:<6} {task.tier:<8} {'ok  ' if episode['success'] else 'FAIL'} "
                 f"{episode['outcome']:<16} {episode['steps']:>2} steps {episode['llm_calls']:>2} calls "
                 f"{episode['prompt_tokens']:>6}+{episode['completion_tokens']:<5} tokens {episode['seconds']:>6.1f} s "
                 f"faults: {faults:<18} (about {left / 60:.0f} min left)")
    results["summary"] = summarize(results["episodes"])
    results["complete"] = True
    progress("written: " + ", ".join(map(str, write_results(results, out_dir, name, plot, report))))
    return results


def report(results: dict) -> str:
    summary = results["summary"]
    llm = results.get("llm", {})
    lines = [f"# Task benchmark: suite {results['suite']}, {llm.get('backend', '?')} {llm.get('model', '')}".rstrip(),
             "", f"Command: `{results.get('command')}`  ", f"Machine: {results['machine']['cpu']}, "
             f"{results['machine']['cores']} cores"
             + (f", {results['cpu_load']} CPU-bound process(es) beside it" if results.get("cpu_load") else "")
             + f"; faults: {results['faults']}, seed {results['seed']}, "
             f"repeat {results['repeat']}", "",
             "| tier | episodes | success | 95% interval | said done, was not | RoBee paper, its own tasks (Llama 3 70B) "
             "| steps | LLM calls | prompt + completion tokens | s / episode | s / step | replans | recoveries |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for tier in (*TIERS, "all"):
        s = summary[tier]
        if not s["episodes"]:
            continue
        robee = f"{ROBEE[tier][0]:.0%} ({ROBEE[tier][1]})" if tier in ROBEE else ""
        low, high = s["success_interval_95"]
        lines.append(f"| {tier} | {s['episodes']} | {s['success_rate']:.0%} ({s['successes']}) | {low:.0%}–{high:.0%} "
                     f"| {s['false_success_rate']:.0%} ({s['false_successes']}) | {robee} | {s['mean_steps']} "
                     f"| {s['mean_llm_calls']} | {s['mean_prompt_tokens']} + {s['mean_completion_tokens']} "
                     f"| {s['mean_seconds']} | {s['seconds_per_step']} | {s['replans']} "
                     f"| {s['recoveries']} / {s['episodes_with_failures']} |")
    if any(summary[tier].get("seconds_per_success") for tier in (*TIERS, "all")):
        lines += ["", "Latency (wall seconds on this machine; the simulator's robot moves in no time, so a real "
                      "robot's driving and arm motion come on top):", "",
                  "| tier | s / successful episode | model | embedding | skills | other | first motion (median) |",
                  "|---|---|---|---|---|---|---|"]
        for tier in (*TIERS, "all"):
            s = summary[tier]
            if not s["episodes"] or s.get("seconds_per_success") is None:
                continue
            parts = s["success_seconds_by_part"]
            first = s["median_first_motion_s"]
            lines.append(f"| {tier} | {s['seconds_per_success']} | {parts['model_s']} | {parts['embedding_s']} "
                         f"| {parts['skills_s']} | {parts['other_s']} | {'' if first is None else first} |")
    checks = summary.get("plan_check") or {}
    if checks.get("checked"):
        lines += ["", f"Plan check: {checks['judged']} of {checks['checked']} plans checked had a similar past request; "
                      f"{checks['warned']} warned, {checks['failed']} of the judged episodes failed, "
                      f"{checks['warned_and_failed']} both: precision {checks['precision']}, recall {checks['recall']}"]
    failed = [e for e in results["episodes"] if not e["success"]]
    if failed:
        lines += ["", "## Failed episodes", ""]
        lines += [f"- **{e['task']}** ({e['tier']}, {e['outcome']}): {e['request']} — {e['verdict']}" for e in failed]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = results["summary"]
    tiers = [t for t in TIERS if summary[t]["episodes"]]
    llm = results.get("llm", {})
    fig, (rates, cost, spent) = plt.subplots(1, 3, figsize=(17, 4.5))
    x = range(len(tiers))
    ours = [summary[t]["success_rate"] * 100 for t in tiers]
    low = [ours[i] - summary[t]["success_interval_95"][0] * 100 for i, t in enumerate(tiers)]
    high = [summary[t]["success_interval_95"][1] * 100 - ours[i] for i, t in enumerate(tiers)]
    rates.bar(list(x), ours, 0.5, yerr=[low, high], capsize=4,
              label=f"{llm.get('backend', '')} {llm.get('model', '')}, 95% interval".strip())
    # Another suite's figures: drawn as marks, not bars beside ours, because its tasks differ.
    rates.plot(list(x), [ROBEE[t][0] * 100 for t in tiers], "x", color="grey", markersize=9,
               label="RoBee paper, its own tasks (Llama 3 70B): another suite")
    for i, value in zip(x, ours):
        rates.text(i + 0.28, value + 1, f"{value:.0f}%", ha="left", fontsize=9)
    rates.set_xticks(list(x), [f"{t}\n({summary[t]['episodes']} episodes)" for t in tiers])
    rates.set_ylabel("success rate (%)")
    rates.set_ylim(0, 110)
    rates.set_title(f"Success per tier (faults: {results['faults']})")
    rates.legend(loc="lower left", fontsize=8)
    steps = [summary[t]["mean_steps"] for t in tiers]
    calls = [summary[t]["mean_llm_calls"] for t in tiers]
    cost.bar([i - 0.2 for i in x], steps, 0.4, label="steps")
    cost.bar([i + 0.2 for i in x], calls, 0.4, label="LLM calls")
    tokens = cost.twinx()
    tokens.plot(list(x), [summary[t]["mean_prompt_tokens"] / 1000 for t in tiers], "o-", color="tab:red",
                label="prompt tokens (k)")
    tokens.set_ylabel("prompt tokens per episode (thousands)")
    cost.set_xticks(list(x), tiers)
    cost.set_ylabel("per episode")
    cost.set_title("Cost per episode")
    cost.legend(loc="upper left", fontsize=8)
    tokens.legend(loc="upper right", fontsize=8)
    timed = [t for t in tiers if summary[t].get("success_seconds_by_part")]
    bottom = [0.0] * len(timed)
    for part in LATENCY_PARTS:
        values = [summary[t]["success_seconds_by_part"][part] for t in timed]
        spent.bar(range(len(timed)), values, 0.5, bottom=bottom, label=part.removesuffix("_s"))
        bottom = [b + v for b, v in zip(bottom, values)]
    spent.plot(range(len(timed)), [summary[t]["median_first_motion_s"] or 0 for t in timed], "k_", markersize=30,
               label="first motion (median)")
    spent.set_xticks(range(len(timed)), timed)
    spent.set_ylabel("wall seconds per successful episode")
    spent.set_title("Where the time goes")
    spent.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"planner bench tasks: suite {results['suite']} on {results['machine']['cpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
