"""Object-finding benchmark: natural-language queries over Voxeland maps, answered by each
workflow and scored against ground truth.

Files: DIR of maps `<name>.json` (Voxeland) with optional room polygons `<name>.rooms.yaml`; a
queries file `{queries: [{id, type, text}]}` with type descriptive | affordance | negation, for
every map, or a folder of `<name>.yaml` queries files, one per map (as `planner bench generate`
writes them); a truth DIR with `<name>.yaml` mapping each query id to the ranked ids that answer
it in that map (empty: nothing in the map does).

Metrics: Top-k is a hit when one of the first k answers is in the truth, or both are empty;
Top-1 is k = 1; Top-Any looks at every answer.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, field_validator

from planner.core.errors import InputError
from planner.core.files import StrictModel, load_model, load_yaml, write_json_atomic
from planner.core.object_finder import ObjectFinder
from planner.core.scene_graph import SceneGraph
from planner.core.voxeland import load_voxeland
from planner.core.world import load_rooms

QUERY_TYPES = ("descriptive", "affordance", "negation")
TOP_K = (1, 2, 3)
SMALL_MAP_ITEMS = 30  # the size the base workflow's time target is set for


class Query(StrictModel):
    id: str = Field(min_length=1)
    type: Literal["descriptive", "affordance", "negation"]
    text: str = Field(min_length=1)


class QueryFile(StrictModel):
    queries: list[Query] = Field(min_length=1)

    @field_validator("queries")
    @classmethod
    def _unique(cls, queries: list[Query]) -> list[Query]:
        seen: set[str] = set()
        for query in queries:
            if query.id in seen:
                raise ValueError(f"query id {query.id!r} appears twice")
            seen.add(query.id)
        return queries


def write_bench_files(out: Path, name: str, semantic_map: dict, rooms: dict[str, tuple[float, float, float, float]],
                      queries: list[dict], header: str) -> None:
    """One map in the layout `load_bench` reads: maps/NAME.json (Voxeland) with maps/NAME.rooms.yaml,
    queries/NAME.yaml and truth/NAME.yaml (each query's answer), the last two under `header`."""
    for folder in ("maps", "queries", "truth"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "maps" / f"{name}.json", semantic_map, indent=1)
    polygons = {room: [[x0, y0], [x1, y0], [x1, y1], [x0, y1]] for room, (x0, y0, x1, y1) in rooms.items()}
    (out / "maps" / f"{name}.rooms.yaml").write_text(yaml.safe_dump(polygons, default_flow_style=None))
    (out / "queries" / f"{name}.yaml").write_text(header + yaml.safe_dump(
        {"queries": [{k: q[k] for k in ("id", "type", "text")} for q in queries]}, sort_keys=False, width=120))
    (out / "truth" / f"{name}.yaml").write_text(header + yaml.safe_dump(
        {q["id"]: q["answer"] for q in queries}, default_flow_style=None, sort_keys=False))


def load_queries(path: Path) -> list[Query]:
    return load_model(path, QueryFile).queries


def hit(answer: list[str], truth: list[str], k: int | None) -> bool:
    """One of the first k answers (all when k is None) is in the truth; both empty is a hit."""
    if not truth or not answer:
        return not truth and not answer
    return any(a in truth for a in (answer if k is None else answer[:k]))


@dataclass(frozen=True)
class BenchMap:
    name: str
    scene: SceneGraph
    queries: list[Query]
    truth: dict[str, list[str]]   # query id -> the ids that answer it


def load_bench_map(path: Path) -> SceneGraph:
    rooms_file = path.with_name(f"{path.stem}.rooms.yaml")
    semantic_map = load_voxeland(path)
    if semantic_map.errors:
        raise InputError(f"{path}: {'; '.join(semantic_map.errors)}")
    return SceneGraph.from_voxeland(semantic_map, load_rooms(rooms_file) if rooms_file.exists() else None)


def load_truth(path: Path, queries: list[Query], scene: SceneGraph) -> dict[str, list[str]]:
    """Each query's answer in one map; unknown query ids, missing queries and ids that are not
    in the map are errors naming the file, the query and the id."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of query id -> list of object ids")
    known = {q.id for q in queries}
    problems = [f"{path}: {key!r} is not a query in the queries file" for key in data if key not in known]
    problems += [f"{path}: no answer for query {q.id!r}" for q in queries if q.id not in data]
    truth = {}
    for key, ids in data.items():
        if key not in known:
            continue
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            problems.append(f"{path}: {key}: expected a list of object ids, got {ids!r}")
            continue
        problems += [f"{path}: {key}: {i!r} is not an object in the map" for i in ids if not scene.has(i)]
        truth[key] = ids
    if problems:
        raise InputError("; ".join(problems))
    return truth


def load_bench(maps_dir: Path, queries: Path, truth_dir: Path,
               report: Callable[[str], None]) -> list[BenchMap]:
    """Every map that loads with its queries and truth; `queries` is one file for every map or a
    folder of `<map>.yaml`, one per map. A map, queries or truth file in error is reported and
    left out; the rest still run."""
    shared = load_queries(queries) if queries.is_file() else None
    if shared is None and not queries.is_dir():
        raise InputError(f"{queries}: no such queries file or folder")
    maps = sorted(maps_dir.glob("*.json"))
    if not maps:
        raise InputError(f"{maps_dir}: no maps (*.json)")
    loaded = []
    for path in maps:
        try:
            scene = load_bench_map(path)
            own = shared if shared is not None else load_queries(queries / f"{path.stem}.yaml")
            loaded.append(BenchMap(path.stem, scene, own, load_truth(truth_dir / f"{path.stem}.yaml", own, scene)))
        except InputError as error:
            report(f"error: map {path.name} left out: {error}")
    if not loaded:
        raise InputError("no map could be used (see the errors above)")
    return loaded


def score(answer: list[str], truth: list[str]) -> dict:
    return {**{f"top{k}": hit(answer, truth, k) for k in TOP_K}, "top_any": hit(answer, truth, None)}


def run(finder: ObjectFinder, workflows: list[str], maps: list[BenchMap], results: dict, out_path: Path,
        progress: Callable[[str], None]) -> dict:
    """Every map's queries with every workflow; the results file is rewritten after each answer,
    so an interrupted run keeps what it did."""
    records = results.setdefault("records", [])
    done = {(r["workflow"], r["map"], r["query"]) for r in records}
    total = len(workflows) * sum(len(m.queries) for m in maps)
    started, ran = time.monotonic(), 0
    for workflow in workflows:
        for bench_map in maps:
            name, scene, truth = bench_map.name, bench_map.scene, bench_map.truth
            for query in bench_map.queries:
                if (workflow, name, query.id) in done:
                    continue
                found = finder.find(scene, query.text, workflow)
                record = {"workflow": workflow, "map": name, "map_items": found.map_items, "query": query.id,
                          "type": query.type, "text": query.text, "answer": found.relevant_objects,
                          "truth": truth[query.id], **score(found.relevant_objects, truth[query.id]),
                          "unchecked": found.unchecked, "unchecked_top1": hit(found.unchecked, truth[query.id], 1),
                          "achievable": found.query_achievable, "inferred_query": found.inferred_query,
                          "explanation": found.explanation, "candidates": found.candidates, "calls": found.calls,
                          "prompt_tokens": found.prompt_tokens, "completion_tokens": found.completion_tokens,
                          "seconds": round(found.seconds, 3), "error": found.error, "rounds": found.rounds,
                          **({"evidence": found.evidence.as_record()} if found.evidence is not None else {})}
                records.append(record)
                ran += 1
                write_json_atomic(out_path, results, indent=1)
                left = (time.monotonic() - started) / ran * (total - len(records))
                progress(f"[{len(records):3d}/{total}] {workflow:15s} {name:12s} {query.id:26s} "
                         f"{'hit ' if record['top1'] else 'miss'} {found.relevant_objects} truth {truth[query.id]} "
                         f"{found.calls} calls {found.seconds:.1f} s{' ERROR ' + found.error if found.error else ''}"
                         f" (about {left / 60:.0f} min left)")
    results["summary"] = summarize(records)
    return results


def _rates(records: list[dict]) -> dict:
    count = len(records)
    rates = {f"top{k}": round(100 * sum(r[f"top{k}"] for r in records) / count, 1) for k in TOP_K}
    seconds = [r["seconds"] for r in records]
    return {"queries": count, **rates, "top_any": round(100 * sum(r["top_any"] for r in records) / count, 1),
            "median_s": round(statistics.median(seconds), 2), "mean_calls": round(statistics.mean(
                r["calls"] for r in records), 2),
            "mean_prompt_tokens": round(statistics.mean(r["prompt_tokens"] for r in records)),
            "mean_completion_tokens": round(statistics.mean(r["completion_tokens"] for r in records)),
            "errors": sum(bool(r["error"]) for r in records), **abstention(records)}


def abstention(records: list[dict]) -> dict:
    """How the "nothing fits" answers went: precision (of the empty answers, the share where
    nothing fits), recall (of the queries nothing fits, the share answered empty), and Top-1 on
    the queries that have an answer."""
    empty = [r for r in records if not r["answer"]]
    unanswerable = [r for r in records if not r["truth"]]
    answerable = [r for r in records if r["truth"]]
    right = sum(not r["truth"] for r in empty)
    return {"abstained": round(100 * len(empty) / len(records), 1),
            "no_answer_share": round(100 * len(unanswerable) / len(records), 1),
            "abstention_precision": round(100 * right / len(empty), 1) if empty else None,
            "abstention_recall": round(100 * right / len(unanswerable), 1) if unanswerable else None,
            "top1_answerable": round(100 * sum(r["top1"] for r in answerable) / len(answerable), 1)
            if answerable else None,
            # The model's own answer from the map, before the constraints and the kinds it names.
            "unchecked_top1": round(100 * sum(r.get("unchecked_top1", r["top1"]) for r in records) / len(records), 1),
            "unchecked_abstained": round(100 * sum(not r.get("unchecked", r["answer"]) for r in records)
                                         / len(records), 1)}


def summarize(records: list[dict]) -> dict:
    summary = {}
    for workflow in dict.fromkeys(r["workflow"] for r in records):
        mine = [r for r in records if r["workflow"] == workflow]
        small = [r for r in mine if r["map_items"] <= SMALL_MAP_ITEMS]
        summary[workflow] = {
            "all": _rates(mine),
            **{kind: _rates(of_kind) for kind in QUERY_TYPES if (of_kind := [r for r in mine if r["type"] == kind])},
            "by_map": {name: _rates([r for r in mine if r["map"] == name])
                       for name in dict.fromkeys(r["map"] for r in mine)},
            "small_maps_median_s": round(statistics.median(r["seconds"] for r in small), 2) if small else None}
    return summary


def report(results: dict) -> str:
    machine = results["machine"]
    lines = ["# Object finding", "", f"Command: `{results.get('command')}`  ",
             f"Machine: {machine['cpu']}, {machine['cores']} cores; LLM {results['llm'].get('model')}; "
             f"maps {', '.join(f'{n} ({i} items)' for n, i in results['maps'].items())}", "",
             "| workflow | queries | Top-1 | Top-2 | Top-3 | Top-Any | median s | s ≤ 30 items | calls | prompt + "
             "completion tokens |", "|---|---|---|---|---|---|---|---|---|---|"]
    for workflow, row in results["summary"].items():
        a = row["all"]
        lines.append(f"| {workflow} | {a['queries']} | {a['top1']} | {a['top2']} | {a['top3']} | {a['top_any']} "
                     f"| {a['median_s']} | {row['small_maps_median_s']} | {a['mean_calls']} "
                     f"| {a['mean_prompt_tokens']:,} + {a['mean_completion_tokens']} |")
    lines += ["", "Saying that nothing fits (%): abstained = empty answers; precision = of those, nothing fitted; "
              "recall = of the queries nothing fits, answered empty:", "",
              "| workflow | no answer exists | abstained | precision | recall | Top-1 where an answer exists "
              "| the model's own answer: Top-1 / abstained |", "|---|---|---|---|---|---|---|"]
    for workflow, row in results["summary"].items():
        a = row["all"]
        lines.append(f"| {workflow} | {a['no_answer_share']} | {a['abstained']} | {a['abstention_precision']} "
                     f"| {a['abstention_recall']} | {a['top1_answerable']} "
                     f"| {a['unchecked_top1']} / {a['unchecked_abstained']} |")
    lines += ["", "By query type (Top-1 / Top-Any, %):", "", "| workflow | " + " | ".join(QUERY_TYPES) + " |",
              "|---|" + "---|" * len(QUERY_TYPES)]
    for workflow, row in results["summary"].items():
        lines.append(f"| {workflow} | " + " | ".join(
            f"{row[k]['top1']} / {row[k]['top_any']}" if k in row else "—" for k in QUERY_TYPES) + " |")
    maps = results["maps"]  # name -> items; accuracy falls as maps grow
    lines += ["", "By map (Top-1 / Top-Any, %; median s):", "",
              "| workflow | " + " | ".join(f"{name} ({items})" for name, items in maps.items()) + " |",
              "|---|" + "---|" * len(maps)]
    for workflow, row in results["summary"].items():
        lines.append(f"| {workflow} | " + " | ".join(
            f"{m['top1']} / {m['top_any']}; {m['median_s']}" if (m := row["by_map"].get(name)) else "—"
            for name in maps) + " |")
    errors = [r for r in results["records"] if r["error"]]
    if errors:
        lines += ["", f"{len(errors)} queries had no valid answer: "
                  + "; ".join(f"{r['workflow']} {r['map']} {r['query']}: {r['error']}" for r in errors[:5])]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    summary = results["summary"]
    workflows = list(summary)
    metrics = ["top1", "top2", "top3", "top_any"]
    fig, (overall, kinds, speed) = plt.subplots(1, 3, figsize=(15, 4.2))
    x = np.arange(len(metrics))
    width = 0.8 / max(len(workflows), 1)
    for i, workflow in enumerate(workflows):
        overall.bar(x + i * width, [summary[workflow]["all"][m] for m in metrics], width, label=workflow)
    overall.set_xticks(x + width * (len(workflows) - 1) / 2, ["Top-1", "Top-2", "Top-3", "Top-Any"])
    overall.set_ylim(0, 100)
    overall.set_ylabel("% of queries")
    overall.set_title("All queries")
    overall.legend(fontsize=8)
    x = np.arange(len(QUERY_TYPES))
    for i, workflow in enumerate(workflows):
        kinds.bar(x + i * width, [summary[workflow].get(k, {}).get("top1", 0) for k in QUERY_TYPES], width,
                  label=workflow)
    kinds.set_xticks(x + width * (len(workflows) - 1) / 2, QUERY_TYPES)
    kinds.set_ylim(0, 100)
    kinds.set_title("Top-1 by query type")
    speed.boxplot([[r["seconds"] for r in results["records"] if r["workflow"] == w] for w in workflows])
    speed.set_xticks(range(1, len(workflows) + 1), workflows, fontsize=8)
    if any(r["seconds"] > 0 for r in results["records"]):  # a scripted run takes no measurable time
        speed.set_yscale("log")  # a large map's narrowed prompt is read afresh for each query
    speed.set_ylabel("seconds per query")
    speed.set_title("Time per query")
    fig.suptitle(f"planner bench objects: {results['llm'].get('model', '')} on {results['machine']['cpu']}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
