"""The stack's configuration (config/planner.yaml), validated at start-up: each component owns its
settings model; this file composes them and adds the settings of the nodes themselves.

Paths in the file are relative to the file. Environment variables override the LLM endpoint:
OPENAI_BASE_URL, OPENAI_API_KEY, PLANNER_LLM_MODEL.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from pydantic import Field

from planner.adapters.llm import LLMSettings
from planner.adapters.moveit import MoveItSettings
from planner.adapters.nav2 import Nav2Settings
from planner.adapters.speech import SpeechSettings
from planner.core.explainer import ExplainerSettings
from planner.core.files import StrictModel, load_model
from planner.core.fleet import FleetSettings
from planner.core.motion_guard import WatchdogSettings
from planner.core.object_finder import FinderSettings
from planner.core.planning.settings import PlannerSettings
from planner.core.telling import TellSettings
from planner.sim.simulated_world import SimulatorSettings


class PerceptionSettings(StrictModel):
    voxeland_map: str = Field(default="", description="a Voxeland JSON map to start from instead of the world")
    rooms: str = Field(default="", description="YAML {room: [[x, y], ...]} for a Voxeland map")
    state_file: str = Field(default="", description="where the scene graph is saved as it changes and restored "
                                                     "from at start; empty: not saved")
    save_period_s: float = Field(default=1.0, gt=0, description="at most one save per period while it changes")
    full_graph_period_s: float = Field(default=1.0, gt=0, description="/scene_graph and markers at most this often; "
                                                                       "/scene_graph/updates carry changes in between")
    missing_after_frames: int = Field(default=2, ge=1, description="frames an object should have been seen in, "
                                                                    "and was not, before it counts as missing")
    tf: Literal["auto", "on", "off"] = Field(default="auto", description="look up frames the robot profile does not "
                                                                          "name in TF (tf2_ros; auto: where installed)")
    transform_wait_s: float = Field(default=1.0, gt=0, description="how long a camera frame waits for the robot "
                                                                    "pose of its stamp before it is dropped")
    max_detections_per_frame: int = Field(default=200, ge=1, description="beyond this many detections in one "
                                          "camera frame the least confident are left out, so one flooded frame "
                                          "cannot keep perception busy")


class ExecutorSettings(StrictModel):
    backend: Literal["simulator", "robot"] = Field(default="simulator", description="robot: Nav2 and MoveIt 2")
    state_rate_hz: float = Field(default=10.0, gt=0, description="robot backend: how often it publishes "
                                                                  "/robot/state from TF and its hands")
    nav2: Nav2Settings = Field(default_factory=Nav2Settings)
    moveit: MoveItSettings = Field(default_factory=MoveItSettings)


class ControllerSettings(StrictModel):
    confirm_timeout_s: float = Field(default=3.0, ge=0, description="how long the controller waits for perception "
                                                                     "to show a command's effect before it fails it")
    required: bool = Field(default=True, description="the executor refuses commands the controller does not "
                                                      "check (not running, not answering); false runs them "
                                                      "unchecked: for development only")
    perception_wait_s: float = Field(default=15.0, gt=0, le=120, description="how long a check waits to hear that "
                                     "perception's process lives and for a camera frame in its picture this recent; "
                                     "without them no command runs, on a picture of the world nobody keeps current")


class TaskSettings(StrictModel):
    skill_timeout_s: float = Field(default=300, gt=0)
    queue_size: int = Field(default=0, ge=0, description="requests that wait while a task runs; more are rejected")


class StackConfig(StrictModel):
    robot: str = Field(description="the robot profile: arms, reach, payload, camera, frames")
    scenario: str = Field(description="the simulator's world and events; where perception's prior map comes from")
    skills: str
    failure_cases: str
    llm: LLMSettings = Field(default_factory=LLMSettings)
    planner: PlannerSettings = Field(default_factory=PlannerSettings)
    tasks: TaskSettings = Field(default_factory=TaskSettings)
    simulator: SimulatorSettings = Field(default_factory=SimulatorSettings)
    perception: PerceptionSettings = Field(default_factory=PerceptionSettings)
    executor: ExecutorSettings = Field(default_factory=ExecutorSettings)
    controller: ControllerSettings = Field(default_factory=ControllerSettings)
    watchdog: WatchdogSettings = Field(default_factory=WatchdogSettings)
    explainer: ExplainerSettings = Field(default_factory=ExplainerSettings)
    speech: SpeechSettings = Field(default_factory=SpeechSettings)
    object_finder: FinderSettings = Field(default_factory=FinderSettings)
    memory: TellSettings = Field(default_factory=TellSettings)
    fleet: FleetSettings = Field(default_factory=FleetSettings)
    base_dir: Path = Field(default=Path("."), exclude=True)

    def path(self, relative: str) -> Path:
        return (self.base_dir / Path(relative).expanduser()).resolve()


def deployed(config: StackConfig, sim: bool | None = None, robot: str = "") -> StackConfig:
    """The config as a launch deploys it: `sim` False drives the robot through Nav2 and MoveIt 2 (True: the
    built-in simulator; None: as the file says), `robot` replaces the robot profile (an absolute path)."""
    update: dict = {}
    if sim is not None:
        update["executor"] = config.executor.model_copy(update={"backend": "simulator" if sim else "robot"})
    if robot:
        if not Path(robot).is_file():
            raise ValueError(f"robot profile {robot} does not exist")
        update["robot"] = str(Path(robot).resolve())
    return config.model_copy(update=update) if update else config


def default_config_path() -> Path:
    """The installed config/planner.yaml: share/planner/config in the ament index on a ROS 2
    install, in the Python prefix on the pip path (where no AMENT_PREFIX_PATH is set)."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        share = Path(get_package_share_directory("planner"))
    except (OSError, PackageNotFoundError):
        share = Path(sys.prefix) / "share" / "planner"
    return share / "config" / "planner.yaml"


def load_config(path: str | Path | None = None) -> StackConfig:
    path = Path(path) if path else default_config_path()
    config = load_model(path, StackConfig)
    config.base_dir = path.resolve().parent
    own = config.llm.embedded.model_path
    if own:  # kept as named (a link's name is the model's name), made absolute
        config.llm.embedded.model_path = os.path.abspath(config.base_dir / Path(own).expanduser())
    return config


