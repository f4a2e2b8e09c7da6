"""`planner bench fleet`: several robots look around a generated home while people move things,
then answer yes/no questions about it ("Is there a mug in the kitchen?"); majority vote, debate
and central answer models turn their answers into one, with and without a robot that lies.

Homes come from `planner world generate`'s generator at several sizes; the questions and their
truth come from the simulated home at the time they are asked: as many yes as no, the no ones
about a thing the home has but not in that room, and first of all those whose answer changed after
some robot looked (a thing moved in or out). Which seeds are development data and which test data:
planner.bench.seeds.
"""

from __future__ import annotations

import functools
import json
import random
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from planner.core.answer_model import (
    FEATURE_SETS,
    LEARNERS,
    RULE_TITLES,
    RULES,
    CentralAnswerModel,
    Example,
    Question,
    RobotAnswer,
    TrainingSet,
    cross_validate,
    example_record,
    home_examples,
    last_to_look,
    majority_vote,
)
from planner.core.errors import InputError, PolicyError
from planner.core.files import write_json_atomic
from planner.core.fleet import Debate, FleetAnswerer, ModelGuided, NearestUnlooked
from planner.core.ports import Policy
from planner.core.robot_profile import RobotProfile
from planner.core.worldgen import generate_world
from planner.sim.exploration import LOOK_S, Explorer, Home, Move

OBJECTS_PER_ROOM = 6
FIELDS_OF_VIEW = (60.0, 90.0, 120.0)   # robot i has the i-th (cycled): they see different shares of a room
ROOM_S = 3 * LOOK_S + 15.0             # a room's looks and the drive to the next, roughly: sizes the budgets
MOVES_PER_OBJECT = 0.25                # people move about a quarter of the things while the robots look
CONDITIONS = ("honest", "malicious")   # malicious: the first robot answers the opposite of what it believes
# Answer models are named by where they learnt (cross-validated in the home, or trained on other
# homes' questions beforehand, as a robot ships with one), learner and feature set.
PER_HOME, OTHER_HOMES = "cam_", "shipped_"
SUFFIXES = {"answers": "", "robot_state": "_robot_state", "pooled": "_pooled"}
FEATURE_TITLES = {"answers": "paper features", "robot_state": "+ robot state", "pooled": "pooled"}


def aggregator(learner: str, feature_set: str, where: str = PER_HOME) -> str:
    return f"{where}{learner}{SUFFIXES[feature_set]}"


def in_condition(answers: tuple[RobotAnswer, ...], condition: str) -> tuple[RobotAnswer, ...]:
    """The answers as given in a condition: with a malicious robot, the first one's inverted."""
    return answers if condition == "honest" else (answers[0].inverted(), *answers[1:])


def train_elsewhere(training: TrainingSet, learners: Sequence[str], seed: int = 0) -> dict[str, dict[str, CentralAnswerModel]]:
    """Per condition, an answer model per learner and feature set trained on other homes' questions
    (the malicious condition's with their first robot inverted too). Raises InputError when they
    are too few."""
    return {condition: {aggregator(learner, feature_set, OTHER_HOMES): CentralAnswerModel(learner, feature_set, seed).fit(
        [Example(e.question, in_condition(e.answers, condition)) for e in training.examples])
        for learner in learners for feature_set in FEATURE_SETS} for condition in CONDITIONS}


@dataclass
class FleetHome:
    seed: int
    rooms: int
    home: Home
    explorers: list[Explorer]
    question_s: float                  # when the questions are asked


def make_fleet_home(seed: int, rooms: int, robots: int, budget_share: float, profile: RobotProfile) -> FleetHome:
    """A generated home of `rooms` rooms, `robots` explorers with their own start, budget (about
    `budget_share` of the rooms' worth of time) and camera, and people's moves until the questions."""
    if robots < 1:
        raise InputError(f"robots: {robots}; a fleet needs at least one")
    world = generate_world(rooms, rooms * OBJECTS_PER_ROOM, profile, seed)
    rng = random.Random(seed * 7919 + rooms)
    names = [room.name for room in world.rooms]
    starts = rng.sample(names, robots) if robots <= len(names) else [rng.choice(names) for _ in range(robots)]
    explorers = [Explorer(f"robot_{index + 1}", start, budget_share * len(names) * ROOM_S * rng.uniform(0.7, 1.3),
                          FIELDS_OF_VIEW[index % len(FIELDS_OF_VIEW)]) for index, start in enumerate(starts)]
    question_s = 1.2 * max(e.budget_s for e in explorers)
    room_of = {f.id: world.room_at(f.center[0], f.center[1]) for f in world.furniture}
    moves = []
    for _ in range(max(1, round(MOVES_PER_OBJECT * len(world.objects)))):
        obj = rng.choice(world.objects)
        elsewhere = [f.id for f in world.furniture if room_of[f.id] != room_of[obj.placed_on]]
        if elsewhere:
            moves.append(Move(round(rng.uniform(0, question_s), 1), obj.id, rng.choice(elsewhere)))
    return FleetHome(seed, rooms, Home(world, profile, moves), explorers, question_s)


