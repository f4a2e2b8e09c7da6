"""Where a benchmark's wall time goes: the model and the embedder are wrapped so that every call
of theirs adds its seconds to a stopwatch; an episode reads how much each part took while it ran."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator

import numpy as np

from planner.adapters.processes import DIE_WITH_PARENT
from planner.core.ports import JUDGEMENT_SCHEMA, Embedder, Policy, judged
from planner.core.types import PolicyReply

MODEL, EMBEDDING = "model", "embedding"


class Stopwatch:
    """Seconds spent per part, summed over the run."""

    def __init__(self):
        self.spent: Counter[str] = Counter()

    def add(self, part: str, seconds: float) -> None:
        self.spent[part] += seconds

    def since(self, before: Counter[str]) -> dict[str, float]:
        """Seconds per part since `before` (a copy of `spent` taken then)."""
        return {part: self.spent[part] - before.get(part, 0.0) for part in (MODEL, EMBEDDING)}


class TimedPolicy:
    """A policy whose calls (prompt reading and generation, on whichever server) are timed."""

    def __init__(self, policy: Policy, stopwatch: Stopwatch):
        self.policy, self.stopwatch = policy, stopwatch

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        started = time.monotonic()
        try:
            return self.policy.complete(messages, schema)
        finally:
            self.stopwatch.add(MODEL, time.monotonic() - started)

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        started = time.monotonic()
        try:
            return judged(self.policy, messages, schema)
        finally:
            self.stopwatch.add(MODEL, time.monotonic() - started)


class TimedEmbedder:
    """An embedder whose encodings (name checks, grounding, search, the case memory) are timed."""

    def __init__(self, embedder: Embedder, stopwatch: Stopwatch):
        self.embedder, self.stopwatch = embedder, stopwatch
        self.name = embedder.name

    def encode(self, texts: list[str]) -> np.ndarray:
        started = time.monotonic()
        try:
            return self.embedder.encode(texts)
        finally:
            self.stopwatch.add(EMBEDDING, time.monotonic() - started)


@contextlib.contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """`processes` CPU-bound processes beside the benchmark while the block runs, each spinning one
    core as another node or a test run would on the robot's computer."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=DIE_WITH_PARENT)
            for _ in range(processes)]
    try:
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()
