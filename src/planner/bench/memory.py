"""`planner bench memory`: a lifelong episode in a generated home. People tell the robot what they
changed, in words of many kinds ("Dad left the mug in the cupboard", "I shut the fridge"), and now
and then ask it for something. The benchmark keeps the true state of the home beside the robot's
memory and scores each update (the memory is the home on every fact it touched) and each plan (made
from memory, carried out in the true home, the request met).

The phrasings are the generator's own (drawn from the household vocabulary, which no prompt or
rule of the stack reads). Which seeds are development data and which test data: planner.bench.seeds.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from planner.bench.generate_tasks import HomePlan, _name, _room_name, make_home
from planner.core.asking import LLMUsage
from planner.core.errors import PolicyError, RequestImpossible
from planner.core.goals import Goal, goal_met
from planner.core.knowledge import TELLABLE, knowledge
from planner.core.planning.classical import plan_goals
from planner.core.planning.grounding import Grounder
from planner.core.planning.pddl import Domain, make_domain, make_problem
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.task_planner import TaskPlanner
from planner.core.ports import Embedder, Parser, Policy
from planner.core.scene_graph import SceneGraph
from planner.core.skills import SkillPlanner
from planner.core.telling import TellResult, TellSettings, tell
from planner.core.world import World
from planner.sim.in_process import SimulatedRobot

PEOPLE = ("I", "My daughter", "Dad", "Mum", "The cleaner", "Someone", "My partner", "Grandpa", "The kids")
MOVES = ("{who} put {thing} {prep} {place}", "{who} left {thing} {prep} {place}", "{Thing} is {prep} {place} now",
         "{who} moved {thing} to {place}", "You'll find {thing} {prep} {place}", "{who} tidied {thing} away {prep} {place}",
         "FYI {thing} went {prep} {place}", "{who} dropped {thing} off {prep} {place}")
OPENS = ("{who} left {place} open", "{Place} is open", "{who} opened {place}")
CLOSES = ("{who} closed {place}", "{who} shut {place}", "{Place} is closed now")
ASKS = ("Bring me {thing}", "Could you get me {thing}?", "Put {thing} on {place}", "I need {thing}",
        "Please take {thing} to {place}")

Facts = set[tuple[str, str, str | bool]]
ATTEMPTS = 50  # draws per sentence before the generator gives up on one


@dataclass
class Step:
    """One moment of the episode: a change told (and the true home after it) or a request."""
    kind: str          # change | task
    sentence: str
    world: World       # the true home after the change (or at the request)
    goal: Goal | None = None  # a request's meaning in the truth's terms, for the record


@dataclass
class Episode:
    seed: int
    home: HomePlan
    steps: list[Step] = field(default_factory=list)


def true_facts(world: World) -> Facts:
    """The tellable facts of the true home, read off the world file (not through the stack)."""
    facts: Facts = set()
    for obj in world.objects:
        facts.add((obj.id, "on", obj.placed_on))
        if obj.inside:
            facts.add((obj.id, "inside", obj.placed_on))
    facts |= {(f.id, "is_open", True) for f in world.furniture if f.open}
    return facts


def memory_facts(skills: SkillPlanner, robot: SimulatedRobot) -> Facts:
    return {t.key() for t in knowledge(skills, robot.graph) if t.relation in TELLABLE}


def _phrase(rng: random.Random, template: str, **parts: str) -> str:
    parts |= {name.capitalize(): text[0].upper() + text[1:] for name, text in parts.items()}
    text = template.format(who=rng.choice(PEOPLE), **parts)
    return text[0].upper() + text[1:]


class Words:
    """What people call the things of one home so that only one thing fits: its kind alone when it
    is the only one of its kind, else with where it is."""

    def __init__(self, rng: random.Random, home: HomePlan, room_of: dict[str, str]):
        self.rng, self.home, self.room_of = rng, home, room_of

    def _room(self, furniture_id: str) -> str:
        return _room_name(self.rng, self.home, self.room_of[furniture_id])

    def furniture(self, world: World, furniture_id: str) -> tuple[str, str] | None:
        """("the cupboard in the kitchen", the room named or ""), or None when no words single it out."""
        label = next(f.label for f in world.furniture if f.id == furniture_id)
        same = [f.id for f in world.furniture if f.label == label]
        name = f"the {_name(self.rng, label)}"
        if len(same) == 1:
            return (f"{name} in the {self._room(furniture_id)}", self.room_of[furniture_id]) \
                if self.rng.random() < 0.3 else (name, "")
        room = self.room_of[furniture_id]
        if sum(self.room_of.get(f) == room for f in same) == 1:
            return f"{name} in the {self._room(furniture_id)}", room
        return None

    def thing(self, world: World, thing_id: str) -> str | None:
        """"the magazine", "the magazine from the sofa", "the magazine from the living room", or
        None when two of its kind share furniture and room."""
        thing = next(o for o in world.objects if o.id == thing_id)
        same = [o for o in world.objects if o.label == thing.label]
        name = f"the {_name(self.rng, thing.label)}"
        if len(same) == 1:
            return name
        labels = {f.id: f.label for f in world.furniture}
        places = (("support", lambda o: labels[o.placed_on]), ("room", lambda o: self.room_of[o.placed_on]),
                  ("both", lambda o: (labels[o.placed_on], self.room_of[o.placed_on])))
        for kind, where in places:
            if sum(where(o) == where(thing) for o in same) == 1:
                support = _name(self.rng, labels[thing.placed_on])
                return {"support": f"{name} from the {support}", "room": f"{name} from the {self._room(thing.placed_on)}",
                        "both": f"{name} from the {support} in the {self._room(thing.placed_on)}"}[kind]
        return None


def make_episode(seed: int, skills: SkillPlanner, changes: int, tasks: int) -> Episode:
    """`changes` told changes with a request after every changes // tasks of them. Every sentence
    singles out what it speaks of, and every request can be done in the true home."""
    rng = random.Random(seed)
    home = make_home(seed, skills.robot)
    world = home.world
    episode = Episode(seed, home)
    holders = {f.id for f in world.furniture if f.id in {o.placed_on for o in world.objects} or f.openable}
    mapped = SceneGraph.from_world(world)
    words = Words(rng, home, {f: mapped.entity(f).room for f in holders})
    domain = make_domain(skills.library)
    every = max(changes // max(tasks, 1), 1)
    number = 0
    for _ in range(changes * ATTEMPTS):
        told = _change(rng, words, world, holders)
        if told is None:
            continue
        world, sentence = told
        episode.steps.append(Step("change", sentence, world))
        number += 1
        if number % every == 0 and sum(s.kind == "task" for s in episode.steps) < tasks:
            if (request := _task(rng, words, world, holders, skills, domain)) is not None:
                episode.steps.append(request)
        if number == changes:
            return episode
    raise ValueError(f"home {seed}: only {number} of {changes} changes could be told so that one thing fits the words")


def _change(rng: random.Random, words: Words, world: World, holders: set[str]) -> tuple[World, str] | None:
    """A change to the home and how someone tells it; None when the words drawn fit two things."""
    furniture = {f.id: f for f in world.furniture if f.id in holders}
    openable = [f for f in furniture.values() if f.openable]
    if openable and rng.random() < 0.2:
        chosen = rng.choice(openable)
        place = words.furniture(world, chosen.id)
        if place is None:
            return None
        changed = world.model_copy(update={"furniture": [f.model_copy(update={"open": not f.open}) if f.id == chosen.id
                                                         else f for f in world.furniture]})
        return changed, _phrase(rng, rng.choice(CLOSES if chosen.open else OPENS), place=place[0])
    obj = rng.choice(world.objects)
    target = rng.choice([f for f in furniture.values() if f.id != obj.placed_on])
    thing, place = words.thing(world, obj.id), words.furniture(world, target.id)
    if thing is None or place is None:
        return None
    inside = bool(target.openable)
    # Near the middle, where a robot beside the furniture reaches it.
    offset = (round(rng.uniform(-0.1, 0.1), 2), round(rng.uniform(-0.1, 0.1), 2))
    moved = obj.model_copy(update={"placed_on": target.id, "inside": inside, "offset": offset})
    changed = world.model_copy(update={"objects": [moved if o.id == obj.id else o for o in world.objects]})
    prep = rng.choice(("in", "inside")) if inside else rng.choice(("on", "on top of"))
    return changed, _phrase(rng, rng.choice(MOVES), thing=thing, place=place[0], prep=prep)


def _task(rng: random.Random, words: Words, world: World, holders: set[str], skills: SkillPlanner,
          domain: Domain) -> Step | None:
    """A request the robot can carry out in the true home (the planner finds a plan there); None
    when none of the ones drawn can be."""
    truth = SimulatedRobot(world, [], skills).graph
    for _ in range(ATTEMPTS):
        obj = rng.choice(world.objects)
        template = rng.choice(ASKS)
        thing = words.thing(world, obj.id)
        if thing is None:
            continue
        if "{place}" in template:
            target = rng.choice([f for f in world.furniture if f.id in holders and f.id != obj.placed_on
                                 and not f.openable])
            place = words.furniture(world, target.id)
            if place is None:
                continue
            goal = Goal(kind="object_on", object=obj.label, object_id=obj.id, target=target.label, room=place[1])
            sentence = template.format(thing=thing, place=place[0])
        else:
            goal = Goal(kind="holding", object=obj.label, object_id=obj.id)
            sentence = template.format(thing=thing)
        if plan_goals(domain, skills, truth, [goal]).found:
            return Step("task", sentence[0].upper() + sentence[1:], world, goal)
    return None


def export(episode: Episode, skills: SkillPlanner, out: Path) -> Path:
    """The episode in the file layout `--domain --episode` reads (see planner.bench.memory_files):
    the skill library's domain, the home at the start, each change's sentence, and each request with
    the true home then and the request's goal. The episode's folder."""
    domain = make_domain(skills.library)
    folder = out / f"episode-{episode.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (out / "domain.pddl").write_text(domain.text)

    def problem(world: World, goals: list[Goal] | str, name: str) -> str:
        scene = SimulatedRobot(world, [], skills).graph
        return make_problem(domain, skills, scene, goals, relevant_only=False, name=name).text
    (folder / "initial_problem.pddl").write_text(problem(episode.home.world, "(and)", "initial"))
    for time_step, step in enumerate(episode.steps, 1):
        if step.kind == "change":
            (folder / f"time_{time_step:04d}_state_change").mkdir(exist_ok=True)
            (folder / f"time_{time_step:04d}_state_change" / "state_change.txt").write_text(step.sentence + "\n")
        else:
            assert step.goal is not None
            (folder / f"time_{time_step:04d}_goal").mkdir(exist_ok=True)
            (folder / f"time_{time_step:04d}_goal" / "goal.txt").write_text(step.sentence + "\n")
            (folder / f"time_{time_step:04d}_goal" / "problem.pddl").write_text(
                problem(step.world, [step.goal], f"time-{time_step}"))
    return folder


# ---- running ------------------------------------------------------------------------------------
@dataclass
class Variant:
    name: str
    settings: TellSettings


# The robot sees nothing during an episode (the home changes while it is away): no change is flagged
# as contradicting a recent sighting.
VARIANTS = {"full": Variant("full graph", TellSettings(context="full", verify=False, recent_s=0)),
            "full+verify": Variant("full graph, verified", TellSettings(context="full", verify=True, recent_s=0)),
            "selected": Variant("retrieved", TellSettings(context="selected", verify=False, recent_s=0)),
            "selected+verify": Variant("retrieved, verified", TellSettings(context="selected", verify=True,
                                                                           recent_s=0)),
            "search": Variant("searched", TellSettings(context="search", verify=False, recent_s=0)),
            "search+verify": Variant("searched, verified", TellSettings(context="search", verify=True, recent_s=0)),
            # Ours, beyond the paper: the change said in words, found in the map, made by the domain's rules.
            "grounded+verify": Variant("grounded, verified", TellSettings(context="grounded", verify=True,
                                                                          recent_s=0))}


def score_update(before_truth: Facts, after_truth: Facts, before_memory: Facts, after_memory: Facts) -> bool:
    """The memory is the home on every fact the update touched, in the home or in the memory (the
    issue's and the paper's measure): a fact the memory got wrong at an earlier update and that this
    one makes true or false as in the home does not count against it."""
    touched = (before_truth ^ after_truth) | (before_memory ^ after_memory)
    return touched & after_memory == touched & after_truth


def same_change(before_truth: Facts, after_truth: Facts, before_memory: Facts, after_memory: Facts) -> bool:
    """Stricter: the memory changed exactly as the home did, the same facts went and came."""
    return (before_memory - after_memory, after_memory - before_memory) == \
        (before_truth - after_truth, after_truth - before_truth)


def plan_request(step: Step, memory: SimulatedRobot, skills: SkillPlanner, policy: Policy, domain: Domain,
                 settings: PlannerSettings, grounder: Grounder | None, parser: Parser | None = None) -> dict:
    """A request read into goals, planned from the robot's memory (LLM+P), and the plan carried
    out in the true home: right when it runs there and meets what was asked."""
    usage = LLMUsage()
    planner = TaskPlanner(policy, memory, skills, settings.model_copy(update={"mode": "llm_p"}), grounder=grounder,
                          parser=parser)
    record = {"sentence": step.sentence, "ok": False, "why": "", "calls": []}
    started = time.monotonic()
    try:
        goals = planner.read_goals(step.sentence, usage)
        outcome = plan_goals(domain, skills, memory.graph, goals)
    except (RequestImpossible, PolicyError) as why:
        record["why"] = f"no goals: {why}"
    else:
        record["calls"] = outcome.calls
        record["planner_seconds"] = round(outcome.seconds, 3)
        if not outcome.found:
            record["why"] = f"no plan from memory: {outcome.reason}"
        else:
            home = SimulatedRobot(step.world, [], skills)
            failed = next((r for r in map(home.execute_skill, outcome.calls) if not r.success), None)
            assert step.goal is not None
            if failed is not None:
                record["why"] = f"the plan failed in the true home: {failed.message}"
            elif not goal_met(step.goal, home.graph):
                record["why"] = f"the plan ran, and the request is not met ({step.goal})"
            else:
                record["ok"] = True
    record.update(llm_calls=usage.calls, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                  seconds=round(time.monotonic() - started, 2))
    return record


def run_episode(episode: Episode, skills: SkillPlanner, policy: Policy, variant: str, settings: PlannerSettings,
                grounder: Grounder | None, progress: Callable[[str], None], embedder: Embedder | None = None,
                parser: Parser | None = None) -> dict:
    """The episode told, step by step, to a robot whose memory starts as the true home: each
    update scored on what it changed, each request on the plan made from memory."""
    telling = VARIANTS[variant].settings
    start = episode.home.world
    robot = SimulatedRobot(start, [], skills)
    domain = make_domain(skills.library)
    truth = true_facts(start)
    updates, plans = [], []
    changes = [s for s in episode.steps if s.kind == "change"]
    started = time.monotonic()
    number = 0
    for step in episode.steps:
        if step.kind == "task":
            plans.append(plan_request(step, robot, skills, policy, domain, settings, grounder, parser))
            progress(f"      {variant:<16} {'ok  ' if plans[-1]['ok'] else 'FAIL'} request: {plans[-1]['why'] or 'met'}")
            continue
        number += 1
        before_memory, after_truth = memory_facts(skills, robot), true_facts(step.world)
        told_at = time.monotonic()
        try:
            result = tell(step.sentence, robot.graph, skills, policy, stamp=float(number), settings=telling,
                          embedder=embedder)
        except PolicyError as error:  # the model's server failed: this update is lost, the episode goes on
            result = TellResult(False, step.sentence, errors=[f"the LLM failed: {error}"])
        after_memory = memory_facts(skills, robot)
        ok = score_update(truth, after_truth, before_memory, after_memory)
        updates.append({"sentence": step.sentence, "ok": ok, "applied": result.applied, "errors": result.errors,
                        "same_change": same_change(truth, after_truth, before_memory, after_memory),
                        "llm_calls": result.llm_calls, "prompt_tokens": result.prompt_tokens,
                        "completion_tokens": result.completion_tokens, "seconds": round(time.monotonic() - told_at, 2),
                        "expected": sorted(map(str, after_truth ^ truth)),
                        "got": sorted(map(str, after_memory ^ before_memory))})
        truth = after_truth
        left = (time.monotonic() - started) / number * (len(changes) - number)
        progress(f"[{number:>3}/{len(changes)}] {variant:<16} {'ok  ' if ok else 'FAIL'} {result.llm_calls} calls "
                 f"{result.prompt_tokens:>6} tokens (about {left / 60:.0f} min left)")
    final = memory_facts(skills, robot) == truth
    return {"variant": variant, "updates": updates, "plans": plans, "final_state_equal": final}


def summarize(runs: list[dict]) -> dict:
    rows = {}
    for run in runs:
        updates = run["updates"]
        plans = run["plans"]
        rows[run["variant"]] = {
            "updates": len(updates), "update_success": round(sum(u["ok"] for u in updates) / max(len(updates), 1), 3),
            # Runs written before the measure changed have only the stricter one, as "ok".
            "same_change": round(sum(u.get("same_change", u["ok"]) for u in updates) / max(len(updates), 1), 3),
            "plans": len(plans), "plan_success": round(sum(p["ok"] for p in plans) / max(len(plans), 1), 3),
            "tokens_per_plan": round(statistics.mean(p["prompt_tokens"] + p["completion_tokens"] for p in plans))
            if plans else 0,
            "planner_seconds": round(statistics.mean(p.get("planner_seconds", 0.0) for p in plans), 3) if plans else 0,
            "applied": sum(u["applied"] for u in updates),
            "tokens_per_update": round(statistics.mean(u["prompt_tokens"] + u["completion_tokens"] for u in updates))
            if updates else 0,
            "calls_per_update": round(statistics.mean(u["llm_calls"] for u in updates), 2) if updates else 0,
            "seconds_per_update": round(statistics.mean(u["seconds"] for u in updates), 2) if updates else 0,
            "final_state_equal": run["final_state_equal"]}
    return rows


def report(results: dict) -> str:
    lines = ["# Lifelong memory benchmark", "", f"Command: `{results.get('command')}`  ",
             f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores; home seed {results['seed']}, "
             f"{results['changes']} changes, {results['tasks']} requests; {results['llm'].get('model', '')}", "",
             "| variant | updates right | same change as the home | applied | LLM calls / update | tokens / update "
             "| s / update | plans right | tokens / plan | planner s | memory = home at the end |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for variant, row in results["summary"].items():
        lines.append(f"| {VARIANTS[variant].name} | {row['update_success']:.0%} | {row['same_change']:.0%} "
                     f"| {row['applied']}/{row['updates']} "
                     f"| {row['calls_per_update']} | {row['tokens_per_update']} | {row['seconds_per_update']} "
                     f"| {row['plan_success']:.0%} ({row['plans']}) | {row['tokens_per_plan']} | {row['planner_seconds']} "
                     f"| {'yes' if row['final_state_equal'] else 'no'} |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(results["summary"])
    rows = [results["summary"][n] for n in names]
    fig, (success, along, tokens) = plt.subplots(1, 3, figsize=(16, 4.2))
    x = np.arange(len(names))
    for shift, key, label in ((-0.2, "update_success", "updates"), (0.2, "plan_success", "plans")):
        bars = success.bar(x + shift, [r[key] * 100 for r in rows], 0.4, label=label)
        success.bar_label(bars, fmt="%.0f%%", fontsize=8)
    success.set_xticks(list(x), [VARIANTS[n].name for n in names])
    success.set_ylim(0, 115)
    success.legend(fontsize=8, ncol=2, loc="upper center")
    success.set_title("right (%)")
    # As the paper's Fig. 2: whether a variant stays as good over the whole episode.
    for run in results["runs"]:
        right = np.cumsum([u["ok"] for u in run["updates"]])
        along.plot(np.arange(1, len(right) + 1), 100 * right / np.arange(1, len(right) + 1),
                   label=VARIANTS[run["variant"]].name)
    along.set_xlabel("change told")
    along.set_ylim(0, 105)
    along.set_title("updates right so far (%)")
    along.legend(fontsize=7)
    tokens.bar([VARIANTS[n].name for n in names], [r["tokens_per_update"] for r in rows], color="tab:orange")
    tokens.set_title("tokens per update")
    for axis in (success, tokens):
        axis.tick_params(axis="x", labelrotation=20, labelsize=8)
    fig.suptitle(f"planner bench memory: home {results['seed']}, {results['changes']} changes, "
                 f"{results['llm'].get('model', '')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
