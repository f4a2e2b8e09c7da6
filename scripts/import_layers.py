#!/usr/bin/env python3
"""Print the package's import graph by layer and fail on an import that runs back up the layers
or on a cycle between modules.

Layers, lowest first; a module may import its own layer's packages and those below:
  core                 the decisions, in plain Python (no ROS, no servers)
  adapters | sim       the outside (LLM, embeddings, speech, model store, Nav2, MoveIt) | the simulator
  config, wiring       the settings composed, and the factories that open what they ask for
  ros                  messages, futures, QoS, the node base, the nodes, the executors' backends, TF
  cli, bench, map_view, api   what people run
Within a layer, packages separated by `|` do not import each other. Imports inside functions count.

Usage: python scripts/import_layers.py [--src DIR]   (exit 1 on a violation)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grimp
import networkx as nx

LAYERS: list[list[str]] = [
    ["core"],
    ["adapters", "sim"],
    ["config", "wiring"],
    ["ros", "msg", "srv", "action"],
    ["cli", "bench", "map_view", "api"],
]
# Packages of one layer that must not import each other.
INDEPENDENT = [{"adapters", "sim"}]
PACKAGE = "planner"


def top_part(module: str) -> str:
    """planner.core.skills -> core; planner -> '' (the package's own __init__)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(module: str) -> int | None:
    part = top_part(module)
    return next((index for index, names in enumerate(LAYERS) if part in names), None)


def violations(graph: grimp.ImportGraph) -> list[str]:
    problems = []
    modules = sorted(graph.modules)
    unplaced = sorted({top_part(m) for m in modules if top_part(m) and layer_of(m) is None})
    problems += [f"{PACKAGE}.{part} is in no layer: add it to LAYERS" for part in unplaced]
    for importer in modules:
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            low, high = layer_of(imported), layer_of(importer)
            if low is None or high is None:
                continue
            line = _line(graph, importer, imported)
            if low > high:
                problems.append(f"back edge: {importer} ({_name(high)}) imports {imported} ({_name(low)}){line}")
            elif low == high and top_part(importer) != top_part(imported) and \
                    any({top_part(importer), top_part(imported)} <= group for group in INDEPENDENT):
                problems.append(f"sideways: {importer} imports {imported}{line}")
    directed = nx.DiGraph((a, b) for a in modules for b in graph.find_modules_directly_imported_by(a))
    for component in nx.strongly_connected_components(directed):
        if len(component) > 1:
            cycle = nx.find_cycle(directed.subgraph(component))
            problems.append("cycle: " + " -> ".join([a for a, _ in cycle] + [cycle[0][0]]))
    return problems


def _name(layer: int) -> str:
    return " | ".join(LAYERS[layer])


def _line(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    return f" (line {details[0]['line_number']})" if details else ""


def report(graph: grimp.ImportGraph) -> str:
    lines = []
    for index, names in enumerate(LAYERS):
        members = sorted(m for m in graph.modules if layer_of(m) == index)
        lines.append(f"layer {index}: {' | '.join(names)} ({len(members)} modules)")
        for part in names:
            uses = sorted({top_part(i) for m in members if top_part(m) == part
                           for i in graph.find_modules_directly_imported_by(m)} - {part, ""})
            if any(top_part(m) == part for m in members):
                lines.append(f"  {part} -> {', '.join(uses) or 'nothing in the package'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(Path(__file__).resolve().parent.parent / "src"),
                        help="directory holding the planner package (default: the checkout's src)")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.src)
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    print(report(graph))
    problems = violations(graph)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)" if problems else "imports run one way; no cycles")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