def make_questions(home: Home, looked: Sequence[dict[str, float]], question_s: float, count: int,
                   rng: random.Random) -> list[Question]:
    """Up to `count` questions, as many yes as no. `looked`: each robot's room -> time it last
    looked there; a question is `moved` when its answer then differs from its answer now."""
    now = home.presence_at(question_s)
    rooms = sorted(now)

    @functools.cache     # asked again for the same pair while sorting and pairing
    def moved(label: str, room: str) -> bool:
        return any(room in seen and (label in home.presence_at(seen[room])[room]) != (label in now[room])
                   for seen in looked)

    yes = [(label, room) for room in rooms for label in sorted(now[room])]
    rng.shuffle(yes)
    yes.sort(key=lambda pair: not moved(*pair))       # changed answers first, the rest at random
    questions: list[Question] = []
    for label, room in yes:
        if len(questions) + 2 > count:
            break
        lacking = [other for other in rooms if label not in now[other]]
        if not lacking:
            continue
        changed = [other for other in lacking if moved(label, other)]
        other = rng.choice(changed or lacking)
        questions += [Question(label, room, True, moved(label, room)), Question(label, other, False, moved(label, other))]
    rng.shuffle(questions)
    return questions


def _accuracy(predicted: Sequence[bool], questions: Sequence[Question]) -> float:
    return round(100 * statistics.fmean(p == q.truth for p, q in zip(predicted, questions)), 2) if questions else 0.0


EVIDENCE = ("seen there", "looked, not seen", "nobody looked")
ROBOT_EVIDENCE = ("saw it there", "looked, did not see it", "never looked")   # EVIDENCE, said of one robot


def what_the_fleet_knew(answers: Sequence[RobotAnswer]) -> str:
    """Whether some robot saw the thing in the room, else whether some robot looked into it."""
    if any(a.saw for a in answers):
        return EVIDENCE[0]
    return EVIDENCE[1] if any(a.looked for a in answers) else EVIDENCE[2]


CHANGE = ("unchanged", "changed")   # whether a question's answer changed after some robot looked


def _tally(predicted: Sequence[bool], questions: Sequence[Question], kinds: Sequence[str], order: Sequence[str]
           ) -> dict[str, list[int]]:
    """[right, questions] per kind of question, of `order` (`kinds`: each question's)."""
    counts = {kind: [0, 0] for kind in order}
    for final, question, kind in zip(predicted, questions, kinds):
        counts[kind][0] += final == question.truth
        counts[kind][1] += 1
    return counts


def evidence_key(answers: Sequence[RobotAnswer]) -> tuple:
    """What the fleet saw of a question, in a few facts: whether the robots that looked into the room
    last saw the thing (None when none looked), whether any robot saw it there, whether any saw one
    in another room, and how many looked."""
    last = last_to_look(answers)
    return (any(a.saw for a in last) if last else None, any(a.saw for a in answers),
            any(a.saw_elsewhere for a in answers), sum(a.looked for a in answers))


def evidence_bound(examples: Sequence[Example]) -> float:
    """The accuracy of the best rule that reads only `evidence_key`, fitted to these very questions
    (each kind of evidence answered by its commoner truth): how far what the robots saw goes.
    Optimistic, as it is scored where it was fitted."""
    truths: dict[tuple, Counter] = defaultdict(Counter)
    for example in examples:
        truths[evidence_key(example.answers)][example.question.truth] += 1
    right = sum(max(counts.values()) for counts in truths.values())
    return round(100 * right / len(examples), 2) if examples else 0.0


def _agreement(finals: Sequence[bool], answers: Sequence[Sequence[RobotAnswer]]) -> dict[str, float]:
    """Per robot: the share of questions where its answer is the final one."""
    robots = [a.robot for a in answers[0]]
    return {robot: round(100 * statistics.fmean(final == row[i].yes for final, row in zip(finals, answers)), 2)
            for i, robot in enumerate(robots)}


