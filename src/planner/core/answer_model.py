"""How a fleet's yes/no answers become one: the questions and answers themselves, two rules (the
majority vote, and the latest look: the answer of the robot that looked into the room last), and a
central answer model, a classifier that learns which robots' answers to trust for which questions
from questions whose answers are known: in one home, as Patel et al. train theirs, or in other
homes (the examples `planner bench fleet` keeps), as a robot would ship with it.

Three feature sets. `answers` is the question (its thing and room, as codes) and each robot's yes/no,
as in Patel et al.'s CAM. `robot_state` adds what each robot knows about its own answer and a
vote does not use: its probability of yes, whether it looked into the room at all, how long ago,
whether it saw the thing there, and whether it saw one in another room. `pooled` is that knowledge
taken over the fleet rather than robot by robot (shares of robots, and what the robot that looked
last says), so one model serves a fleet of any size and any names, in any home.
Learners come from scikit-learn and xgboost.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np
from pydantic import Field, ValidationError, field_validator

from planner.core.asking import words
from planner.core.errors import InputError
from planner.core.files import StrictModel

LEARNERS = ("xgboost", "random_forest", "decision_tree", "logistic_regression", "mlp")
FEATURE_SETS = ("answers", "robot_state", "pooled")
POOLED_FEATURES = ("share saying yes", "mean p(yes)", "share that looked", "share that saw it",
                   "share that saw one elsewhere", "min since the last look", "last to look saw it",
                   "last to look says yes")
MIN_PER_CLASS = 5          # questions answered yes, and no, a model needs to learn anything (and 5 folds need)
NEVER_LOOKED_MIN = 1e4     # "minutes since it looked" for a room a robot never looked into


@dataclass(frozen=True)
class Question:
    """Is there a thing of `label` in `room`? (With no room: where has one been seen?) `truth` is
    the home's answer when it is known (a benchmark); `moved` marks a question whose answer changed
    after some robot looked."""
    label: str
    room: str
    truth: bool | None = None
    moved: bool = False

    @property
    def text(self) -> str:
        return f"Is there a {words(self.label)} in the {words(self.room)}?"


@dataclass(frozen=True)
class RobotAnswer:
    """One robot's answer, with what the robot knows about how it came to it."""
    robot: str
    yes: bool
    p_yes: float                 # the model's probability of yes (1 or 0 when the server gives none)
    looked: bool                 # the robot has looked into the room
    since_s: float | None        # seconds since it last did
    saw: bool                    # it saw a thing of that label there
    saw_elsewhere: bool = False  # it saw one in another room

    def inverted(self) -> RobotAnswer:
        """The answer a malicious robot gives: the opposite of what it believes."""
        return replace(self, yes=not self.yes, p_yes=1.0 - self.p_yes)


def majority_vote(answers: Sequence[RobotAnswer]) -> bool:
    """Yes when more robots say yes than no; a tie goes to the robots' mean probability of yes."""
    yes = sum(a.yes for a in answers)
    if 2 * yes != len(answers):
        return 2 * yes > len(answers)
    return statistics.fmean(a.p_yes for a in answers) >= 0.5


def latest_look(answers: Sequence[RobotAnswer]) -> bool:
    """The answer of the robot that looked into the room last: what it saw is the freshest evidence
    the fleet has, and robots that never looked would outvote it with "no" for want of any. The
    vote among those that looked last together, or of everyone when none looked."""
    return majority_vote(last_to_look(answers) or answers)


def last_to_look(answers: Sequence[RobotAnswer]) -> list[RobotAnswer]:
    """The robots that looked into the room most recently (several when at the same moment); none
    when no robot looked."""
    looked = [a for a in answers if a.looked and a.since_s is not None]
    latest = min((a.since_s for a in looked if a.since_s is not None), default=None)
    return [a for a in looked if a.since_s == latest]


# How answers become one without a trained model, by their names in results and config.
RULES: dict[str, Callable[[Sequence[RobotAnswer]], bool]] = {"vote": majority_vote, "latest_look": latest_look}
RULE_TITLES = {"vote": "majority vote", "latest_look": "latest look"}


