import re
import subprocess

import pytest

from conftest import CONFIG, PLANNER
from planner.adapters.llm import LLMSettings
from planner.adapters.moveit import MoveItArms, MoveItSettings
from planner.cli import main
from planner.config import load_config
from planner.core.errors import InputError
from planner.core.geometry import Pose2D
from planner.core.robot_profile import ArmProfile, load_robot_profile
from planner.core.world import load_world
from planner.wiring import load_robot


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PLANNER_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_without_an_endpoint_the_embedded_model_plans():
    settings = load_config(CONFIG / "planner.yaml").llm.resolved()
    assert (settings.provider, settings.structured_output) == ("embedded", "json_object_schema")


def test_an_endpoint_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    monkeypatch.setenv("PLANNER_LLM_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    settings = LLMSettings().resolved()
    assert (settings.provider, settings.base_url, settings.model) == ("openai", "http://localhost:8000/v1",
                                                                      "Qwen/Qwen2.5-7B-Instruct")
    assert settings.structured_output == "json_schema"  # the form vLLM, Ollama and llama-server all enforce


def test_an_api_key_alone_means_openai(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = LLMSettings().resolved()
    assert (settings.base_url, settings.model, settings.structured_output) == (
        "https://api.openai.com/v1", "gpt-4o-mini", "json_schema")


def test_config_errors_name_file_and_field(tmp_path):
    path = tmp_path / "planner.yaml"
    path.write_text("robot: r.yaml\nscenario: s.yaml\nskills: k.yaml\nfailure_cases: f.yaml\nllm: {provider: magic, temprature: 2}\n")
    with pytest.raises(InputError) as error:
        load_config(path)
    assert f"{path}: llm.provider: Input should be" in str(error.value)
    assert f"{path}: llm.temprature: Extra inputs are not permitted" in str(error.value)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_a_number_that_is_not_finite_is_refused_where_the_file_gives_it(tmp_path, value):
    from planner.core.robot_profile import load_robot_profile

    path = tmp_path / "planner.yaml"
    path.write_text(f"robot: r.yaml\nscenario: s.yaml\nskills: k.yaml\nfailure_cases: f.yaml\n"
                    f"tasks: {{skill_timeout_s: {value}}}\n")
    with pytest.raises(InputError, match=f"{path}: tasks.skill_timeout_s: Input should be a finite number"):
        load_config(path)
    robot = (CONFIG / "robots" / "robee.yaml").read_text().replace("payload_kg: 5.0", f"payload_kg: {value}")
    assert robot != (CONFIG / "robots" / "robee.yaml").read_text()
    (tmp_path / "robot.yaml").write_text(robot)
    with pytest.raises(InputError, match="payload_kg: Input should be a finite number"):
        load_robot_profile(tmp_path / "robot.yaml")


def test_a_directory_given_as_the_config_is_named_as_such(tmp_path):
    """It was an IsADirectoryError traceback."""
    done = subprocess.run([PLANNER, "cases", "list", "--config", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path}: is a directory, not a YAML file" in done.stderr


def test_the_robot_backend_settings_are_checked_at_start_up(tmp_path):
    path = tmp_path / "planner.yaml"
    path.write_text("robot: r.yaml\nscenario: s.yaml\nskills: k.yaml\nfailure_cases: f.yaml\nexecutor:\n  backend: nav3\n"
                    "  moveit: {planning_frame: base_link}\n")
    with pytest.raises(InputError) as error:
        load_config(path)
    assert f"{path}: executor.backend: Input should be 'simulator' or 'robot'" in str(error.value)
    assert "executor.moveit.planning_frame: Extra inputs are not permitted" in str(error.value)  # the profile's base_frame


def test_the_robot_profile_is_checked_at_start_up_naming_file_and_field(tmp_path):
    robot = load_robot(load_config(CONFIG / "planner.yaml"))
    assert robot.arms["left"].gripper_group == "left_hand" and robot.base_frame == "base_link"
    path = tmp_path / "robot.yaml"
    path.write_text("name: bad\narms: {}\nreach_m: -1\npayload_kg: 5\nstandoff_m: 0.3\ncamera: {fov_deg: 400}\n")
    with pytest.raises(InputError) as error:
        load_robot_profile(path)
    for field in ("arms: Dictionary should have at least 1 item", "reach_m: Input should be greater than 0",
                  "camera.fov_deg: Input should be less than or equal to 360"):
        assert f"{path}: {field}" in str(error.value)
    # MoveIt needs each arm's group and links: said at start-up, not at the first grasp.
    no_links = robot.model_copy(update={"arms": {"left": ArmProfile(group="left_arm")}})
    with pytest.raises(InputError, match="arms.left.tool_link, arms.left.gripper_group: needed by the MoveIt"):
        MoveItArms.connect(MoveItSettings(), no_links, lambda: Pose2D(0, 0, 0), lambda handled: {}, {})


def test_a_world_that_describes_the_robot_is_told_where_that_belongs(tmp_path):
    path = tmp_path / "world.yaml"
    path.write_text((CONFIG / "worlds" / "kitchen_bedroom.yaml").read_text()
                    .replace("  pose: [-3.0, 3.0, 0.0]", "  pose: [-3.0, 3.0, 0.0]\n  reach_m: 1.0\n  arms: [left]"))
    with pytest.raises(InputError) as error:
        load_world(path)
    assert f"{path}: robot: arms, reach_m: a world only places the robot (pose)" in str(error.value)




def test_the_command_line_says_its_version_and_the_commit_it_runs_from(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert re.fullmatch(r"planner \d+\.\d+\.\d+( \(source [0-9a-f]{7,}(\+changes)?\))?\n", capsys.readouterr().out)


@pytest.mark.parametrize("environment, config, said", [
    ({}, {}, "the embedded model qwen2.5-coder-1.5b, because no server is configured"),
    ({"OPENAI_API_KEY": "sk-x"}, {}, "https://api.openai.com/v1 with model 'gpt-4o-mini', because OPENAI_API_KEY is set"),
    ({}, {"base_url": "http://gpu:11434/v1"}, "http://gpu:11434/v1 with model 'default', because llm.base_url is set "
                                              "(a llama.cpp server serves its one model under any name; Ollama"),
    ({"OPENAI_BASE_URL": "http://gpu:8000/v1", "PLANNER_LLM_MODEL": "qwen"}, {"provider": "embedded"},
     "the embedded model qwen2.5-coder-1.5b, because llm.provider is embedded"),
])
def test_the_model_used_and_why_are_said_in_one_sentence(monkeypatch, environment, config, said):
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PLANNER_LLM_MODEL"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    assert LLMSettings(**config).chosen().startswith(said)


def test_every_argument_of_every_command_says_what_it_is_for():
    import argparse

    from planner.cli import build_parser

    def silent(parser: argparse.ArgumentParser, path: str) -> list[str]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [name for command, child in action.choices.items() for name in silent(child, f"{path} {command}")]
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                found.append(f"{path} {(action.option_strings or [action.dest])[0]}")
        return found
    assert silent(build_parser(), "planner") == []


def test_a_flag_means_one_kind_of_thing_across_commands_and_switches_are_flags():
    """--tasks is a list of task ids wherever it appears, --rooms a file, and so on: a name
    takes the same kind of value in every command. A switch is present or absent (--no-explainer),
    never an on/off or true/false value; the launch arguments bringup mirrors are ros2 launch's
    own strings (explainer:=false) and take no choices."""
    import argparse
    from collections import defaultdict

    from planner.cli import build_parser

    kinds: dict[str, set] = defaultdict(set)
    switches = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for command, child in action.choices.items():
                    walk(child, f"{path} {command}")
            elif action.option_strings and not isinstance(action, argparse._HelpAction):
                for name in action.option_strings:
                    kinds[name].add((type(action).__name__, getattr(action.type, "__name__", None)))
                if action.choices and set(action.choices) <= {"on", "off", "true", "false", "yes", "no"}:
                    switches.append(f"{path} {action.option_strings[0]}")
    walk(build_parser(), "planner")
    assert {name: sorted(map(str, uses)) for name, uses in kinds.items() if len(uses) > 1} == {}
    assert switches == []
