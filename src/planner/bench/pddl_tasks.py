"""PDDL task benchmark (LLM+P): the model turns a task told in words into a PDDL problem (or only
its goal), Fast Downward plans, and the plan is checked against a ground-truth problem.

Files: a domain file, and a folder with `NAME.nl` (the task in words) and `NAME.pddl` (the
ground-truth problem) per task. `planner bench generate pddl` writes household task sets of this
kind from the skill library's domain and generated homes; any domain and tasks laid out like this
run too.

Success: the plan found for the model's problem is valid for the ground-truth problem (it reaches
its goal from its initial state, by unified-planning's plan validator). Optimal: as short as the
optimal plan of the ground-truth problem.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from planner.core.errors import InputError, PolicyError
from planner.core.files import StrictModel
from planner.core.planning.classical import PddlError, parse_pddl, plan_pddl, validate_plan
from planner.core.planning.pddl import Domain, goal_errors, make_domain, make_problem, without_surplus_closing
from planner.core.ports import Policy
from planner.core.skills import SkillPlanner
from planner.core.worldgen import generate_world
from planner.sim.in_process import SimulatedRobot

Write = Literal["problem", "goal"]
EXAMPLE_SEED = 999_999  # the worked example's home: outside the development and test ranges
MAX_REPAIRS = 2


# ---- generating household task sets -------------------------------------------------------------
def _goal(scene, rng: random.Random) -> tuple[str, str]:
    """A goal over a home, as PDDL and in words."""
    objects = [o for o in scene.objects() if scene.support(o.id)]
    furniture = scene.furniture()
    openable = [f for f in furniture if f.state]
    kinds = ["move", "two", "fetch"] + (["inside", "open"] if openable else [])
    kind = rng.choice(kinds)
    first = rng.choice(objects)
    elsewhere = [f for f in furniture if f.id != scene.support(first.id)[1]]
    if kind == "move":
        target = rng.choice(elsewhere)
        return f"(on {first.id} {target.id})", f"{first.id} should end up on {target.id}."
    if kind == "two":
        second = rng.choice([o for o in objects if o.id != first.id])
        target = rng.choice(elsewhere)
        return (f"(and (on {first.id} {target.id}) (on {second.id} {target.id}))",
                f"Both {first.id} and {second.id} should be on {target.id} in the end.")
    if kind == "fetch":
        room = rng.choice([r for r in scene.rooms() if r != first.room] or scene.rooms())
        return f"(and (held {first.id}) (at {room}))", f"The robot should hold {first.id} and be in the {room}."
    box = rng.choice(openable)
    if kind == "inside":
        candidates = [o for o in objects if scene.support(o.id)[1] != box.id] or objects
        thing = rng.choice(candidates)
        return (f"(and (inside {thing.id} {box.id}) (not (is_open {box.id})))",
                f"{thing.id} should be put inside {box.id}, and {box.id} closed afterwards.")
    wanted = "closed" if box.state == "open" else "open"
    formula = f"(not (is_open {box.id}))" if wanted == "closed" else f"(is_open {box.id})"
    return formula, f"{box.id} should be {wanted}."


def describe(problem_types: dict[str, str], init: list[str], goal_words: str) -> str:
    """The task in words: what there is, how things stand, and what is wanted."""
    by_type: dict[str, list[str]] = {}
    for name, kind in problem_types.items():
        by_type.setdefault(kind, []).append(name)
    kinds = {"room": "Rooms", "furniture": "Furniture", "openable": "Furniture with a door or drawer",
             "person": "People", "item": "Things", "arm": "The robot's arms"}
    lines = [f"{label}: {', '.join(sorted(by_type[kind]))}." for kind, label in kinds.items() if by_type.get(kind)]
    words = {"at": "The robot is at {0}.", "on": "{0} is on {1}.", "inside": "{0} is inside {1}.",
             "is_open": "{0} is open.", "holding": "The {0} arm holds {1}.", "held": "",
             "hand_empty": "The {0} arm is empty.", "location_known": "", "person_present": "{0} is here.",
             "payload": "", "within_workspace": "", "opening_within_workspace": ""}
    facts = [fact[1:-1].split() for fact in init]
    lines += [words[name].format(*args) for name, *args in facts if words.get(name)]
    lifted = {(args[0], args[1]) for name, *args in facts if name == "payload"}
    known = {args[0] for name, *args in facts if name == "location_known"}
    items, arms = by_type.get("item", []), by_type.get("arm", [])
    heavy = sorted({i for i in items for a in arms if (i, a) not in lifted})
    lines.append("Every thing can be lifted by either arm." if not heavy else
                 f"Every thing can be lifted by either arm except {', '.join(heavy)}.")
    workable = {args[0] for name, *args in facts if name == "within_workspace"}
    furniture = [*by_type.get("furniture", []), *by_type.get("openable", [])]
    if out_of_reach := sorted(set(furniture) - workable):
        lines.append(f"The arms cannot work on the top of {', '.join(out_of_reach)} (too high or too low).")
    opening = {args[0] for name, *args in facts if name == "opening_within_workspace"}
    if shut_out := sorted(set(by_type.get("openable", [])) - opening):
        lines.append(f"The arms cannot reach the door or drawer of {', '.join(shut_out)}.")
    if set(items) - known:
        lines.append(f"Where {', '.join(sorted(set(items) - known))} is, is not known.")
    open_things = {args[0] for name, *args in facts if name == "is_open"}
    closed = sorted(set(by_type.get("openable", [])) - open_things)
    if closed:
        lines.append(f"{', '.join(closed)} {'is' if len(closed) == 1 else 'are'} closed.")
    lines.append(f"Goal: {goal_words}")
    return "\n".join(lines) + "\n"


def _init_facts(problem_text: str) -> list[str]:
    init = problem_text.split("(:init", 1)[1].split("(:goal", 1)[0]
    return [f"({atom.strip()})" for atom in re.findall(r"\(([^()]+)\)", init)]


def make_task(skills: SkillPlanner, domain: Domain, seed: int) -> tuple[str, str]:
    """One task of a generated home: (words, ground-truth problem)."""
    rng = random.Random(seed)
    world = generate_world(rng.choice([2, 3]), rng.randint(5, 8), skills.robot, seed)
    scene = SimulatedRobot(world.with_robot_at("", skills.robot.standoff_m), [], skills).graph
    goal, goal_words = _goal(scene, rng)
    problem = make_problem(domain, skills, scene, goal, relevant_only=False, name=f"task-{seed}")
    return describe(problem.types, _init_facts(problem.text), goal_words), problem.text


def generate(skills: SkillPlanner, seeds: list[int], out: Path, progress: Callable[[str], None]) -> Path:
    """A domain file and one NAME.nl + NAME.pddl per seed; the domain's path."""
    domain = make_domain(skills.library)
    out.mkdir(parents=True, exist_ok=True)
    (out / "domain.pddl").write_text(domain.text)
    tasks = out / "tasks"
    tasks.mkdir(exist_ok=True)
    for number, seed in enumerate(seeds, 1):
        words, problem = make_task(skills, domain, seed)
        (tasks / f"task-{seed}.nl").write_text(words)
        (tasks / f"task-{seed}.pddl").write_text(problem)
        # Counts only: nothing of a task to read off the progress line.
        progress(f"[{number}/{len(seeds)}] task-{seed}: {problem.count(chr(10))} lines of PDDL")
    return out / "domain.pddl"