def run_home(fleet: FleetHome, policy: Policy, explore: str, questions: int, debate_questions: int,
             learners: Sequence[str], confidence: bool, progress: Callable[[str], None],
             shipped: dict[str, dict[str, CentralAnswerModel]] | None = None) -> dict:
    """Explore, ask, answer, aggregate: one home's row of results."""
    rooms = [room.name for room in fleet.home.world.rooms]
    started = time.monotonic()
    chooser = ModelGuided(policy, rooms) if explore == "model" else NearestUnlooked()
    memories = [fleet.home.explore(explorer, chooser) for explorer in fleet.explorers]
    explore_s = time.monotonic() - started
    asked = make_questions(fleet.home, [m.looked for m in memories], fleet.question_s, questions,
                           random.Random(fleet.seed * 31 + fleet.rooms))
    progress(f"  home {fleet.seed}, {fleet.rooms} rooms: the robots looked into "
             f"{'/'.join(str(len(m.looked)) for m in memories)} rooms; {len(asked)} questions "
             f"({sum(q.moved for q in asked)} changed after a robot looked)")
    answerer = FleetAnswerer(policy, rooms, confidence)
    started = time.monotonic()
    by_robot = []
    for memory in memories:   # one robot's questions in a row: its memory is a prompt prefix the server keeps
        by_robot.append([answerer.answer(memory, question, fleet.question_s) for question in asked])
        right = sum(a.yes == q.truth for a, q in zip(by_robot[-1], asked))
        progress(f"  {memory.robot} answered {len(asked)} ({right} right) in {time.monotonic() - started:.0f} s")
    answer_s = time.monotonic() - started
    honest = [tuple(robot[i] for robot in by_robot) for i in range(len(asked))]
    row: dict = {"seed": fleet.seed, "rooms": fleet.rooms, "objects": len(fleet.home.world.objects),
                 "moves": len(fleet.home.moves), "questions": len(asked), "moved_questions": sum(q.moved for q in asked),
                 "robots": [{"name": e.name, "start": e.start_room, "budget_s": round(e.budget_s), "fov_deg": e.fov_deg,
                             "rooms_looked": len(m.looked), "things_seen": sum(len(s) for s in m.seen.values())}
                            for e, m in zip(fleet.explorers, memories)],
                 "explore_s": round(explore_s, 2),
                 "explore_llm_calls": chooser.policy.usage.calls if isinstance(chooser, ModelGuided) else 0,
                 "answer_s_per_question": round(answer_s / max(1, len(asked)), 3),
                 "answer_llm_calls": answerer.usage.calls, "conditions": {},
                 # What answer models for other homes learn from (`--train-on`).
                 "examples": [example_record(Example(q, a)) for q, a in zip(asked, honest)]}
    for condition in CONDITIONS:
        answers = [in_condition(answer, condition) for answer in honest]
        scored = score(asked, answers, fleet.seed, learners, (shipped or {}).get(condition, {}))
        if debate_questions:
            scored["debate"] = _debate(fleet, memories, rooms, asked[:debate_questions], answers, policy, confidence,
                                       progress)
        row["conditions"][condition] = scored
    return row


def score(asked: Sequence[Question], answers: Sequence[tuple[RobotAnswer, ...]], seed: int, learners: Sequence[str],
          shipped: dict[str, CentralAnswerModel]) -> dict:
    """Each robot, the rules (vote, latest look), answer models cross-validated in the home (seeded by it) and those
    trained elsewhere (`shipped`) on one home's questions in one condition; no model is asked."""
    result: dict = {"robots": {a.robot: _accuracy([row[i].yes for row in answers], asked)
                               for i, a in enumerate(answers[0])}}
    for key in ("aggregators", "agreement", "by_evidence", "by_change", "seconds_per_question", "importance"):
        result[key] = {}
    fleet_knew = [what_the_fleet_knew(row) for row in answers]
    changed = [CHANGE[q.moved] for q in asked]

    def record(name: str, predicted: Sequence[bool]) -> None:
        result["aggregators"][name] = _accuracy(predicted, asked)
        result["agreement"][name] = _agreement(predicted, answers)
        result["by_evidence"][name] = _tally(predicted, asked, fleet_knew, EVIDENCE)
        result["by_change"][name] = _tally(predicted, asked, changed, CHANGE)

    for name, rule in RULES.items():
        record(name, [rule(row) for row in answers])
        result["seconds_per_question"][name] = 0.0
    examples = [Example(q, row) for q, row in zip(asked, answers)]
    for learner in learners:
        for feature_set in FEATURE_SETS:
            name = aggregator(learner, feature_set)
            started = time.monotonic()
            try:
                fitted = cross_validate(examples, learner, feature_set, seed=seed)
            except InputError as error:
                result.setdefault("skipped", {})[name] = str(error)
                continue
            result["seconds_per_question"][name] = round((time.monotonic() - started) / len(asked), 4)
            record(name, fitted.predictions)
            result["importance"][name] = fitted.importance
    for name, model in shipped.items():
        record(name, model.predict(examples))
    return result


