"""How alike two plans written in plain language are, step order aside.

PG2S (Brienza et al., `shared/papers/multi-agent-vlm-pg2s.txt`) averages two scores, each over the
reference plan's parts, each part matched to at most one part of the predicted plan:
- the sentence score: each reference step's most similar remaining predicted step, by sentence
  embeddings, counted when it clears a similarity threshold;
- the goal score: each reference action (a verb and the things it acts on, read from a parse of
  the step) against the remaining predicted actions, the verbs' similarity times the things'.
KAS (G-PlanET's key-action score) is kept beside it for comparison: step i against step i, the
share of the predicted step's key words that the reference step has; it has no value when the
plans differ in length.

Where we differ from the paper, and why:
- The paper's action keeps only direct objects and subjects, so "walk to the desk" and "walk to
  the moon" would be the same action; we also keep the objects of the verb's prepositions (where
  the robot goes, where it puts things), which is what the paper's own example needs to score 0.
  A step with coordinated verbs ("open the fridge and take the milk") gives one action per verb.
- Words are compared with the sentence embedder (no word2vec model is available offline); a verb
  is embedded as "to <verb>", which separates verbs better than the bare word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from planner.core.errors import InputError
from planner.core.files import StrictModel, load_jsonl
from planner.core.ports import Embedder, Parser, Word


@dataclass(frozen=True)
class Action:
    """What a step does: a verb ("pick up") and the things it acts on ("tomato", "kitchen counter")."""

    verb: str
    things: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.verb}({', '.join(self.things)})"


class ScoreSettings(StrictModel):
    alpha: float = Field(default=0.5, ge=0, le=1, description="weight of the goal score; the sentence score has 1 - alpha")
    sentence_threshold: float = Field(default=0.708, gt=0, le=1, description="cosine similarity two steps need to count as alike")
    word_threshold: float = Field(default=0.708, gt=0, le=1, description="cosine similarity two verbs or two things need")


class PlanRecord(BaseModel):
    """A plan in the scoring files (JSONL, one per line), matched between files by id. A task file
    of `planner plans generate` serves as the reference too: its reference_steps are the steps,
    its other fields (the task, the scene) are not needed here."""
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    steps: list[str] = Field(validation_alias=AliasChoices("steps", "reference_steps"))


@dataclass(frozen=True)
class PlanScore:
    pg2s: float
    sentence: float
    goal: float
    kas: float | None  # None when the plans differ in length
    reference_actions: list[Action] = field(default_factory=list)
    predicted_actions: list[Action] = field(default_factory=list)


NOUNS = {"NOUN", "PROPN"}
# Dependents of a verb that name what it acts on: objects and subjects, and objects of its prepositions.
THING_DEPS = {"dobj", "nsubj", "nsubjpass", "attr", "oprd"}
# Words that carry no action in KAS: articles, pronouns, punctuation, conjunctions, auxiliaries, adverbs.
NOT_KEY = {"DET", "PRON", "PUNCT", "CCONJ", "SCONJ", "AUX", "ADV", "SPACE", "INTJ", "SYM", "X"}


def readable_step(step: str) -> str:
    """A step as words: map ids lose their numbers and underscores ("kitchen_table_1" -> "kitchen table")."""
    return re.sub(r"\s+", " ", re.sub(r"_\d+\b", "", step).replace("_", " ")).strip()


def _phrase(words: list[Word], index: int) -> str:
    """A noun with the nouns compounded onto it: "kitchen counter", "fridge door"."""
    parts = [w.lemma for i, w in enumerate(words) if w.head == index and i != index and w.dep == "compound" and w.pos in NOUNS]
    return " ".join([*parts, words[index].lemma])


def frame(words: list[Word]) -> list[Action]:
    """The actions of one step: each root verb and each verb coordinated with it, with its particle
    ("pick up") and the nouns it acts on. An imperative's root is its verb even where the tagger
    calls it something else ("navigate" as an adjective)."""
    verbs = [i for i, w in enumerate(words) if w.dep == "ROOT" and w.pos not in NOUNS | {"PUNCT"}]
    for i, w in enumerate(words):  # "put it in, close the door, wait": conjuncts, and run-ons the parser leaves as "dep"
        if w.dep in ("conj", "dep") and w.pos == "VERB" and w.head in verbs:
            verbs.append(i)
    actions = []
    for verb in sorted(set(verbs)):
        particles = [w.lemma for w in words if w.head == verb and w.dep == "prt"]
        # "walk back to the counter": the preposition may hang off an adverb of the verb
        modifiers = {verb} | {i for i, w in enumerate(words) if w.head == verb and w.dep in ("advmod", "prt")}
        prepositions = {i for i, w in enumerate(words) if w.head in modifiers and w.dep in ("prep", "dative", "agent")}
        things = [
            _phrase(words, i)
            for i, w in enumerate(words)
            if w.pos in NOUNS and ((w.head == verb and w.dep in THING_DEPS) or (w.dep == "pobj" and w.head in prepositions))
        ]
        actions.append(Action(" ".join([words[verb].lemma, *particles]), tuple(things)))
    return actions


def key_words(words: list[Word]) -> frozenset[str]:
    """KAS's key words of a step: the lemmas of its verbs, nouns, adjectives and prepositions."""
    return frozenset(w.lemma for w in words if w.pos not in NOT_KEY)


