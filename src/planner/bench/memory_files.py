"""`planner bench memory --domain DOMAIN.pddl --episode DIR`: a lifelong episode from files, for
any PDDL domain, in the layout L3M+P's episodes use:

    DIR/initial_problem.pddl                its :init is the home at the start
    DIR/time_NNNN_state_change/state_change.txt   one sentence: what a person says changed
    DIR/time_NNNN_goal/goal.txt             a request in words
    DIR/time_NNNN_goal/problem.pddl         the true state at that time, with the request's goal

The memory here is only symbolic (no scene graph, no geometry): the true atoms of the initial
problem as triplets, one per unary or binary predicate. Each change is read by the model (shown the
whole graph, or what it picks, or what its query words find), verified against the domain when the
variant verifies (predicate, arity, object names, types, a removed fact must hold), and applied.
At each request the memory is compared with the true state, the model writes the goal, Fast
Downward plans from the memory, and the plan is checked against the true problem. The grounded
variant reads each change with the stack's own reading on a home built from the memory's state
(planner.bench.episode_scene).

`planner bench memory --export DIR` writes a generated episode in this layout, so the two ways of
running can be compared on the same story.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from planner.bench.episode_scene import EpisodeScene, SceneMapping
from planner.core.asking import CountingPolicy, LLMUsage, ask_validated
from planner.core.errors import InputError, PolicyError
from planner.core.files import StrictModel
from planner.core.knowledge import Change, Triplet
from planner.core.planning.classical import PddlError, parse_pddl, plan_pddl, validate_plan
from planner.core.ports import Embedder, Policy
from planner.core.skills import SkillPlanner
from planner.core.telling import QUERY_PROMPT, QUERY_SCHEMA, QueryGraph, TellSettings
from planner.core.telling import read_change as read_told_change
from planner.sim.in_process import SimulatedRobot

STEP = re.compile(r"time_(\d+)_(state_change|goal)")
Atom = tuple[str, ...]  # (predicate, argument, …)


@dataclass
class FileStep:
    time: int
    kind: str          # change | goal
    text: str          # the sentence, or the request
    problem: str = ""  # a request's true problem


@dataclass
class Grounding:
    """What the grounded reading of an episode from files needs: where its things are (a scene
    mapping, read from `where`) and the stack's skill library."""
    mapping: SceneMapping
    skills: SkillPlanner
    where: str = "the default scene mapping"


@dataclass
class FileEpisode:
    domain: str
    initial: str
    steps: list[FileStep]


def _read(path: Path) -> str:
    if not path.is_file():
        raise InputError(f"{path}: missing")
    text = path.read_text().strip()
    if not text:
        raise InputError(f"{path}: empty")
    return text


def load_episode(domain_path: Path, folder: Path) -> FileEpisode:
    """The episode's files, checked: each problem parses against the domain; InputError names the
    file that is missing, empty or unreadable."""
    domain = _read(domain_path)
    initial = _read(folder / "initial_problem.pddl")
    steps = []
    for entry in sorted(folder.iterdir()):
        if not entry.is_dir() or not entry.name.startswith("time_"):
            continue
        match = STEP.fullmatch(entry.name)
        if match is None:
            raise InputError(f"{entry}: a step is time_NNNN_state_change or time_NNNN_goal")
        if match[2] == "state_change":
            steps.append(FileStep(int(match[1]), "change", _read(entry / "state_change.txt")))
        else:
            steps.append(FileStep(int(match[1]), "goal", _read(entry / "goal.txt"), _read(entry / "problem.pddl")))
    for path, text in [(folder / "initial_problem.pddl", initial)] + [
            (folder / f"time_{s.time:04d}_goal" / "problem.pddl", s.problem) for s in steps if s.problem]:
        try:
            parse_pddl(domain, text)
        except PddlError as error:
            raise InputError(f"{path}: {error}") from None
    if not steps:
        raise InputError(f"{folder}: no time_NNNN_state_change or time_NNNN_goal steps")
    return FileEpisode(domain, initial, sorted(steps, key=lambda s: (s.time, s.kind)))


