"""Explainer benchmarks.

`retrieval`: how long a top-5 retrieval takes and how much memory the index holds at 1k, 10k,
100k cases. Cases are composed from pools of requests and failure reasons (the embedding cache
keys on text, so a pool is embedded once), spread over the skills and failure codes the stack
has; the worst case, every case in one skill and code, is measured too.

`ablation`: the task benchmark three times on the same tasks and seeds — explainer off, seed
cases, seed + the cases learned in the seed run — to show what the memory is worth.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import psutil

from planner.core.case_store import CaseStore, StoredCase
from planner.core.explainer import CaseMemory
from planner.core.ports import Embedder

# Failure classes the stack produces, per skill (a subset of FailureCode).
CLASSES = {
    "GOTO": ["PATH_BLOCKED", "NAVIGATION_ABORTED", "GOAL_OUTSIDE_MAP", "TIMEOUT"],
    "PICK": ["OBJECT_NOT_FOUND", "OUT_OF_REACH", "GRASP_NOT_CONFIRMED", "ARM_OCCUPIED", "TOO_HEAVY", "GRASP_LOST"],
    "PLACE": ["OUT_OF_REACH", "NOT_HOLDING", "PLACE_NOT_CONFIRMED", "GRASP_LOST", "CONTAINER_CLOSED"],
    "OPEN": ["OUT_OF_REACH", "ARM_OCCUPIED", "ALREADY_OPEN"],
    "CLOSE": ["OUT_OF_REACH", "ALREADY_CLOSED"],
    "HANDOVER": ["PERSON_NOT_FOUND", "HANDOVER_NOT_CONFIRMED", "NOT_HOLDING"],
    "LOOK_AROUND": ["TIMEOUT"],
}
OBJECTS = ["cup", "bottle", "apple", "book", "remote", "plate", "glasses", "sponge", "towel", "keys", "phone",
           "medicine", "blanket", "banana", "mug", "magazine", "lamp", "pillow", "bowl", "spoon"]
PLACES = ["kitchen table", "counter", "fridge", "sofa", "bed", "nightstand", "desk", "shelf", "dining table",
          "side table", "dresser", "cabinet"]
ROOMS = ["kitchen", "bedroom", "living room", "office", "bathroom", "hallway", "dining room"]
REQUEST_FORMS = ["Bring me the {o} from the {p}", "Put the {o} on the {p} in the {r}", "Take the {o} to the {r}",
                 "Can you get the {o} from the {r}?", "Pick up the {o} on the {p}", "I need the {o}, it is in the {r}",
                 "Move the {o} from the {p} to the {r}", "Go to the {p} in the {r} and fetch the {o}"]
REASON_FORMS = ["{o}_{n} was not where the map placed it (on the {p})", "the {p} is {d} m away; the arm reaches 1.0 m",
                "the path to the {p} in the {r} is blocked", "the grasp of {o}_{n} closed on nothing",
                "{o}_{n} slipped out of the gripper near the {p}", "the {p} in the {r} is closed",
                "no free space on the {p} for {o}_{n}", "the person did not take the {o} within {n}0 s"]


def text_pools(size: int, rng: random.Random) -> tuple[list[str], list[str]]:
    def fill(forms: list[str]) -> list[str]:
        texts: set[str] = set()
        for _ in range(size * 50):   # the forms make far more distinct texts than a pool needs
            texts.add(rng.choice(forms).format(o=rng.choice(OBJECTS), p=rng.choice(PLACES), r=rng.choice(ROOMS),
                                               d=f"{rng.uniform(1.2, 6):.1f}", n=rng.randint(1, 9)))
            if len(texts) == size:
                return sorted(texts)
        raise ValueError(f"the text forms make fewer than {size} distinct texts")
    return fill(REQUEST_FORMS), fill(REASON_FORMS)


def synthetic_cases(count: int, requests: list[str], reasons: list[str], rng: random.Random,
                    one_class: bool = False) -> list[StoredCase]:
    classes = [("PICK", "OBJECT_NOT_FOUND")] if one_class else [(s, c) for s, codes in CLASSES.items() for c in codes]
    cases = []
    for i in range(count):
        skill, code = rng.choice(classes)
        cases.append(StoredCase(f"synthetic-{i}", skill, code, rng.choice(requests), rng.choice(reasons),
                                f"suggestion {i}", "human", created=float(i)))
    return cases


def measure_retrieval(memory: CaseMemory, queries: list[tuple[str, str, str, str]], encode_fresh: bool) -> list[float]:
    """Milliseconds per top-5 retrieval; `encode_fresh`: each query's texts are new to the memory
    (embedded in the call) rather than already seen."""
    times = []
    for skill, code, request, reason in queries:
        if encode_fresh:
            memory.forget_queries()
        else:
            memory.retrieve(skill, code, request, reason, top_k=5)
        started = time.perf_counter()
        memory.retrieve(skill, code, request, reason, top_k=5)
        times.append((time.perf_counter() - started) * 1000)
    return times


def recall_at_5(memory: CaseMemory, queries: list[tuple[str, str, str, str]]) -> float:
    """The share of the full scan's top five that the retrieval returns (1 where no class is clustered)."""
    found = 0
    for query in queries:
        full = {case.id for case, _ in memory.retrieve(*query, top_k=5, exact=True)}
        found += len(full & {case.id for case, _ in memory.retrieve(*query, top_k=5)}) / max(len(full), 1)
    return found / len(queries)


