"""The Python API: requests carried out by the whole planner, on the built-in simulator in this
process, in a few lines.

    from planner.api import Planner

    with Planner.from_config() as planner:          # the installed config/planner.yaml
        result = planner.run("Bring me the bottle")
        print(result.outcome, result.summary)
        for step in result.trace:
            print(step.kind, step.text)

The planner is the one the stack's task planner node runs (the same core code, the config's model
and calibration); the robot is the simulator of the config's scenario, on simulated time, and it
keeps its world from one request to the next. For a robot, start the stack (`planner bringup` or
`ros2 launch planner bringup.launch.py`) and send requests to it (`planner send`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from planner.adapters.embeddings import SentenceEmbedder
from planner.adapters.language import SpacyParser
from planner.config import StackConfig, load_config
from planner.core.explainer import CaseMemory
from planner.core.object_finder import ObjectFinder
from planner.core.planning.task_planner import TaskPlanner
from planner.core.ports import Policy
from planner.core.types import TraceStep
from planner.sim.in_process import SimulatedRobot, on_simulated_time
from planner.sim.simulated_world import SimulatedWorld, load_scenario
from planner.wiring import finder_settings, load_skill_planner, make_grounder, open_case_memory, open_llm, open_part_llm, planner_settings


@dataclass(frozen=True)
class Result:
    """How one request ended, and what the planner did on the way."""
    request: str
    succeeded: bool
    outcome: str          # succeeded, impossible, failed, budget_exhausted, error, canceled
    summary: str          # why it ended so, in words
    steps: int
    llm_calls: int
    seconds: float
    trace: list[TraceStep]  # each step: kind (goal, plan, thought, action, observation, failure, ...) and text
    said: list[str]         # what the robot said to the person
    questions: list[str]    # what it asked them


class Planner:
    """The task planner over the simulated robot of a config's scenario. Open it with
    `Planner.from_config`; close it (or use `with`) to stop the model server it started."""

    def __init__(self, config: StackConfig, policy: Policy | None = None, explainer: bool = True,
                 on_step: Callable[[TraceStep], None] | None = None):
        """`policy`: the model to ask (default: the config's LLM, started here when it is the
        embedded one); `explainer`: suggestions from the failure-case memory after a failed skill;
        `on_step`: called with every step as it happens."""
        self.config = config
        self.on_step = on_step
        self.server = None
        if policy is None:
            policy, self.server = open_llm(config)
        self.policy = policy
        self.goal_policy, self.server = open_part_llm(config, "goal_step", policy, self.server)
        finder_policy, self.server = open_part_llm(config, "object_finder", policy, self.server)
        self.skills = load_skill_planner(config)
        embedder = SentenceEmbedder()
        self.grounder = make_grounder(config, embedder)
        self.parser = SpacyParser()
        settings, _ = planner_settings(config)
        self.settings = on_simulated_time(settings)
        memory: CaseMemory | None = None
        if explainer:
            memory, problems = open_case_memory(config, embedder)
            if problems:
                raise ValueError("the failure-case memory cannot be used: " + "; ".join(problems))
        loaded = load_scenario(config.path(config.scenario))
        finder = ObjectFinder(finder_policy, finder_settings(config)[0], embedder, self.grounder)
        self.robot = SimulatedRobot(loaded.world, list(loaded.scenario.events), self.skills, memory, learner=memory,
                                    finder=finder)

    @classmethod
    def from_config(cls, path: str | Path | None = None, policy: Policy | None = None, explainer: bool = True,
                    on_step: Callable[[TraceStep], None] | None = None) -> Planner:
        """The planner a stack config describes (default: the installed config/planner.yaml)."""
        return cls(load_config(path), policy, explainer, on_step)

    @property
    def world(self) -> SimulatedWorld:
        """The simulated world as it is now: where the robot and every thing are."""
        return self.robot.sim

    def run(self, request: str, answers: Iterable[str] = ()) -> Result:
        """Carry out one request; `answers` reply, in order, to the questions the planner asks
        (a question left without one is unanswered, as when nobody is there)."""
        trace: list[TraceStep] = []

        def record(step: TraceStep) -> None:
            trace.append(step)
            if self.on_step is not None:
                self.on_step(step)

        robot = self.robot
        robot.request, robot.answers = request, list(answers)
        said, asked = len(robot.log.said), len(robot.log.questions)
        planner = TaskPlanner(self.policy, robot, self.skills, self.settings, record, self.grounder,
                              self.goal_policy if self.goal_policy is not self.policy else None, self.parser)
        result = planner.run(request)
        return Result(request, result.success, str(result.outcome), result.summary, result.steps, result.llm_calls,
                      round(result.seconds, 2), trace, robot.log.said[said:], robot.log.questions[asked:])

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> Planner:
        return self

    def __exit__(self, *_) -> None:
        self.close()
