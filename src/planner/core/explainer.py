"""The explainer: a memory of failure cases that suggests a fix for a new failure and learns
from the fixes that worked.

Retrieval follows the RoBee design: keep the cases of the same skill and failure code, rank them
by cosine similarity of the user request and of the failure reason, and answer with the best
case's suggestion, or say that no past case is similar enough. When several cases fit about
equally well, the planner's LLM is asked to make one suggestion of them (see planning/recoveries.py). A
replan that ended in success becomes a new case; a case whose suggestion keeps failing is
demoted and no longer retrieved.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, TypeAdapter, ValidationError

from planner.core.calls import SkillSyntaxError, fix_calls, fix_text, parse_call
from planner.core.case_store import CaseStore, CaseStoreUnwritable, StoredCase
from planner.core.errors import InputError
from planner.core.failures import KnownCode
from planner.core.files import StrictModel, describe_validation_error, load_yaml
from planner.core.ports import Embedder
from planner.core.types import FailureInfo, Recovery, SuggestionInfo

log = logging.getLogger(__name__)
NO_MATCH = "No similar past failure is known; re-check the map and the robot state before retrying."
# Embeddings are unit vectors; float32 rounding moves a norm by far less than this.
UNIT_LENGTH_TOLERANCE = 1e-3


class FailureCase(StrictModel):
    """A case as people write it: in the seed file, `planner cases add` and import files."""
    id: str = Field(min_length=1)
    skill: str = Field(min_length=1, description="skill name, e.g. PICK")
    code: KnownCode
    request: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    suggestion: str = Field(min_length=1)
    context: dict = Field(default_factory=dict)
    source: Literal["seed", "learned", "human"] = "seed"

    def stored(self) -> StoredCase:
        return StoredCase(self.id, self.skill, self.code, self.request, self.reason, self.suggestion,
                          self.source, dict(self.context))


def load_cases(path: str | Path, source: Literal["seed", "learned", "human"] | None = None) -> list[FailureCase]:
    """Cases from a YAML or JSON list; `source` overrides what the file says (seed files are seeds)."""
    path = Path(path)
    try:
        cases = TypeAdapter(list[FailureCase]).validate_python(load_yaml(path))
    except ValidationError as error:
        raise InputError(describe_validation_error(str(path), error)) from None
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise InputError(f"{path}: case ids used more than once: {', '.join(duplicates)}")
    return [c.model_copy(update={"source": source}) if source else c for c in cases]


def sync_seeds(store: CaseStore, seeds: list[FailureCase]) -> int:
    """Seed cases the store lacks are added, edited ones updated (keeping their counts)."""
    changed = []
    for seed in seeds:
        case = seed.stored()
        old = store.get(seed.id)
        if old is None:
            changed.append(case)
        elif old.source == "seed" and (old.skill, old.code, old.request, old.reason, old.suggestion) != (
                case.skill, case.code, case.request, case.reason, case.suggestion):
            case.successes, case.failures, case.demoted, case.created = old.successes, old.failures, old.demoted, old.created
            changed.append(case)
    return store.add(changed, replace=True) if changed else 0


class ExplainerSettings(StrictModel):
    database: str = Field(default="failure_cases.sqlite",
                          description="the case memory: relative paths are under $PLANNER_STATE (default "
                                      "~/.local/state/planner); ':memory:' keeps nothing after exit")
    threshold: float = Field(default=0.35, ge=-1, le=1, description="a case less similar suggests nothing")
    top_k: int = Field(default=3, ge=1)
    clear_margin: float = Field(default=0.08, ge=0, description="the best case is used as it is when this far "
                                                                 "ahead of the next; else the LLM makes one of them")
    learn: bool = Field(default=True, description="keep fixes that worked as new cases")
    dedup_similarity: float = Field(default=0.92, gt=0, le=1, description="a learned case this similar to a known "
                                                                            "one in request, reason and fix is not new")
    demote_after: int = Field(default=2, ge=1, description="a case whose suggestion failed this many times more "
                                                           "than it helped is no longer used")
    clustered_from: int = Field(default=20_000, ge=100, description="a skill and code with this many cases is "
                                                                    "searched through a clustered (faiss) index")


class _ClusteredIndex:
    """The cases of one large class in a faiss inverted-file index over [request | reason]: the
    score 0.5 request·q + 0.5 reason·q' is the inner product with [q | q'] / 2, and a query scans
    the few clusters nearest to it instead of every case. A full scan of 100k cases in one class
    took 17 ms, bound by reading 300 MB of vectors. The index holds the class's only copy of them."""

    PROBES = 8  # clusters scanned per query; `planner bench explainer` reports the recall against a full scan

    def __init__(self, cases: list[StoredCase], requests: np.ndarray, reasons: np.ndarray):
        import faiss

        joined = np.ascontiguousarray(np.hstack([requests, reasons]), dtype=np.float32)
        lists = int(np.sqrt(len(cases)))
        self.index = faiss.IndexIVFFlat(faiss.IndexFlatIP(joined.shape[1]), joined.shape[1], lists,
                                        faiss.METRIC_INNER_PRODUCT)
        self.index.cp.niter = 10  # k-means rounds: the clusters only route queries, the scores are exact
        self.index.train(joined)
        self.index.set_direct_map_type(faiss.DirectMap.Hashtable)  # a case's vectors by row, for twin checks
        self.routed = faiss.SearchParametersIVF(nprobe=self.PROBES)
        self.every_cluster = faiss.SearchParametersIVF(nprobe=lists)
        self.rows: dict[int, StoredCase] = {}
        self.row_of: dict[str, int] = {}
        self._add(cases, joined)

    def _add(self, cases: list[StoredCase], joined: np.ndarray) -> None:
        first = max(self.rows, default=-1) + 1
        rows = np.arange(first, first + len(cases), dtype=np.int64)
        self.index.add_with_ids(joined, rows)
        for row, case in zip(rows.tolist(), cases):
            self.rows[row], self.row_of[case.id] = case, row

    def add(self, case: StoredCase, request: np.ndarray, reason: np.ndarray) -> None:
        self._add([case], np.concatenate([request, reason])[None, :].astype(np.float32))

    def remove(self, case_id: str) -> None:
        row = self.row_of.pop(case_id)
        del self.rows[row]
        self.index.remove_ids(np.array([row], dtype=np.int64))

    @staticmethod
    def _query(request: np.ndarray, reason: np.ndarray) -> np.ndarray:
        return (0.5 * np.concatenate([request, reason]))[None, :].astype(np.float32)

    def best(self, request: np.ndarray, reason: np.ndarray, k: int, exact: bool) -> list[tuple[StoredCase, float]]:
        probes = self.every_cluster if exact else self.routed
        scores, rows = self.index.search(self._query(request, reason), k, params=probes)
        return [(self.rows[row], float(score)) for score, row in zip(scores[0], rows[0]) if row >= 0]

    def close_to(self, request: np.ndarray, reason: np.ndarray, limit: float) -> list[StoredCase]:
        """Cases at least `limit` similar in request and in reason; such a case scores at least
        `limit` on their mean, so a range search over every cluster finds it."""
        _, _, rows = self.index.range_search(self._query(request, reason), limit, params=self.every_cluster)
        half = self.index.d // 2
        close = []
        for row in rows.tolist():
            vector = self.index.reconstruct(row)
            if vector[:half] @ request >= limit and vector[half:] @ reason >= limit:
                close.append(self.rows[row])
        return close

    def nbytes(self) -> int:
        return self.index.ntotal * self.index.d * 4


