"""Explainer node: answers /explainer/explain with a suggestion from similar past failure cases
(published on /explainer/suggestion too) and learns from /explainer/record_recovery; keeps the
plans that worked (/explainer/record_plan) and scores new plans against them (/explainer/check_plan).

Its names are absolute on purpose: one explainer serves the task planners of several robots,
each in its own namespace, and what one robot learns the others retrieve.

What it learns changes what every robot is told, so only a task that really failed teaches it: a
record counts only with the token /explainer/explain answered to its task (never published), and
only for a failure a controller reported on a /…/controller/failure topic, which it follows in
every namespace.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

from planner.core.case_store import CaseStoreUnwritable
from planner.core.types import Recovery
from planner.msg import FailureMessage, Suggestion
from planner.ros.convert import failure_from_msg, stamp_now
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import RELIABLE
from planner.srv import CheckPlan, Explain, RecordPlan, RecordRecovery
from planner.wiring import make_plan_checker, open_case_memory

SUGGESTIONS_KEPT = 1000   # the latest tasks whose suggested cases a record may count
FOLLOW_PERIOD_S = 1.0     # how often the graph is searched for controllers that appeared
FAILURE_TYPE = "planner/msg/FailureMessage"
# Beyond these a plan is not a robot's plan, and scoring it would keep the explainer busy for minutes.
MAX_PLAN_STEPS = 60
MAX_TEXT_CHARS = 500


@dataclass
class Suggested:
    """What a task was told: the token its record must carry, and the cases suggested to it."""
    token: str
    case_ids: set[str] = field(default_factory=set)


class ExplainerNode(PlannerNode):
    def __init__(self, config=None, embedder=None):
        super().__init__("explainer", config)
        self.memory, problems = open_case_memory(self.config, embedder)
        for problem in problems:
            self.report("error", problem)
        self.suggestion_pub = self.create_publisher(Suggestion, "/explainer/suggestion", RELIABLE)
        # Task id -> the cases suggested for it: a record may count only those, so nobody can
        # demote (or promote) a case by reporting on suggestions it was never given.
        self.suggested: OrderedDict[str, Suggested] = OrderedDict()
        # The failures the controllers reported, (task id, code), the latest kept.
        self.reported: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.followed: dict[str, object] = {}
        heard = MutuallyExclusiveCallbackGroup()
        self.create_timer(FOLLOW_PERIOD_S, self._follow_controllers, callback_group=heard)
        self._follow_controllers()
        # One group: retrieval and learning change the same index.
        group = MutuallyExclusiveCallbackGroup()
        self.create_service(Explain, "/explainer/explain", self._explain, callback_group=group)
        self.create_service(RecordRecovery, "/explainer/record_recovery", self._record, callback_group=group)
        self.plan_checker = make_plan_checker(self.memory, self.config.planner.plan_check)
        self.create_service(CheckPlan, "/explainer/check_plan", self._check_plan, callback_group=group)
        self.create_service(RecordPlan, "/explainer/record_plan", self._record_plan, callback_group=group)
        where = self.memory.store.path or "memory"
        self.get_logger().info(f"explainer ready with {len(self.memory)} failure cases ({where})")

    def _follow_controllers(self) -> None:
        """Subscribe to the failure topic of each controller that has appeared, in any namespace."""
        for name, types in self.get_topic_names_and_types():
            if name.endswith("/controller/failure") and FAILURE_TYPE in types and name not in self.followed:
                self.followed[name] = self.create_subscription(FailureMessage, name, self._on_failure, RELIABLE,
                                                               callback_group=self.default_callback_group)

    def _on_failure(self, msg: FailureMessage) -> None:
        self.reported[(msg.task_id, msg.code)] = None
        while len(self.reported) > SUGGESTIONS_KEPT:
            self.reported.popitem(last=False)

    def _explain(self, request, response):
        failure = request.failure
        suggestion = self.memory.suggest(failure_from_msg(failure), failure.request)
        response.suggestion = Suggestion(
            stamp=stamp_now(self), task_id=failure.task_id, text=suggestion.text, fit=suggestion.fit,
            case_ids=[i for i, _, _ in suggestion.options], scores=[s for _, _, s in suggestion.options],
            case_suggestions=[t for _, t, _ in suggestion.options])
        given = self.suggested.setdefault(failure.task_id, Suggested(secrets.token_hex(16)))
        given.case_ids.update(response.suggestion.case_ids)
        response.token = given.token
        self.suggested.move_to_end(failure.task_id)
        while len(self.suggested) > SUGGESTIONS_KEPT:
            self.suggested.popitem(last=False)
        self.suggestion_pub.publish(response.suggestion)
        return response

    def _record(self, request, response):
        if not self.config.explainer.learn:
            response.message = "learning is off (explainer.learn)"
            return response
        task, given = request.failure.task_id, self.suggested.get(request.failure.task_id)
        if given is None or not hmac.compare_digest(given.token.encode(), request.token.encode()):
            problem = f"task {task!r} was given no suggestion, or not this token"
        elif (task, request.failure.code) not in self.reported:
            problem = f"no controller reported a {request.failure.code} failure of task {task!r}"
        else:
            problem = ""
        if problem:
            response.message = f"not counted: {problem}"
            self.report("warn", f"a record from {request.robot or 'the root namespace'}: {response.message}")
            return response
        offered = given.case_ids
        counted = [case_id for case_id in request.case_ids if case_id in offered]
        if len(counted) < len(request.case_ids):
            self.report("warn", f"a record from {request.robot or 'the root namespace'} for task "
                                f"{request.failure.task_id!r} names cases never suggested for it "
                                f"({', '.join(c for c in request.case_ids if c not in offered)}); they are not counted")
        recovery = Recovery(failure_from_msg(request.failure), counted, list(request.steps), request.recovered,
                            request.fix)
        try:
            response.case_id, response.message = self.memory.learn(request.request, recovery, request.robot)
        except CaseStoreUnwritable as error:
            response.message = f"nothing learned: {error}"
            self.report("error", response.message)
        self.get_logger().info(f"from {request.robot or 'the root namespace'}: {response.message}")
        return response

    def _plan_problem(self, request) -> str:
        """What makes a plan sent to the explainer unusable, or ''."""
        if not request.steps or len(request.steps) > MAX_PLAN_STEPS:
            return f"a plan has 1 to {MAX_PLAN_STEPS} steps, this one {len(request.steps)}"
        if len(request.request) > MAX_TEXT_CHARS or any(len(step) > MAX_TEXT_CHARS for step in request.steps):
            return f"a request and each step are at most {MAX_TEXT_CHARS} characters"
        return ""

    def _check_plan(self, request, response):
        if problem := self._plan_problem(request):
            self.report("warn", f"plan check for {request.robot or 'the root namespace'} refused: {problem}")
            return response
        verdict = self.plan_checker.check(request.request, list(request.steps), request.first_steps)
        response.judged = verdict.score is not None
        response.score, response.like, response.low = verdict.score or 0.0, verdict.like, verdict.low
        self.get_logger().info(f"plan check for {request.robot or 'the root namespace'}: {verdict.describe()}")
        return response

    def _record_plan(self, request, response):
        if problem := self._plan_problem(request):
            response.message = f"not kept: {problem}"
            return response
        refused = self.plan_checker.record(request.request, list(request.steps), request.robot)
        if refused:
            self.report("error", refused)
        response.message = f"not kept: {refused}" if refused else \
            f"kept the {len(request.steps)}-step plan for {request.request!r}"
        return response


def main() -> int:
    return main_for(ExplainerNode)