def retrieval(embedder: Embedder, sizes: list[int], queries: int, seed: int, cache_dir: Path,
              progress: Callable[[str], None], pool: int = 2000) -> dict:
    rng = random.Random(seed)
    requests, reasons = text_pools(pool, rng)
    # The pools' embeddings are computed once and kept for the next run.
    cache = CaseStore(cache_dir / "explainer-bench-embeddings.sqlite")
    warm = CaseMemory(cache, embedder, progress=progress)
    warm.vectors(requests + reasons)
    query_requests, query_reasons = text_pools(queries, random.Random(seed + 1))
    process = psutil.Process()
    rows = []
    for one_class in (False, True):
        for size in sizes:
            progress(f"{size} cases{' in one skill and code' if one_class else ''} ...")
            cases = synthetic_cases(size, requests, reasons, random.Random(seed + size), one_class)
            store = CaseStore(":memory:")
            vectors = cache.embeddings(embedder.name, requests + reasons)
            store.save_embeddings(embedder.name, vectors)
            store.add(cases)
            before = process.memory_info().rss
            started = time.perf_counter()
            memory = CaseMemory(store, embedder)
            index_s = time.perf_counter() - started
            index_mib = (process.memory_info().rss - before) / 2**20
            matrix_mib = memory.vector_bytes() / 2**20
            picks = random.Random(seed + 2)
            asked = []
            for request, reason in zip(query_requests, query_reasons):
                skill, code = ("PICK", "OBJECT_NOT_FOUND") if one_class else picks.choice(
                    [(s, c) for s, codes in CLASSES.items() for c in codes])
                asked.append((skill, code, request, reason))
            seen = measure_retrieval(memory, asked, encode_fresh=False)
            fresh = measure_retrieval(memory, asked, encode_fresh=True)
            rows.append({"cases": size, "one_class": one_class, "clustered_classes": len(memory.clustered_classes()),
                         "recall_at_5": round(recall_at_5(memory, asked), 3), "index_build_s": round(index_s, 3),
                         "index_rss_mib": round(index_mib, 1), "vectors_mib": round(matrix_mib, 1),
                         "top5_ms_median": round(statistics.median(seen), 3),
                         "top5_ms_p95": round(float(np.percentile(seen, 95)), 3),
                         "top5_with_embedding_ms_median": round(statistics.median(fresh), 2),
                         "top5_with_embedding_ms_p95": round(float(np.percentile(fresh, 95)), 2)})
            progress(f"  top-5 {rows[-1]['top5_ms_median']} ms (median), {rows[-1]['top5_with_embedding_ms_median']} ms "
                     f"with embedding the query; index {rows[-1]['vectors_mib']} MiB of vectors")
            store.close()
            del memory
    cache.close()
    return {"benchmark": "explainer", "embedder": embedder.name, "queries": queries, "pool": pool, "seed": seed,
            "results": rows}


