"""The explainer: a store of past failure cases and the suggestion they give for a new failure.

Retrieval follows the RoBee design: keep the cases of the same skill and failure code, rank them
by cosine similarity of the user request and of the failure reason, and answer with the best
case's suggestion, or say that no past case is similar enough.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from planner.core.files import InputError, describe_validation_error, load_yaml
from planner.core.react import FailureInfo, SuggestionInfo
from planner.core.skills import parse_call


class FailureCase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    skill: str = Field(description="skill name, e.g. PICK")
    code: str
    request: str
    reason: str
    suggestion: str
    source: Literal["seed", "learned", "human"] = "seed"


def load_cases(path: str | Path) -> list[FailureCase]:
    path = Path(path)
    try:
        cases = TypeAdapter(list[FailureCase]).validate_python(load_yaml(path))
    except ValidationError as error:
        raise InputError(describe_validation_error(str(path), error)) from None
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise InputError(f"{path}: case ids used more than once: {', '.join(duplicates)}")
    return cases


class Embedder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length row vectors, one per text."""


class CaseMemory:
    def __init__(self, cases: list[FailureCase], embedder: Embedder, threshold: float = 0.35, top_k: int = 3):
        self.cases = cases
        self.embedder = embedder
        self.threshold = threshold
        self.top_k = top_k
        self._requests = embedder.encode([c.request for c in cases]) if cases else np.zeros((0, 1))
        self._reasons = embedder.encode([c.reason for c in cases]) if cases else np.zeros((0, 1))

    def retrieve(self, skill: str, code: str, request: str, reason: str) -> list[tuple[FailureCase, float]]:
        """Cases of the same skill and code (else of the same code), best first, with scores."""
        same = [i for i, c in enumerate(self.cases) if c.skill == skill and c.code == code]
        if not same:
            same = [i for i, c in enumerate(self.cases) if c.code == code]
        if not same:
            return []
        query = self.embedder.encode([request, reason])
        scores = 0.5 * (self._requests[same] @ query[0]) + 0.5 * (self._reasons[same] @ query[1])
        order = np.argsort(-scores)[: self.top_k]
        return [(self.cases[same[i]], float(scores[i])) for i in order]

    def suggest(self, failure: FailureInfo, request: str) -> SuggestionInfo:
        skill = parse_call(failure.skill)[0] if "(" in failure.skill else failure.skill
        ranked = self.retrieve(skill, failure.code, request, failure.reason)
        good = [(case, score) for case, score in ranked if score >= self.threshold]
        if not good:
            return SuggestionInfo("No similar past failure is known; re-check the map and the robot state before retrying.",
                                  [], [])
        best = good[0][0]
        return SuggestionInfo(best.suggestion, [c.id for c, _ in good], [round(s, 3) for _, s in good])
