"""The failure-code registry: one vocabulary for the checks, the adapters, the controller, the
explainer and the messages."""

import re
import textwrap

import pytest

from planner.adapters.moveit import MOVEIT_ERRORS
from planner.adapters.nav2 import NAV2_ERRORS
from planner.core.errors import InputError
from planner.core.explainer import load_cases
from planner.core.failures import REASONS, FailureCode, reason_for


def test_every_code_has_a_reason_for_the_planner():
    assert set(REASONS) == set(FailureCode)
    for code in FailureCode:
        reason = reason_for(code, "the detail", "apple_1")
        assert "the detail" in reason and "{" not in reason, code


def test_a_code_from_a_newer_client_keeps_its_detail():
    assert reason_for("SOMETHING_NEW", "the gripper reported 42") == "the gripper reported 42"


def test_the_adapters_map_into_the_registry():
    assert set(NAV2_ERRORS.values()) <= set(FailureCode)
    assert {code for _, code in MOVEIT_ERRORS.values()} <= set(FailureCode)


def test_the_failure_message_declares_the_registry_as_constants():
    from planner.msg import FailureMessage

    declared = {name: getattr(FailureMessage, name) for name in dir(FailureMessage)
                if re.fullmatch(r"[A-Z][A-Z_]+", name) and isinstance(getattr(FailureMessage, name), str)}
    assert declared == {code.name: code.value for code in FailureCode}


def test_a_case_with_an_unknown_code_is_refused_naming_file_entry_and_field(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(textwrap.dedent("""\
        - id: typo
          skill: PICK
          code: OBJECT_NOT_FOUN
          request: bring me the cup
          reason: the cup was not there
          suggestion: look again
        """))
    with pytest.raises(InputError, match=r"cases.yaml: 0.code: unknown failure code 'OBJECT_NOT_FOUN'"):
        load_cases(path)


@pytest.mark.parametrize("source", ["core/skills.py", "sim/simulated_world.py", "adapters/nav2.py", "adapters/moveit.py",
                                    "ros/nodes/executor.py", "core/controller.py"])
def test_failure_codes_are_named_through_the_registry_not_typed_as_strings(source):
    from pathlib import Path

    import planner

    text = (Path(planner.__file__).parent / source).read_text()
    # A backend's own name for an error, paired with our code, is not ours ("GOAL_IN_COLLISION" in MoveIt's table).
    typed = [m for m in re.findall(r'"([A-Z][A-Z_]{3,})"(?!, FailureCode\.)', text) if m in FailureCode.__members__]
    assert typed == [], f"{source} spells failure codes as strings: {typed}"