def _debate(fleet: FleetHome, memories, rooms, sample: Sequence[Question], answers: Sequence[tuple[RobotAnswer, ...]],
            policy: Policy, confidence: bool, progress) -> dict:
    """The robots debate the first questions; the vote on the same questions beside it."""
    debate = Debate(policy, rooms, confidence=confidence)
    started = time.monotonic()
    finals = []
    for number, (question, row) in enumerate(zip(sample, answers), 1):
        progress(f"  debate {number}/{len(sample)}: {question.text}")
        try:
            finals.append(debate.decide(question, memories, row, fleet.question_s).answer)
        except PolicyError as error:   # the server failed: this question's debate is lost, the run goes on
            progress(f"  debate on {question.text!r} failed: {error}")
            finals.append(majority_vote(row))
    return {"questions": len(sample), "accuracy": _accuracy(finals, sample),
            "vote_accuracy_same_questions": _accuracy([majority_vote(row) for row in answers[:len(sample)]], sample),
            "llm_calls": debate.usage.calls,
            "seconds_per_question": round((time.monotonic() - started) / max(1, len(sample)), 2)}


def rescore(results: dict, learners: Sequence[str], shipped: dict[str, dict[str, CentralAnswerModel]],
            progress: Callable[[str], None]) -> dict:
    """A finished run's homes scored again from the questions and answers it kept, without the
    model: answer models learnt since, or trained on other homes (`shipped`), compared on the very
    answers the robots gave. A debate's result is kept as it was. Raises InputError naming the
    home whose questions cannot be read."""
    homes = []
    for number, home in enumerate(results.get("homes", []), 1):
        examples = home_examples(home, f"home {number}")
        if not examples:
            raise InputError(f"home {number}: no questions kept (only runs that keep them, under \"examples\", "
                             "can be scored again)")
        asked = [e.question for e in examples]
        row = {**home, "conditions": {}}
        for condition in CONDITIONS:
            answers = [in_condition(e.answers, condition) for e in examples]
            row["conditions"][condition] = score(asked, answers, home["seed"], learners, shipped.get(condition, {}))
            if debate := home["conditions"].get(condition, {}).get("debate"):
                row["conditions"][condition]["debate"] = debate
        homes.append(row)
        progress(f"[{number:>3}/{len(results['homes'])}] seed {home['seed']} {home['rooms']:>2} rooms scored again")
    return {**results, "homes": homes, "complete": results.get("complete", False), "summary": summarize(homes)}


def summarize(homes: list[dict]) -> dict:
    """Per home size and condition: mean and sd over seeds of each aggregator's accuracy."""
    summary: dict = {}
    for size in sorted({h["rooms"] for h in homes}):
        rows = [h for h in homes if h["rooms"] == size]
        summary[str(size)] = {}
        for condition in CONDITIONS:
            names = sorted({n for h in rows for n in h["conditions"][condition]["aggregators"]})
            cell: dict = {}
            for name in names:
                values = [h["conditions"][condition]["aggregators"][name] for h in rows
                          if name in h["conditions"][condition]["aggregators"]]
                cell[name] = {"mean": round(statistics.fmean(values), 2),
                              "sd": round(statistics.pstdev(values), 2), "homes": len(values)}
            debates = [h["conditions"][condition]["debate"] for h in rows if "debate" in h["conditions"][condition]]
            if debates:
                cell["debate (sample)"] = {"mean": round(statistics.fmean(d["accuracy"] for d in debates), 2),
                                           "sd": round(statistics.pstdev(d["accuracy"] for d in debates), 2),
                                           "homes": len(debates),
                                           "vote_same_questions": round(statistics.fmean(
                                               d["vote_accuracy_same_questions"] for d in debates), 2),
                                           "questions": sum(d["questions"] for d in debates)}
            summary[str(size)][condition] = cell
    return summary


def best_cam(cell: dict, feature_set: str, where: str = PER_HOME) -> tuple[str, dict] | None:
    """The learner with the best mean accuracy, of one feature set, learnt in the home or elsewhere;
    (learner, its cell)."""
    cams = [(learner, cell[name]) for learner in LEARNERS if (name := aggregator(learner, feature_set, where)) in cell]
    return max(cams, key=lambda item: item[1]["mean"]) if cams else None