# ---- the symbolic memory --------------------------------------------------------------------------
class SymbolicMemory:
    """A problem's objects and the atoms true in its :init, as a knowledge graph of triplets."""

    def __init__(self, domain: str, problem: str):
        parsed = parse_pddl(domain, problem)
        self.domain = domain
        self.objects = {o.name: o.type for o in parsed.all_objects}
        self.predicates = {f.name: [p.type for p in f.signature] for f in parsed.fluents if f.type.is_bool_type()}
        self.facts: set[Atom] = {(e.fluent().name, *(str(a) for a in e.args))
                                 for e, v in parsed.explicit_initial_values.items() if v.is_true()}

    def graph(self, names: set[str] | None = None) -> list[Triplet]:
        """The unary and binary facts as triplets (only those that name one of `names`, when given)."""
        kept = [f for f in sorted(self.facts) if len(f) in (2, 3) and (names is None or set(f[1:]) & names)]
        return [Triplet(subject=f[1], relation=f[0], object=f[2] if len(f) == 3 else True) for f in kept]

    @staticmethod
    def atom(t: Triplet) -> Atom:
        return (t.relation, t.subject) if t.object is True else (t.relation, t.subject, str(t.object))

    def errors(self, change: Change) -> list[str]:
        """What makes the change no change of this domain's state: the predicate, its arity, the
        object names, their types, and a removed fact must hold."""
        errors = []
        for t in [*change.remove, *change.add]:
            params = self.predicates.get(t.relation)
            if params is None or len(params) not in (1, 2):
                errors.append(f"{t}: no relation {t.relation!r}; the relations are "
                              f"{', '.join(n for n, p in self.predicates.items() if len(p) in (1, 2))}")
                continue
            args = [t.subject] if t.object is True else [t.subject, str(t.object)]
            if len(args) != len(params):
                errors.append(f"{t}: {t.relation} takes {len(params)} argument(s)"
                              + (" (its object is true)" if len(params) == 1 else ""))
                continue
            for name, wanted in zip(args, params):
                if name not in self.objects:
                    errors.append(f"{t}: no object {name!r}")
                elif not wanted.is_compatible(self.objects[name]):
                    errors.append(f"{t}: {name} is a {self.objects[name].name}, and {t.relation} needs a {wanted.name} "
                                  "there")
        if errors:
            return errors
        return [f"{t} is not in the graph, so it cannot be removed" for t in change.remove
                if self.atom(t) not in self.facts]

    def holdable(self, change: Change) -> Change:
        """The change without what no state of this domain can hold."""
        return Change(remove=[t for t in change.remove if not self.errors(Change(add=[t]))],
                      add=[t for t in change.add if not self.errors(Change(add=[t]))])

    def apply(self, change: Change) -> None:
        self.facts -= {self.atom(t) for t in change.remove}
        self.facts |= {self.atom(t) for t in change.add}

    def problem(self, goal: str, name: str = "from-memory") -> str:
        """A problem over the memory's objects and facts with `goal`."""
        domain_name = self.domain.split("(domain", 1)[1].split(")", 1)[0].strip()
        objects = "\n  ".join(f"{n} - {t.name}" for n, t in sorted(self.objects.items(), key=lambda o: o[1].name))
        init = "\n  ".join(f"({' '.join(f)})" for f in sorted(self.facts))
        return (f"(define (problem {name}) (:domain {domain_name})\n (:objects\n  {objects})\n"
                f" (:init\n  {init})\n (:goal {goal}))\n")


def domain_names(episode: FileEpisode) -> tuple[dict, dict]:
    """The predicates (name → parameter types) and the objects (name → type) of the episode's start."""
    memory = SymbolicMemory(episode.domain, episode.initial)
    return memory.predicates, memory.objects


def true_state(domain: str, problem: str) -> set[Atom]:
    return SymbolicMemory(domain, problem).facts


# ---- reading changes and requests -------------------------------------------------------------------
CHANGE_PROMPT = """You keep a robot's memory of a home as triplets (subject, relation, object): for a relation
of one argument (a property) the object is true. The relations, with the types they take:
{relations}
Objects: {objects}
The memory holds:
{graph}
A person tells the robot what changed. Answer with JSON: "remove", the triplets that are no longer true,
and "add", the triplets that are true now. Use only the relations and objects above."""
PICK_PROMPT = """A person tells a home robot what changed. Which of these objects does it speak of (what changed,
and where)? Choose from: {objects}. Answer with JSON: "objects"."""
GOAL_PROMPT = """You turn a request to a home robot into the goal of a PDDL problem of this domain. Use only the
domain's predicates and the objects listed. Answer JSON: {{"pddl": "(and ...)"}}.

Domain:
{domain}"""


class Picked(StrictModel):
    objects: list[str] = Field(max_length=8)


class GoalReply(StrictModel):
    pddl: str = Field(min_length=1)


def _readable(name: str) -> str:
    return name.replace("_", " ").replace("-", " ")


def _found(query: QueryGraph, names: list[str], embedder: Embedder, threshold: float, per_thing: int = 3) -> set[str]:
    """The object names most like each thing of the query (at least `threshold` similar)."""
    similarity = embedder.encode([t.words for t in query.things]) @ embedder.encode(list(map(_readable, names))).T
    return {names[i] for row in similarity for i in np.argsort(-row)[:per_thing] if row[i] >= threshold}


