"""Task planner node: takes requests (/planner/command, /planner/execute_task), runs the ReAct
loop of planner.core.planning.task_planner with the configured LLM, and publishes every step on /planner/trace
and the plan as it stands on /planner/plan, with its markers.
Perception, skills and the explainer are reached over their ROS services and actions. Questions
to the user go out on /planner/question (and are spoken through /speech/say when the speech
node runs); answers come back on /planner/answer."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import get_args

from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from planner.action import ExecuteSkill, ExecuteTask, Say
from planner.adapters.language import SpacyParser
from planner.core.failures import FailureCode
from planner.core.perception_actions import Searched, perceive
from planner.core.planning.plan_view import PlanView
from planner.core.planning.settings import PlanningMode
from planner.core.planning.task_planner import TaskPlanner
from planner.core.scene_graph import Entity, RobotSnapshot, SceneGraph
from planner.core.task_queue import TaskQueue
from planner.core.types import EpisodeResult, FailureInfo, Observation, PlanVerdict, Recovery, SkillResult, SuggestionInfo, TraceStep
from planner.msg import PlanState, PlanStep
from planner.ros.convert import entity_from_msg, failure_from_msg, failure_to_msg, robot_from_msg, seconds, stamp_now
from planner.ros.estop import EmergencyStopLatch
from planner.ros.futures import ActionCall, CallFailed, Heartbeat
from planner.ros.node import PlannerNode, main_for
from planner.ros.plan_markers import plan_markers, plan_state
from planner.ros.qos import GOAL_REQUESTS, LATCHED, RELIABLE
from planner.ros.scene_mirror import SceneMirror
from planner.srv import (
    AskFleet,
    CheckPlan,
    Explain,
    FindObjects,
    GetObject,
    GetObjectsInRoom,
    GetRobotState,
    GetRooms,
    RecordPlan,
    RecordRecovery,
)
from planner.wiring import load_skill_planner, make_grounder, planner_settings

SAY_TIMEOUT_S = 60.0
CLOSE_WAIT_S = 10.0  # for a running task to end once canceled (a skill's cancel is answered within seconds)
SEARCH_TIMEOUT_S = 300.0  # an ensemble on a slow CPU takes minutes
FLEET_TIMEOUT_S = 10.0  # where a thing was seen is read from the robots' graphs: no model, quick
LOOK_FRAMES = 3  # camera periods a skill's end waits for a frame taken after it


class PerceptionServices:
    """Perception's services as a map source (planner.core.perception_actions.MapSource)."""

    def __init__(self, node: TaskPlannerNode):
        self.node = node
        self.clients = node.clients_

    def rooms(self) -> list[str]:
        return list(self.node.call(self.clients["rooms"], GetRooms.Request()).rooms)

    def room_contents(self, room: str) -> tuple[list[Entity], list[str]] | str:
        reply = self.node.call(self.clients["room"], GetObjectsInRoom.Request(room=room))
        if not reply.success:
            return reply.message
        return [entity_from_msg(o) for o in reply.objects], list(reply.relations)

    def entity(self, entity_id: str) -> tuple[Entity, list[str]] | str:
        reply = self.node.call(self.clients["object"], GetObject.Request(id=entity_id))
        if not reply.success:
            return reply.message
        return entity_from_msg(reply.object), list(reply.relations)

    def find(self, label: str) -> list[Entity]:
        return [entity_from_msg(o) for o in self.node.call(self.clients["find"], FindObjects.Request(query=label)).objects]

    def robot(self) -> RobotSnapshot | None:
        state = self.node.call(self.clients["robot"], GetRobotState.Request()).state
        return robot_from_msg(state) if state.arms else None

    def search(self, query: str) -> Searched:
        # The perception node's object finder, with the configured workflow: a few LLM calls (their
        # tokens are not reported).
        reply = self.node.call(self.clients["find"], FindObjects.Request(query=query, workflow="default"),
                               timeout_s=SEARCH_TIMEOUT_S)
        return Searched([entity_from_msg(o) for o in reply.objects], reply.explanation,
                        "" if reply.success else reply.message, reply.llm_calls)


