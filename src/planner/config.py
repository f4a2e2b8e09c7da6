"""The stack's configuration (config/planner.yaml), validated at start-up.

Paths in the file are relative to the file. Environment variables override the LLM endpoint:
OPENAI_BASE_URL, OPENAI_API_KEY, PLANNER_LLM_MODEL.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from planner.backends.llm import StructuredOutput
from planner.backends.model_store import DEFAULT_MODEL, MODELS
from planner.core.files import load_model
from planner.core.object_finder import FinderSettings
from planner.core.react import PlannerSettings


OPENAI_API_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmbeddedSettings(_Strict):
    model: Literal[tuple(MODELS)] = DEFAULT_MODEL  # type: ignore[valid-type]
    n_ctx: int = Field(default=4096, ge=512)
    threads: int = Field(default=2, ge=1)
    startup_timeout_s: float = Field(default=120, gt=0)


def structured_output_for(base_url: str, mode: str) -> StructuredOutput:
    """`auto` means OpenAI's json_schema form on api.openai.com, llama.cpp's form elsewhere."""
    if mode != "auto":
        return mode  # type: ignore[return-value]
    return "json_schema" if "api.openai.com" in base_url else "json_object_schema"


class FallbackEndpoint(_Strict):
    """Another OpenAI-compatible server, asked when the ones before it do not answer;
    base_url `embedded` is the embedded llama.cpp server (started with the stack)."""
    base_url: str = Field(min_length=1)
    api_key: str = ""
    model: str = "default"
    structured_output: Literal["auto"] | StructuredOutput = "auto"


class LLMSettings(_Strict):
    # auto: an endpoint if one is configured (here or in OPENAI_BASE_URL), else the embedded server.
    provider: Literal["auto", "embedded", "openai", "scripted"] = "auto"
    base_url: str = ""
    api_key: str = ""
    model: str = "default"
    structured_output: Literal["auto"] | StructuredOutput = "auto"
    fallbacks: list[FallbackEndpoint] = Field(default_factory=list, description="asked in order when the main "
                                                                                "endpoint does not answer")
    rest_s: float = Field(default=30, ge=0, description="an endpoint that did not answer is passed over this long")
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=256, ge=16)
    timeout_s: float = Field(default=60, gt=0)
    max_retries: int = Field(default=2, ge=0)
    script: str = Field(default="", description="YAML list of replies for provider: scripted")
    embedded: EmbeddedSettings = Field(default_factory=EmbeddedSettings)

    def resolved(self) -> "LLMSettings":
        """Apply environment overrides and pick the provider and structured-output mode."""
        base_url = os.environ.get("OPENAI_BASE_URL", self.base_url)
        api_key = os.environ.get("OPENAI_API_KEY", self.api_key)
        model = os.environ.get("PLANNER_LLM_MODEL", self.model)
        provider = self.provider
        if provider == "auto":
            provider = "openai" if base_url or api_key else "embedded"
        if provider == "openai" and not base_url:
            base_url = OPENAI_API_URL
        if provider == "openai" and base_url == OPENAI_API_URL and model == "default":
            model = OPENAI_DEFAULT_MODEL
        mode = structured_output_for(base_url if provider == "openai" else "", self.structured_output)
        return self.model_copy(update={"provider": provider, "base_url": base_url, "api_key": api_key,
                                       "model": model, "structured_output": mode})


class SimulatorSettings(_Strict):
    time_scale: float = Field(default=4.0, gt=0, description="simulated seconds per wall second")
    state_rate_hz: float = Field(default=5.0, gt=0)


class PerceptionSettings(_Strict):
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


class ArmSettings(_Strict):
    group: str = Field(description="MoveIt planning group of the arm, e.g. left_arm")
    tool_link: str = Field(description="link whose pose the goals give, e.g. left_tool0")
    gripper_group: str = Field(description="planning group of the gripper, e.g. left_hand")
    open_state: str = "open"
    closed_state: str = "closed"
    rest_state: str = Field(default="home", description="named arm state it retreats to")


class MoveItSettings(_Strict):
    node_name: str = "planner_moveit"
    planning_frame: str = Field(default="base_link", description="frame of the pose goals: the robot's base")
    arms: dict[str, ArmSettings] = Field(default_factory=dict, description="by the arm names of the robot profile")
    hover_m: float = Field(default=0.10, gt=0, description="above an object before the grasp and after the lift")
    tool_down_xyzw: tuple[float, float, float, float] = Field(
        default=(1.0, 0.0, 0.0, 0.0), description="tool orientation for top-down grasps, in the planning frame")


class Nav2Settings(_Strict):
    node_name: str = "planner_navigator"
    frame_id: str = Field(default="map", description="frame of the navigation goals")
    stall_window_s: float = Field(default=20.0, gt=0, description="a goal is canceled as stalled when the distance "
                                                                   "to go has not shrunk by stall_min_progress_m in this time")
    stall_min_progress_m: float = Field(default=0.1, gt=0)


class ExecutorSettings(_Strict):
    backend: Literal["simulator", "robot"] = Field(default="simulator", description="robot: Nav2 and MoveIt 2")
    nav2: Nav2Settings = Field(default_factory=Nav2Settings)
    moveit: MoveItSettings = Field(default_factory=MoveItSettings)


class ExplainerSettings(_Strict):
    database: str = Field(default="failure_cases.sqlite",
                          description="the case memory: relative paths are under $PLANNER_STATE (default "
                                      "~/.local/state/planner); ':memory:' keeps nothing after exit")
    threshold: float = Field(default=0.35, ge=-1, le=1, description="a case less similar suggests nothing")
    top_k: int = Field(default=3, ge=1)
    clear_margin: float = Field(default=0.08, ge=0, description="the best case is used as it is when this far "
                                                                 "ahead of the next; else the LLM makes one of them")
    learn: bool = Field(default=True, description="keep fixes that worked as new cases")
    dedup_similarity: float = Field(default=0.92, gt=0, le=1, description="a learned case this similar to a known "
                                                                            "one in request, reason and fix is not new")
    demote_after: int = Field(default=2, ge=1, description="a case whose suggestion failed this many times more "
                                                           "than it helped is no longer used")
    clustered_from: int = Field(default=20_000, ge=100, description="a skill and code with this many cases is "
                                                                    "searched through a clustered (faiss) index")


class SpeechSettings(_Strict):
    voice: str = Field(default="en-us+f2", description="espeak-ng voice for spoken replies")
    words_per_minute: int = Field(default=160, ge=80, le=400)
    play_command: str = Field(default="", description="a player reading a WAV on stdin, e.g. `aplay -q`; "
                                                       "empty: replies go to /speech/audio_out only")
    max_clip_s: float = Field(default=30.0, gt=0, description="longer clips on /speech/audio are rejected")


class ControllerSettings(_Strict):
    confirm_timeout_s: float = Field(default=3.0, ge=0, description="how long the controller waits for perception "
                                                                     "to show a command's effect before it fails it")


class TaskSettings(_Strict):
    skill_timeout_s: float = Field(default=300, gt=0)
    queue_size: int = Field(default=0, ge=0, description="requests that wait while a task runs; more are rejected")


class StackConfig(_Strict):
    scenario: str
    skills: str
    failure_cases: str
    llm: LLMSettings = Field(default_factory=LLMSettings)
    planner: PlannerSettings = Field(default_factory=PlannerSettings)
    tasks: TaskSettings = Field(default_factory=TaskSettings)
    simulator: SimulatorSettings = Field(default_factory=SimulatorSettings)
    perception: PerceptionSettings = Field(default_factory=PerceptionSettings)
    executor: ExecutorSettings = Field(default_factory=ExecutorSettings)
    controller: ControllerSettings = Field(default_factory=ControllerSettings)
    explainer: ExplainerSettings = Field(default_factory=ExplainerSettings)
    speech: SpeechSettings = Field(default_factory=SpeechSettings)
    object_finder: FinderSettings = Field(default_factory=FinderSettings)
    base_dir: Path = Field(default=Path("."), exclude=True)

    def path(self, relative: str) -> Path:
        return (self.base_dir / Path(relative).expanduser()).resolve()


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
    return config


def load_skill_planner(config: StackConfig):
    """The skill library with the robot profile of the configured world."""
    from planner.backends.simulation import load_scenario
    from planner.core.skills import RobotProfile, SkillPlanner, load_skill_library

    library = load_skill_library(config.path(config.skills))
    robot = load_scenario(config.path(config.scenario)).world.robot
    return SkillPlanner(library, RobotProfile.of(robot))


def state_dir() -> Path:
    """Where the stack keeps what it learns between runs."""
    return Path(os.environ.get("PLANNER_STATE", Path.home() / ".local" / "state" / "planner"))


def case_database_path(database: str) -> str:
    if database == ":memory:":
        return database
    return str(state_dir() / Path(database).expanduser())


def open_case_store(config: StackConfig, database: str | None = None):
    """The configured case database (or `database`) with the seed cases synced into it, and what
    went wrong on the way (a database set aside, a seed file rejected) for the caller to report;
    the store works either way."""
    from planner.core.case_store import CaseStore
    from planner.core.explainer import load_cases, sync_seeds
    from planner.core.files import InputError

    store = CaseStore(case_database_path(database or config.explainer.database))
    problems = [store.notice] if store.notice else []
    try:
        sync_seeds(store, load_cases(config.path(config.failure_cases), source="seed"))
    except InputError as error:
        problems.append(f"seed cases rejected, using the database's cases alone: {error}")
    return store, problems


def open_case_memory(config: StackConfig, embedder=None, database: str | None = None, progress=None):
    """The explainer's case memory over `open_case_store`, and the problems it reported."""
    from planner.backends.embeddings import SentenceEmbedder
    from planner.core.explainer import CaseMemory, MemorySettings

    store, problems = open_case_store(config, database)
    settings = config.explainer
    memory = CaseMemory(store, embedder or SentenceEmbedder(),
                        MemorySettings(settings.threshold, settings.top_k, settings.clear_margin,
                                       settings.dedup_similarity, settings.demote_after, settings.clustered_from),
                        progress)
    return memory, problems