def kas(reference: list[list[Word]], predicted: list[list[Word]]) -> float | None:
    """Step i against step i: the share of the predicted step's key words the reference step has."""
    if len(reference) != len(predicted) or not reference:
        return None
    shares = []
    for ref, pred in zip(reference, predicted):
        pred_words = key_words(pred)
        shares.append(len(pred_words & key_words(ref)) / len(pred_words) if pred_words else 0.0)
    return float(np.mean(shares))


def matched(similarity: np.ndarray) -> list[float]:
    """Each row in turn takes its most similar column not yet taken; a row whose best is 0 takes
    nothing and scores 0. `similarity` has 0 wherever two parts are not alike enough."""
    taken: set[int] = set()
    scores = []
    for row in similarity:
        free = [j for j in range(len(row)) if j not in taken]
        best = max(free, key=lambda j: row[j], default=None)
        if best is None or row[best] <= 0:
            scores.append(0.0)
            continue
        taken.add(best)
        scores.append(float(row[best]))
    return scores


class PlanScorer:
    """PG2S and KAS for pairs of plans; words and steps are embedded once per score."""

    def __init__(self, parser: Parser, embedder: Embedder, settings: ScoreSettings | None = None):
        self.parser = parser
        self.embedder = embedder
        self.settings = settings or ScoreSettings()

    def score(self, reference: list[str], predicted: list[str]) -> PlanScore:
        if not reference:
            raise InputError("the reference plan has no steps")
        ref_steps = [readable_step(s) for s in reference]
        pred_steps = [readable_step(s) for s in predicted]
        parsed = self.parser.parse(ref_steps + pred_steps)
        ref_words, pred_words = parsed[: len(ref_steps)], parsed[len(ref_steps) :]
        ref_actions = [a for words in ref_words for a in frame(words)]
        pred_actions = [a for words in pred_words for a in frame(words)]
        sentence = self._sentence_score(ref_steps, pred_steps)
        goal = self._goal_score(ref_actions, pred_actions)
        alpha = self.settings.alpha
        return PlanScore(
            pg2s=(1 - alpha) * sentence + alpha * goal,
            sentence=sentence,
            goal=goal,
            kas=kas(ref_words, pred_words),
            reference_actions=ref_actions,
            predicted_actions=pred_actions,
        )

    def _gated(self, a: np.ndarray, b: np.ndarray, threshold: float) -> np.ndarray:
        similarity = a @ b.T
        return np.where(similarity >= threshold, similarity, 0.0)

    def _sentence_score(self, reference: list[str], predicted: list[str]) -> float:
        if not predicted:
            return 0.0
        vectors = self.embedder.encode(reference + predicted)
        similarity = self._gated(vectors[: len(reference)], vectors[len(reference) :], self.settings.sentence_threshold)
        return float(np.mean(matched(similarity)))

    def _goal_score(self, reference: list[Action], predicted: list[Action]) -> float:
        if not reference:
            return 1.0 if not predicted else 0.0
        if not predicted:
            return 0.0
        words = self._word_vectors(reference + predicted)
        threshold = self.settings.word_threshold
        similarity = np.zeros((len(reference), len(predicted)))
        for i, ref in enumerate(reference):
            for j, pred in enumerate(predicted):
                verb = self._gated(words[f"to {ref.verb}"][None], words[f"to {pred.verb}"][None], threshold)[0, 0]
                similarity[i, j] = verb * self._things_similarity(ref.things, pred.things, words, threshold)
        return float(np.mean(matched(similarity)))

    def _things_similarity(self, reference: tuple[str, ...], predicted: tuple[str, ...], words: dict, threshold: float) -> float:
        """How well the predicted action's things cover the reference's: the mean, over the
        reference's things, of the most similar predicted thing."""
        if not reference or not predicted:
            return 1.0 if reference == predicted else 0.0
        similarity = self._gated(np.stack([words[t] for t in reference]), np.stack([words[t] for t in predicted]), threshold)
        return float(similarity.max(axis=1).mean())

    def _word_vectors(self, actions: list[Action]) -> dict[str, np.ndarray]:
        texts = sorted({f"to {a.verb}" for a in actions} | {t for a in actions for t in a.things})
        return dict(zip(texts, self.embedder.encode(texts)))


def load_plans(path: str | Path) -> dict[str, PlanRecord]:
    """The plans of a JSONL file by id."""
    return {record.id: record for record in load_jsonl(path, PlanRecord, unique="id")}
