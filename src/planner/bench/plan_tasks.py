"""`planner bench plans`: plans written from a scene table by one agent or by three, scored against
reference plans with PG2S and KAS.

The tasks are our own, made from generated homes (`planner bench generate plans`): a request in
the generator's words, the home's scene table, and a reference plan that the classical planner
found for the request's goals in that home, written out as steps ("Go to the fridge.", "Open the
fridge.", ...). Which seeds are development data and which test data: planner.bench.seeds.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable
from pathlib import Path

from planner.bench.generate_tasks import make_home
from planner.bench.memory import ATTEMPTS, Words
from planner.bench.seeds import kind_of
from planner.core.errors import PolicyError
from planner.core.goals import Goal
from planner.core.plan_score import PlanScorer
from planner.core.planning.classical import plan_goals
from planner.core.planning.pddl import make_domain
from planner.core.planning.scene_plans import Agents, SceneKind, ScenePlanner, SceneTask, call_sentence, scene_table
from planner.core.skills import SkillPlanner
from planner.sim.in_process import SimulatedRobot

ON = ("Put {thing} on {place}", "Move {thing} over to {place}", "Could you take {thing} to {place}?",
      "{Thing} belongs on {place}; please put it there", "Clear {thing} away onto {place}")
IN = ("Put {thing} away in {place}", "Store {thing} inside {place}", "Could you tuck {thing} into {place}?")
HOLD = ("Grab {thing} and hold on to it", "Pick up {thing}", "Get hold of {thing} for me")
TWO = ("Put {thing} and {other} on {place}", "Both {thing} and {other} should go on {place}")


def _sentence(rng: random.Random, templates: tuple[str, ...], **parts: str) -> str:
    parts |= {name.capitalize(): text[0].upper() + text[1:] for name, text in parts.items()}
    text = rng.choice(templates).format(**parts)
    return text[0].upper() + text[1:]


def make_plan_tasks(seed: int, skills: SkillPlanner, count: int) -> list[dict]:
    """`count` tasks in home `seed`, each with a reference plan the classical planner found there."""
    rng = random.Random(seed * 31 + 7)
    home = make_home(seed, skills.robot)
    world = home.world
    scene = SimulatedRobot(world, [], skills).graph
    holders = [f for f in world.furniture if f.id in {o.placed_on for o in world.objects} or f.openable]
    words = Words(rng, home, {f.id: scene.entity(f.id).room for f in world.furniture})
    domain = make_domain(skills.library)
    table = scene_table(scene)
    tasks: list[dict] = []
    sentences: set[str] = set()
    for _ in range(count * ATTEMPTS):
        drawn = _draw(rng, words, world, holders)
        if drawn is None or drawn[0] in sentences:
            continue
        sentence, goals = drawn
        outcome = plan_goals(domain, skills, scene, goals)
        if not outcome.found:
            continue
        sentences.add(sentence)
        tasks.append({"id": f"s{seed}-{len(tasks) + 1:02d}", "task": sentence, "scene_table": table,
                      "reference_steps": [call_sentence(call, scene) for call in outcome.calls]})
        if len(tasks) == count:
            return tasks
    raise ValueError(f"home {seed}: only {len(tasks)} of {count} tasks have words that fit one thing and a plan")


def _draw(rng: random.Random, words: Words, world, holders) -> tuple[str, list[Goal]] | None:
    """A request and its goals, or None when the words drawn fit two things."""
    obj = rng.choice(world.objects)
    thing = words.thing(world, obj.id)
    kind = rng.choice(("on", "on", "in", "hold", "two"))
    if thing is None:
        return None
    if kind == "hold":
        return _sentence(rng, HOLD, thing=thing), [Goal(kind="holding", object=obj.label, object_id=obj.id)]
    targets = [f for f in holders if f.id != obj.placed_on and bool(f.openable) == (kind == "in")]
    if not targets:
        return None
    target = rng.choice(targets)
    place = words.furniture(world, target.id)
    if place is None:
        return None
    goal_kind = "object_in" if kind == "in" else "object_on"
    goals = [Goal(kind=goal_kind, object=obj.label, object_id=obj.id, target=target.label, room=place[1])]
    if kind != "two":
        return _sentence(rng, IN if kind == "in" else ON, thing=thing, place=place[0]), goals
    other = rng.choice([o for o in world.objects if o.id != obj.id])
    other_words = words.thing(world, other.id)
    if other_words is None or other.placed_on == target.id:
        return None
    goals.append(Goal(kind="object_on", object=other.label, object_id=other.id, target=target.label, room=place[1]))
    return _sentence(rng, TWO, thing=thing, other=other_words, place=place[0]), goals


def write_tasks(seeds: list[int], skills: SkillPlanner, per_home: int, out: Path) -> int:
    """The tasks of every seed, one JSON object a line; returns how many."""
    lines = []
    for seed in seeds:
        for task in make_plan_tasks(seed, skills, per_home):
            lines.append(json.dumps({**task, "split": kind_of(seed)}))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return len(lines)


def run(tasks: list[SceneTask], arms: list[tuple[Agents, SceneKind]], planner: ScenePlanner, scorer: PlanScorer,
        base_dir: Path, progress: Callable[[str], None]) -> dict:
    """Each arm plans every task; each plan is scored against the task's reference."""
    results: dict = {"tasks": len(tasks), "arms": {}}
    for agents, scene in arms:
        name = f"{agents}/{scene}"
        rows = []
        for number, task in enumerate(tasks, 1):
            try:
                plan = planner.plan(task, agents, scene, base_dir)
                steps, error, usage, seconds = plan.steps, plan.error, plan.usage, plan.seconds
            except PolicyError as error_:  # the server failed: this plan is lost, the run goes on
                steps, error, usage, seconds = [], f"the LLM failed: {error_}", None, 0.0
            score = scorer.score(task.reference_steps, steps)
            rows.append({"id": task.id, "steps": steps, "error": error, "pg2s": round(score.pg2s, 4),
                         "sentence": round(score.sentence, 4), "goal": round(score.goal, 4),
                         "kas": None if score.kas is None else round(score.kas, 4),
                         "llm_calls": usage.calls if usage else 0, "tokens": usage.tokens if usage else 0,
                         "seconds": round(seconds, 2)})
            progress(f"[{number:>3}/{len(tasks)}] {name:<13} PG2S {score.pg2s:.2f} "
                     f"{'' if score.kas is None else f'KAS {score.kas:.2f} '}{len(steps)} steps "
                     f"{rows[-1]['llm_calls']} calls {seconds:.1f} s {error}")
        results["arms"][name] = {"plans": rows, **summarize(rows)}
    return results