def columns(summary: dict) -> list[tuple[str, str, str]]:
    """The answer models a run has, as (feature set, where learnt, column title)."""
    names = {n for cells in summary.values() for cell in cells.values() for n in cell}
    return [(feature_set, where, f"best CAM, {FEATURE_TITLES[feature_set]}" +
             (", other homes" if where == OTHER_HOMES else ""))
            for where in (PER_HOME, OTHER_HOMES) for feature_set in FEATURE_SETS
            if any(aggregator(learner, feature_set, where) in names for learner in LEARNERS)]


def run(fleets: Sequence[Callable[[], FleetHome]], policy: Policy, explore: str, questions: int, debate_questions: int,
        learners: Sequence[str], confidence: bool, header: dict, partial: Path, resume: bool,
        progress: Callable[[str], None], shipped: dict[str, dict[str, CentralAnswerModel]] | None = None) -> dict:
    """Every home in turn; `partial` holds the results so far after each home, and with `resume` an
    interrupted run with the same set-up and LLM carries on from it. `shipped`: answer models
    trained on other homes, per condition (train_elsewhere)."""
    results: dict = {**header, "homes": [], "complete": False}
    if resume and partial.exists():
        previous = json.loads(partial.read_text())
        if all(previous.get(key) == header[key] for key in ("setup", "llm")):
            results["homes"] = previous.get("homes", [])
            progress(f"resuming: {len(results['homes'])} home(s) already in {partial}")
    finished = {(h["seed"], h["rooms"]) for h in results["homes"]}
    for number, make in enumerate(fleets, 1):
        fleet = make()
        if (fleet.seed, fleet.rooms) in finished:
            continue
        row = run_home(fleet, policy, explore, questions, debate_questions, learners, confidence, progress, shipped)
        results["homes"].append(row)
        write_json_atomic(partial, results, indent=1)
        honest = row["conditions"]["honest"]["aggregators"]
        best = max((v, n) for n, v in honest.items() if n.startswith("cam_")) if len(honest) > 1 else (0, "-")
        progress(f"[{number:>3}/{len(fleets)}] seed {fleet.seed} {row['rooms']:>2} rooms: {row['questions']} questions "
                 f"({row['moved_questions']} moved), vote {honest['vote']:.0f}%, best CAM {best[1]} {best[0]:.0f}%, "
                 f"{row['answer_s_per_question']:.1f} s/answer")
    return {**results, "complete": True, "summary": summarize(results["homes"])}


