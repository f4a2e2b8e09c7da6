"""A central answer model: a classifier that learns, for one home, which robots' answers to trust
for which questions, from questions whose answers are known.

Two feature sets. `answers` is the question (its thing and room, as codes) and each robot's yes/no,
as in Patel et al.'s CAM. `robot_state` adds what each robot knows about its own answer and a
vote does not use: its probability of yes, whether it looked into the room at all, how long ago,
whether it saw the thing there, and whether it saw one in another room. Learners come from scikit-learn and xgboost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from planner.core.errors import InputError

if TYPE_CHECKING:   # the command line reads LEARNERS; it need not load the fleet's prompts for that
    from planner.core.fleet import Question, RobotAnswer

LEARNERS = ("xgboost", "random_forest", "decision_tree", "logistic_regression", "mlp")
FEATURE_SETS = ("answers", "robot_state")
MIN_PER_CLASS = 5          # questions answered yes, and no, a model needs to learn anything (and 5 folds need)
NEVER_LOOKED_MIN = 1e4     # "minutes since it looked" for a room a robot never looked into


class Classifier(Protocol):
    """A scikit-learn style classifier."""

    def fit(self, x: np.ndarray, y: np.ndarray) -> object: ...

    def predict(self, x: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Example:
    question: Question
    answers: tuple[RobotAnswer, ...]     # one per robot, always in the same robot order


def feature_names(robots: Sequence[str], feature_set: str) -> list[str]:
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


def check_training_set(examples: Sequence[Example]) -> None:
    """Raises InputError when the examples are too few to learn from, saying how many there are."""
    known = [e.question.truth for e in examples if e.question.truth is not None]
    yes, no = sum(known), len(known) - sum(known)
    if yes < MIN_PER_CLASS or no < MIN_PER_CLASS:
        raise InputError(f"a central answer model needs at least {MIN_PER_CLASS} questions whose answer is yes and "
                         f"{MIN_PER_CLASS} whose answer is no to learn from; there are {yes} and {no}"
                         + (f" ({len(examples) - len(known)} more without a known answer)" if len(known) < len(examples)
                            else ""))
    robots = {tuple(a.robot for a in e.answers) for e in examples}
    if len(robots) > 1:
        raise InputError(f"every question needs the same robots' answers in the same order; found {sorted(robots)}")


@dataclass
class CentralAnswerModel:
    learner: str
    feature_set: str = "answers"
    seed: int = 0
    _codes: dict[str, dict[str, int]] = field(default_factory=dict, init=False)
    _model: Classifier | None = field(default=None, init=False)

    def __post_init__(self):
        if self.feature_set not in FEATURE_SETS:
            raise InputError(f"feature set {self.feature_set!r}: there are {', '.join(FEATURE_SETS)}")
        make_learner(self.learner, self.seed)      # an unknown learner fails here, before any training

    def fit(self, examples: Sequence[Example]) -> CentralAnswerModel:
        """Trains on the examples whose answer is known; InputError when they are too few."""
        check_training_set(examples)
        return self._train([e for e in examples if e.question.truth is not None])

    def _train(self, known: Sequence[Example]) -> CentralAnswerModel:
        self._codes = {"thing": _codes(e.question.label for e in known), "room": _codes(e.question.room for e in known)}
        self._model = make_learner(self.learner, self.seed)
        self._model.fit(self.matrix(known), np.array([int(bool(e.question.truth)) for e in known]))
        return self

    def predict(self, examples: Sequence[Example]) -> list[bool]:
        if self._model is None:
            raise RuntimeError("the central answer model is not trained yet")
        return [bool(p) for p in self._model.predict(self.matrix(examples))]

    def matrix(self, examples: Sequence[Example]) -> np.ndarray:
        """One row of features a question; a thing or room not seen in training codes as -1."""
        rows = []
        for example in examples:
            row: list[float] = [self._codes["thing"].get(example.question.label, -1),
                                self._codes["room"].get(example.question.room, -1)]
            row += [float(a.yes) for a in example.answers]
            if self.feature_set == "robot_state":
                for a in example.answers:
                    row += [a.p_yes, float(a.looked), NEVER_LOOKED_MIN if a.since_s is None else a.since_s / 60,
                            float(a.saw), float(a.saw_elsewhere)]
            rows.append(row)
        return np.array(rows, dtype=float)


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

    check_training_set(examples)
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