class RosTools:
    """planner.core.ports.Tools over ROS services and actions, for one task."""

    def __init__(self, node: TaskPlannerNode, task_id: str, request: str):
        self.node = node
        self.task_id = task_id
        self.request = request
        self.current: ActionCall | None = None
        self.canceled = threading.Event()
        self.map = PerceptionServices(node)
        self.explainer_token = ""  # the explainer's answer to this task's failures, for its records

    def scene(self) -> SceneGraph:
        return self.node.mirror.snapshot()

    def wait_until(self, condition: Callable[[SceneGraph], bool], timeout_s: float, stop: threading.Event) -> bool:
        return bool(self.node.mirror.wait_until(condition, timeout_s, stop))

    def perceive(self, name: str, args: list[str], focus: frozenset[str] = frozenset()) -> Observation:
        try:
            return perceive(self.map, name, args, focus)
        except CallFailed as error:
            return Observation(f"perception is not answering: {error}", answered=False)

    def execute_skill(self, call: str) -> SkillResult:
        self.current = self.node.action_call(self.node.skill_client, "skill_planner/execute_skill",
                                             self.node.get_clock(), self.node.skill_planner_alive)
        goal = ExecuteSkill.Goal(skill=call, task_id=self.task_id, request=self.request)
        try:
            result = self.current.run(goal, self.node.config.tasks.skill_timeout_s)
        except CallFailed as error:
            return SkillResult(False, str(error), FailureInfo(call, "", FailureCode.SKILL_PLANNER_UNAVAILABLE, str(error)))
        finally:
            self.current = None
        # The robot looks once it has acted (as the in-process robot does after each command), so
        # the next step sees the skill's outcome; without a camera frame in time it goes on as is.
        # A frame may wait in perception for the robot pose of its stamp before it is in the graph.
        look_s = LOOK_FRAMES / self.node.skills.robot.camera.rate_hz + self.node.config.perception.transform_wait_s
        self.node.mirror.wait_for_look(seconds(stamp_now(self.node)), look_s, self.canceled)
        return SkillResult(result.success, result.message, None if result.success else failure_from_msg(result.failure))

    def explain(self, failure: FailureInfo) -> SuggestionInfo | None:
        request = Explain.Request(failure=failure_to_msg(failure, stamp_now(self.node), task_id=self.task_id,
                                                         request=self.request))
        try:
            answer = self.node.call(self.node.clients_["explain"], request, timeout_s=15.0)
        except CallFailed as error:
            self.node.report("warn", f"no suggestion: {error}")
            return None
        suggestion = answer.suggestion
        self.explainer_token = answer.token or self.explainer_token
        options = list(zip(suggestion.case_ids, suggestion.case_suggestions, suggestion.scores))
        return SuggestionInfo(suggestion.text, list(suggestion.case_ids), list(suggestion.scores),
                              fit=suggestion.fit or "template", options=options)

    def learn(self, request: str, recoveries: list[Recovery]) -> None:
        client = self.node.clients_["record_recovery"]
        for recovery in recoveries:
            message = RecordRecovery.Request(
                robot=self.node.get_namespace().strip("/"), request=request,
                failure=failure_to_msg(recovery.failure, stamp_now(self.node), task_id=self.task_id, request=request),
                case_ids=recovery.case_ids, steps=recovery.steps, recovered=recovery.recovered, fix=recovery.fix,
                token=self.explainer_token)
            try:
                answer = self.node.call(client, message, timeout_s=15.0)
            except CallFailed as error:
                self.node.report("warn", f"the explainer did not take what followed a failure: {error}")
                return
            self.node.get_logger().info(f"explainer: {answer.message}")

    def check_plan(self, request: str, steps: list[str], first_steps: bool = False) -> PlanVerdict | None:
        message = CheckPlan.Request(robot=self.node.get_namespace().strip("/"), request=request, steps=steps,
                                    first_steps=first_steps)
        try:
            answer = self.node.call(self.node.clients_["check_plan"], message, timeout_s=30.0)
        except CallFailed as error:
            self.node.report("warn", f"the plan was not checked: {error}")
            return None
        return PlanVerdict(answer.score if answer.judged else None, answer.like, answer.low)

    def record_plan(self, request: str, steps: list[str]) -> None:
        message = RecordPlan.Request(robot=self.node.get_namespace().strip("/"), request=request, steps=steps)
        try:
            self.node.call(self.node.clients_["record_plan"], message, timeout_s=15.0)
        except CallFailed as error:
            self.node.report("warn", f"the explainer did not keep the plan that worked: {error}")

    def ask(self, question: str, timeout_s: float) -> str | None:
        node = self.node
        while not node.answers.empty():  # an answer from before the question is not an answer to it
            node.answers.get_nowait()
        node.question_pub.publish(String(data=question))
        self.say(question)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self.canceled.is_set():
            try:
                return node.answers.get(timeout=0.1)
            except queue.Empty:
                continue
        return None

    def where_seen(self, label: str) -> str | None:
        """From the fleet node when one runs (a multi-robot bringup); the robot alone has no fleet."""
        client = self.node.clients_["fleet"]
        if not client.service_is_ready():
            return None
        try:
            answer = self.node.call(client, AskFleet.Request(thing=label, asking_robot=self.node.get_namespace()),
                                    timeout_s=FLEET_TIMEOUT_S)
        except CallFailed as error:
            self.node.report("warn", f"the fleet was not asked where a {label} is: {error}")
            return None
        return answer.message if answer.answered else None

    def say(self, text: str) -> None:
        """Spoken by the speech node when one runs; the trace carries the text either way."""
        if not self.node.say_client.server_is_ready():
            return
        try:
            call = self.node.action_call(self.node.say_client, "speech/say", heartbeat=self.node.speech_alive)
            call.run(Say.Goal(text=text), SAY_TIMEOUT_S, stop=self.node.closing)
        except CallFailed as error:
            self.node.report("warn", f"could not say {text!r}: {error}")

    def cancel(self) -> None:
        self.canceled.set()
        if self.current is not None:
            self.current.cancel()


