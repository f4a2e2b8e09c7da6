"""Explainer node: answers /explainer/explain with a suggestion from similar past failure cases
and publishes it on /explainer/suggestion."""

from __future__ import annotations

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

from planner.backends.embeddings import SentenceEmbedder
from planner.core.explainer import CaseMemory, load_cases
from planner.core.files import InputError
from planner.msg import Suggestion
from planner.nodes.common import RELIABLE, PlannerNode, failure_from_msg, main_for, stamp_now
from planner.srv import Explain


class ExplainerNode(PlannerNode):
    def __init__(self, config=None, embedder=None):
        super().__init__("explainer", config)
        try:
            cases = load_cases(self.config.path(self.config.failure_cases))
        except InputError as error:
            self.report("error", f"failure cases rejected, explaining without them: {error}")
            cases = []
        settings = self.config.explainer
        self.memory = CaseMemory(cases, embedder or SentenceEmbedder(), settings.threshold, settings.top_k)
        self.suggestion_pub = self.create_publisher(Suggestion, "/explainer/suggestion", RELIABLE)
        self.create_service(Explain, "/explainer/explain", self._explain, callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"explainer ready with {len(cases)} failure cases")

    def _explain(self, request, response):
        failure = request.failure
        suggestion = self.memory.suggest(failure_from_msg(failure), failure.request)
        response.suggestion = Suggestion(stamp=stamp_now(self), task_id=failure.task_id, text=suggestion.text,
                                         case_ids=suggestion.case_ids, scores=suggestion.scores)
        self.suggestion_pub.publish(response.suggestion)
        return response


def main() -> int:
    return main_for(ExplainerNode)
