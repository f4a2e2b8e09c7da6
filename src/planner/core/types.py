"""The vocabulary every layer shares: what a skill, a perception call, a policy and an episode
return. A leaf module: it imports nothing from the project."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal


@dataclass
class Outcome:
    """How a check or a command came out: ok, or a failure code (see failures.FailureCode) and a
    detail sentence saying what was wrong."""
    ok: bool
    code: str = ""
    detail: str = ""


@dataclass
class Observation:
    text: str
    entities: list[str] = field(default_factory=list)
    answered: bool = True  # False: the map could not be asked (no search here, a search or perception failed)
    # The model calls made to answer it (a search of the map in plain words), counted with the task's own.
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class FailureInfo:
    skill: str
    command: str
    code: str
    reason: str
    context: dict = field(default_factory=dict)


@dataclass
class SkillResult:
    success: bool
    message: str
    failure: FailureInfo | None = None


@dataclass
class SuggestionInfo:
    text: str
    case_ids: list[str]
    scores: list[float]
    # template: one case clearly fits and `text` is its suggestion; compose: several fit about
    # equally and the planner's LLM makes one suggestion of `options` (case id, suggestion,
    # score); none: no case is similar enough.
    fit: Literal["template", "compose", "none"] = "template"
    options: list[tuple[str, str, float]] = field(default_factory=list)


@dataclass
class Recovery:
    """What followed a failed skill in a task: the calls up to the same skill succeeding on the
    same thing, whether it did, and that fix in words another task can use."""
    failure: FailureInfo
    case_ids: list[str]      # the cases whose suggestion the planner got, first the one it followed
    steps: list[str]
    recovered: bool
    fix: str = ""



@dataclass
class PolicyReply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    source: str = ""        # which model and server answered
    yes_probability: float | None = None  # for a judgement: how sure the model was of "true"



@dataclass
class TraceStep:
    kind: str
    text: str
    calls: tuple[str, ...] = ()   # kind plan: the skill calls planned, in order


class EpisodeOutcome(StrEnum):
    """How a task ended; only SUCCEEDED is a success."""
    SUCCEEDED = "succeeded"
    IMPOSSIBLE = "impossible"           # the request cannot be done here (the model said so twice, or nothing is left)
    REFUSED = "refused"                 # doing it would break a hazard rule of the skill library
    BUDGET_EXHAUSTED = "budget_exhausted"
    CANCELED = "canceled"
    ERROR = "error"                     # the LLM or the stack failed
    REJECTED = "rejected"               # never started: the queue was full or the emergency stop engaged


@dataclass(frozen=True)
class PlanVerdict:
    """What the plan check said of a plan (planner.core.plan_check)."""
    score: float | None  # the best PG2S against the similar past plans; None: no similar past request
    like: str = ""       # the past request whose plan is most alike
    low: bool = False

    def describe(self) -> str:
        if self.score is None:
            return "no similar request has worked before: nothing to compare the plan with"
        if self.low:
            return (f"this plan is unlike the plans that worked for similar requests (PG2S {self.score:.2f} at best, "
                    f"against the plan for \"{self.like}\")")
        return f"the plan is like the one that worked for \"{self.like}\" (PG2S {self.score:.2f})"


@dataclass
class EpisodeResult:
    success: bool
    outcome: EpisodeOutcome
    summary: str
    steps: int
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    plan_check: PlanVerdict | None = None  # the check of the first plan, where one was checked

    def __post_init__(self):
        self.outcome = EpisodeOutcome(self.outcome)  # a plain string is checked against the outcomes
        if self.success != (self.outcome == EpisodeOutcome.SUCCEEDED):
            raise ValueError(f"an episode that {self.outcome} cannot have success={self.success}")