def read_change(sentence: str, memory: SymbolicMemory, policy: Policy, settings: TellSettings,
                embedder: Embedder | None, usage: LLMUsage) -> tuple[Change | None, list[str]]:
    """The change the model reads (verified unless the variant does not); its errors when none holds."""
    ask = CountingPolicy(policy, usage).asking

    names = sorted(memory.objects)
    picked: set[str] = set()
    said = [{"role": "user", "content": sentence}]
    if settings.context == "selected":
        schema = {"type": "object", "properties": {"objects": {"type": "array", "items": {"enum": names},
                                                               "maxItems": 8}}, "required": ["objects"]}
        choice = ask_validated(ask(schema), [{"role": "system", "content": PICK_PROMPT.format(
            objects=", ".join(names))}, *said], Picked.model_validate_json, settings.retries)
        picked = set(choice.objects) if choice else set()
    elif settings.context == "search" and embedder is not None:
        query = ask_validated(ask(QUERY_SCHEMA), [{"role": "system", "content": QUERY_PROMPT}, *said],
                              QueryGraph.model_validate_json, settings.retries)
        picked = _found(query, names, embedder, settings.match_threshold) if query else set()
    graph = memory.graph(picked) if picked else memory.graph()
    shown = sorted(picked | {x for t in graph for x in (t.subject, t.object) if isinstance(x, str)}) if picked \
        else names
    relations = "\n".join(f"{n}({', '.join(t.name for t in p)})" for n, p in memory.predicates.items() if len(p) in (1, 2))
    prompt = CHANGE_PROMPT.format(relations=relations, objects=", ".join(f"{n} ({memory.objects[n].name})" for n in shown),
                                  graph="\n".join(map(str, graph)))
    problems: list[str] = []

    def parse(text: str) -> Change:
        change = Change.model_validate_json(text)
        problems[:] = memory.errors(change)
        if settings.verify and problems:
            raise ValueError("; ".join(problems))
        return change

    schema = {"type": "object", "properties": {key: {"type": "array", "maxItems": 12, "items": {
        "type": "object", "properties": {"subject": {"type": "string"}, "relation": {"type": "string"},
                                         "object": {"type": ["string", "boolean"]}},
        "required": ["subject", "relation", "object"]}} for key in ("remove", "add")}, "required": ["remove", "add"]}
    change = ask_validated(ask(schema), [{"role": "system", "content": prompt}, *said], parse, settings.retries)
    if change is None:
        return None, problems or ["no readable change after the retries"]
    return (memory.holdable(change) if problems else change), []


def read_grounded(sentence: str, memory: SymbolicMemory, scene: EpisodeScene, skills: SkillPlanner, policy: Policy,
                  settings: TellSettings, embedder: Embedder, usage: LLMUsage) -> tuple[Change | None, list[str]]:
    """The stack's own grounded reading (planner.core.telling) on the home the memory describes, the
    change it reads put in the domain's predicates and verified against the domain as the others are."""
    robot = SimulatedRobot(scene.world(memory.facts), [], skills)
    result = read_told_change(sentence, robot.graph, skills, policy, settings, embedder, usage)
    if result.change is None:
        return None, result.errors or ["no readable change after the retries"]
    change = scene.in_domain(result.change)
    if problems := memory.errors(change):
        if settings.verify:
            return None, problems
        change = memory.holdable(change)
    return change, []


def plan_request(step: FileStep, memory: SymbolicMemory, policy: Policy, retries: int, timeout_s: float,
                 usage: LLMUsage) -> dict:
    """The model writes the goal; Fast Downward plans from the memory; the plan is checked against
    the true problem."""
    facts = "\n".join(f"({' '.join(f)})" for f in sorted(memory.facts))
    objects = ", ".join(f"{n} ({t.name})" for n, t in sorted(memory.objects.items()))
    messages = [{"role": "system", "content": GOAL_PROMPT.format(domain=memory.domain)},
                {"role": "user", "content": f"Objects: {objects}\nWhat the robot knows now:\n{facts}\n\n"
                                            f"Request: {step.text}"}]

    call = CountingPolicy(policy, usage).asking({"type": "object", "properties": {"pddl": {"type": "string"}},
                                                 "required": ["pddl"]})

    def parse(text: str) -> str:
        goal = GoalReply.model_validate_json(text).pddl
        parse_pddl(memory.domain, memory.problem(goal))  # PddlError is a ValueError: sent back to mend
        return goal

    goal = ask_validated(call, messages, parse, retries)
    if goal is None:
        return {"ok": False, "why": "no goal the domain can read"}
    found = plan_pddl(memory.domain, memory.problem(goal), "optimal", timeout_s)
    if found.status != "plan":
        return {"ok": False, "why": f"no plan from memory: {found.reason}", "goal": goal,
                "planner_seconds": round(found.seconds, 3)}
    wrong = validate_plan(memory.domain, step.problem, found.actions)
    return {"ok": not wrong, "why": wrong, "goal": goal, "plan": [f"{a}({', '.join(args)})" for a, args in found.actions],
            "planner_seconds": round(found.seconds, 3)}


