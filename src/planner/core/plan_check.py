"""Before a plan is carried out: is it like the plans that worked for similar requests?

The plans of requests that succeeded are kept with the explainer's experience (its case
database). A new multi-step plan is written out as steps and scored with PG2S against the plans
of the most similar past requests (a ReAct task's first steps against their first steps); when it
is unlike all of them, the trace says so and, by config, the user is asked before the robot moves.
With no similar past request there is no verdict: a plan is not suspect for being new."""

from __future__ import annotations

import threading
from typing import Literal

import numpy as np
from pydantic import Field

from planner.core.case_store import CaseStoreUnwritable
from planner.core.explainer import CaseMemory
from planner.core.files import StrictModel
from planner.core.plan_score import PlanScorer
from planner.core.types import PlanVerdict


class PlanCheckSettings(StrictModel):
    mode: Literal["off", "warn", "confirm"] = Field(default="off", description="warn: a plan unlike the past ones is "
                                                    "a warning in the trace; confirm: the user is asked before it runs")
    similar_requests: int = Field(default=3, ge=1, description="past requests whose plans a new plan is scored against")
    request_similarity: float = Field(default=0.6, gt=0, le=1, description="how alike a past request must be to count")
    low_score: float = Field(default=0.5, gt=0, le=1, description="a best PG2S below this is a warning")
    min_steps: int = Field(default=2, ge=1, description="shorter plans are not checked; in ReAct, the check comes "
                           "before the skill that makes this many")
    confirm_timeout_s: float = Field(default=60, gt=0, description="confirm: how long the user has to answer")


class PlanChecker:
    """Past plans from the case database, retrieved by how alike their requests are. Thread-safe."""

    def __init__(self, memory: CaseMemory, scorer: PlanScorer, settings: PlanCheckSettings):
        self.memory = memory
        self.scorer = scorer
        self.settings = settings
        self._lock = threading.Lock()

    def record(self, request: str, steps: list[str], robot: str = "") -> str:
        """A plan that worked, kept; '' or why it was not (the disk refused it)."""
        try:
            if steps:
                self.memory.store.add_plan(request, steps, robot)
        except CaseStoreUnwritable as error:
            return str(error)
        return ""

    def similar(self, request: str) -> list[tuple[str, list[str], float]]:
        """(request, steps, similarity) of the most similar past requests, most similar first."""
        plans = self.memory.store.plans()
        if not plans:
            return []
        requests = [r for r, _ in plans]
        vectors = self.memory.vectors([request, *requests])
        query = vectors[request]
        scored = sorted(((float(np.dot(query, vectors[r])), i) for i, r in enumerate(requests)), reverse=True)
        found: list[tuple[str, list[str], float]] = []
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for similarity, index in scored:
            past, steps = plans[index]
            if similarity < self.settings.request_similarity or len(found) == self.settings.similar_requests:
                break
            if (past, tuple(steps)) not in seen:  # the same request done the same way counts once
                seen.add((past, tuple(steps)))
                found.append((past, steps, similarity))
        return found

    def check(self, request: str, steps: list[str], first_steps: bool = False) -> PlanVerdict:
        """`first_steps`: the steps begin a plan still being chosen (ReAct picks one step at a
        time), so they are scored against as many first steps of the past plans."""
        with self._lock:  # spaCy and the embedder are shared between callers
            past = self.similar(request)
            if not past:
                return PlanVerdict(None)
            scores = [(self.scorer.score(reference[:len(steps)] if first_steps else reference, steps).pg2s, like)
                      for like, reference, _ in past]
        best, like = max(scores, key=lambda pair: pair[0])
        return PlanVerdict(best, like, best < self.settings.low_score)