class Classifier(Protocol):
    """A scikit-learn style classifier."""

    def fit(self, x: np.ndarray, y: np.ndarray) -> object: ...

    def predict(self, x: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Example:
    question: Question
    answers: tuple[RobotAnswer, ...]     # one per robot, always in the same robot order


class AnswerRecord(StrictModel):
    robot: str = Field(min_length=1)
    yes: bool
    p_yes: float = Field(ge=0, le=1)
    looked: bool
    since_s: float | None = Field(default=None, ge=0)
    saw: bool
    saw_elsewhere: bool = False


class QuestionRecord(StrictModel):
    label: str = Field(min_length=1)
    room: str = Field(min_length=1)
    truth: bool
    moved: bool = False


class ExampleRecord(StrictModel):
    """A question whose answer is known, with each robot's answer, as `planner bench fleet` keeps
    them in its results (each home's "examples"): what an answer model learns from."""
    question: QuestionRecord
    answers: list[AnswerRecord] = Field(min_length=1)

    def example(self) -> Example:
        return Example(Question(**self.question.model_dump()),
                       tuple(RobotAnswer(**a.model_dump()) for a in self.answers))


def example_record(example: Example) -> dict:
    q = example.question
    return {"question": {"label": q.label, "room": q.room, "truth": q.truth, "moved": q.moved},
            "answers": [{"robot": a.robot, "yes": a.yes, "p_yes": round(a.p_yes, 4), "looked": a.looked,
                         "since_s": None if a.since_s is None else round(a.since_s, 1), "saw": a.saw,
                         "saw_elsewhere": a.saw_elsewhere} for a in example.answers]}


@dataclass
class TrainingSet:
    examples: list[Example]
    homes: set[tuple[int, int]]          # (seed, rooms) of the homes the questions were asked in
    confidence: set[bool] = field(default_factory=set)   # whether the robots' p(yes) was the model's (runs that say)

    @property
    def seeds(self) -> set[int]:
        return {seed for seed, _ in self.homes}

    def check_confidence(self, confidence: bool, feature_sets: Sequence[str] = FEATURE_SETS) -> None:
        """Raises InputError when the robots of these examples gave their probability of yes
        otherwise than a fleet answering with `confidence` would, and a feature set uses it: a
        model that learnt p(yes) as 0 or 1 would read the model's probabilities as something else."""
        using = [feature_set for feature_set in feature_sets if feature_set != "answers"]
        if not using or not self.confidence - {confidence}:
            return

        def said(on: bool) -> str:
            return "with the model's probability of yes" if on else "yes or no only"
        raise InputError(f"the examples' robots answered {said(not confidence)} and this fleet's answer "
                         f"{said(confidence)}; the {' and '.join(using)} features use that probability: learn from "
                         f"runs made {'with' if confidence else 'without'} --confidence, or set fleet.confidence "
                         "to match")


def home_examples(home: dict, where: str) -> list[Example]:
    """The questions one home of a `planner bench fleet` results file kept ("examples"). Raises
    InputError naming `where` and the question that cannot be read."""
    records = home.get("examples", []) if isinstance(home, dict) else None
    if not isinstance(records, list):
        raise InputError(f"{where}: its questions are not a list")
    examples = []
    for index, record in enumerate(records, 1):
        try:
            examples.append(ExampleRecord.model_validate(record).example())
        except ValidationError as error:
            raise InputError(f"{where}, question {index}: "
                             f"{error.errors()[0]['loc']}: {error.errors()[0]['msg']}") from error
    return examples


def load_examples(paths: Sequence[Path]) -> TrainingSet:
    """The questions with known answers in `planner bench fleet` results files. Raises InputError
    naming the file, home and question that cannot be read."""
    examples: list[Example] = []
    homes: set[tuple[int, int]] = set()
    confidence: set[bool] = set()
    for path in paths:
        try:
            results = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise InputError(f"{path}: not a readable results file ({error})") from error
        rows = results.get("homes") if isinstance(results, dict) else None
        if not isinstance(rows, list) or not any(isinstance(h, dict) and h.get("examples") for h in rows):
            raise InputError(f"{path}: no questions with their answers in it (a `planner bench fleet` results file "
                             "keeps them under each home's \"examples\")")
        for number, home in enumerate(rows, 1):
            examples += home_examples(home, f"{path}: home {number}")
            homes.add((int(home.get("seed", -1)), int(home.get("rooms", -1))))
        setup = results.get("setup")
        if isinstance(setup, dict) and isinstance(setup.get("confidence"), bool):
            confidence.add(setup["confidence"])
    return TrainingSet(examples, homes, confidence)


def feature_names(robots: Sequence[str], feature_set: str) -> list[str]:
    if feature_set == "pooled":
        return list(POOLED_FEATURES)
    names = ["thing", "room"] + [f"{robot} says yes" for robot in robots]
    if feature_set == "robot_state":
        for robot in robots:
            names += [f"{robot} p(yes)", f"{robot} looked", f"{robot} min since look", f"{robot} saw it",
                      f"{robot} saw one elsewhere"]
    return names


def make_learner(name: str, seed: int) -> Classifier:
    """A fresh, unfitted classifier by name."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    if name == "xgboost":
        try:
            from xgboost import XGBClassifier
        except ImportError as error:
            raise InputError("learner xgboost: the xgboost package is not installed "
                             "(pip install xgboost-cpu, or the planner[fleet] extra)") from error
        return XGBClassifier(n_estimators=100, max_depth=3, learning_rate=0.1, n_jobs=1, random_state=seed,
                             verbosity=0)
    if name == "random_forest":
        return RandomForestClassifier(n_estimators=100, random_state=seed)
    if name == "decision_tree":
        return DecisionTreeClassifier(random_state=seed)
    if name == "logistic_regression":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    if name == "mlp":
        return make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(16, 8), max_iter=2000, random_state=seed))
    raise InputError(f"learner {name!r}: there are {', '.join(LEARNERS)}")


def check_training_set(examples: Sequence[Example], feature_set: str = "answers") -> None:
    """Raises InputError when the examples are too few to learn from, saying how many there are, or
    (robot by robot features) come from different robots."""
    known = [e.question.truth for e in examples if e.question.truth is not None]
    yes, no = sum(known), len(known) - sum(known)
    if yes < MIN_PER_CLASS or no < MIN_PER_CLASS:
        raise InputError(f"a central answer model needs at least {MIN_PER_CLASS} questions whose answer is yes and "
                         f"{MIN_PER_CLASS} whose answer is no to learn from; there are {yes} and {no}"
                         + (f" ({len(examples) - len(known)} more without a known answer)" if len(known) < len(examples)
                            else ""))
    robots = sorted({tuple(a.robot for a in e.answers) for e in examples})
    if feature_set != "pooled" and len(robots) > 1:
        raise InputError(f"robot by robot features need every question answered by the same robots in the same "
                         f"order; found {len(robots)} fleets, e.g. {', '.join(map(str, robots[:3]))} (the pooled "
                         "features take any)")


@dataclass
class CentralAnswerModel:
    learner: str
    feature_set: str = "answers"
    seed: int = 0
    _codes: dict[str, dict[str, int]] = field(default_factory=dict, init=False)
    _model: Classifier | None = field(default=None, init=False)
    _robots: int = field(default=0, init=False)

    def __post_init__(self):
        if self.feature_set not in FEATURE_SETS:
            raise InputError(f"feature set {self.feature_set!r}: there are {', '.join(FEATURE_SETS)}")
        make_learner(self.learner, self.seed)      # an unknown learner fails here, before any training

    def fit(self, examples: Sequence[Example]) -> CentralAnswerModel:
        """Trains on the examples whose answer is known; InputError when they are too few."""
        check_training_set(examples, self.feature_set)
        return self._train([e for e in examples if e.question.truth is not None])

    @property
    def trained(self) -> bool:
        return self._model is not None

    def _train(self, known: Sequence[Example]) -> CentralAnswerModel:
        self._robots = len(known[0].answers)
        self._codes = {"thing": _codes(e.question.label for e in known), "room": _codes(e.question.room for e in known)}
        self._model = make_learner(self.learner, self.seed)
        self._model.fit(self.matrix(known), np.array([int(bool(e.question.truth)) for e in known]))
        return self

    def predict(self, examples: Sequence[Example]) -> list[bool]:
        """Raises InputError when a question has answers from another number of robots than the
        model learnt from (only the pooled features take any number)."""
        if self._model is None:
            raise RuntimeError("the central answer model is not trained yet")
        if self.feature_set != "pooled" and (counts := {len(e.answers) for e in examples} - {self._robots}):
            raise InputError(f"the answer model learnt from {self._robots} robots' answers and is given "
                             f"{', '.join(map(str, sorted(counts)))}; the pooled features take any number")
        return [bool(p) for p in self._model.predict(self.matrix(examples))]

    def matrix(self, examples: Sequence[Example]) -> np.ndarray:
        """One row of features a question; a thing or room not seen in training codes as -1."""
        rows = []
        for example in examples:
            if self.feature_set == "pooled":
                rows.append(pooled(example.answers))
                continue
            row: list[float] = [self._codes["thing"].get(example.question.label, -1),
                                self._codes["room"].get(example.question.room, -1)]
            row += [float(a.yes) for a in example.answers]
            if self.feature_set == "robot_state":
                for a in example.answers:
                    row += [a.p_yes, float(a.looked), NEVER_LOOKED_MIN if a.since_s is None else a.since_s / 60,
                            float(a.saw), float(a.saw_elsewhere)]
            rows.append(row)
        return np.array(rows, dtype=float)


def pooled(answers: Sequence[RobotAnswer]) -> list[float]:
    """The fleet's answers as features that do not depend on how many robots there are or which
    one is which (POOLED_FEATURES, in order)."""
    count = len(answers)
    last = next(iter(last_to_look(answers)), None)
    return [sum(a.yes for a in answers) / count, sum(a.p_yes for a in answers) / count,
            sum(a.looked and a.since_s is not None for a in answers) / count, sum(a.saw for a in answers) / count,
            sum(a.saw_elsewhere for a in answers) / count,
            NEVER_LOOKED_MIN if last is None else (last.since_s or 0.0) / 60,
            -1.0 if last is None else float(last.saw), -1.0 if last is None else float(last.yes)]


def _codes(names) -> dict[str, int]:
    return {name: index for index, name in enumerate(sorted(set(names)))}


@dataclass
class CrossValidated:
    predictions: list[bool]          # each question predicted by a model that did not train on it
    importance: dict[str, float]     # accuracy lost when the feature is shuffled, mean over folds


def cross_validate(examples: Sequence[Example], learner: str, feature_set: str, folds: int = 5, seed: int = 0,
                   importance_repeats: int = 5) -> CrossValidated:
    """Stratified k-fold: trained per home as the model is meant to be, every question scored by a
    model that has not seen it. Raises InputError when the examples are too few."""
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import StratifiedKFold

    check_training_set(examples, feature_set)
    examples = [e for e in examples if e.question.truth is not None]
    truth = np.array([int(bool(e.question.truth)) for e in examples])
    predictions = np.zeros(len(examples), dtype=int)
    names = feature_names([a.robot for a in examples[0].answers], feature_set)
    lost = np.zeros(len(names))
    splitter = StratifiedKFold(n_splits=min(folds, int(truth.sum()), int(len(truth) - truth.sum())), shuffle=True,
                               random_state=seed)
    for train, test in splitter.split(np.zeros(len(truth)), truth):
        # A fold may hold fewer than MIN_PER_CLASS of a class: the whole set was checked above.
        model = CentralAnswerModel(learner, feature_set, seed)._train([examples[i] for i in train])
        held_out = [examples[i] for i in test]
        predictions[test] = model.predict(held_out)
        shuffled = permutation_importance(model._model, model.matrix(held_out), truth[test], n_repeats=importance_repeats,
                                          random_state=seed, scoring="accuracy")
        lost += shuffled.importances_mean
    count = splitter.get_n_splits()
    return CrossValidated([bool(p) for p in predictions], {n: round(float(v / count), 4) for n, v in zip(names, lost)})


class AnswerModelSettings(StrictModel):
    examples: list[str] = Field(min_length=1, description="results files of `planner bench fleet` whose questions, "
                                "with the robots' answers and the truth, the model learns from at start-up "
                                "(relative to this file)")
    learner: str = Field(default="random_forest", description=f"one of {', '.join(LEARNERS)}")
    features: str = Field(
        default="pooled", description="pooled: the fleet's answers taken together, for any number of robots; "
                                      "answers, robot_state: robot by robot, for a fleet of as many robots as the "
                                      "examples had")

    @field_validator("learner", "features")
    @classmethod
    def _known(cls, value: str, info) -> str:
        known = LEARNERS if info.field_name == "learner" else FEATURE_SETS
        if value not in known:
            raise ValueError(f"{value!r}: there are {', '.join(known)}")
        return value


class FleetDecision:
    """How a fleet's answers become one: a central answer model trained at start-up on the
    configured examples, or the `rule` (one of RULES) when none is configured, it cannot be trained
    (too few examples, or their robots gave p(yes) otherwise than this fleet's do, `confidence`), or
    it cannot take a question's answers (robot by robot features, another number of robots)."""

    def __init__(self, settings: AnswerModelSettings | None, confidence: bool, resolve: Callable[[str], Path] = Path,
                 *, rule: str):
        self.model: CentralAnswerModel | None = None
        self.problem = ""        # why the configured model is not used ('' when it is, or none is configured)
        self.rule, self.rule_name = RULES[rule], RULE_TITLES[rule]
        self.name = self.rule_name
        if settings is None:
            return
        try:
            training = load_examples([resolve(path) for path in settings.examples])
            training.check_confidence(confidence, [settings.features])
            self.model = CentralAnswerModel(settings.learner, settings.features).fit(training.examples)
        except InputError as error:
            self.problem = f"answer model not trained, so the fleet answers by the {self.rule_name}: {error}"
            return
        self.name = (f"central answer model ({settings.learner}, {settings.features} features, "
                     f"{len(training.examples)} questions from {len(training.homes)} "
                     f"home{'' if len(training.homes) == 1 else 's'})")

    def decide(self, question: Question, answers: Sequence[RobotAnswer]) -> tuple[bool, str]:
        """The fleet's answer and what gave it."""
        if self.model is not None:
            try:
                return self.model.predict([Example(question, tuple(answers))])[0], self.name
            except InputError as error:
                return self.rule(answers), f"{self.rule_name} ({error})"
        return self.rule(answers), self.rule_name
