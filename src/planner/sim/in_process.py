"""The whole robot in one process, on simulated time: the built-in simulator's world, the scene
graph fed by its camera, skills planned, executed and watched with the same core code as the
nodes, failures described by the controller and explained from the case memory.

The ROS stack runs these parts as nodes on wall-clock time; here simulated seconds pass only
when the robot does something, so a task takes as long as its LLM calls, and a seed gives the
same world outcome every time (the task benchmark runs on it).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from planner.core.case_store import CaseStoreUnwritable
from planner.core.controller import CheckPhase, ExecutionEventInfo, check_command, describe_failure, missing_object
from planner.core.errors import InputError
from planner.core.explainer import CaseMemory
from planner.core.failures import FailureCode
from planner.core.fleet import RobotMemory, sightings, sightings_text
from planner.core.object_finder import ObjectFinder
from planner.core.perception_actions import SceneMap, perceive
from planner.core.plan_check import PlanChecker
from planner.core.planning.settings import PlannerSettings
from planner.core.scene_graph import RobotSnapshot, SceneGraph
from planner.core.skill_execution import CommandsResult, execute_skill, run_commands
from planner.core.skills import Command, SkillCall, SkillPlanner
from planner.core.types import FailureInfo, Observation, Outcome, PlanVerdict, Recovery, SkillResult, SuggestionInfo
from planner.core.world import World
from planner.sim.added_commands import load_added_commands, not_simulated
from planner.sim.simulated_world import HANG, Route, ScenarioEvent, SimulatedWorld, command_seconds

LOOK_SECONDS = 1.0      # simulated time a perception call takes (the robot looks while it thinks)


def on_simulated_time(settings: PlannerSettings) -> PlannerSettings:
    """Planner settings for this robot: perception has seen what the last step did when the step
    returns, and the robot state is there from the start, so nothing is waited for."""
    return settings.model_copy(update={"confirm_timeout_s": 0.0, "robot_state_wait_s": 0.0})


@dataclass
class RobotLog:
    """What the robot did in an episode, for the benchmark."""
    skills: list[str] = field(default_factory=list)
    failures: list[FailureInfo] = field(default_factory=list)
    suggestions: list[SuggestionInfo] = field(default_factory=list)
    commands: int = 0
    questions: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    learned: list[str] = field(default_factory=list)   # what the explainer made of the recoveries
    first_motion_at: float | None = None   # time.monotonic() when the first command that moves started
    skill_seconds: float = 0.0             # wall time in skills: decomposition, checks, the simulator


class SimulatedRobot:
    """planner.core.ports.Tools over the built-in simulator, in process; also the robot and the
    controller's checks of planner.core.skill_execution."""

    def __init__(self, world: World, events: list[ScenarioEvent], skills: SkillPlanner,
                 memory: CaseMemory | None = None, request: str = "", answers: list[str] = (),
                 learner: CaseMemory | None = None, finder: ObjectFinder | None = None,
                 plan_checker: PlanChecker | None = None, fleet: Sequence[RobotMemory] = ()):
        """`memory` suggests after failures (None: explainer off); `learner` records what followed
        them (None: nothing is learned; the same memory, or another over the same database when
        what is learned must not be used before the next run); `finder` answers search_map (None:
        not available); `plan_checker` checks plans against those that worked (None: no check);
        `fleet` is what the other robots of a fleet have seen (empty: the robot is alone)."""
        self.answers = list(answers)  # what the simulated user replies to questions, in order
        missing = not_simulated(skills.library)
        if missing:
            raise InputError(f"the skill library's commands {', '.join(missing)} have no simulated_by: the in-process "
                             f"simulator cannot carry them out (docs/add-a-skill.md)")
        self.sim = SimulatedWorld(world, skills.robot, list(events), added_commands=load_added_commands(skills.library))
        self.graph = SceneGraph.from_world(world)
        self.skills = skills
        self.memory = memory
        self.learner = learner
        self.plan_checker = plan_checker
        self.fleet = list(fleet)
        self.map = SceneMap(self.graph, finder)
        self.request = request
        self.log = RobotLog()
        self.camera_period_s = 1.0 / skills.robot.camera.rate_hz
        self._last_frame = -math.inf
        self._look()

    @property
    def clock(self) -> float:
        return self.sim.now

    # ---- time and the camera ----------------------------------------------------------------
    def _robot_state(self) -> None:
        sim = self.sim
        self.graph.set_robot(RobotSnapshot(sim.robot, sim.robot_room, list(sim.held), dict(sim.held)))

    def _look(self) -> None:
        """The robot state and one camera frame at the current time."""
        self._robot_state()
        frame = self.sim.camera_frame(self.sim.now)
        if frame is not None:
            self.graph.fuse(frame)
        self._last_frame = self.sim.now

    def _pass(self, seconds: float, route: Route | None = None, speed: float = 0.0) -> None:
        """Let simulated time pass, the camera sending frames at its rate; with a route, the robot
        drives along it at `speed` meanwhile, seeing what the camera sees on the way."""
        start = self.sim.now
        while self._last_frame + self.camera_period_s <= start + seconds:
            self.sim.now = self._last_frame + self.camera_period_s
            if route is not None:
                self.sim.set_robot_pose(route.pose_at((self.sim.now - start) * speed))
            self._look()
        self.sim.now = start + seconds
        self._robot_state()

    # ---- Tools --------------------------------------------------------------------------------
    def scene(self) -> SceneGraph:
        return self.graph

    def wait_until(self, condition: Callable[[SceneGraph], bool], timeout_s: float, stop: threading.Event) -> bool:
        # Simulated time passes only when the robot acts: waiting would show nothing new.
        return condition(self.graph)

    def perceive(self, name: str, args: list[str], focus: frozenset[str] = frozenset()) -> Observation:
        self._pass(LOOK_SECONDS)
        return perceive(self.map, name, args, focus)

    def execute_skill(self, text: str) -> SkillResult:
        self.log.skills.append(text)
        started = time.monotonic()
        try:
            return execute_skill(self.skills, text, self.graph, self._run_commands, self._judge, "episode", "task")
        finally:
            self.log.skill_seconds += time.monotonic() - started

    def _run_commands(self, call: SkillCall, commands: list[Command]) -> CommandsResult:
        return run_commands(commands, self, self, self._count)

    def _count(self, index: int, command: Command, state: str, outcome: Outcome) -> None:
        if state == "started":
            self.log.commands += 1
            if command.name != "say" and self.log.first_motion_at is None:
                self.log.first_motion_at = time.monotonic()

    def check(self, phase: CheckPhase, command: Command) -> Outcome:
        """The controller's checks, on the graph the camera keeps."""
        return check_command(phase, command, self.graph, self.skills.hazards)

    def run(self, command: Command) -> Outcome:
        """One command on the simulator, then a look at its effect."""
        outcome = self._simulate(command)
        self._look()
        return outcome

    def _simulate(self, command: Command) -> Outcome:
        sim = self.sim
        sim.start_command(command.name, command.object_id or command.target_id)
        if command.name == "say":
            self.say(command.text)
            return Outcome(True, detail="said")
        if command.name == "navigate":
            route = sim.plan_route(command.base_pose)
            if not isinstance(route, Route):
                return route
            speed = sim.profile.speed_mps
            self._pass(route.drive_length / speed, route, speed)
            if route.abort_at is not None:
                return sim.abort(route)
            sim.arrive(command.base_pose)
            return Outcome(True, detail="arrived")
        self._pass(command_seconds(command.name))
        outcome = sim.manipulate(command.name, command.arm, command.object_id, command.target_id, command.point)
        if outcome.code == HANG:  # the executor gives up after the command's timeout
            self._pass(max(command.timeout_s - command_seconds(command.name), 0.0))
            return Outcome(False, FailureCode.TIMEOUT, f"{command.name} gave no answer within {command.timeout_s:.0f} s")
        return outcome

    def _judge(self, event: ExecutionEventInfo) -> FailureInfo:
        """The controller's verdict, and what perception makes of it."""
        failure = describe_failure(event, self.graph)
        if missing := missing_object(failure):
            self.graph.mark_missing(missing)
        self.log.failures.append(failure)
        return failure

    def explain(self, failure: FailureInfo) -> SuggestionInfo | None:
        if self.memory is None:
            return None
        suggestion = self.memory.suggest(failure, self.request)
        self.log.suggestions.append(suggestion)
        return suggestion

    def learn(self, request: str, recoveries: list[Recovery]) -> None:
        if self.learner is not None:
            for recovery in recoveries:
                try:
                    self.log.learned.append(self.learner.learn(request, recovery)[1])
                except CaseStoreUnwritable as error:
                    self.log.learned.append(f"nothing learned: {error}")

    def check_plan(self, request: str, steps: list[str], first_steps: bool = False) -> PlanVerdict | None:
        return self.plan_checker.check(request, steps, first_steps) if self.plan_checker is not None else None

    def record_plan(self, request: str, steps: list[str]) -> None:
        if self.plan_checker is not None:
            self.plan_checker.record(request, steps)

    def ask(self, question: str, timeout_s: float) -> str | None:
        self.log.questions.append(question)
        if self.answers:
            self._pass(LOOK_SECONDS)
            return self.answers.pop(0)
        self._pass(timeout_s)
        return None

    def say(self, text: str) -> None:
        self.log.said.append(text)

    def where_seen(self, label: str) -> str | None:
        return sightings_text(label, sightings(self.fleet, label, self.clock)) if self.fleet else None