def run(episode: FileEpisode, policy: Policy, variant: str, settings: TellSettings, embedder: Embedder | None,
        progress: Callable[[str], None], timeout_s: float = 30.0, grounding: Grounding | None = None) -> dict:
    """The episode told to a memory that starts as its initial problem: each change read and applied,
    and at each request the memory compared with the true state and a plan made from it. The grounded
    reading needs `grounding` and an embedder."""
    memory = SymbolicMemory(episode.domain, episode.initial)
    scene = None
    if settings.context == "grounded":
        if grounding is None or embedder is None:
            raise ValueError("the grounded reading needs a scene mapping, the skill library and an embedder")
        scene = EpisodeScene(grounding.mapping, memory.predicates, memory.objects, grounding.where)
    changes, requests = [], []
    for step in episode.steps:
        usage = LLMUsage()
        started = time.monotonic()
        if step.kind == "change":
            try:
                change, errors = read_change(step.text, memory, policy, settings, embedder, usage) if scene is None \
                    else read_grounded(step.text, memory, scene, grounding.skills, policy, settings, embedder, usage)
            except PolicyError as error:  # the server failed: this update is lost, the episode goes on
                change, errors = None, [f"the LLM failed: {error}"]
            if change is not None:
                memory.apply(change)
            changes.append({"time": step.time, "sentence": step.text, "applied": change is not None, "errors": errors,
                            "llm_calls": usage.calls, "tokens": usage.tokens,
                            "seconds": round(time.monotonic() - started, 2)})
            continue
        truth = true_state(episode.domain, step.problem)
        state_right = memory.facts == truth
        try:
            planned = plan_request(step, memory, policy, settings.retries, timeout_s, usage)
        except PolicyError as error:
            planned = {"ok": False, "why": f"the LLM failed: {error}"}
        requests.append({"time": step.time, "request": step.text, "state_right": state_right,
                         "facts_wrong": len(memory.facts ^ truth), **planned, "llm_calls": usage.calls,
                         "tokens": usage.tokens, "seconds": round(time.monotonic() - started, 2)})
        progress(f"      {variant:<16} t={step.time}: memory {'=' if state_right else '≠'} home "
                 f"({len(memory.facts ^ truth)} facts differ), plan {'ok' if planned['ok'] else 'FAIL'}")
    return {"variant": variant, "changes": changes, "requests": requests}


def summarize(runs: list[dict]) -> dict:
    rows = {}
    for run in runs:
        changes, requests = run["changes"], run["requests"]
        rows[run["variant"]] = {
            "changes": len(changes), "applied": sum(c["applied"] for c in changes),
            "requests": len(requests),
            "state_right": round(sum(r["state_right"] for r in requests) / max(len(requests), 1), 3),
            "plan_success": round(sum(r["ok"] for r in requests) / max(len(requests), 1), 3),
            "tokens_per_update": round(statistics.mean(c["tokens"] for c in changes)) if changes else 0,
            "tokens_per_plan": round(statistics.mean(r["tokens"] for r in requests)) if requests else 0}
    return rows


def report(results: dict) -> str:
    lines = ["# Lifelong memory benchmark, episode from files", "", f"Command: `{results.get('command')}`  ",
             f"Domain {results['domain']}, episode {results['episode']}; {results['llm'].get('model', '')}", "",
             "| variant | changes applied | memory = home at requests | plans right | tokens / update | tokens / plan |",
             "|---|---|---|---|---|---|"]
    for variant, row in results["summary"].items():
        lines.append(f"| {variant} | {row['applied']}/{row['changes']} | {row['state_right']:.0%} "
                     f"| {row['plan_success']:.0%} ({row['requests']}) | {row['tokens_per_update']} "
                     f"| {row['tokens_per_plan']} |")
    last = " ".join(f"{v}: memory right {r['state_right']:.0%}, plans {r['plan_success']:.0%};"
                    for v, r in results["summary"].items())
    return "\n".join(lines + ["", last]) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["summary"])
    fig, axis = plt.subplots(figsize=(8, 4))
    x = np.arange(len(names))
    for shift, key, label in ((-0.2, "state_right", "memory = home at requests"), (0.2, "plan_success", "plans")):
        bars = axis.bar(x + shift, [results["summary"][n][key] * 100 for n in names], 0.4, label=label)
        axis.bar_label(bars, fmt="%.0f%%", fontsize=8)
    axis.set_xticks(list(x), names)
    axis.set_ylim(0, 115)
    axis.set_ylabel("%")
    axis.legend(fontsize=8, ncol=2, loc="upper center")
    axis.set_title(f"planner bench memory, episode {Path(results['episode']).name}: {results['llm'].get('model', '')}",
                   fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