# ---- running ----------------------------------------------------------------------------------
class ProblemReply(StrictModel):
    pddl: str = Field(min_length=1, description="the PDDL problem, or only its goal formula")


REPLY_SCHEMA = {"type": "object", "properties": {"pddl": {"type": "string", "minLength": 1}}, "required": ["pddl"]}
SYSTEM = ("You turn a household robot's task, told in words, into PDDL for this domain. Use only the domain's "
          "predicates and the names the task gives. Answer JSON: {{\"pddl\": \"...\"}}.\n\nDomain:\n{domain}")
ASK = {"problem": "Write the whole PDDL problem (define (problem ...) (:domain {domain_name}) (:objects ...) "
                  "(:init ...) (:goal ...)) for this task:\n{task}",
       "goal": "Write only the PDDL goal formula, e.g. (and (on a b) (not (is_open c))), for this task:\n{task}"}


def _goal_of(problem_text: str) -> str:
    return problem_text.split("(:goal", 1)[1].strip().removesuffix(")").strip()


def _with_goal(problem_text: str, goal: str) -> str:
    return problem_text.split("(:goal", 1)[0] + f"(:goal {goal}))\n"


def messages(domain_text: str, domain_name: str, write: Write, example: tuple[str, str], task: str) -> list[dict]:
    """The prompt: the domain, one worked example of our own home, then the task."""
    shown = example[1] if write == "problem" else _goal_of(example[1])
    return [{"role": "system", "content": SYSTEM.format(domain=domain_text)},
            {"role": "user", "content": ASK[write].format(domain_name=domain_name, task=example[0])},
            {"role": "assistant", "content": json.dumps({"pddl": shown})},
            {"role": "user", "content": ASK[write].format(domain_name=domain_name, task=task)}]