def report(results: dict) -> str:
    llm = results.get("llm", {})
    setup = results.get("setup", {})
    lines = [f"# Fleet question answering ({len(results['homes'])} homes)", "",
             f"{llm.get('backend', '')} {llm.get('model', '')}; machine: {results.get('machine', {}).get('cpu', '')}; "
             f"{setup.get('robots', '')} robots, exploration: {setup.get('explore', '')}" +
             (f"; answer models also trained on other homes' questions (seeds {', '.join(map(str, setup['trained_on']))})"
              if setup.get("trained_on") else "") +
             (f"; scored again, no model asked, from the answers in {results['rescored']['from']}"
              if results.get("rescored") else ""), ""]
    cams = columns(results["summary"])
    for condition in CONDITIONS:
        lines += [f"## {condition.capitalize()} robots" if condition == "honest" else
                  "## One malicious robot (robot_1 answers the opposite of what it believes)", "",
                  "| rooms | homes | vote | latest look | debate (sample; vote on it) | " + " | ".join(c[2] for c in cams) + " |",
                  "|---|---|---|---|---|" + "---|" * len(cams)]
        for size, cells in results["summary"].items():
            cell = cells[condition]
            vote = cell["vote"]
            latest = cell.get("latest_look")    # not in runs before the rule: --rescore adds it
            latest_text = f"{latest['mean']:.1f} ± {latest['sd']:.1f}" if latest else "-"
            debate = cell.get("debate (sample)")
            debate_text = (f"{debate['mean']:.1f} ± {debate['sd']:.1f}; {debate['vote_same_questions']:.1f} "
                           f"(n={debate['questions']})") if debate else "-"
            best = [best_cam(cell, feature_set, where) for feature_set, where, _ in cams]
            cam_text = [f"{c[1]['mean']:.1f} ± {c[1]['sd']:.1f} ({c[0]})" if c else "-" for c in best]
            lines.append(f"| {size} | {vote['homes']} | {vote['mean']:.1f} ± {vote['sd']:.1f} | {latest_text} | {debate_text} | "
                         + " | ".join(cam_text) + " |")
        lines.append("")
    homes = results["homes"]
    lines += ["## Every learner (mean accuracy over all homes, honest / malicious)", "", "| aggregator | honest | malicious |",
              "|---|---|---|"]
    names = sorted({n for h in homes for n in h["conditions"]["honest"]["aggregators"]})
    for name in names:
        cells = [_mean_over(homes, c, "aggregators", name) for c in CONDITIONS]
        lines.append(f"| {name} | {cells[0]:.1f} | {cells[1]:.1f} |")
    kept = {id(h): home_examples(h, f"home {h['seed']}") for h in homes if h.get("examples")}  # runs before: none
    lines += (_evidence_table(homes, names) + _evidence_reach(results, kept) + _change_table(results, kept)
              + _robot_evidence_table(kept))
    robots = [r["name"] for r in homes[0]["robots"]] if homes else []
    best = {feature_set: max((n for n in names if n in {aggregator(learner, feature_set) for learner in LEARNERS}),
                             key=lambda n: _mean_over(homes, "honest", "aggregators", n), default=None)
            for feature_set in FEATURE_SETS}
    lines += ["", "## The robots, and how often the final answer is theirs (mean over homes)", "",
              "| robot | field of view | rooms looked into | things seen | right alone | " +
              " | ".join(f"agrees with {a} ({c})" for c in CONDITIONS for a in ("vote", "best CAM +state")) + " |",
              "|---|---|---|---|---|" + "---|" * 4]
    for index, robot in enumerate(robots):
        looked = statistics.fmean(h["robots"][index]["rooms_looked"] for h in homes)
        seen = statistics.fmean(h["robots"][index]["things_seen"] for h in homes)
        alone = statistics.fmean(h["conditions"]["honest"]["robots"][robot] for h in homes)
        agree = [statistics.fmean(h["conditions"][c]["agreement"][a][robot] for h in homes
                                  if a in h["conditions"][c]["agreement"])
                 for c in CONDITIONS for a in ("vote", best["robot_state"]) if a]
        lines.append(f"| {robot} | {homes[0]['robots'][index]['fov_deg']:.0f}° | {looked:.1f} | {seen:.1f} | "
                     f"{alone:.1f} | " + " | ".join(f"{v:.1f}" for v in agree) + " |")
    for name in best.values():
        if name is None or not homes[0]["conditions"]["honest"]["importance"].get(name):
            continue
        lines += ["", f"## What {name} relies on (accuracy lost when a feature is shuffled, mean over homes)", "",
                  "| feature | honest | malicious |", "|---|---|---|"]
        features = homes[0]["conditions"]["honest"]["importance"].get(name, {})
        ranked = sorted(features, key=lambda f: -_importance(homes, "honest", name, f))[:8]
        for feature in ranked:
            lines.append(f"| {feature} | {_importance(homes, 'honest', name, feature):.3f} | "
                         f"{_importance(homes, 'malicious', name, feature):.3f} |")
    answer_s = statistics.fmean(h["answer_s_per_question"] for h in homes) if homes else 0.0
    lines += ["", f"Seconds per question: {answer_s:.1f} for the robots' answers ({len(robots)} LLM calls); training "
              "and cross-validating a central answer model adds "
              f"{max((_mean_over(homes, 'honest', 'seconds_per_question', n) for n in names if n.startswith(PER_HOME)), default=0):.2f} "
              "at most; a vote adds nothing."]
    return "\n".join(lines) + "\n"


def _evidence_table(homes: list[dict], names: Sequence[str]) -> list[str]:
    """Accuracy by what the fleet knew of each question (honest robots, summed over homes): where
    an answer model's gain comes from, the robots' evidence or what it learnt of questions nobody
    could see."""
    rows = [h["conditions"]["honest"].get("by_evidence", {}) for h in homes]
    if not any(rows):       # results of a run before this table
        return []
    picks = [(name, RULE_TITLES[name]) for name in RULES if name in names]
    for where, title in ((PER_HOME, "best CAM learnt in the home"), (OTHER_HOMES, "best CAM learnt in other homes")):
        best = max((n for n in names if n.startswith(where)), default=None,
                   key=lambda n: _mean_over(homes, "honest", "aggregators", n))
        if best:
            picks.append((best, f"{title} ({best})"))
    total = sum(row["vote"][kind][1] for row in rows if row for kind in EVIDENCE)
    lines = ["", "## By what the fleet knew (honest robots, all homes; accuracy in %)", "",
             "| the fleet | questions | " + " | ".join(title for _, title in picks) + " |",
             "|---|---|" + "---|" * len(picks)]
    for kind in EVIDENCE:
        count = sum(row["vote"][kind][1] for row in rows if row)
        cells = [_share(rows, name, kind) for name, _ in picks]
        lines.append(f"| {kind} | {count} ({100 * count / max(1, total):.0f}%) | " + " | ".join(cells) + " |")
    return lines


