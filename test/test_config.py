import pytest

from conftest import CONFIG
from planner.adapters.llm import LLMSettings
from planner.config import load_config
from planner.core.errors import InputError


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
    assert settings.structured_output == "json_object_schema"


def test_an_api_key_alone_means_openai(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = LLMSettings().resolved()
    assert (settings.base_url, settings.model, settings.structured_output) == (
        "https://api.openai.com/v1", "gpt-4o-mini", "json_schema")


def test_config_errors_name_file_and_field(tmp_path):
    path = tmp_path / "planner.yaml"
    path.write_text("scenario: s.yaml\nskills: k.yaml\nfailure_cases: f.yaml\nllm: {provider: magic, temprature: 2}\n")
    with pytest.raises(InputError) as error:
        load_config(path)
    assert f"{path}: llm.provider: Input should be" in str(error.value)
    assert f"{path}: llm.temprature: Extra inputs are not permitted" in str(error.value)


def test_the_robot_backend_settings_are_checked_at_start_up(tmp_path):
    config = load_config(CONFIG / "planner.yaml")
    assert config.executor.moveit.arms["left"].gripper_group == "left_hand"
    path = tmp_path / "planner.yaml"
    path.write_text("scenario: s.yaml\nskills: k.yaml\nfailure_cases: f.yaml\nexecutor:\n  backend: nav3\n"
                    "  moveit: {arms: {left: {group: left_arm}}}\n")
    with pytest.raises(InputError) as error:
        load_config(path)
    assert f"{path}: executor.backend: Input should be 'simulator' or 'robot'" in str(error.value)
    assert "executor.moveit.arms.left.tool_link: Field required" in str(error.value)