class TaskPlannerNode(PlannerNode):
    def __init__(self, config=None, policy=None, namespace: str | None = None):
        super().__init__("task_planner", config, namespace)
        self.skills = load_skill_planner(self.config)
        self.policy = policy or self.open_llm()
        self.goal_policy = policy or self.part_llm("goal_step", self.policy)
        self.grounder = make_grounder(self.config)  # its sentence model loads at the first request
        self.parser = SpacyParser()  # so does the parse
        self.settings, calibration = planner_settings(self.config)
        self.get_logger().info(f"planner settings: {calibration}")
        group = ReentrantCallbackGroup()
        self.mirror = SceneMirror(self, group)
        self.clients_ = {
            "rooms": self.create_client(GetRooms, "perception/get_rooms", callback_group=group),
            "room": self.create_client(GetObjectsInRoom, "perception/get_objects_in_room", callback_group=group),
            "object": self.create_client(GetObject, "perception/get_object", callback_group=group),
            "find": self.create_client(FindObjects, "perception/find_objects", callback_group=group),
            "robot": self.create_client(GetRobotState, "perception/get_robot_state", callback_group=group),
            "explain": self.create_client(Explain, "/explainer/explain", callback_group=group),
            "record_recovery": self.create_client(RecordRecovery, "/explainer/record_recovery", callback_group=group),
            "check_plan": self.create_client(CheckPlan, "/explainer/check_plan", callback_group=group),
            "record_plan": self.create_client(RecordPlan, "/explainer/record_plan", callback_group=group),
            "fleet": self.create_client(AskFleet, "/fleet/ask", callback_group=group),
        }
        self.skill_client = ActionClient(self, ExecuteSkill, "skill_planner/execute_skill", callback_group=group)
        self.skill_planner_alive = Heartbeat(self, "skill_planner")
        self.trace_pub = self.create_publisher(PlanStep, "planner/trace", RELIABLE)
        self.plan_pub = self.create_publisher(PlanState, "planner/plan", LATCHED)
        self.plan_markers_pub = self.create_publisher(MarkerArray, "planner/plan/markers", LATCHED)
        self.question_pub = self.create_publisher(String, "planner/question", RELIABLE)
        self.answers: queue.Queue[str] = queue.Queue()
        self.create_subscription(String, "planner/answer", lambda msg: self.answers.put(msg.data.strip()), RELIABLE,
                                 callback_group=group)
        self.say_client = ActionClient(self, Say, "speech/say", callback_group=group)
        self.speech_alive = Heartbeat(self, "speech")
        self.queue = TaskQueue(self.config.tasks.queue_size)
        self.admitted: dict[int, int] = {}  # id of an accepted goal's request -> its queue ticket
        self.running: tuple[object, TaskPlanner, RosTools] | None = None  # (goal handle or None, planner, tools)
        self.create_subscription(String, "planner/command", self._on_command, RELIABLE, callback_group=group)
        self.estop_latch = EmergencyStopLatch(self, group, self._on_estop)
        self.estop = self.estop_latch.engaged
        # Requests from /planner/command run on threads of their own; closing stops and joins them,
        # so none is left calling into a destroyed node.
        self.closing = threading.Event()
        self.turns: list[threading.Thread] = []
        ActionServer(self, ExecuteTask, "planner/execute_task", self._execute, callback_group=group,
                     goal_callback=self._on_goal, cancel_callback=self._on_cancel,
                     goal_service_qos_profile=GOAL_REQUESTS)
        self.report("info", "ready for requests")

    # ---- requests ---------------------------------------------------------------------------------
    def _on_estop(self, engaged: bool) -> None:
        """The emergency stop ends the running task and every waiting one; requests are refused until release."""
        if engaged:
            self._stop_running(reason="stopped by the emergency stop")
            self.report("warn", "emergency stop: tasks canceled; requests are refused until it is released")
        else:
            self.report("info", "emergency stop released: ready for requests")

    def _refused_request(self, request: str) -> bool:
        """Empty or too long: said on the status, and nothing else happens."""
        limit = self.config.planner.max_request_chars
        if not request.strip():
            self.report("error", "an empty request is refused")
        elif len(request) > limit:
            self.report("error", f"a request of {len(request)} characters is refused: at most {limit} "
                                 f"(planner.max_request_chars); it began {request[:60]!r}")
        else:
            return False
        return True

    def _on_command(self, msg: String) -> None:
        request = msg.data.strip()
        if self._refused_request(request):
            return
        if self.estop.is_set():
            self._reject(request)
            return
        ticket = self.queue.admit()
        if ticket is None:
            self._reject(request)
            return
        self._start_turn(lambda: self._take_turn(ticket, request, None))

    def _start_turn(self, turn: Callable[[], object]) -> None:
        """A request's turn (its wait in the queue, then its task) on a thread of its own, never on one
        of the node's executor threads: those must stay free for cancel, the e-stop, new goals and the
        answers the running task waits for."""
        thread = threading.Thread(target=turn, daemon=True)
        self.turns = [t for t in self.turns if t.is_alive()] + [thread]
        thread.start()

    def _reject(self, request: str) -> None:
        reason = ("the emergency stop is engaged" if self.estop.is_set() else
                  "a task is already running" + (f" and {self.queue.waiting()} wait" if self.queue.capacity else ""))
        self.report("warn", f"rejected {request!r}: {reason}")
        self.trace_pub.publish(PlanStep(stamp=stamp_now(self), kind="error", text=f"rejected {request!r}: {reason}"))

    def _on_goal(self, goal_request) -> GoalResponse:
        """Accepted only with a place in the queue, taken now: goals arriving together cannot all see room."""
        if self._refused_request(goal_request.request):
            return GoalResponse.REJECT
        if goal_request.mode and goal_request.mode not in get_args(PlanningMode):
            self.report("error", f"request {goal_request.request!r} rejected: no planning mode "
                                 f"{goal_request.mode!r}; there are {', '.join(get_args(PlanningMode))}")
            return GoalResponse.REJECT
        ticket = None if self.estop.is_set() else self.queue.admit()
        if ticket is None:
            self._reject(goal_request.request)
            return GoalResponse.REJECT
        # rclpy hands this same request object to the goal handle that _execute receives.
        self.admitted[id(goal_request)] = ticket
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle) -> CancelResponse:
        # A waiting goal sees its cancel request in TaskQueue.wait_turn; the running one is stopped here.
        self._stop_running(only=goal_handle)
        return CancelResponse.ACCEPT

    def _stop_running(self, only=None, reason: str = "canceled by the user") -> None:
        """Stop the running task (if it is `only`'s, when given): its planner and its skill."""
        running = self.running
        if running is None:
            return
        handle, planner, tools = running
        if only is not None and (handle is None or bytes(handle.goal_id.uuid) != bytes(only.goal_id.uuid)):
            return
        planner.cancel(reason)
        tools.cancel()

    async def _execute(self, goal_handle):
        """The goal's turn runs on its own thread (see _start_turn); this coroutine holds no executor
        thread while it waits for the result."""
        ticket = self.admitted.pop(id(goal_handle.request))
        finished = Future()

        def turn() -> None:
            try:
                result = self._take_turn(ticket, goal_handle.request.request, goal_handle)
            except Exception as error:  # noqa: BLE001 - the goal must end, whatever went wrong
                result = EpisodeResult(False, "error", f"internal error: {error!r}", 0)
            if result.outcome == "canceled" and goal_handle.is_cancel_requested:
                goal_handle.canceled()
            elif result.success:
                goal_handle.succeed()
            else:
                goal_handle.abort()
            finished.set_result(ExecuteTask.Result(success=result.success, outcome=result.outcome,
                                                   summary=result.summary, steps=result.steps))

        self._start_turn(turn)
        return await finished

    def _take_turn(self, ticket: int, request: str, goal_handle) -> EpisodeResult:
        ahead = self.queue.position(ticket)
        if ahead:
            text = f"queued {request!r}: {ahead} task{'s' if ahead > 1 else ''} ahead"
            self.report("info", text)
            step = PlanStep(stamp=stamp_now(self), kind="queued", text=text)
            self.trace_pub.publish(step)
            if goal_handle is not None:
                goal_handle.publish_feedback(ExecuteTask.Feedback(step=step))
        canceled = lambda: (self.estop.is_set() or self.closing.is_set()  # noqa: E731
                            or (goal_handle is not None and goal_handle.is_cancel_requested))
        if not self.queue.wait_turn(ticket, canceled):
            self.report("info", f"canceled {request!r} before it started")
            return EpisodeResult(False, "canceled", "canceled while waiting in the queue", 0)
        try:
            return self._run(request, goal_handle)
        finally:
            self.running = None
            self.queue.finished(ticket)

    def _run(self, request: str, goal_handle) -> EpisodeResult:
        task_id = uuid.uuid4().hex[:8]
        index = 0
        view = PlanView()

        def on_step(step: TraceStep) -> None:
            nonlocal index
            index += 1
            msg = PlanStep(stamp=stamp_now(self), task_id=task_id, index=index, kind=step.kind, text=step.text)
            self.trace_pub.publish(msg)
            if view.update(step):
                self.plan_pub.publish(plan_state(view, task_id, msg.stamp))
                try:
                    scene = self.mirror.snapshot()
                except CallFailed:  # perception not answering: the marks wait for the next step
                    pass
                else:
                    self.plan_markers_pub.publish(plan_markers(view, scene, self.skills.robot.map_frame, msg.stamp))
            if step.kind in ("error", "warning"):  # bad replies, unreachable servers: users watch the status too
                self.report("error" if step.kind == "error" else "warn", f"task {task_id}: {step.text}")
            if goal_handle is not None:
                goal_handle.publish_feedback(ExecuteTask.Feedback(step=msg))

        tools = RosTools(self, task_id, request)
        settings = self.settings
        if goal_handle is not None and goal_handle.request.mode:  # checked when the goal came
            settings = settings.model_copy(update={"mode": goal_handle.request.mode})
        planner = TaskPlanner(self.policy, tools, self.skills, settings, on_step, self.grounder, self.goal_policy,
                              self.parser)
        self.running = (goal_handle, planner, tools)
        if self.closing.is_set():  # closed while this turn was starting
            self._stop_running(reason="the task planner is shutting down")
        self.report("info", f"task {task_id} started ({settings.mode}): {request}")
        try:
            result = planner.run(request)
        except CallFailed as error:
            on_step(TraceStep("error", f"the stack is not answering: {error}"))
            result = EpisodeResult(False, "error", str(error), index)
        except Exception as error:  # a bug must end the task with a reason, not hang the caller
            self.get_logger().error(f"task {task_id} crashed: {error!r}")
            on_step(TraceStep("error", f"internal error: {error!r}"))
            result = EpisodeResult(False, "error", f"internal error: {error!r}", index)
        self.report("info" if result.success else "warn", f"task {task_id} {result.outcome}: {result.summary}")
        return result

    def close(self) -> None:
        self.closing.set()
        self._stop_running(reason="the task planner is shutting down")
        for turn in self.turns:
            turn.join(timeout=CLOSE_WAIT_S)
        super().close()


def main() -> int:
    return main_for(TaskPlannerNode)
