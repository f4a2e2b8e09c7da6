"""Fleet node: answers /fleet/ask ("Is there a mug in the kitchen?", "Where is the mug?") from
what each robot of the fleet has seen. It follows each robot's /<namespace>/scene_graph (those of
fleet.robots, or, when that is empty, every scene graph that appears on the network); each robot's
answer comes from its own graph alone (the model asked as that robot), and the answers become one
by fleet.rule (the answer of the robot that looked into the room last, or the majority vote), or by a
central answer model trained at start-up on fleet.answer_model's examples, with each robot's answer
and evidence in the reply. Where a thing is comes from
the graphs alone: each robot's sightings of it, the newest first.

Its names are absolute, as the explainer's: one fleet node serves the robots of every namespace.
"""

from __future__ import annotations

import threading

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.serialization import deserialize_message

from planner.core.answer_model import FleetDecision, Question
from planner.core.asking import words
from planner.core.errors import PolicyError
from planner.core.fleet import FleetAnswerer, RobotMemory, evidence, memory_from_scene, read_question, sightings, sightings_text
from planner.msg import FleetVote, SceneGraph
from planner.ros.convert import scene_from_msg
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import LATCHED
from planner.srv import AskFleet

MAX_QUESTION_CHARS = 300
DISCOVERY_PERIOD_S = 2.0
SCENE_GRAPH_TYPE = "planner/msg/SceneGraph"


def _topic(namespace: str) -> str:
    return "/" + "/".join(part for part in (namespace.strip("/"), "scene_graph") if part)


class FleetNode(PlannerNode):
    def __init__(self, config=None, policy=None):
        super().__init__("fleet", config)
        self.policy = policy     # opened at the first question: a fleet nobody asks starts no model
        self.robots: list[str] = []
        # Each robot's latest graph as it came, serialized: turned into Python only when asked, so
        # following a fleet's graphs costs next to nothing between questions.
        self.graphs: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.decision = FleetDecision(self.config.fleet.answer_model, self.config.fleet.confidence, self.config.path,
                                      rule=self.config.fleet.rule)
        if self.decision.problem:
            self.report("error", self.decision.problem)
        for robot in self.config.fleet.robots:
            self._follow(robot.strip("/"))
        if not self.config.fleet.robots:
            self.create_timer(DISCOVERY_PERIOD_S, self._discover)
        # Questions one at a time: the model serves one robot's answer after another.
        self.create_service(AskFleet, "/fleet/ask", self._ask, callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info("fleet ready for " + (", ".join(self.robots) if self.robots else
                                                     "every robot whose scene graph appears") +
                               f"; answers combined by {self.decision.name}")

    def _follow(self, robot: str) -> None:
        self.robots.append(robot)
        self.create_subscription(SceneGraph, _topic(robot), lambda data: self._keep(robot, data), LATCHED, raw=True)

    def _discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if topic.endswith("/scene_graph") and SCENE_GRAPH_TYPE in types:
                robot = topic.removesuffix("/scene_graph").strip("/")
                if robot not in self.robots:
                    self._follow(robot)

    def _keep(self, robot: str, data: bytes) -> None:
        with self._lock:
            self.graphs[robot] = data

    def _ask(self, request, response):
        response.aggregator = self.decision.name
        with self._lock:
            graphs = dict(self.graphs)
        if not graphs:
            response.message = ("no robot has sent a scene graph yet" +
                                (f" ({', '.join(_topic(r) for r in self.robots)})" if self.robots else ""))
            return response
        scenes = {robot: scene_from_msg(deserialize_message(data, SceneGraph)) for robot, data in graphs.items()}
        rooms = sorted({room for scene in scenes.values() for room in scene.rooms()})
        try:
            question = self._question(request, rooms)
        except ValueError as error:
            response.message = str(error)
            self.report("warn", f"/fleet/ask: {error}")
            return response
        now = self.get_clock().now().nanoseconds / 1e9
        # A robot asking knows its own map: the answer is the other robots'.
        asking = request.asking_robot.strip("/") if request.asking_robot else None
        memories = [memory_from_scene(robot or "robot", scenes[robot]) for robot in self.robots
                    if robot in scenes and robot != asking]
        if not memories:
            response.message = f"no robot but {request.asking_robot} has sent a scene graph"
            return response
        if not question.room:
            return self._where(question.label, memories, now, response)
        if self.policy is None:
            self.policy = self.open_llm()
        answerer = FleetAnswerer(self.policy, rooms, self.config.fleet.confidence)
        answers = []
        for memory in memories:
            try:
                answer = answerer.answer(memory, question, now)
            except (PolicyError, ValueError) as error:   # this robot is left out; the others still answer
                self.report("warn", f"/fleet/ask: {memory.robot} could not answer: {error}")
                continue
            answers.append(answer)
            response.votes.append(FleetVote(
                robot=memory.robot, yes=answer.yes, p_yes=answer.p_yes, looked=answer.looked,
                seconds_since=-1.0 if answer.since_s is None else answer.since_s, saw=answer.saw,
                evidence=evidence(memory, question, now)))
        if not answers:
            response.message = "no robot could answer (see /planner/status)"
            return response
        response.yes, response.aggregator = self.decision.decide(question, answers)
        response.answered = True
        agree = sum(a.yes == response.yes for a in answers)
        response.message = (f"{'Yes' if response.yes else 'No'}: {agree} of {len(answers)} robots say there is "
                            f"{'a' if response.yes else 'no'} {words(question.label)} in the {words(question.room)}.")
        return response

    @staticmethod
    def _where(label: str, memories: list[RobotMemory], now: float, response):
        """Where the robots saw a thing, from their graphs alone: no model is asked."""
        response.aggregator = "sightings"
        for memory in memories:
            seen = sightings([memory], label, now)
            response.votes.append(FleetVote(
                robot=memory.robot, yes=bool(seen), p_yes=float(bool(seen)), looked=bool(memory.looked),
                seconds_since=seen[0].ago_s if seen else -1.0, saw=bool(seen),
                evidence=sightings_text(label, seen, who=False)))
        found = sightings(memories, label, now)
        response.answered, response.yes = True, bool(found)
        response.message = sightings_text(label, found)
        return response

    @staticmethod
    def _question(request, rooms: list[str]) -> Question:
        if len(request.question) > MAX_QUESTION_CHARS:
            raise ValueError(f"a question is at most {MAX_QUESTION_CHARS} characters")
        if request.question.strip():
            return read_question(request.question, rooms)
        if not request.thing.strip():
            raise ValueError("ask a question, or give a thing (and a room, for whether it is there)")
        if not request.room.strip():
            return read_question(f"Where is the {request.thing}?", rooms)
        return read_question(f"Is there a {request.thing} in the {request.room}?", rooms)


def main() -> int:
    return main_for(FleetNode)