def retrieval_report(results: dict) -> str:
    lines = ["# Explainer retrieval", "", f"Command: `{results.get('command')}`  ",
             f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores; embedder "
             f"{results['embedder']}; {results['queries']} queries per size", "",
             "| cases | classes | top-5 ms (median / p95) | with embedding the query, ms (median / p95) | clustered "
             "classes | recall@5 vs full scan | index build s | vectors MiB | RSS growth MiB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in results["results"]:
        lines.append(f"| {row['cases']:,} | {'one' if row['one_class'] else 'all'} | {row['top5_ms_median']} / "
                     f"{row['top5_ms_p95']} | {row['top5_with_embedding_ms_median']} / {row['top5_with_embedding_ms_p95']} "
                     f"| {row['clustered_classes']} | {row['recall_at_5']} "
                     f"| {row['index_build_s']} | {row['vectors_mib']} | {row['index_rss_mib']} |")
    return "\n".join(lines) + "\n"


def retrieval_plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
    for one_class, style in ((False, "o-"), (True, "s--")):
        rows = [r for r in results["results"] if r["one_class"] == one_class]
        label = "one skill and code" if one_class else "spread over skills and codes"
        sizes = [r["cases"] for r in rows]
        speed.plot(sizes, [r["top5_ms_median"] for r in rows], style, label=f"search, {label}")
        speed.plot(sizes, [r["top5_with_embedding_ms_median"] for r in rows], style, alpha=0.5,
                   label=f"+ embedding the query, {label}")
        memory.plot(sizes, [r["vectors_mib"] for r in rows], style, label=label)
    speed.axhline(5, color="grey", linestyle=":", label="target 5 ms")
    for axis in (speed, memory):
        axis.set_xscale("log")
        axis.set_xlabel("cases")
        axis.legend(fontsize=7)
    speed.set_yscale("log")
    speed.set_ylabel("top-5 retrieval, ms (median)")
    memory.set_ylabel("vectors held, MiB")
    fig.suptitle(f"planner bench explainer on {results['machine']['cpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# ---- ablation ------------------------------------------------------------------------------------
ARMS = ("off", "seed", "seed+learned")


def ablation(setup, open_memory: Callable[[str], CaseMemory], out_dir: Path, name: str, header: dict,
             only: list[str], run_tasks: Callable, progress: Callable[[str], None]) -> dict:
    """`setup`: the task bench's, with no memory; `open_memory(path)`: a case memory over that
    database with the seed cases in it. The database is left in `out_dir` with what was learned."""
    database = out_dir / f"{name}-cases.sqlite"
    for leftover in out_dir.glob(f"{name}-cases.sqlite*"):
        leftover.unlink()
    episodes, cases = {}, {}
    for arm in ARMS:
        progress(f"== explainer {arm}")
        if arm == "off":
            arm_setup = replace(setup, memory=None, learner=None)
        elif arm == "seed":
            # What is learned in this run goes into the database through a second memory, so
            # this run retrieves from the seed cases alone.
            arm_setup = replace(setup, memory=open_memory(str(database)), learner=open_memory(str(database)))
        else:
            arm_setup = replace(setup, memory=open_memory(str(database)), learner=None)
        results = run_tasks(arm_setup, out_dir, f"{name}-{arm.replace('+', '-')}", 1,
                            {**header, "explainer": arm}, only, progress=progress)
        episodes[arm] = results["episodes"]
        cases[arm] = len(arm_setup.memory) if arm_setup.memory else 0
    return summarize_ablation(header, only, episodes, cases)


def fault_kinds(episode: dict) -> str:
    return ", ".join(f["kind"] for f in episode["faults"]) or "none"


def summarize_ablation(header: dict, only: list[str], episodes: dict[str, list[dict]], cases: dict[str, int]) -> dict:
    """The arms side by side from their episodes, with failures per fault kind, since a memory of
    fixes can only help where the failure reason does not already say what to do."""
    episodes_by_fault = dict(sorted(Counter(fault_kinds(e) for e in episodes["off"]).items()))
    arms = {}
    for arm, ran in episodes.items():
        failed = [e for e in ran if not e["success"]]
        failed_kinds = Counter(fault_kinds(e) for e in failed)
        arms[arm] = {"episodes": len(ran), "failed": len(failed),
                     "success_rate": round((len(ran) - len(failed)) / max(len(ran), 1), 3),
                     "replans": sum(e["replans"] for e in ran), "llm_calls": sum(e["llm_calls"] for e in ran),
                     "prompt_tokens": sum(e["prompt_tokens"] for e in ran), "cases": cases[arm],
                     "failed_tasks": [e["task"] for e in failed],
                     "failed_by_fault": {kind: failed_kinds[kind] for kind in episodes_by_fault},
                     "learned": [line for e in ran for line in e.get("learned", [])]}
    off, learned = arms["off"]["failed"], arms["seed+learned"]["failed"]
    return {"benchmark": "explainer-ablation", **header, "tasks": only, "arms": arms,
            "episodes_by_fault": episodes_by_fault,
            "failed_reduction": round((off - learned) / off, 3) if off else None}


def ablation_report(results: dict) -> str:
    reduction = results["failed_reduction"]
    lines = ["# Explainer ablation", "", f"Command: `{results.get('command')}`  ",
             f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores; faults {results['faults']}, "
             f"seed {results['seed']}; {len(results['tasks'])} tasks", "",
             "| explainer | episodes | failed | success | replans | LLM calls | prompt tokens | cases |",
             "|---|---|---|---|---|---|---|---|"]
    for arm, row in results["arms"].items():
        lines.append(f"| {arm} | {row['episodes']} | {row['failed']} | {row['success_rate']:.0%} | {row['replans']} "
                     f"| {row['llm_calls']} | {row['prompt_tokens']:,} | {row['cases']} |")
    lines += ["", "Failed episodes, off → seed + learned: "
              + (f"{reduction:.0%} fewer" if reduction is not None else "none failed with the explainer off")]
    for arm, row in results["arms"].items():
        lines.append(f"- {arm}: failed {', '.join(row['failed_tasks']) or 'none'}")
    arms = list(results["arms"])
    lines += ["", "Failed episodes by the fault the task carries:", "",
              "| fault | episodes | " + " | ".join(arms) + " |", "|---|---|" + "---|" * len(arms)]
    for kind, count in results["episodes_by_fault"].items():
        failed = [str(results["arms"][arm]["failed_by_fault"][kind]) for arm in arms]
        lines.append(f"| {kind} | {count} | " + " | ".join(failed) + " |")
    return "\n".join(lines) + "\n"


def ablation_plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(results["arms"])
    rows = [results["arms"][a] for a in arms]
    fig, (outcome, cost) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [2, 1]})
    kinds = list(results["episodes_by_fault"])
    width = 0.8 / len(arms)
    for i, (arm, row, colour) in enumerate(zip(arms, rows, ["grey", "tab:blue", "tab:green"])):
        outcome.bar(np.arange(len(kinds)) + (i - (len(arms) - 1) / 2) * width,
                    [row["failed_by_fault"][k] for k in kinds], width, color=colour,
                    label=f"{arm}: {row['failed']} of {row['episodes']} failed")
    outcome.set_xticks(range(len(kinds)), [f"{k} ({results['episodes_by_fault'][k]})" for k in kinds],
                       rotation=30, ha="right", fontsize=8)
    outcome.set_ylim(0, max(results["episodes_by_fault"].values()) + 0.5)  # the top is every episode of a kind
    outcome.yaxis.get_major_locator().set_params(integer=True)
    outcome.set_ylabel("failed episodes")
    outcome.set_title("Failed episodes by fault (episodes with it)", fontsize=10)
    outcome.legend(fontsize=8)
    x = np.arange(len(arms))
    cost.bar(x - 0.2, [r["replans"] for r in rows], 0.4, label="replans")
    cost.bar(x + 0.2, [r["llm_calls"] / 10 for r in rows], 0.4, label="LLM calls / 10")
    cost.set_xticks(list(x), arms)
    cost.set_title("Replans and LLM calls (all episodes)", fontsize=10)
    cost.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)
    fig.suptitle(f"planner bench ablation: {results['llm'].get('model', '')} on {results['machine']['cpu']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
