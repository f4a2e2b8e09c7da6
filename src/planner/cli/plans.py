"""`planner plans`: how alike predicted plans are to reference plans (PG2S, with KAS beside it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import ValidationError

from planner.core.errors import InputError


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def plans_score(args) -> int:
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.language import SpacyParser
    from planner.core.files import describe_validation_error, write_json_atomic
    from planner.core.plan_score import PlanScorer, ScoreSettings, load_plans

    reference = load_plans(args.reference)
    predicted = load_plans(args.predicted)
    try:
        settings = ScoreSettings(alpha=args.alpha, sentence_threshold=args.sentence_threshold, word_threshold=args.word_threshold)
    except ValidationError as error:
        raise InputError(describe_validation_error("options", error)) from None
    scorer = PlanScorer(SpacyParser(), SentenceEmbedder(), settings)
    missing = [plan_id for plan_id in reference if plan_id not in predicted]
    extra = [plan_id for plan_id in predicted if plan_id not in reference]
    if missing:
        print(f"no predicted plan for {len(missing)} of {len(reference)}, scored as empty plans: {', '.join(missing)}", file=sys.stderr)
    if extra:
        print(f"predicted plans with no reference, not scored: {', '.join(extra)}", file=sys.stderr)
    width = max(len(plan_id) for plan_id in reference)
    print(f"{'id':{width}}  PG2S   sentence  goal   KAS")
    rows = []
    for number, (plan_id, plan) in enumerate(reference.items(), start=1):
        steps = predicted[plan_id].steps if plan_id in predicted else []
        score = scorer.score(plan.steps, steps)
        rows.append({"id": plan_id, "pg2s": score.pg2s, "sentence": score.sentence, "goal": score.goal, "kas": score.kas,
                     "reference_actions": [str(a) for a in score.reference_actions],
                     "predicted_actions": [str(a) for a in score.predicted_actions]})
        print(f"{plan_id:{width}}  {score.pg2s:.3f}  {score.sentence:.3f}     {score.goal:.3f}  {_number(score.kas)}", flush=True)
        if number % 20 == 0:
            print(f"  [{number}/{len(reference)} scored]", file=sys.stderr)
    kas_values = [row["kas"] for row in rows if row["kas"] is not None]
    mean_kas = sum(kas_values) / len(kas_values) if kas_values else None
    mean_pg2s = sum(row["pg2s"] for row in rows) / len(rows)
    print(f"mean over {len(rows)} plans: PG2S {mean_pg2s:.3f}; KAS {_number(mean_kas)} "
          f"(over the {len(kas_values)} plans as long as their reference; KAS has no value otherwise)")
    if args.scores:
        write_json_atomic(Path(args.scores), {"settings": settings.model_dump(), "plans": rows,
                                            "mean_pg2s": mean_pg2s, "mean_kas": mean_kas, "missing": missing, "extra": extra},
                          indent=1)
        print(f"wrote {args.scores}", file=sys.stderr)
    return 0


def plans_generate(args) -> int:
    from planner.cli.bench import _progress, plans_llm
    from planner.core.errors import PolicyError
    from planner.core.planning.scene_plans import ScenePlanner, load_tasks

    tasks = load_tasks(args.suite)
    config, opened = plans_llm(args, args.scene == "image")
    if opened is None:
        return 1
    policy, server, _ = opened
    planner = ScenePlanner(policy, config.planner.max_repairs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        # Each plan is written as it is made: an interrupted run keeps what it has.
        with open(out, "w") as handle:
            for number, task in enumerate(tasks, 1):
                try:
                    plan = planner.plan(task, args.agents, args.scene, Path(args.suite).parent)
                except PolicyError as error:
                    _progress(f"[{number}/{len(tasks)}] {task.id}: the LLM failed: {error}")
                    continue
                handle.write(json.dumps({"id": task.id, "steps": plan.steps}) + "\n")
                handle.flush()
                written += 1
                _progress(f"[{number}/{len(tasks)}] {task.id}: {len(plan.steps)} steps, {plan.usage.calls} LLM calls, "
                          f"{plan.seconds:.1f} s {plan.error}")
    except KeyboardInterrupt:
        print(f"interrupted; {written} plans are in {out}", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
    print(f"wrote {written} plans to {out}; score them: planner plans score --reference {args.suite} --predicted {out}")
    return 0


def add_commands(sub) -> None:
    from planner.core.plan_score import ScoreSettings

    defaults = ScoreSettings()
    plans = sub.add_parser("plans", help="compare plans written in plain language (PG2S, KAS)")
    plans_sub = plans.add_subparsers(dest="plans_command", required=True)
    score = plans_sub.add_parser("score", help="score predicted plans against reference plans, matched by id")
    score.add_argument("--reference", required=True, help="JSONL: one {\"id\": ..., \"steps\": [...]} per line, or a "
                       "tasks file (its reference_steps)")
    score.add_argument("--predicted", required=True, help="JSONL in the same form")
    score.add_argument("--alpha", type=float, default=defaults.alpha, help="weight of the goal score (default: %(default)s)")
    score.add_argument("--sentence-threshold", type=float, default=defaults.sentence_threshold,
                       help="similarity two steps need to count as alike (default: %(default)s)")
    score.add_argument("--word-threshold", type=float, default=defaults.word_threshold,
                       help="similarity two verbs or two things need (default: %(default)s)")
    score.add_argument("--scores", help="also write the scores, with each plan's actions, to this JSON file")
    score.set_defaults(run=plans_score)
    from planner.cli.bench import _llm_arguments, _replies_argument

    generate = plans_sub.add_parser("generate", help="write a plan for each task from its scene, by one agent or three")
    generate.add_argument("--suite", required=True, help="JSONL of {id, task, scene_table | image, reference_steps}")
    generate.add_argument("--agents", choices=["single", "multi"], default="multi",
                          help="one model call for the plan, or several agents in turn, from a scene miner to the planner")
    generate.add_argument("--scene", choices=["table", "image"], default="table",
                          help="image needs a vision-capable model (--llm openai)")
    generate.add_argument("--out", required=True, help="JSONL of {id, steps}, the form plans score reads")
    generate.add_argument("--config", help="stack config (default: the installed config/planner.yaml)")
    _llm_arguments(generate)
    _replies_argument(generate)
    generate.set_defaults(run=plans_generate)