@dataclass
class _Group:
    """The retrievable cases of one skill and failure code. Their vectors are matrices scanned in
    full until there are `clustered_from` cases; then they move into a clustered index."""
    clustered_from: int
    cases: list[StoredCase] = field(default_factory=list)
    requests: np.ndarray | None = None
    reasons: np.ndarray | None = None
    clustered: _ClusteredIndex | None = None

    def __post_init__(self) -> None:
        self._cluster_when_large()

    def _cluster_when_large(self) -> None:
        if self.clustered is not None or len(self.cases) < self.clustered_from:
            return
        try:
            self.clustered = _ClusteredIndex(self.cases, *self._scanned())
            self.requests = self.reasons = None
        except ImportError:
            log.warning("%d cases in one skill and code, and faiss is not installed (pip install faiss-cpu): "
                        "every retrieval scans them all", len(self.cases))
            self.clustered_from = sys.maxsize  # said once

    def append(self, case: StoredCase, request: np.ndarray, reason: np.ndarray) -> None:
        self.cases.append(case)
        if self.clustered is not None:
            self.clustered.add(case, request, reason)
            return
        self.requests = request[None, :] if self.requests is None else np.vstack([self.requests, request])
        self.reasons = reason[None, :] if self.reasons is None else np.vstack([self.reasons, reason])
        self._cluster_when_large()

    def drop(self, case_id: str) -> None:
        keep = [i for i, c in enumerate(self.cases) if c.id != case_id]
        self.cases = [self.cases[i] for i in keep]
        if self.clustered is not None:
            self.clustered.remove(case_id)
        else:
            requests, reasons = self._scanned()
            self.requests, self.reasons = requests[keep], reasons[keep]

    def best(self, request: np.ndarray, reason: np.ndarray, k: int, exact: bool) -> list[tuple[StoredCase, float]]:
        if self.clustered is not None:
            return self.clustered.best(request, reason, k, exact)
        requests, reasons = self._scanned()
        scores = 0.5 * (requests @ request) + 0.5 * (reasons @ reason)
        best = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
        return [(self.cases[i], float(scores[i])) for i in best]

    def close_to(self, request: np.ndarray, reason: np.ndarray, limit: float) -> list[StoredCase]:
        """Cases at least `limit` similar in request and in reason."""
        if self.clustered is not None:
            return self.clustered.close_to(request, reason, limit)
        requests, reasons = self._scanned()
        close = (requests @ request >= limit) & (reasons @ reason >= limit)
        return [self.cases[i] for i in np.flatnonzero(close)]

    def nbytes(self) -> int:
        return self.clustered.nbytes() if self.clustered is not None else sum(m.nbytes for m in self._scanned())

    def _scanned(self) -> tuple[np.ndarray, np.ndarray]:
        """The request and reason vectors of a group that is scanned in full (not clustered)."""
        if self.requests is None or self.reasons is None:
            raise RuntimeError("a case group that is scanned in full has no vectors")
        return self.requests, self.reasons