def _share(rows: list[dict], name: str, kind: str) -> str:
    """The % of questions of `kind` that aggregator `name` got right over the homes' tallies `rows`
    (by_evidence or by_change of each), '-' when there were none."""
    right, asked = (sum(row[name][kind][i] for row in rows if name in row) for i in (0, 1))
    return f"{100 * right / asked:.1f}" if asked else "-"


def _best_answer_model(homes: list[dict]) -> str | None:
    """The answer model, learnt in the home or elsewhere, with the best mean accuracy over `homes`
    (honest robots)."""
    names = {n for h in homes for n in h["conditions"]["honest"]["aggregators"] if n.startswith((PER_HOME, OTHER_HOMES))}
    return max(names, key=lambda n: (_mean_over(homes, "honest", "aggregators", n), n), default=None)


def _evidence_reach(results: dict, kept: dict[int, list[Example]]) -> list[str]:
    """Per home size: the vote, the latest look and the best answer model beside `evidence_bound`,
    so one sees whether the aggregator or the exploration holds the fleet back. `kept`: each home's
    questions (by the home's id())."""
    if not kept:
        return []
    lines = ["", "## How far what the robots saw goes (honest robots)", "",
             "Bound: the best rule that reads only what the fleet saw of a question (whether the robots that looked "
             "last saw the thing, whether any saw it there, whether any saw one elsewhere, how many looked), "
             "fitted to these very questions, so optimistic. An answer model that reads no more than that cannot "
             "beat it; ours also read how long ago each robot looked and which robot said what.", "",
             "| rooms | questions | vote | latest look | best answer model | bound |", "|---|---|---|---|---|---|"]
    def row(rooms: str, homes: list[dict], bound: float) -> str:
        best_model = _best_answer_model(homes)
        best = f"{_mean_over(homes, 'honest', 'aggregators', best_model):.1f} ({best_model})" if best_model else "-"
        latest = (f"{_mean_over(homes, 'honest', 'aggregators', 'latest_look'):.1f}"
                  if any("latest_look" in h["conditions"]["honest"]["aggregators"] for h in homes)
                  else "-")   # not in runs before the rule
        asked = sum(len(kept.get(id(h), [])) for h in homes)
        return f"| {rooms} | {asked} | {_mean_over(homes, 'honest', 'aggregators', 'vote'):.1f} | {latest} | {best} | {bound:.1f} |"

    for size in results["summary"]:
        homes = [h for h in results["homes"] if str(h["rooms"]) == size]
        lines.append(row(size, homes, _bound_by_size(homes, kept)))
    if len(results["summary"]) > 1:
        lines.append(row("all", results["homes"], _bound_by_size(results["homes"], kept)))
    return lines


def _change_table(results: dict, kept: dict[int, list[Example]]) -> list[str]:
    """Per home size, apart: the questions whose answer is still what a robot could have seen, as
    in homes where nothing moves, and those whose answer changed after some robot looked. Each
    aggregator's share right over the size's questions of that kind; the answer model is the best
    over all questions, so that the split does not pick it. `kept`: each home's questions."""
    homes = results["homes"]
    if not kept or not all("by_change" in h["conditions"]["honest"] for h in homes):   # runs before it: --rescore
        return []
    lines = ["", "## Questions whose answer changed after the robots looked, and the others (honest robots)", "",
             "Unchanged: what some robot could have seen is still so, as in homes where nothing moves. Accuracy in %, "
             "over the questions of the kind; the answer model is the size's best over all questions. The bound is "
             "fitted to the unchanged questions: as in a home where nothing moves. (Fitted to the changed ones it "
             "would learn to gainsay the robots, from knowing what no robot knows: that the answer changed.)", "",
             "| rooms | questions | vote | latest look | best answer model | bound | changed: questions | vote | "
             "latest look | best answer model |", "|---|---|---|---|---|---|---|---|---|---|"]

    sizes = list(results["summary"])
    for size in [*sizes, "all"] if len(sizes) > 1 else sizes:
        chosen = homes if size == "all" else [h for h in homes if str(h["rooms"]) == size]
        rows = [h["conditions"]["honest"]["by_change"] for h in chosen]
        best = _best_answer_model(chosen)
        cells = [[str(sum(row["vote"][kind][1] for row in rows)), _share(rows, "vote", kind),
                  _share(rows, "latest_look", kind), f"{_share(rows, best, kind)} ({best})" if best else "-"]
                 for kind in CHANGE]
        cells[0].append(f"{_bound_by_size(chosen, kept, CHANGE[0]):.1f}")
        lines.append(f"| {size} | " + " | ".join(cells[0] + cells[1]) + " |")
    return lines


