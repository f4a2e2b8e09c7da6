"""`planner bench …` and `planner calibrate`: the benchmarks, each writing results, a report and a plot, and
the calibration of a model's tuned settings on development data."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from planner.cli.stack import format_step

# Each run writes into a folder of its own unless told otherwise, never over the committed bench/results.
RUN_FOLDER = str(Path("bench", "runs", datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")))
OUT_HELP = "results folder (default: a new one under bench/runs/)"
PROBLEM_MAX_TOKENS = 1024  # bench pddl --write problem: a generated home's problem is 300-500 tokens
PLAN_MAX_TOKENS = 512  # bench plans: a scene miner's graph or a plan of ten steps is 150-300 tokens


def bench_perception(args) -> int:
    from planner.bench import perception

    sizes = perception.DEFAULT_SIZES if args.sizes is None else tuple(args.sizes)
    results = perception.run(sizes, Path(args.out), args.repeat, args.seed,
                             dense_sizes=perception.DENSE_SIZES if args.dense_sizes is None else tuple(args.dense_sizes))
    summary = results["summary"]
    print(json.dumps(summary["targets_met"], indent=1))
    return 0


def _bench_llm(args, config):
    """The LLM a benchmark asked for: (policy or None for scripted, embedded server or None, the
    results header's description of it), or None after saying why there is none."""
    if args.llm == "replay":
        if not getattr(args, "replay", None):
            print("error: --llm replay needs --replay LOG (a call log written with --log-llm)", file=sys.stderr)
            return None
        opened: tuple | None = (None, None, {"backend": "replay", "model": "", "base_url": ""})
    else:
        opened = _open_bench_llm(args, config)
    if opened is None:
        return None
    return _logged(args, *opened)


def _logged(args, policy, server, header: dict):
    """The policy with --replay's recorded calls answered from their logs and every call written to
    --log-llm's; (policy, server, header), or None after saying what is wrong with a log."""
    from planner.adapters.llm_log import LoggingPolicy, ReplayPolicy

    if getattr(args, "replay", None):
        try:
            policy = ReplayPolicy([Path(path) for path in args.replay], live=policy)
        except ValueError as error:
            print(f"error: --replay: {error}", file=sys.stderr)
            return None
        header["replay"] = list(args.replay)
        header["model"] = header["model"] or policy.model()
    if getattr(args, "log_llm", None):
        policy = LoggingPolicy(policy, Path(args.log_llm))
        header["calls_log"] = args.log_llm
    return policy, server, header


def _open_bench_llm(args, config):
    from planner.adapters.llm import WatchedPolicy, open_policy, preflight
    from planner.adapters.model_store import MODELS, ModelError, model_sha256
    from planner.core.errors import PolicyError, ServerUnreachable

    update: dict = {"provider": args.llm}
    if args.base_url:
        update["base_url"] = args.base_url
    if args.model and args.llm == "embedded":
        if args.model not in MODELS:
            print(f"error: no embedded model {args.model!r}; there are {', '.join(MODELS)}", file=sys.stderr)
            return None
        update["embedded"] = config.llm.embedded.model_copy(update={"model": args.model})
    elif args.model:
        update["model"] = args.model
    llm = config.llm.model_copy(update=update).resolved()
    policy = server = None
    if llm.provider != "scripted":
        try:
            policy, server = open_policy(llm)
            preflight(policy)
        except (PolicyError, ModelError, ServerUnreachable) as error:
            if server is not None:
                server.stop()
            print(f"error: no LLM: {error}", file=sys.stderr)
            return None
        policy = WatchedPolicy(policy, llm.benchmark_gives_up_after)
    model = llm.embedded.name() if llm.provider == "embedded" else llm.model if llm.provider == "openai" else "task scripts"
    header = {"backend": llm.provider, "model": model, "base_url": llm.base_url if llm.provider == "openai" else ""}
    if llm.provider == "embedded":
        # The shipped file the server loaded was checked against its sha256; one's own is hashed.
        own = llm.embedded.model_path
        header["sha256"] = model_sha256(Path(own)) if own else MODELS[model].sha256
    return policy, server, header


def _config_record(config) -> dict:
    """The stack config a run used, resolved (every default filled in), for its results; keys left out."""
    record = config.model_dump(mode="json")
    for endpoint in [record["llm"], *record["llm"]["fallbacks"], *record["llm"]["goal_step"], *record["llm"]["object_finder"]]:
        if endpoint.get("api_key"):
            endpoint["api_key"] = "(set)"
    return record


def _part_llm(config, part: str, policy, server, llm: dict):
    """The servers the config gives one part of the stack, before the benchmark's LLM; named in the
    results header (`llm[part]`) when there are any."""
    from planner.wiring import open_part_llm

    endpoints = getattr(config.llm, part)
    if endpoints:
        llm[part] = [f"{e.model} at {e.base_url}" for e in endpoints]
    return open_part_llm(config, part, policy, server)


def _bench_settings(config, llm: dict, mode: str | None = None):
    """Planner settings for simulated time, calibrated for the model (where they came from goes to
    `llm`): perception confirms at once, the robot state is there; the planning mode the command
    line asks for, else the config's."""
    from planner.sim.in_process import on_simulated_time
    from planner.wiring import planner_settings

    settings, llm["planner_settings"] = planner_settings(config, llm["model"])
    return on_simulated_time(settings).model_copy(update={"mode": mode or settings.mode})


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _bench_setup(args):
    """What the task and ablation benches share: the config, suite, skills, the LLM (and its
    server) and a name for the results that says which model made them; None if no LLM."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.language import SpacyParser
    from planner.bench import tasks
    from planner.bench.suite import load_suite
    from planner.bench.timing import Stopwatch, TimedEmbedder, TimedPolicy
    from planner.config import load_config
    from planner.core.object_finder import ObjectFinder
    from planner.wiring import finder_settings, load_skill_planner, make_grounder

    config = load_config(args.config)
    skills = load_skill_planner(config)
    suite = load_suite(_suite_path(args.suite, config), skills.robot)
    opened = _bench_llm(args, config)
    if opened is None:
        return None
    policy, server, llm = opened
    model = "" if llm["backend"] == "scripted" else "-" + llm["model"].replace("/", "_")
    stopwatch = Stopwatch()   # the model's and the embedder's time, per episode in its results
    embedder = TimedEmbedder(SentenceEmbedder(), stopwatch)
    grounder = make_grounder(config, embedder)  # one grounder, one cache of phrase vectors, one WordNet read
    goal_policy = finder = None
    if policy is not None:
        goal_policy, server = _part_llm(config, "goal_step", policy, server, llm)
        finder_policy, server = _part_llm(config, "object_finder", policy, server, llm)
        settings, llm["object_finder_settings"] = finder_settings(config, llm["model"])
        finder = ObjectFinder(TimedPolicy(finder_policy, stopwatch), settings, embedder, grounder)
        goal_policy = TimedPolicy(goal_policy, stopwatch) if goal_policy is not policy else None
        policy = TimedPolicy(policy, stopwatch)
    setup = tasks.BenchSetup(suite, skills, _bench_settings(config, llm, getattr(args, "mode", None)), policy, None, args.faults, args.seed,
                             finder=finder, grounder=grounder, parser=SpacyParser(), goal_policy=goal_policy,
                             stopwatch=stopwatch)
    return config, setup, server, llm, f"{suite.suite.name}-{llm['backend']}{model}"


def _open_memory(config, database: str):
    from planner.wiring import open_case_memory

    memory, problems = open_case_memory(config, database=database, progress=_progress)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return memory


def bench_tasks(args) -> int:
    from dataclasses import replace

    from planner.bench import tasks
    from planner.bench.timing import cpu_load
    from planner.core.errors import ServerUnreachable

    prepared = _bench_setup(args)
    if prepared is None:
        return 1
    config, setup, server, llm, label = prepared
    if not args.no_explainer:
        print("loading the explainer's failure cases and embedding model ...", file=sys.stderr, flush=True)
        memory = _open_memory(config, args.cases)
        # Learned cases go in through a second memory: this run retrieves what the database had at its start.
        setup = replace(setup, memory=memory, learner=_open_memory(config, args.cases) if args.learn else None)
    if args.record_replies:
        setup = replace(setup, record_replies=True)
    if args.plan_check != "off":
        from planner.wiring import make_plan_checker

        checks = setup.settings.plan_check.model_copy(update={"mode": args.plan_check})
        # The plans that worked go into --cases as the run goes, so later episodes are checked against earlier ones.
        checker = make_plan_checker(_open_memory(config, args.cases), checks)
        setup = replace(setup, plan_checker=checker, settings=setup.settings.model_copy(update={"plan_check": checks}))
    mode = setup.settings.mode
    name = args.name or (f"tasks-{label}" + (f"-{args.faults}-faults" if args.faults != "none" else "")
                         + (f"-{mode.replace('_', '-')}" if mode != "react" else ""))
    header = {"llm": llm, "config": _config_record(config), "explainer": "off" if args.no_explainer else "on", "cases": args.cases,
              "learn": args.learn, "mode": mode,
              "plan_check": args.plan_check, "cpu_load": args.load}
    show = (lambda step: print(format_step(step.kind, step.text), file=sys.stderr, flush=True)) if args.verbose else None
    try:
        with cpu_load(args.load):
            results = tasks.run(setup, Path(args.out), name, args.repeat, header, args.tasks, args.resume,
                                progress=_progress, on_step=show)
    except KeyboardInterrupt:
        print(f"interrupted; the episodes so far are in {Path(args.out) / (name + '.json')} "
              f"(--resume --out {args.out} carries on)", file=sys.stderr)
        return 130
    except ServerUnreachable as error:
        print(f"error: the run stopped: {error}; the episodes before are in {Path(args.out) / (name + '.json')} "
              f"(--resume --out {args.out} carries on once the server answers)", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    print(Path(args.out, name + ".md").read_text())
    if args.record_replies:
        written = tasks.replayable_suite(setup.suite, results["episodes"], Path(args.record_replies))
        print(f"replayable suite: {written} (planner bench tasks --suite {written} --llm scripted)")
    return 0 if results["episodes"] else 1


def bench_ablation(args) -> int:
    from planner.bench import explainer, tasks
    from planner.bench.common import machine_info

    prepared = _bench_setup(args)
    if prepared is None:
        return 1
    config, setup, server, llm, label = prepared
    only = args.tasks or [t.id for t in setup.suite.suite.tasks if t.faults]
    name = args.name or f"ablation-{label}-{args.faults}-faults"
    header = {"machine": machine_info(), "llm": llm, "suite": setup.suite.suite.name, "faults": args.faults,
              "seed": args.seed}
    out = Path(args.out)
    return _run_then_write(server, lambda: explainer.ablation(setup, lambda database: _open_memory(config, database),
                                                              out, name, header, only, tasks.run, _progress),
                           out, name, explainer.ablation_plot, explainer.ablation_report)


def _run_then_write(server, run: Callable[[], dict], out: Path, name: str, plot, report) -> int:
    """Run a benchmark, stop its LLM server whatever happens, then write and print its results."""
    from planner.bench.common import write_results

    try:
        results = run()
    except KeyboardInterrupt:
        print(f"interrupted; what was done so far is in {out}", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
    written = write_results(results, out, name, plot, report)
    print(written[-1].read_text())
    return 0


def bench_explainer(args) -> int:
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.bench import explainer
    from planner.bench.common import machine_info, write_results
    from planner.wiring import state_dir

    out = Path(args.out)
    results = explainer.retrieval(SentenceEmbedder(), args.sizes, args.retrievals, args.seed, state_dir(), _progress,
                                  args.pool)
    written = write_results({**results, "machine": machine_info()}, out, "explainer", explainer.retrieval_plot,
                            explainer.retrieval_report)
    print(written[-1].read_text())
    return 0


def _replies_or_llm(args, config):
    """For --llm scripted the replies of --replies, in order; else the LLM asked for (see _bench_llm)."""
    from planner.adapters.llm import ScriptedPolicy
    from planner.core.files import load_yaml

    if args.llm != "scripted":
        return _bench_llm(args, config)
    if not args.replies:
        print("error: --llm scripted needs --replies FILE (a YAML list of replies, in order)", file=sys.stderr)
        return None
    return _logged(args, ScriptedPolicy(load_yaml(Path(args.replies))), None,
                   {"backend": "scripted", "model": "scripted replies"})


def bench_pddl(args) -> int:
    from planner.bench import pddl_tasks
    from planner.bench.common import machine_info
    from planner.config import load_config
    from planner.wiring import load_skill_planner

    config = load_config(args.config)
    if args.write == "problem":
        # A whole problem is a few hundred tokens: more than the stack's replies (a step, a goal) are
        # allowed, and slower to write. Cut short, it is no problem at all.
        config = config.model_copy(update={"llm": config.llm.model_copy(update={
            "max_tokens": max(config.llm.max_tokens, PROBLEM_MAX_TOKENS), "timeout_s": max(config.llm.timeout_s, 300)})})
    opened = _replies_or_llm(args, config)
    if opened is None:
        return 1
    policy, server, llm = opened
    name = args.name or f"pddl-{Path(args.suite).name}-{args.write}-{llm['backend']}-{llm['model'].replace('/', '_')}"
    header = {"benchmark": "pddl", "machine": machine_info(), "llm": llm}
    return _run_then_write(server, lambda: {**header, **pddl_tasks.run(
        policy, Path(args.domain), Path(args.suite), args.write, load_skill_planner(config), None, args.timeout,
        _progress)}, Path(args.out), name, pddl_tasks.plot, pddl_tasks.report)


def plans_llm(args, images: bool):
    """The config and the LLM (see _replies_or_llm) for writing plans from scenes: replies of a few
    hundred tokens, and for images a server that reads them."""
    from planner.config import load_config
    from planner.core.errors import InputError

    if images and args.llm == "embedded":
        raise InputError("the embedded model reads no images: use --llm openai --base-url URL of a vision-capable "
                         "server (see docs/usage.md), or scene tables")
    config = load_config(args.config)
    config = config.model_copy(update={"llm": config.llm.model_copy(update={
        "max_tokens": max(config.llm.max_tokens, PLAN_MAX_TOKENS)})})
    return config, _replies_or_llm(args, config)


def bench_plans(args) -> int:
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.language import SpacyParser
    from planner.bench import plan_tasks
    from planner.bench.common import machine_info
    from planner.core.plan_score import PlanScorer
    from planner.core.planning.scene_plans import ScenePlanner, load_tasks

    tasks = load_tasks(args.suite)
    if args.limit:
        tasks = tasks[: args.limit]
    arms = [tuple(arm.split("/")) for arm in args.arms]
    config, opened = plans_llm(args, any(scene == "image" for _, scene in arms))
    if opened is None:
        return 1
    policy, server, llm = opened
    name = args.name or f"plans-{Path(args.suite).stem}-{llm['backend']}-{llm['model'].replace('/', '_')}"
    header = {"benchmark": "plans", "machine": machine_info(), "llm": llm, "tasks_file": str(args.suite)}
    scorer = PlanScorer(SpacyParser(), SentenceEmbedder())
    return _run_then_write(server, lambda: {**header, **plan_tasks.run(
        tasks, arms, ScenePlanner(policy, config.planner.max_repairs), scorer, Path(args.suite).parent, _progress)},
        Path(args.out), name, plan_tasks.plot, plan_tasks.report)


def bench_fleet(args) -> int:
    from planner.bench import fleet
    from planner.bench.common import machine_info
    from planner.bench.seeds import development_seeds
    from planner.config import load_config
    from planner.core.answer_model import load_examples, make_learner
    from planner.core.errors import InputError
    from planner.wiring import load_robot

    config = load_config(args.config)
    for learner in args.learners:
        make_learner(learner, 0)    # an unknown learner or a missing xgboost is said before the model loads
    profile = load_robot(config)
    rescoring, confidence = None, args.confidence
    if args.rescore:
        try:
            rescoring = json.loads(Path(args.rescore).read_text())
            if not isinstance(rescoring, dict) or not isinstance(rescoring.get("homes"), list):
                raise ValueError("not the results of `planner bench fleet`")
        except (OSError, ValueError) as error:
            print(f"error: --rescore {args.rescore}: {error}", file=sys.stderr)
            return 2
        seeds = sorted({home.get("seed") for home in rescoring["homes"] if isinstance(home, dict)})
        confidence = bool(rescoring.get("setup", {}).get("confidence", False))
    else:
        try:
            seeds = development_seeds(args.seeds)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    shipped, trained_on = None, []
    if args.train_on:
        # Before the model loads: files that cannot be learnt from are said at once.
        try:
            training = load_examples([Path(p) for p in args.train_on])
            if overlap := sorted(training.seeds & set(seeds)):
                raise InputError(f"--train-on: homes {', '.join(map(str, overlap))} are both learnt from and scored; "
                                 "train on other seeds (the development range, below 1000)")
            training.check_confidence(confidence)
            shipped = fleet.train_elsewhere(training, args.learners)
            trained_on = sorted(training.seeds)
        except InputError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if rescoring is not None:
        return _rescore_fleet(args, rescoring, shipped or {}, trained_on)
    out = Path(args.out)
    opened = _replies_or_llm(args, config)
    if opened is None:
        return 1
    policy, server, llm = opened
    name = args.name or f"fleet-{args.explore}-{llm['backend']}-{llm['model'].replace('/', '_')}"
    fleets = [lambda seed=seed, size=size: fleet.make_fleet_home(seed, size, args.robots, args.budget_share, profile)
              for size in args.sizes for seed in seeds]
    header = {"benchmark": "fleet", "machine": machine_info(), "llm": llm,
              "setup": {"sizes": args.sizes, "seeds": seeds, "robots": args.robots, "explore": args.explore,
                        "questions": args.questions, "debate_questions": args.debate_questions,
                        "budget_share": args.budget_share, "learners": args.learners, "confidence": args.confidence,
                        "trained_on": trained_on}}
    return _run_then_write(server, lambda: fleet.run(
        fleets, policy, args.explore, args.questions, args.debate_questions, args.learners, args.confidence, header,
        out / f"{name}.json", args.resume, _progress, shipped),
        out, name, fleet.plot, fleet.report)


def _rescore_fleet(args, results: dict, shipped: dict, trained_on: list[int]) -> int:
    """`bench fleet --rescore`: a run's kept answers scored again, no model asked."""
    from planner.bench import fleet
    from planner.bench.common import machine_info, write_results
    from planner.core.errors import InputError

    try:
        rescored = fleet.rescore(results, args.learners, shipped, _progress)
    except InputError as error:
        print(f"error: --rescore {args.rescore}: {error}", file=sys.stderr)
        return 2
    rescored["setup"] = {**results.get("setup", {}), "learners": args.learners, "trained_on": trained_on}
    # The command and time that made the answers stay with them; the results get this command's.
    rescored["rescored"] = {"from": args.rescore, "answered_by": rescored.pop("command", None),
                            "answered": rescored.pop("finished", None), "machine": machine_info()}
    name = args.name or f"{Path(args.rescore).stem}-rescored"
    written = write_results(rescored, Path(args.out), name, fleet.plot, fleet.report)
    print(written[-1].read_text())
    return 0


def bench_compare(args) -> int:
    from planner.bench import compare
    from planner.bench.common import write_results

    runs = []
    for path in map(Path, args.results):
        try:
            runs.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as error:
            print(f"error: {path}: {error}", file=sys.stderr)
            return 2
    try:
        results = compare.compare(runs, args.labels)
    except compare.CompareError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    name = args.name or f"compare-{results['suite']}-{'-'.join(results['arms']).replace('_', '-')}"
    written = write_results(results, Path(args.out), name, compare.plot, compare.report)
    print(written[-1].read_text())
    return 0


def bench_memory(args) -> int:
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.language import SpacyParser
    from planner.bench import memory
    from planner.bench.common import machine_info
    from planner.bench.seeds import development_seeds
    from planner.config import load_config
    from planner.core.files import write_json_atomic
    from planner.wiring import load_skill_planner, make_grounder

    if unknown := [v for v in args.variants if v not in memory.VARIANTS]:
        print(f"error: unknown variant {', '.join(unknown)}; use {', '.join(memory.VARIANTS)}", file=sys.stderr)
        return 2
    if bool(args.domain) != bool(args.episode):
        print("error: --domain and --episode go together", file=sys.stderr)
        return 2
    try:
        development_seeds(str(args.seed))
    except ValueError as error:
        print(f"error: --seed {error}", file=sys.stderr)
        return 2
    config = load_config(args.config)
    skills = load_skill_planner(config)
    if args.export:
        folder = memory.export(memory.make_episode(args.seed, skills, args.changes, args.requests), skills,
                               Path(args.export))
        print(f"written: {folder} (its domain: {Path(args.export) / 'domain.pddl'})")
        return 0
    if args.episode:
        return _bench_memory_files(args, config)
    opened = _replies_or_llm(args, config)
    if opened is None:
        return 1
    policy, server, llm = opened
    episode = memory.make_episode(args.seed, skills, args.changes, args.requests)
    settings = _bench_settings(config, llm)
    name = args.name or f"memory-{args.seed}-{llm['backend']}-{llm['model'].replace('/', '_').replace(' ', '-')}"
    header = {"benchmark": "memory", "machine": machine_info(), "llm": llm, "seed": args.seed,
              "changes": args.changes, "tasks": args.requests}

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    partial = out / f"{name}.json"
    done = {}
    if args.resume and partial.exists():
        previous = json.loads(partial.read_text())
        if all(previous.get(key) == header[key] for key in ("seed", "changes", "tasks", "llm")):
            done = {run["variant"]: run for run in previous["runs"]}
            _progress(f"resuming: {', '.join(done)} already in {partial}")

    def run() -> dict:
        embedder = SentenceEmbedder()
        grounder = make_grounder(config, embedder)
        parser = SpacyParser()
        runs = []
        for variant in args.variants:
            runs.append(done.get(variant) or memory.run_episode(episode, skills, policy, variant, settings,
                                                                 grounder, _progress, embedder, parser))
            # A variant takes the better part of an hour with the embedded model: each is kept as it ends.
            write_json_atomic(partial, {**header, "runs": runs, "complete": False}, indent=1)
        return {**header, "runs": runs, "summary": memory.summarize(runs)}

    return _run_then_write(server, run, out, name, memory.plot, memory.report)


def _bench_memory_files(args, config) -> int:
    """bench memory --domain --episode: an episode from files, on a memory that is only symbolic."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.bench import memory, memory_files
    from planner.bench.common import machine_info
    from planner.bench.episode_scene import EpisodeScene, load_mapping
    from planner.core.errors import InputError
    from planner.wiring import load_skill_planner

    try:
        episode = memory_files.load_episode(Path(args.domain), Path(args.episode))
        mapping = Path(args.scene_mapping) if args.scene_mapping else None
        grounding = memory_files.Grounding(load_mapping(mapping), load_skill_planner(config),
                                           str(mapping or "the default scene mapping"))
        # A mapping that does not fit the domain is said now, not after the first variants ran.
        EpisodeScene(grounding.mapping, *memory_files.domain_names(episode), grounding.where)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    opened = _replies_or_llm(args, config)
    if opened is None:
        return 1
    policy, server, llm = opened
    name = args.name or (f"memory-files-{Path(args.episode).name}-{llm['backend']}-"
                         f"{llm['model'].replace('/', '_').replace(' ', '-')}")
    header = {"benchmark": "memory-files", "machine": machine_info(), "llm": llm, "domain": args.domain,
              "episode": args.episode}

    def run() -> dict:
        embedder = SentenceEmbedder()
        runs = [memory_files.run(episode, policy, variant, memory.VARIANTS[variant].settings, embedder, _progress,
                                 grounding=grounding)
                for variant in args.variants]
        return {**header, "runs": runs, "summary": memory_files.summarize(runs)}

    return _run_then_write(server, run, Path(args.out), name, memory_files.plot, memory_files.report)


def _object_finder(args, config, calibrating: bool = False):
    """The object finder a benchmark asked for (the LLM of --llm / --replies, after the config's
    object_finder servers), its embedded server or None, and the LLM's description; None after
    saying why there is none."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.core.object_finder import ObjectFinder
    from planner.wiring import finder_settings, make_grounder

    opened = _replies_or_llm(args, config)
    if opened is None:
        return None
    policy, server, llm = opened
    policy, server = _part_llm(config, "object_finder", policy, server, llm)
    embedder = SentenceEmbedder()
    settings, llm["object_finder_settings"] = finder_settings(config, llm["model"])
    return ObjectFinder(policy, settings, embedder, make_grounder(config, embedder), calibrating), server, llm


def bench_objects(args) -> int:
    from planner.bench import objects
    from planner.bench.common import machine_info
    from planner.config import load_config
    from planner.core.object_finder import WORKFLOWS

    workflows = list(WORKFLOWS) if args.workflow == ["all"] else args.workflow
    if unknown := [w for w in workflows if w not in WORKFLOWS]:
        print(f"error: unknown workflow {', '.join(unknown)}; use {', '.join(WORKFLOWS)} or all", file=sys.stderr)
        return 2
    config = load_config(args.config)
    maps = objects.load_bench(Path(args.maps), Path(args.queries), Path(args.truth), _progress)
    opened = _object_finder(args, config)
    if opened is None:
        return 1
    finder, server, llm = opened
    name = args.name or f"objects-{llm['backend']}-{llm['model'].replace('/', '_')}"
    out = Path(args.out)
    previous = out / f"{name}.json"
    results = json.loads(previous.read_text()) if args.resume and previous.exists() else {}
    results.update({"benchmark": "objects", "machine": machine_info(), "llm": llm, "workflows": workflows,
                    "settings": config.object_finder.model_dump(),
                    "maps": {m.name: len(m.scene.furniture()) + len(m.scene.objects()) for m in maps}})
    return _run_then_write(server, lambda: objects.run(finder, workflows, maps, results, previous, _progress),
                           out, name, objects.plot, objects.report)


def bench_checks(args) -> int:
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.bench import checks
    from planner.bench.common import machine_info
    from planner.config import load_config
    from planner.wiring import make_grounder, planner_settings

    config = load_config(args.config)
    data = checks.load_checks(args.data)
    opened = _replies_or_llm(args, config)
    if opened is None:
        return 1
    policy, server, llm = opened
    policy, server = _part_llm(config, "goal_step", policy, server, llm)  # the checks are the goal step's
    name = args.name or f"checks-{llm['backend']}-{llm['model'].replace('/', '_')}"
    settings, llm["planner_settings"] = planner_settings(config, llm["model"])

    def measure() -> dict:
        records = checks.run(data, policy, make_grounder(config, SentenceEmbedder()), args.wrong, args.seed, _progress)
        return {"benchmark": "checks", "machine": machine_info(), "llm": llm, "data": args.data, "wrong": args.wrong,
                "seed": args.seed, "records": records,
                "summary": checks.summarize(records, settings.need_check_threshold, settings.name_check_threshold,
                                            settings.name_check_margin, settings.other_name_threshold,
                                            settings.room_name_threshold)}

    return _run_then_write(server, measure, Path(args.out), name, checks.plot, checks.report)


def bench_context(args) -> int:
    from planner.bench import context, tasks
    from planner.config import load_config
    from planner.wiring import load_skill_planner

    config = load_config(args.config)
    skills = load_skill_planner(config)
    if args.llm == "scripted":
        print("error: bench context measures a real model's prompt tokens; use --llm embedded or openai", file=sys.stderr)
        return 2
    try:
        suite = context.make_suite(args.room_count, args.objects, args.factor, args.seed, skills.robot)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    opened = _bench_llm(args, config)
    if opened is None:
        return 1
    policy, server, llm = opened
    setup = tasks.BenchSetup(suite, skills, _bench_settings(config, llm), policy, None, "none", args.seed)
    name = args.name or f"context-{llm['backend']}-{llm['model'].replace('/', '_')}"
    try:
        context.run(setup, Path(args.out), name, {"llm": llm}, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        return 130
    finally:
        if server is not None:
            server.stop()
    print(Path(args.out, name + ".md").read_text())
    return 0


def bench_generate(args) -> int:
    from planner.bench import generate
    from planner.bench.seeds import development_seeds

    try:
        seeds = development_seeds(args.seeds)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if args.what == "pddl":
        from planner.bench import pddl_tasks
        from planner.config import load_config
        from planner.wiring import load_skill_planner

        domain = pddl_tasks.generate(load_skill_planner(load_config(args.config)), seeds, out, _progress)
        print(f"wrote {domain} and {len(seeds)} tasks to {out}/tasks; run: planner bench pddl --domain {domain} "
              f"--suite {out}/tasks")
        return 0
    if args.what == "plans":
        from planner.bench import plan_tasks
        from planner.config import load_config
        from planner.wiring import load_skill_planner

        tasks_file = out / "tasks.jsonl"
        count = plan_tasks.write_tasks(seeds, load_skill_planner(load_config(args.config)), args.per_home or 3,
                                       tasks_file)
        print(f"wrote {count} tasks from {len(seeds)} homes to {tasks_file}; run: planner bench plans --suite {tasks_file}")
        return 0
    if args.what == "checks":
        if args.source != "scan":
            print("error: the household checks are bench/checks/checks.yaml, written by hand; generate --source scan",
                  file=sys.stderr)
            return 2
        from planner.bench import scan_checks

        for seed in seeds:
            path = scan_checks.write_checks(seed, out)
            print(f"wrote {path}; run: planner bench checks --data {path}")
        return 0
    if args.what == "tasks":
        from planner.bench import generate_tasks
        from planner.config import load_config
        from planner.wiring import load_robot

        counts = generate_tasks.write_source_suite(args.source, seeds, load_robot(load_config(args.config)), out,
                                                   args.per_home, _progress)
        print(f"wrote {len(seeds)} homes and {sum(counts.values())} tasks ({counts}) to {out}; run: planner bench "
              f"tasks --suite {out}/tasks.yaml")
        return 0
    for number, seed in enumerate(seeds, 1):
        if args.source == "scan":
            from planner.bench import scan_homes

            counts = scan_homes.write_scan_home(scan_homes.make_scan_home(seed, args.items), out)
        else:
            counts = generate.write_home(generate.make_home(seed, args.items or generate.DEFAULT_ITEMS), out)
        home = f"{'scan' if args.source == 'scan' else 'home'}-{seed}"
        _progress(f"[{number}/{len(seeds)}] {home}: {counts['rooms']} rooms, {counts['items']} items, "
                  f"{counts['queries']} queries ({counts['no_answer']} with no answer)")
    print(f"wrote {len(seeds)} homes to {out}; run: planner bench objects --maps {out}/maps --queries {out}/queries "
          f"--truth {out}/truth")
    return 0


def bench_test(args) -> int:
    """A test measurement: the next block of test seeds, generated out of sight, run once, kept as
    aggregates, and recorded in the ledger (planner.bench.seeds)."""
    import shlex
    import tempfile
    from dataclasses import replace

    from planner.bench import objects, seeds, tasks, test_block
    from planner.bench.common import machine_info, write_results
    from planner.config import load_config
    from planner.core.errors import InputError
    from planner.core.object_finder import WORKFLOWS
    from planner.wiring import load_robot

    ledger = seeds.Ledger(Path(args.ledger))
    try:
        commit = seeds.clean_commit(Path(args.repo))
        block = ledger.next_block()   # a damaged ledger is said before anything is spent
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.what == "tasks" and args.llm == "scripted":
        print("error: a test block of tasks needs a model: generated tasks have no scripts", file=sys.stderr)
        return 2
    if unknown := [w for w in args.workflow if w not in WORKFLOWS]:
        print(f"error: unknown workflow {', '.join(unknown)}; use {', '.join(WORKFLOWS)}", file=sys.stderr)
        return 2
    config = load_config(args.config)
    command = shlex.join(["planner", *sys.argv[1:]])
    name = f"test-block-{block.first}-{args.what}" + ("-scan" if args.source == "scan" else "")
    with tempfile.TemporaryDirectory(prefix="planner-test-block-") as hidden:
        where = test_block.generate_block(args.what, block, Path(hidden) / "homes", load_robot(config), args.source)
        _progress(f"test block {block}: {args.what} generated where the run alone reads them")
        if args.what == "tasks":
            args.suite, args.faults, args.seed = str(where), "none", 0
            prepared = _bench_setup(args)   # a model that does not answer is said here, before a block is spent
            if prepared is None:
                print("no block was drawn", file=sys.stderr)
                return 1
            config, setup, server, llm, _ = prepared
            setup = replace(setup, memory=_open_memory(config, ":memory:"))   # the explainer with its seed cases
            header = {"llm": llm, "explainer": "on", "mode": setup.settings.mode}
        else:
            try:
                maps = objects.load_bench(where / "maps", where / "queries", where / "truth", _progress)
            except InputError as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
            opened = _object_finder(args, config)
            if opened is None:
                print("no block was drawn", file=sys.stderr)
                return 1
            finder, server, llm = opened
        benchmark = f"{args.what} ({args.source})"
        ledger.draw(commit, benchmark, command)   # from here on the block is spent
        _progress(f"test block {block} drawn and recorded in {ledger.path}; only counts are shown as it runs")
        blind = test_block.counts_only(_progress)
        try:
            if args.what == "tasks":
                results = tasks.run(setup, Path(hidden) / "run", name, 1, header, progress=blind)
                figures, line = test_block.task_figures(results["summary"])
            else:
                results = objects.run(finder, args.workflow, maps, {}, Path(hidden) / "run.json", blind)
                figures, line = test_block.object_figures(results["summary"])
        except KeyboardInterrupt:
            print(f"interrupted: block {block} is spent; its row in {ledger.path} stays 'running'", file=sys.stderr)
            return 130
        finally:
            if server is not None:
                server.stop()
    ledger.report(block, line)
    kept = {"benchmark": "test-block", "what": args.what, "source": args.source, "block": str(block), "commit": commit,
            "llm": llm,
            "machine": machine_info(), "figures": figures}
    written = write_results(kept, Path(args.out), name, test_block.plot, test_block.report)
    print(written[-1].read_text())
    print(f"ledger: {ledger.path}: block {block}: {line}")
    return 0


def _calibration_run(args, config):
    """The calibrating finder over the maps of --data: (the run's records, its settings, the results
    folder, the results' name), or an exit status after saying why not."""
    import re

    from planner.bench import objects
    from planner.bench.common import machine_info
    from planner.bench.seeds import development_seeds

    maps = [m for folder in args.data
            for m in objects.load_bench(Path(folder) / "maps", Path(folder) / "queries", Path(folder) / "truth", _progress)]
    for bench_map in maps:
        if seed := re.fullmatch(r"(?:home|scan)-(\d+)", bench_map.name):
            try:
                development_seeds(seed.group(1))
            except ValueError as error:
                print(f"error: map {bench_map.name}: {error}", file=sys.stderr)
                return 2
    opened = _object_finder(args, config, calibrating=True)
    if opened is None:
        return 1
    finder, server, llm = opened
    results_dir = Path(args.results)
    name = f"calibration-objects-{llm['model'].replace('/', '_')}"
    records = {"benchmark": "calibration", "machine": machine_info(), "llm": llm}
    try:
        objects.run(finder, ["base"], maps, records, results_dir / f"{name}-records.json", _progress)
    except KeyboardInterrupt:
        print(f"interrupted; the answers so far are in {results_dir / (name + '-records.json')}", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
    return records, finder.settings, results_dir, name


def calibrate_checks(args) -> int:
    """The name and room checks' thresholds for the model, chosen on the checks results of both
    sources and written to its calibration file (planner.bench.calibrate_checks)."""
    from planner.bench import calibrate, calibrate_checks
    from planner.bench.common import write_results
    from planner.config import load_config
    from planner.wiring import calibration_file

    target = 10.0 if args.target is None else args.target
    by_source: dict[str, dict] = {}
    models: set[str] = set()
    commits: set[str] = set()   # of the code that gave the answers
    data: dict[str, str] = {}
    try:
        for pair in args.checks or []:
            source, sep, path = pair.partition("=")
            if not sep or not source or not path:
                raise ValueError(f"{pair!r}: give SOURCE=RESULTS, e.g. scan=checks-scan-100.json")
            results = json.loads(Path(path).read_text())
            if results.get("benchmark") != "checks":
                raise ValueError(f"{path}: not the results of planner bench checks")
            by_source[source], data[source] = results["records"], f"{results['data']} ({path})"
            models.add(results["llm"]["model"])
            commits.add(results.get("machine", {}).get("source") or "unknown")
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: --checks {error}", file=sys.stderr)
        return 2
    if len(by_source) < 2 or len(models) != 1:
        print("error: --checks needs the results of one model on at least two sources (household=… scan=…)",
              file=sys.stderr)
        return 2
    model, config = models.pop(), load_config(args.config)
    settings = config.planner
    values: dict[str, float] = {}
    how: dict[str, dict] = {}
    tables: dict[str, dict[float, dict[str, dict]]] = {}
    for setting in calibrate_checks.CALIBRATED:
        before = getattr(settings, setting)
        table = tables[setting] = calibrate_checks.sweep(setting, by_source)
        chosen, reached = calibrate_checks.choose(setting, table, target, before)
        values[setting] = chosen
        how[setting] = calibrate_checks.how_chosen(setting, table, chosen, reached, target, before, data)
    path = Path(args.out) if args.out else calibration_file(config, model)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(calibrate.calibration_text(path.read_text() if path.is_file() else None, model, "planner", values,
                                               how, ", ".join(sorted(commits)) or "unknown"))
    write_results({"benchmark": "calibration-checks", "model": model, "target": target, "data": data,
                   "chosen": values, "calibration": how,
                   "sweep": {setting: {str(t): rows for t, rows in table.items()} for setting, table in tables.items()}},
                  Path(args.results), f"calibration-checks-{model.replace('/', '_')}", calibrate_checks.plot)
    for setting, chosen in values.items():
        entry = how[setting]
        print(f"{path}: {setting} {chosen} (was {entry['before']['value']}); target {target:g}% "
              f"{'reached' if entry['target_reached'] else 'NOT reached on every source'}")
        for source, row in entry["reached"].items():
            print(f"  {source}: {row}")
    return 0


def calibrate_objects(args) -> int:
    """The object finder's threshold for the model, chosen on development data of both sources and
    written to its calibration file (planner.bench.calibrate)."""
    from planner.bench import calibrate
    from planner.bench.common import write_results
    from planner.config import load_config
    from planner.wiring import calibration_file, finder_settings

    config = load_config(args.config)
    if bool(args.data) == bool(args.records):
        print("error: give --data (run the finder) or --records (the answers of an earlier run), one of them",
              file=sys.stderr)
        return 2
    if args.records:
        try:
            records = json.loads(Path(args.records).read_text())
            if not all("evidence" in record for record in records["records"]):
                raise ValueError("not the answers of planner calibrate (a record has no evidence)")
            model = records["llm"]["model"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"error: --records {args.records}: {error}", file=sys.stderr)
            return 2
        settings = finder_settings(config, model)[0]
        results_dir, name = Path(args.results), f"calibration-objects-{model.replace('/', '_')}"
    else:
        ran = _calibration_run(args, config)
        if isinstance(ran, int):
            return ran
        records, settings, results_dir, name = ran
    llm, model = records["llm"], records["llm"]["model"]
    by_source: dict[str, list[dict]] = {}
    for record in records["records"]:
        by_source.setdefault(calibrate.source_of(record["map"]), []).append(record)
    data = {source: f"{len(names)} map{'s' * (len(names) > 1)} ({', '.join(names)}), {len(rows)} queries"
            for source, rows in by_source.items() if (names := sorted({r['map'] for r in rows}))}
    before = settings.kind_threshold
    table = calibrate.sweep(by_source, settings)
    target = 75.0 if args.target is None else args.target
    chosen, reached = calibrate.choose(table, target, before)
    path = Path(args.out) if args.out else calibration_file(config, model)
    path.parent.mkdir(parents=True, exist_ok=True)
    values, how = calibrate.objects_calibration(chosen, reached, target, before, table, data)
    path.write_text(calibrate.calibration_text(path.read_text() if path.is_file() else None, model, "object_finder",
                                               values, how, records["machine"].get("source") or "unknown"))
    write_results({"benchmark": "calibration", "model": model, "llm": llm, "machine": records["machine"],
                   "target": target, "before": before, "chosen": chosen, "target_reached": reached,
                   "data": data, "sweep": {str(t): rows for t, rows in table.items()}},
                  results_dir, name, calibrate.plot)
    print(f"{path}: {calibrate.SETTING} {chosen} (was {before}); \"nothing\" precision target {target:g}% "
          f"{'reached' if reached else 'NOT reached on every source'}")
    for source, row in table[chosen].items():
        print(f"  {source}: Top-1 {row['top1']} (before {table[before][source]['top1'] if before in table else '?'}), "
              f"where an answer exists {row['top1_answerable']}, \"nothing\" precision {row['nothing_precision']}, "
              f"recall {row['nothing_recall']} ({row['queries']} queries)")
    return 0


def _suite_path(suite: str, config) -> Path:
    """A suite file, or the name of one in the installed config/tasks."""
    path = Path(suite)
    return path if path.suffix in (".yaml", ".yml") else config.path(f"tasks/{suite}.yaml")


def _llm_arguments(parser, logs: bool = True) -> None:
    parser.add_argument("--llm", choices=["embedded", "openai", "scripted", *(["replay"] if logs else [])],
                        default="embedded", help="embedded llama.cpp model, an OpenAI-compatible endpoint, each "
                        "task's script" + (", or only the calls --replay recorded" if logs else ""))
    parser.add_argument("--base-url", help="endpoint for --llm openai (default: config / OPENAI_BASE_URL)")
    parser.add_argument("--model", help="model name: for --llm embedded one of the embedded models "
                                        "(qwen2.5-coder-1.5b, qwen2.5-coder-0.5b), for --llm openai the server's")
    if logs:  # not for a test block: its calls would keep what the test must not show
        parser.add_argument("--log-llm", metavar="FILE", help="append every model call (messages, schema, reply, "
                            "tokens, seconds) to FILE as JSON lines")
        parser.add_argument("--replay", metavar="LOG", nargs="+", help="answer the calls these --log-llm files "
                            "recorded as they were answered; any other goes to the model of --llm")


def _replies_argument(parser) -> None:
    parser.add_argument("--replies", help="for --llm scripted: a YAML list of replies, in order")


def add_commands(sub) -> None:
    from planner.core.answer_model import LEARNERS

    p = sub.add_parser("bench", help="run a benchmark; writes a JSON results file and a plot")
    bench_sub = p.add_subparsers(dest="bench_command", required=True)
    perception = bench_sub.add_parser("perception", help="scene graph build, fusion and queries at growing map sizes")
    perception.add_argument("--sizes", type=int, nargs="+", help="objects per map (default: 10 to 50,000)")
    perception.add_argument("--dense-sizes", type=int, nargs="*",
                            help="objects per dense map, all in the same few rooms (default: 5000 10000 20000)")
    perception.add_argument("--repeat", type=int, default=3, help="builds per size (the median is reported)")
    perception.add_argument("--seed", type=int, default=0, help="the generated maps and detections")
    perception.add_argument("--out", default=RUN_FOLDER, help="folder for perception.json and .png (default: a new one under bench/runs/)")
    perception.set_defaults(run=bench_perception)
    bench_tasks_parser = bench_sub.add_parser("tasks", help="carry out a task suite in fresh simulated homes and score "
                                                            "each task by its success predicate")
    bench_tasks_parser.add_argument("--suite", default="full", help="a suite file, or a name in config/tasks "
                                                                   "(full, smoke)")
    _llm_arguments(bench_tasks_parser)
    bench_tasks_parser.add_argument("--faults", choices=["none", "task", "random"], default="none",
                                    help="task: the faults each task lists; random: one fault per episode from --seed")
    bench_tasks_parser.add_argument("--seed", type=int, default=0, help="draws the random faults and garbled replies")
    bench_tasks_parser.add_argument("--repeat", type=int, default=1, help="episodes per task")
    bench_tasks_parser.add_argument("--load", type=int, default=0, metavar="N",
                                    help="N CPU-bound processes run beside the episodes, as another node or a test "
                                         "run would on the robot's computer (recorded in the results)")
    bench_tasks_parser.add_argument("--tasks", nargs="+", help="only these task ids")
    bench_tasks_parser.add_argument("--no-explainer", action="store_true",
                                    help="no suggestions from the failure-case memory after a failed skill")
    bench_tasks_parser.add_argument("--cases", default=":memory:", help="the explainer's case database (default: a "
                                                                          "fresh one in memory with the seed cases)")
    bench_tasks_parser.add_argument("--learn", action="store_true", help="record learned cases into --cases; this "
                                                                        "run still retrieves only what it had")
    bench_tasks_parser.add_argument("--plan-check", choices=["off", "warn"], default="off",
                                    help="warn: score each plan (ReAct: its first steps) against the plans that worked for "
                                         "similar earlier requests (kept in --cases) and report how well a low score "
                                         "foretells failure")
    bench_tasks_parser.add_argument("--config", help="stack config for LLM, planner, skills and explainer settings")
    bench_tasks_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    bench_tasks_parser.add_argument("--name", help="results file name (default: tasks-SUITE-LLM[-MODEL][-FAULTS-faults])")
    bench_tasks_parser.add_argument("--resume", action="store_true", help="keep the episodes an interrupted run wrote (in its --out)")
    bench_tasks_parser.add_argument("--record-replies", metavar="SUITE_FILE",
                                    help="also write the suite with every task's replies as its script, to replay "
                                         "this run with --llm scripted")
    bench_tasks_parser.add_argument("--verbose", action="store_true", help="print every step of every episode")
    bench_tasks_parser.add_argument("--mode", choices=["react", "llm_p", "auto"],
                                    help="planning mode (default: the config's planner.mode)")
    bench_tasks_parser.set_defaults(run=bench_tasks)
    bench_context_parser = bench_sub.add_parser("context", help="prompt tokens per LLM call in a home and in one with "
                                                                "N times the objects")
    bench_context_parser.add_argument("--room-count", type=int, default=12, help="rooms of each generated home")
    bench_context_parser.add_argument("--objects", type=int, default=30, help="objects in the small home")
    bench_context_parser.add_argument("--factor", type=int, default=10, help="the large home has this many times more")
    bench_context_parser.add_argument("--seed", type=int, default=0, help="the generated homes")
    _llm_arguments(bench_context_parser)
    bench_context_parser.add_argument("--config", help="stack config for LLM, planner and skill settings")
    bench_context_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    bench_context_parser.add_argument("--name", help="results file name (default: context-LLM-MODEL)")
    bench_context_parser.set_defaults(run=bench_context)

    ablation_parser = bench_sub.add_parser("ablation", help="the task bench with the explainer off, with its seed "
                                                            "cases, and with the cases learned in the seed run")
    ablation_parser.add_argument("--suite", default="full", help="a suite file, or a name in config/tasks (full, smoke)")
    _llm_arguments(ablation_parser)
    ablation_parser.add_argument("--faults", choices=["task", "random"], default="task",
                                 help="task: the faults each task lists; random: one fault per episode from --seed")
    ablation_parser.add_argument("--seed", type=int, default=0, help="draws the random faults and garbled replies")
    ablation_parser.add_argument("--tasks", nargs="+", help="only these task ids (default: the tasks with faults)")
    ablation_parser.add_argument("--config", help="stack config (default: the installed config/planner.yaml)")
    ablation_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    ablation_parser.add_argument("--name", help="results file name (default: ablation-SUITE-LLM-MODEL-FAULTS-faults)")
    ablation_parser.set_defaults(run=bench_ablation)
    objects_parser = bench_sub.add_parser("objects", help="find the objects natural-language queries ask for in "
                                                          "Voxeland maps, scored Top-1/2/3/Any against ground truth")
    objects_parser.add_argument("--maps", default="bench/objects/maps", help="folder of Voxeland maps (*.json, "
                                                                            "rooms in NAME.rooms.yaml)")
    objects_parser.add_argument("--queries", default="bench/objects/queries.yaml", help="one queries file for every "
                                "map, or a folder of NAME.yaml, one per map")
    objects_parser.add_argument("--truth", default="bench/objects/truth", help="folder of NAME.yaml: query id -> ids")
    objects_parser.add_argument("--workflow", nargs="+", default=["base"], help="base, self_reflection, "
                                                                                "multi_agent, ensemble, or all")
    _llm_arguments(objects_parser)
    _replies_argument(objects_parser)
    objects_parser.add_argument("--config", help="stack config (object_finder and LLM settings)")
    objects_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    objects_parser.add_argument("--name", help="results file name (default: objects-LLM-MODEL)")
    objects_parser.add_argument("--resume", action="store_true", help="keep the answers of an interrupted run (in its --out)")
    objects_parser.set_defaults(run=bench_objects)
    checks_parser = bench_sub.add_parser("checks", help="the goal step's yes/no checks (a thing for a need, another "
                                                        "name for a label) on needs and names worded for it: how "
                                                        "well they tell right from wrong, and what passes at each "
                                                        "threshold")
    checks_parser.add_argument("--data", default="bench/checks/checks.yaml", help="labels, needs, names, near "
                                                                                  "misses and rooms (YAML)")
    checks_parser.add_argument("--wrong", type=int, default=8, help="wrong things each need is asked about, drawn "
                                                                    "from the labels")
    checks_parser.add_argument("--seed", type=int, default=0, help="which wrong things are drawn")
    _llm_arguments(checks_parser)
    _replies_argument(checks_parser)
    checks_parser.add_argument("--config", help="stack config (the goal step's LLM and the planner's thresholds)")
    checks_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    checks_parser.add_argument("--name", help="results file name (default: checks-LLM-MODEL)")
    checks_parser.set_defaults(run=bench_checks)
    pddl_parser = bench_sub.add_parser("pddl", help="LLM+P on PDDL tasks: the model writes the problem (or its goal) "
                                                    "from words, Fast Downward plans, the plan is validated against "
                                                    "the ground-truth problem")
    pddl_parser.add_argument("--domain", required=True, help="the PDDL domain file")
    pddl_parser.add_argument("--suite", required=True, help="folder of NAME.nl (the task in words) and NAME.pddl "
                                                            "(its ground-truth problem)")
    pddl_parser.add_argument("--write", choices=["problem", "goal"], default="problem",
                             help="what the model writes: the whole problem, or only its goal (the initial state "
                                  "from the ground truth, as the robot's map gives it)")
    pddl_parser.add_argument("--timeout", type=float, default=30.0, help="seconds Fast Downward may search per task")
    _llm_arguments(pddl_parser)
    _replies_argument(pddl_parser)
    pddl_parser.add_argument("--config", help="stack config (LLM settings; the skill library makes the worked example)")
    pddl_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    pddl_parser.add_argument("--name", help="results file name (default: pddl-TASKS-WRITE-LLM-MODEL)")
    pddl_parser.set_defaults(run=bench_pddl)
    memory_parser = bench_sub.add_parser("memory", help="a lifelong episode in a generated home: changes people tell, "
                                                        "each update scored against the true home, per variant")
    memory_parser.add_argument("--seed", type=int, default=1000, help="the home and its story (development data: "
                               "0-1019)")
    memory_parser.add_argument("--changes", type=int, default=100, help="changes people tell in the episode")
    memory_parser.add_argument("--requests", type=int, default=20, help="requests between the changes")
    memory_parser.add_argument("--variants", nargs="+", default=["full", "full+verify", "selected", "selected+verify",
                                                                 "search", "search+verify", "grounded+verify"],
                               help="what the model sees (the full graph, or retrieved by picked labels or by a "
                                    "searched query graph) and whether changes are verified")
    _llm_arguments(memory_parser)
    _replies_argument(memory_parser)
    memory_parser.add_argument("--config", help="stack config (LLM settings, the skill library and robot)")
    memory_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    memory_parser.add_argument("--name", help="results file name (default: memory-SEED-LLM-MODEL)")
    memory_parser.add_argument("--resume", action="store_true", help="keep the variants an interrupted run wrote (in its --out)")
    memory_parser.add_argument("--domain", help="with --episode: the episode's PDDL domain")
    memory_parser.add_argument("--scene-mapping", help="with --episode, for the grounded variant: a YAML file naming the "
                                                       "domain's predicates for on, inside, open and room, and the "
                                                       "types of furniture with a door (default: --export's domain)")
    memory_parser.add_argument("--episode", help="an episode from files instead of a generated one: a folder with "
                                                 "initial_problem.pddl and time_NNNN_state_change/state_change.txt, "
                                                 "time_NNNN_goal/goal.txt + problem.pddl steps")
    memory_parser.add_argument("--export", metavar="DIR", help="write the generated episode in that layout to DIR "
                                                               "(and its domain beside it) instead of running it")
    memory_parser.set_defaults(run=bench_memory)
    compare_parser = bench_sub.add_parser("compare", help="task-bench runs side by side (e.g. --mode react and "
                                                          "llm_p): success, LLM calls, tokens and seconds per tier")
    compare_parser.add_argument("results", nargs="+", help="results files of planner bench tasks (.json)")
    compare_parser.add_argument("--labels", nargs="+", help="a name per run (default: each run's planning mode)")
    compare_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    compare_parser.add_argument("--name", help="results file name (default: compare-SUITE-ARMS)")
    compare_parser.set_defaults(run=bench_compare)
    plans_parser = bench_sub.add_parser("plans", help="plans written from scene tables (or images) by one agent or "
                                        "three, scored with PG2S and KAS against reference plans")
    plans_parser.add_argument("--suite", required=True, help="JSONL of {id, task, scene_table | image, reference_steps} "
                              "(planner bench generate plans makes one)")
    plans_parser.add_argument("--arms", nargs="+", default=["single/table", "multi/table"],
                              choices=["single/table", "multi/table", "single/image", "multi/image"],
                              help="agents/scene pairs to run (image arms need a vision-capable --llm openai server)")
    plans_parser.add_argument("--limit", type=int, help="only the first N tasks")
    _llm_arguments(plans_parser)
    _replies_argument(plans_parser)
    plans_parser.add_argument("--config", help="stack config (default: the installed config/planner.yaml)")
    plans_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    plans_parser.add_argument("--name", help="results file name (default: plans-TASKS-LLM)")
    plans_parser.set_defaults(run=bench_plans)
    fleet_parser = bench_sub.add_parser("fleet", help="robots look around generated homes while people move things, "
                                        "then answer yes/no questions; vote, debate and central answer models compared")
    fleet_parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 12, 16], help="rooms per home")
    fleet_parser.add_argument("--seeds", default="1000-1004", help="a seed, a range (1000-1004) or a list (1,5,9)")
    fleet_parser.add_argument("--robots", type=int, default=3, help="robots in each fleet")
    fleet_parser.add_argument("--questions", type=int, default=40, help="questions per home (half yes, half no)")
    fleet_parser.add_argument("--debate-questions", type=int, default=4,
                              help="questions per home and condition the robots also debate (each ~10 LLM calls)")
    fleet_parser.add_argument("--explore", choices=["coverage", "model"], default="coverage",
                              help="coverage: the nearest room not yet looked into; model: the LLM picks the room "
                                   "with the most unseen things")
    fleet_parser.add_argument("--budget-share", type=float, default=0.5,
                              help="each robot's time is about this share of what looking into every room takes")
    fleet_parser.add_argument("--confidence", action="store_true",
                              help="each answer with the model's probability of yes (a feature of the extended "
                                   "answer models); ~2.5x slower on the embedded server")
    fleet_parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS,
                              help="central answer models to train on each home")
    fleet_parser.add_argument("--train-on", nargs="+", metavar="RESULTS",
                              help="also score answer models trained beforehand on the questions of these runs' homes "
                                   "(results files of `planner bench fleet` on other seeds), as a robot would ship "
                                   "with one")
    _llm_arguments(fleet_parser)
    _replies_argument(fleet_parser)
    fleet_parser.add_argument("--config", help="stack config (default: the installed config/planner.yaml)")
    fleet_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    fleet_parser.add_argument("--name", help="results file name (default: fleet-EXPLORE-LLM)")
    fleet_parser.add_argument("--resume", action="store_true", help="keep the homes an interrupted run finished (in its --out)")
    fleet_parser.add_argument("--rescore", metavar="RESULTS",
                              help="score a finished run again from the answers it kept, asking no model: answer "
                                   "models (--learners, --train-on) on the very answers its robots gave")
    fleet_parser.set_defaults(run=bench_fleet)
    generate_parser = bench_sub.add_parser("generate", help="make benchmark homes and queries from development seeds "
                                           "(0-1019); test blocks are drawn by planner bench test")
    generate_parser.add_argument("what", choices=["objects", "tasks", "pddl", "plans", "checks"], help="objects: "
                                 "Voxeland maps, queries and truth for planner bench objects; tasks: worlds and a task "
                                 "suite for planner bench tasks; pddl: a domain and tasks in words with their problems "
                                 "for planner bench pddl; plans: tasks.jsonl with scene tables and reference plans for "
                                 "planner bench plans; checks (--source scan): a data file per seed for planner bench "
                                 "checks")
    generate_parser.add_argument("--per-home", type=int, help="plans: tasks per home (default 3); tasks: tasks of each "
                                 "tier per home, drawn by the home's seed (default: 6)")
    generate_parser.add_argument("--seeds", required=True, help="a seed, a range (300-309) or a list (1,5,9)")
    generate_parser.add_argument("--items", type=int, help="objects: furniture and things per home (household: "
                                 "60-120%% of this many, default 25; scan: this many, default 100-300 at random)")
    generate_parser.add_argument("--source", choices=["household", "scan"], default="household",
                                 help="objects and tasks: household, the first generator (planner.bench.generate, "
                                      "generate_tasks), or scan, the second source built apart from it "
                                      "(planner.bench.scan_homes, scan_tasks): larger homes labelled as 3D scans are, "
                                      "other phrasings")
    generate_parser.add_argument("--out", required=True, help="folder for maps/, queries/ and truth/ (objects), "
                                 "worlds/ and tasks.yaml (tasks) or checks-scan-SEED.yaml (checks)")
    generate_parser.add_argument("--config", help="stack config: the robot the homes are furnished for (tasks)")
    generate_parser.set_defaults(run=bench_generate)
    calibrate_parser = sub.add_parser("calibrate", help="choose a model's tuned settings on development data and "
                                      "write them to its calibration file (calibration/MODEL.yaml beside the config)")
    calibrate_parser.add_argument("what", choices=["objects", "checks"], help="objects: the object finder's "
                                  "threshold for something fitting, to a stated precision of its \"nothing fits\" "
                                  "answers; checks: the name and room checks' thresholds, to a stated rate of words "
                                  "read as something the home does not have")
    calibrate_parser.add_argument("--data", nargs="+", help="folders of development maps, queries and truth "
                                  "(planner bench generate objects [--source scan]); use both sources")
    calibrate_parser.add_argument("--records", help="instead of --data: the answers an earlier run kept "
                                  "(RESULTS/calibration-objects-MODEL-records.json), chosen from again without the model")
    _llm_arguments(calibrate_parser)
    _replies_argument(calibrate_parser)
    calibrate_parser.add_argument("--checks", nargs="+", metavar="SOURCE=RESULTS", help="checks: the results of "
                                  "planner bench checks on each source's data, e.g. household=checks.json "
                                  "scan=checks-scan-100.json (bench/checks/checks.yaml; planner bench generate checks "
                                  "--source scan)")
    calibrate_parser.add_argument("--target", type=float, help="objects: the least share (%%) of \"nothing fits\" "
                                  "answers that must be right, on each source (default 75); checks: the most share "
                                  "(%%) of words for things or rooms the home lacks, or of rooms read wrongly, that "
                                  "may be read as one, on each source (default 10)")
    calibrate_parser.add_argument("--config", help="stack config (the calibration file goes beside it)")
    calibrate_parser.add_argument("--out", help="the calibration file (default: calibration/MODEL.yaml beside the "
                                  "config)")
    calibrate_parser.add_argument("--results", default=RUN_FOLDER, help="folder for the sweep (JSON, plot) and "
                                  "the answers it was computed from")
    calibrate_parser.set_defaults(run=lambda args: (calibrate_checks if args.what == "checks" else calibrate_objects)(args))
    test_parser = bench_sub.add_parser("test", help="a test measurement: the next never-used block of test seeds, "
                                       "generated out of sight, run once, kept as aggregates and recorded in the "
                                       "ledger")
    test_parser.add_argument("what", choices=["tasks", "objects"], help="tasks: a generated task suite (planner bench "
                             "tasks); objects: generated maps and queries (planner bench objects)")
    _llm_arguments(test_parser, logs=False)
    _replies_argument(test_parser)
    test_parser.add_argument("--mode", choices=["react", "llm_p", "auto"], help="tasks: planning mode (default: the "
                             "config's planner.mode)")
    test_parser.add_argument("--workflow", nargs="+", default=["base"], help="objects: the finder's workflows")
    test_parser.add_argument("--source", choices=["household", "scan"], default="household",
                             help="which generator makes the block's homes (see bench generate --source)")
    test_parser.add_argument("--config", help="stack config")
    test_parser.add_argument("--ledger", default=str(Path("bench") / "TEST-SEEDS.md"),
                             help="the ledger of test blocks (default: bench/TEST-SEEDS.md)")
    test_parser.add_argument("--repo", default=".", help="the checkout measured: it must have no uncommitted changes")
    test_parser.add_argument("--out", default="bench/results", help="folder for the aggregates (JSON, report, plot)")
    test_parser.set_defaults(run=bench_test)
    explainer_parser = bench_sub.add_parser("explainer", help="case retrieval latency and memory at growing case counts")
    explainer_parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000],
                                  help="case counts the memory is timed at")
    explainer_parser.add_argument("--retrievals", type=int, default=200, help="retrievals timed per size")
    explainer_parser.add_argument("--pool", type=int, default=2000, help="distinct requests and reasons the cases "
                                                                           "are made of")
    explainer_parser.add_argument("--seed", type=int, default=0, help="the generated cases and queries")
    explainer_parser.add_argument("--out", default=RUN_FOLDER, help=OUT_HELP)
    explainer_parser.set_defaults(run=bench_explainer)
    for parser in bench_sub.choices.values():
        out = next((action for action in parser._actions if action.dest == "out"), None)
        if out is not None and out.default == RUN_FOLDER:
            parser.add_argument("--force", action="store_true", help="write into an --out folder that holds committed "
                                                                      "results (they are overwritten)")
            parser.set_defaults(run=_keeping_committed_results(parser.get_default("run")))


def _tracked_files(folder: Path) -> list[str]:
    """The files of `folder` that git tracks (none outside a git checkout)."""
    listed = subprocess.run(["git", "-C", str(folder), "ls-files"], capture_output=True, text=True)
    return listed.stdout.split() if listed.returncode == 0 else []


def _keeping_committed_results(run):
    """The command, refused before it runs when --out is a folder of committed results (which docs
    quote) and neither --force nor --resume says to write there."""
    def guarded(args) -> int:
        out = Path(args.out)
        if out.is_dir() and not args.force and not getattr(args, "resume", False):
            committed = _tracked_files(out)
            if committed:
                print(f"error: --out {out} holds committed results ({', '.join(committed[:3])}"
                      f"{', …' if len(committed) > 3 else ''}) that this run could overwrite; leave --out out for a new "
                      f"folder under bench/runs/, or add --force", file=sys.stderr)
                return 2
        return run(args)
    return guarded
