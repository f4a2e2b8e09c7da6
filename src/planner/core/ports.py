"""The protocols the core talks through: the robot as the planner sees it, the LLM policy, the
sentence embedder and the parser. Implemented in process (sim, tests) and over ROS (nodes) alike."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict

from planner.core.scene_graph import SceneGraph
from planner.core.types import FailureInfo, Observation, PlanVerdict, PolicyReply, Recovery, SkillResult, SuggestionInfo


class Tools(Protocol):
    """The robot as the planner sees it; the task planner node implements it over ROS."""

    def scene(self) -> SceneGraph: ...

    def wait_until(self, condition: Callable[[SceneGraph], bool], timeout_s: float, stop: threading.Event) -> bool:
        """`condition` on the scene, again as the world changes, until it holds (True), or
        `timeout_s` passes or `stop` is set (False)."""

    def perceive(self, name: str, args: list[str], focus: frozenset[str] = frozenset()) -> Observation:
        """A perception action; `focus`: object labels the task is about, listed first when a
        room is crowded."""

    def execute_skill(self, call: str) -> SkillResult: ...

    def explain(self, failure: FailureInfo) -> SuggestionInfo | None: ...

    def learn(self, request: str, recoveries: list[Recovery]) -> None:
        """Tell the explainer how the replans after failures went."""

    def check_plan(self, request: str, steps: list[str], first_steps: bool = False) -> PlanVerdict | None:
        """How alike the plan (`first_steps`: its first steps so far) is to the plans that worked
        for similar requests; None when no plan check is running."""

    def record_plan(self, request: str, steps: list[str]) -> None:
        """Keep a plan that worked, for later checks."""

    def ask(self, question: str, timeout_s: float) -> str | None:
        """Put a question to the user; their answer, or None when none came in time."""

    def say(self, text: str) -> None:
        """Tell the user something (spoken where the robot can speak)."""

    def where_seen(self, label: str) -> str | None:
        """Where the other robots of a fleet saw a thing of `label`, in words; None without a fleet."""



class Policy(Protocol):
    def complete(self, messages: list[dict], schema: dict) -> PolicyReply: ...


class Judgement(BaseModel):
    """A yes/no reply as the model writes it (JUDGEMENT_SCHEMA)."""
    model_config = ConfigDict(extra="ignore")
    fits: bool


JUDGEMENT_SCHEMA = {"type": "object", "properties": {"fits": {"type": "boolean"}}, "required": ["fits"]}
# A bare true or false: one token to write. llama.cpp's Python server sorts the whole vocabulary for
# each token it writes with probabilities (~0.2 s on a CPU), so {"fits": true}'s six tokens took
# ~2.3 s a judgement after a map, this form ~1 s. Servers whose structured output needs an object
# at the root are sent JUDGEMENT_SCHEMA instead; `fits_of` reads either.
YES_NO_SCHEMA = {"type": "boolean"}


def fits_of(text: str) -> bool:
    """The yes or no of a judgement written in either form; ValueError when it is neither."""
    value = json.loads(text)
    return value if isinstance(value, bool) else Judgement.model_validate(value).fits


@runtime_checkable
class Judge(Protocol):
    """A policy that can say how sure it is of a yes/no answer, from its token probabilities."""

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        """A reply in `schema` (JUDGEMENT_SCHEMA or YES_NO_SCHEMA) with `yes_probability` set when
        the server gives token probabilities."""



class Embedder(Protocol):
    name: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length row vectors, one per text."""


class Lexicon(Protocol):
    """What words a dictionary of senses holds to be names of one thing."""
    name: str

    def senses(self, phrase: str, first: int | None = None, every: bool = False) -> frozenset[str]:
        """The senses the phrase is usually meant in as a noun (a plural read as its singular), or the
        `first` of them, the most used first; empty when unknown or when no sense is usual. With
        `every`, all its senses, the rare ones too (a jumper is a sweater only in a rare one)."""

    def kinds(self, phrase: str, every: bool = False) -> frozenset[str]:
        """The senses of which the phrase's usual senses (`every`: all) are a kind (a pullover: a sweater's)."""

    def broader(self, senses: frozenset[str]) -> frozenset[str]:
        """Every sense the `senses` are a kind of, at any remove (a washroom: a toilet's, a room's)."""


def judged(policy: Policy, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
    """A yes/no reply from any policy: with the probability of yes where the policy can judge."""
    return policy.judge(messages, schema) if isinstance(policy, Judge) else policy.complete(messages, schema)


def yes_probability_of(reply: PolicyReply) -> float:
    """`probability_of_yes` of a reply that must be a judgement; ValueError when it is none."""
    return probability_of_yes(reply, Judgement.model_validate_json(reply.text).fits)


def probability_of_yes(reply: PolicyReply, fits: bool) -> float:
    """How sure a yes/no reply is of yes: the server's token probability where it gave one, else
    1 or 0 as the model answered (`fits`, read from the reply)."""
    return reply.yes_probability if reply.yes_probability is not None else float(fits)


@dataclass(frozen=True)
class Word:
    """One token of a parsed text."""

    text: str
    lemma: str
    pos: str  # universal part of speech: VERB, NOUN, ADP, ...
    dep: str  # dependency label: ROOT, dobj, pobj, ...
    head: int  # index in the step of the word this one depends on (its own index for a root)


class Parser(Protocol):
    def parse(self, texts: list[str]) -> list[list[Word]]:
        """The words of each text, with parts of speech and dependencies."""