def _bound_by_size(homes: list[dict], kept: dict[int, list[Example]], kind: str = "") -> float:
    """`evidence_bound` over the homes' questions (of one CHANGE `kind`, or all), fitted size by
    size and weighted by questions, as each size's rule is its own."""
    weighted = []
    for size in sorted({h["rooms"] for h in homes}):
        examples = [e for h in homes if h["rooms"] == size for e in kept.get(id(h), [])
                    if not kind or CHANGE[e.question.moved] == kind]
        weighted.append((len(examples), evidence_bound(examples)))
    total = sum(n for n, _ in weighted)
    return sum(n * bound for n, bound in weighted) / total if total else 0.0


def _robot_evidence_table(kept: dict[int, list[Example]]) -> list[str]:
    """How each robot answered by what it knew itself (honest, all homes' questions `kept`): whether
    its answers follow its evidence, and how often the truth does."""
    counts: dict[str, list[int]] = {kind: [0, 0, 0, 0] for kind in ROBOT_EVIDENCE}  # answers, yes said, truly yes, right
    for examples in kept.values():
        for example in examples:
            for answer in example.answers:
                cell = counts[ROBOT_EVIDENCE[EVIDENCE.index(what_the_fleet_knew((answer,)))]]
                for index, value in enumerate((1, answer.yes, example.question.truth,
                                               answer.yes == example.question.truth)):
                    cell[index] += value
    if not any(cell[0] for cell in counts.values()):
        return []
    lines = ["", "## Each robot's answers by what it knew (honest robots, all homes)", "",
             "| the robot | answers | says yes (%) | truly yes (%) | right (%) |", "|---|---|---|---|---|"]
    for kind, (asked, said, truly, right) in counts.items():
        if asked:
            lines.append(f"| {kind} | {asked} | {100 * said / asked:.1f} | {100 * truly / asked:.1f} | "
                         f"{100 * right / asked:.1f} |")
    return lines


def _mean_over(homes: list[dict], condition: str, key: str, name: str) -> float:
    values = [h["conditions"][condition][key][name] for h in homes if name in h["conditions"][condition][key]]
    return statistics.fmean(values) if values else 0.0


def _importance(homes: list[dict], condition: str, name: str, feature: str) -> float:
    values = [h["conditions"][condition]["importance"][name][feature] for h in homes
              if name in h["conditions"][condition]["importance"]]
    return statistics.fmean(values) if values else 0.0


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(results["summary"])
    fig, axes = plt.subplots(1, 2, figsize=(13, 4), sharey=True)
    for axis, condition in zip(axes, CONDITIONS):
        series: list[tuple[tuple[str, str] | str, str]] = [(name, RULE_TITLES[name]) for name in RULES]
        series += [((feature_set, where), title) for feature_set, where, title in columns(results["summary"])]
        width = 0.8 / (len(series) + 1)
        for offset, (key, label) in enumerate(series):
            means, sds = [], []
            for size in sizes:
                cell = results["summary"][size][condition]
                value = cell.get(key) if isinstance(key, str) else (best_cam(cell, *key) or (None, None))[1]
                means.append(value["mean"] if value else 0)
                sds.append(value["sd"] if value else 0)
            axis.bar([i + offset * width for i in range(len(sizes))], means, width, yerr=sds, label=label, capsize=2)
        debate = [results["summary"][s][condition].get("debate (sample)") for s in sizes]
        if any(debate):     # a run with --debate-questions 0 has none
            axis.bar([i + len(series) * width for i in range(len(sizes))], [d["mean"] if d else 0 for d in debate],
                     width, label="debate (sample of questions)", color="tab:gray")
        axis.set_xticks([i + 0.4 - width / 2 for i in range(len(sizes))], [f"{s} rooms" for s in sizes])
        axis.axhline(50, color="black", linewidth=0.6, linestyle=":")
        axis.set_title("honest robots" if condition == "honest" else "one robot answers the opposite")
        axis.set_ylim(0, 105)
    axes[0].set_ylabel("accuracy (%)")
    # Beside the panels: inside one it hid the bars of the largest homes.
    fig.legend(*axes[1].get_legend_handles_labels(), fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