def skill_name(call: str) -> str:
    return parse_call(call)[0] if "(" in call else call


class CaseMemory:
    """Cases in a store, indexed by skill and failure code for retrieval. Thread-safe."""

    def __init__(self, store: CaseStore, embedder: Embedder, settings: ExplainerSettings | None = None,
                 progress: Callable[[str], None] | None = None, fix_actions: frozenset[str] = frozenset()):
        self.store = store
        self.fix_actions = fix_actions  # what a learned fix may name; none: no fix is learned
        self.embedder = embedder
        self.settings = settings or ExplainerSettings()
        self.progress = progress or (lambda line: None)
        self._lock = threading.RLock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._groups: dict[tuple[str, str], _Group] = {}
        self.reindex()

    # ---- vectors -------------------------------------------------------------------------------
    def vectors(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Embeddings of the texts, from the store's cache where it has them; new ones are cached. A
        cached vector unlike the others (another length, not finite, not of unit length) is computed
        again rather than let every retrieval fail on it."""
        cached = self.store.embeddings(self.embedder.name, texts)
        length = Counter(len(vector) for vector in cached.values()).most_common(1)[0][0] if cached else 0
        known = {text: vector for text, vector in cached.items() if len(vector) == length
                 and bool(np.isfinite(vector).all()) and abs(float(np.linalg.norm(vector)) - 1) < UNIT_LENGTH_TOLERANCE}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        batch = 256
        for start in range(0, len(missing), batch):
            if len(missing) > batch:
                self.progress(f"embedding case texts with {self.embedder.name}: {start}/{len(missing)}")
            chunk = missing[start:start + batch]
            fresh = dict(zip(chunk, np.asarray(self.embedder.encode(chunk), dtype=np.float32)))
            with contextlib.suppress(CaseStoreUnwritable):  # a cache: computed again next time
                self.store.save_embeddings(self.embedder.name, fresh)
            known.update(fresh)
        return known

    def _query(self, text: str) -> np.ndarray:
        """A request repeats across the failures of a task: its vector is kept a while."""
        vector = self._queries.get(text)
        if vector is None:
            vector = np.asarray(self.embedder.encode([text])[0], dtype=np.float32)
            self._queries[text] = vector
            if len(self._queries) > 256:
                self._queries.popitem(last=False)
        self._queries.move_to_end(text)
        return vector

    def reindex(self) -> None:
        cases = self.store.cases(include_demoted=False)
        vectors = self.vectors([c.request for c in cases] + [c.reason for c in cases])
        groups: dict[tuple[str, str], _Group] = {}
        for key in {(c.skill, c.code) for c in cases}:
            members = [c for c in cases if (c.skill, c.code) == key]
            groups[key] = _Group(self.settings.clustered_from, members,
                                 np.stack([vectors[c.request] for c in members]),
                                 np.stack([vectors[c.reason] for c in members]))
        with self._lock:
            self._groups = groups

    def forget_queries(self) -> None:
        self._queries.clear()

    def vector_bytes(self) -> int:
        with self._lock:
            return sum(group.nbytes() for group in self._groups.values())

    def clustered_classes(self) -> list[tuple[str, str]]:
        """The skills and codes searched through a clustered index."""
        with self._lock:
            return sorted(key for key, group in self._groups.items() if group.clustered is not None)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(g.cases) for g in self._groups.values())

    # ---- adding ----------------------------------------------------------------------------------
    def add(self, cases: list[StoredCase], replace: bool = False) -> int:
        added = self.store.add(cases, replace)
        self.reindex()
        return added

    # ---- retrieval -------------------------------------------------------------------------------
    def retrieve(self, skill: str, code: str, request: str, reason: str, top_k: int | None = None,
                 exact: bool = False) -> list[tuple[StoredCase, float]]:
        """Cases of the same skill and code (else of the same code), best first, with scores;
        `exact` scans every case even where a class has a clustered index (to measure its recall)."""
        top_k = top_k or self.settings.top_k
        with self._lock:
            groups = [self._groups[(skill, code)]] if (skill, code) in self._groups else [
                g for (_, c), g in self._groups.items() if c == code]
            if not groups:
                return []
            query_request, query_reason = self._query(request), self._query(reason)
            ranked: list[tuple[StoredCase, float]] = []
            for group in groups:
                ranked += group.best(query_request, query_reason, top_k, exact)
        return sorted(ranked, key=lambda pair: -pair[1])[:top_k]

    def suggest(self, failure: FailureInfo, request: str) -> SuggestionInfo:
        ranked = self.retrieve(skill_name(failure.skill), failure.code, request, failure.reason)
        good = [(case, score) for case, score in ranked if score >= self.settings.threshold]
        if not good:
            return SuggestionInfo(NO_MATCH, [], [], fit="none")
        ids, scores = [c.id for c, _ in good], [round(s, 3) for _, s in good]
        options = [(c.id, c.suggestion, round(s, 3)) for c, s in good]
        distinct = {c.suggestion for c, _ in good}
        if len(distinct) == 1 or good[0][1] - good[1][1] >= self.settings.clear_margin:
            return SuggestionInfo(good[0][0].suggestion, ids, scores, fit="template", options=options)
        return SuggestionInfo(good[0][0].suggestion, ids, scores, fit="compose", options=options)

    # ---- learning --------------------------------------------------------------------------------
    def learn(self, request: str, recovery: Recovery, robot: str = "") -> tuple[str, str]:
        """Count whether the cases suggested after a failure helped, and keep a fix that worked as
        a new case. Returns the id of the case that now holds the fix ('' if none) and a sentence;
        CaseStoreUnwritable when the disk refuses the change (nothing learned, the database as it was)."""
        said = []
        for case_id in recovery.case_ids[:1]:
            case = self.store.record_outcome(case_id, recovery.recovered, self.settings.demote_after)
            if case is not None and case.demoted:
                said.append(f"case {case_id} demoted: its suggestion failed {case.failures} times, helped {case.successes}")
                with self._lock:
                    group = self._groups.get((case.skill, case.code))
                    if group is not None:
                        group.drop(case_id)
        if not (recovery.recovered and recovery.fix):
            return "", "; ".join(said) or "nothing learned: the failure was not recovered"
        try:
            fix = fix_text(fix_calls(recovery.fix, self.fix_actions))
        except SkillSyntaxError as error:
            return "", "; ".join([*said, f"fix not kept: {error}"])
        skill = skill_name(recovery.failure.skill)
        case = StoredCase(
            id="learned-" + hashlib.sha1("\n".join([skill, recovery.failure.code, request, recovery.failure.reason,
                                                    fix]).encode()).hexdigest()[:12],
            skill=skill, code=recovery.failure.code, request=request, reason=recovery.failure.reason,
            suggestion=fix, source="learned", robot=robot,
            context={**recovery.failure.context, "failed": recovery.failure.skill, "recovery": recovery.steps})
        twin = self._near_twin(case)
        if twin is not None:
            self.store.record_outcome(twin.id, True, self.settings.demote_after)
            said.append(f"the fix is already known as case {twin.id}")
            return twin.id, "; ".join(said)
        self.store.add([case])
        vectors = self.vectors([case.request, case.reason])
        with self._lock:
            group = self._groups.setdefault((skill, case.code), _Group(self.settings.clustered_from))
            group.append(case, vectors[case.request], vectors[case.reason])
        said.append(f"learned case {case.id}: {case.suggestion}")
        return case.id, "; ".join(said)

    def _near_twin(self, case: StoredCase) -> StoredCase | None:
        vectors = self.vectors([case.request, case.reason])
        limit = self.settings.dedup_similarity
        with self._lock:
            group = self._groups.get((case.skill, case.code))
            if group is None:
                return None
            close = group.close_to(vectors[case.request], vectors[case.reason], limit)
        # Only the close cases' suggestions are embedded: a class may hold 100k cases.
        vectors = self.vectors([case.suggestion] + [c.suggestion for c in close])
        return next((c for c in close if float(vectors[c.suggestion] @ vectors[case.suggestion]) >= limit), None)
