"""The Python API (planner.api): requests carried out in process on the simulator of a config's
scenario, one after another on the same world; and the README's example, verbatim, against the
embedded model."""

import re
from pathlib import Path

import pytest

from conftest import go_then_pick_config
from planner.api import Planner

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def config(tmp_path):
    return go_then_pick_config(tmp_path)


def test_requests_one_after_another_act_on_the_same_world_and_say_what_happened(config):
    seen = []
    with Planner.from_config(config, on_step=seen.append) as planner:
        assert planner.world.robot_room == "bedroom"
        first = planner.run("Go to the kitchen")
        assert (first.succeeded, first.outcome) == (True, "succeeded"), first.summary
        assert planner.world.robot_room == "kitchen"
        second = planner.run("Pick up the bottle")
        assert second.succeeded, second.summary
        assert "bottle_1" in planner.world.held.values()
    assert first.trace[0].kind == "request" and first.trace[0].text == "Go to the kitchen"
    assert any(step.kind == "skill" and step.text.startswith("PICK(bottle_1") for step in second.trace)
    assert seen == first.trace + second.trace
    assert (first.llm_calls, second.llm_calls) == (3, 4) and second.said


def test_a_request_the_model_cannot_answer_ends_as_an_error_with_the_reason(config):
    with Planner.from_config(config) as planner:
        for request in ("Go to the kitchen", "Pick up the bottle"):
            planner.run(request)
        spent = planner.run("And now the cup")
    assert (spent.succeeded, spent.outcome) == (False, "error")
    assert "no replies left" in spent.summary


@pytest.mark.embedded
@pytest.mark.timeout(900)
def test_the_readme_example_runs_as_written_on_the_embedded_model(monkeypatch, capsys):
    for variable in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PLANNER_LLM_MODEL"):
        monkeypatch.delenv(variable, raising=False)
    example = re.search(r"```python\n(from planner\.api import Planner\n.*?)```", README.read_text(), re.S)
    assert example, "the README has no Python API example"
    exec(compile(example.group(1), "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("succeeded"), printed