def _problem_errors(domain_text: str, truth: str, types: dict[str, str], write: Write, text: str) -> tuple[str, str]:
    """(the problem to plan for, what is wrong with the reply: "" if nothing); `types`: the ground
    truth's objects, which a goal may name."""
    problem = text
    if write == "goal":
        goal = without_surplus_closing(text)
        problem = _with_goal(truth, goal)
        if errors := goal_errors(goal, types):
            return problem, "; ".join(errors)
    try:
        parse_pddl(domain_text, problem)
    except PddlError as error:
        return problem, str(error)
    return problem, ""


def _object_types(domain_text: str, problem_text: str) -> dict[str, str]:
    """Each object of a problem file with its type, as unified-planning reads them."""
    return {o.name: o.type.name for o in parse_pddl(domain_text, problem_text).all_objects}


def run_task(policy: Policy, domain_text: str, domain_name: str, write: Write, example: tuple[str, str],
             task: str, truth: str, timeout_s: float) -> dict:
    started = time.monotonic()
    conversation = messages(domain_text, domain_name, write, example, task)
    types = _object_types(domain_text, truth) if write == "goal" else {}
    calls = prompt_tokens = completion_tokens = 0
    result: dict = {}
    for _ in range(MAX_REPAIRS + 1):
        try:
            reply = policy.complete(conversation, REPLY_SCHEMA)
        except PolicyError as error:
            result = {"outcome": "llm_error", "reason": str(error)}
            break
        calls += 1
        prompt_tokens += reply.prompt_tokens
        completion_tokens += reply.completion_tokens
        try:
            text = ProblemReply.model_validate_json(reply.text).pddl
        except ValueError as error:
            problem, wrong = "", f"the reply is not {{\"pddl\": \"...\"}}: {error}"
        else:
            problem, wrong = _problem_errors(domain_text, truth, types, write, text)
        if not wrong:
            result = _plan_and_check(domain_text, problem, truth, timeout_s)
            break
        result = {"outcome": "invalid_pddl", "reason": wrong}
        conversation = [*conversation, {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": f"That does not work: {wrong}. Write it again."}]
    return {**result, "llm_calls": calls, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "seconds": round(time.monotonic() - started, 2)}


def _plan_and_check(domain_text: str, problem: str, truth: str, timeout_s: float) -> dict:
    found = plan_pddl(domain_text, problem, "optimal", timeout_s)
    if found.status != "plan":
        return {"outcome": found.status, "reason": found.reason}
    wrong = validate_plan(domain_text, truth, found.actions)
    reference = plan_pddl(domain_text, truth, "optimal", timeout_s)
    steps = [f"{name}({', '.join(args)})" for name, args in found.actions]
    if wrong:
        return {"outcome": "wrong_plan", "reason": wrong, "plan": steps}
    optimal = reference.status == "plan" and len(found.actions) <= len(reference.actions)
    return {"outcome": "success", "optimal": optimal, "plan": steps, "reference_steps": len(reference.actions)}


def load_tasks(folder: Path) -> list[tuple[str, str, str]]:
    """(name, words, ground-truth problem) for each NAME.nl with its NAME.pddl."""
    tasks = []
    for words in sorted(folder.glob("*.nl")):
        truth = words.with_suffix(".pddl")
        if not truth.exists():
            raise InputError(f"{words}: no ground-truth problem {truth.name} beside it")
        tasks.append((words.stem, words.read_text(), truth.read_text()))
    if not tasks:
        raise InputError(f"{folder}: no NAME.nl tasks")
    return tasks


def run(policy: Policy, domain_path: Path, tasks_dir: Path, write: Write, skills: SkillPlanner | None,
        example: tuple[str, str] | None, timeout_s: float, progress: Callable[[str], None]) -> dict:
    """Every task of the folder; the worked example is a home of our own when none is given."""
    domain_text = domain_path.read_text()
    domain_name = domain_text.split("(domain", 1)[1].split(")", 1)[0].strip() if "(domain" in domain_text else ""
    if example is None:
        if skills is None:
            raise InputError("a worked example is needed: give one, or a skill library to make one")
        example = make_task(skills, make_domain(skills.library), EXAMPLE_SEED)
    episodes = []
    tasks = load_tasks(tasks_dir)
    for number, (name, words, truth) in enumerate(tasks, 1):
        episode = {"task": name, **run_task(policy, domain_text, domain_name, write, example, words, truth, timeout_s)}
        episodes.append(episode)
        progress(f"[{number}/{len(tasks)}] {name}: {episode['outcome']} ({episode['llm_calls']} calls, "
                 f"{episode['seconds']:.1f} s)")
    return {"write": write, "domain": str(domain_path), "tasks": str(tasks_dir), "episodes": episodes,
            "summary": summarize(episodes)}


def summarize(episodes: list[dict]) -> dict:
    outcomes: dict[str, int] = {}
    for episode in episodes:
        outcomes[episode["outcome"]] = outcomes.get(episode["outcome"], 0) + 1
    successes = [e for e in episodes if e["outcome"] == "success"]
    return {"tasks": len(episodes), "success_rate": round(len(successes) / len(episodes), 3) if episodes else 0.0,
            "optimal_rate": round(sum(e["optimal"] for e in successes) / len(episodes), 3) if episodes else 0.0,
            "outcomes": outcomes,
            "mean_llm_calls": round(statistics.mean(e["llm_calls"] for e in episodes), 2) if episodes else 0.0,
            "mean_tokens": round(statistics.mean(e["prompt_tokens"] + e["completion_tokens"] for e in episodes))
            if episodes else 0,
            "median_seconds": round(statistics.median(e["seconds"] for e in episodes), 2) if episodes else 0.0}


def report(results: dict) -> str:
    s = results["summary"]
    lines = ["# PDDL tasks (LLM+P)", "", f"Command: `{results.get('command')}`  ",
             f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores; LLM {results['llm']['model']}; "
             f"the model writes the {results['write']}", "",
             "| tasks | success | optimal | LLM calls | tokens | median s |", "|---|---|---|---|---|---|",
             f"| {s['tasks']} | {s['success_rate']:.0%} | {s['optimal_rate']:.0%} | {s['mean_llm_calls']} | "
             f"{s['mean_tokens']} | {s['median_seconds']} |", "", "Outcomes: "
             + ", ".join(f"{k} {v}" for k, v in sorted(s["outcomes"].items())), ""]
    failed = [e for e in results["episodes"] if e["outcome"] != "success"]
    if failed:
        lines += ["## Failed tasks", ""] + [f"- **{e['task']}** ({e['outcome']}): {e.get('reason', '')[:200]}"
                                            for e in failed] + [""]
    lines.append(f"success rate: {s['success_rate']:.1%}")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outcomes = results["summary"]["outcomes"]
    order = [k for k in ("success", "wrong_plan", "no_plan", "timeout", "invalid_pddl", "error", "llm_error")
             if k in outcomes]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(order, [outcomes[k] for k in order], color=["#3a7" if k == "success" else "#c55" for k in order])
    ax.set_ylabel("tasks")
    ax.set_title(f"PDDL tasks, the model writes the {results['write']}\n"
                 f"{results['summary']['success_rate']:.0%} success ({results['llm']['model']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