def summarize(rows: list[dict]) -> dict:
    kas = [r["kas"] for r in rows if r["kas"] is not None]
    return {"pg2s": round(statistics.mean(r["pg2s"] for r in rows), 4),
            "pg2s_sd": round(statistics.pstdev(r["pg2s"] for r in rows), 4),
            "sentence": round(statistics.mean(r["sentence"] for r in rows), 4),
            "goal": round(statistics.mean(r["goal"] for r in rows), 4),
            "kas": round(statistics.mean(kas), 4) if kas else None, "kas_plans": len(kas),
            "no_plan": sum(not r["steps"] for r in rows),
            "llm_calls": round(statistics.mean(r["llm_calls"] for r in rows), 2),
            "tokens": round(statistics.mean(r["tokens"] for r in rows)),
            "seconds": round(statistics.mean(r["seconds"] for r in rows), 2)}


def report(results: dict) -> str:
    llm = results.get("llm", {})
    lines = [f"# Plans from scene tables: one agent or three ({results['tasks']} tasks)", "",
             f"{llm.get('backend', '')} {llm.get('model', '')}; machine: {results.get('machine', {}).get('cpu', '')}", "",
             "| arm | PG2S (sd) | sentence | goal | KAS (plans it scores) | no plan | LLM calls | tokens | s / plan |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, arm in results["arms"].items():
        kas = "-" if arm["kas"] is None else f"{arm['kas']:.3f}"
        lines.append(f"| {name} | {arm['pg2s']:.3f} ({arm['pg2s_sd']:.3f}) | {arm['sentence']:.3f} | {arm['goal']:.3f} "
                     f"| {kas} ({arm['kas_plans']}) | {arm['no_plan']} | {arm['llm_calls']} | {arm['tokens']} "
                     f"| {arm['seconds']} |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(results["arms"])
    fig, (scores, cost) = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.2
    for offset, (key, label) in enumerate((("pg2s", "PG2S"), ("sentence", "sentence"), ("goal", "goal"),
                                           ("kas", "KAS (plans as long as the reference only)"))):
        values = [results["arms"][a][key] or 0 for a in arms]
        xs = [i + (offset - 1.5) * width for i in range(len(arms))]
        scores.bar(xs, values, width, label=label)
        if key == "kas":
            for x, value, arm in zip(xs, values, arms):
                scores.annotate(f"n={results['arms'][arm]['kas_plans']}", (x, value), ha="center", va="bottom", fontsize=7)
    scores.set_xticks(range(len(arms)), [f"{a}\nno plan: {results['arms'][a]['no_plan']}" for a in arms])
    scores.set_ylim(0, 1.3)  # room above the bars for the legend
    scores.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    scores.set_title(f"Similarity to the reference plans ({results['tasks']} tasks)")
    scores.legend(fontsize=7, ncol=2, loc="upper left")
    cost.bar(arms, [results["arms"][a]["seconds"] for a in arms], color="tab:gray")
    cost.set_ylabel("seconds per plan")
    for i, a in enumerate(arms):
        cost.annotate(f"{results['arms'][a]['llm_calls']} calls", (i, results["arms"][a]["seconds"]), ha="center",
                      va="bottom", fontsize=8)
    cost.set_title("Cost")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

