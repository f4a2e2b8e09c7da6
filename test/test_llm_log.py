"""Model calls written to a log and answered again from it: the same reply for the same call, a
changed call sent on to a model (or refused when there is none), and a damaged log named."""

import json

import pytest

from planner.adapters.llm import ScriptedPolicy
from planner.adapters.llm_log import LoggingPolicy, ReplayPolicy
from planner.core.errors import PolicyError
from planner.core.ports import YES_NO_SCHEMA, judged

ASK = [{"role": "user", "content": "which kinds?"}]
CHECK = [{"role": "user", "content": "is a settee a sofa?"}]


def logged_run(tmp_path):
    log = tmp_path / "calls.jsonl"
    policy = LoggingPolicy(ScriptedPolicy([{"kinds": ["lamp"]}, {"fits": True, "p": 0.8}]), log)
    assert policy.complete(ASK, {"type": "object"}).text == '{"kinds": ["lamp"]}'
    assert judged(policy, CHECK, YES_NO_SCHEMA).yes_probability == 0.8
    return log


def test_a_logged_call_is_answered_again_as_it_was_probability_of_yes_included(tmp_path):
    replay = ReplayPolicy([logged_run(tmp_path)])
    assert replay.complete(ASK, {"type": "object"}).text == '{"kinds": ["lamp"]}'
    assert judged(replay, CHECK, YES_NO_SCHEMA).yes_probability == 0.8
    assert replay.replayed == 2 and replay.asked == 0


def test_a_call_the_log_does_not_hold_goes_to_the_model_or_is_refused_with_what_it_was(tmp_path):
    log = logged_run(tmp_path)
    changed = [{"role": "user", "content": "which kinds, in other words?"}]
    with pytest.raises(PolicyError, match="no recorded reply.*in other words"):
        ReplayPolicy([log]).complete(changed, {"type": "object"})
    replay = ReplayPolicy([log], live=ScriptedPolicy([{"kinds": ["torch"]}]))
    assert replay.complete(changed, {"type": "object"}).text == '{"kinds": ["torch"]}'
    assert replay.complete(ASK, {"type": "object"}).text == '{"kinds": ["lamp"]}'
    assert replay.asked == 1 and replay.replayed == 1


def test_a_damaged_or_edited_log_is_refused_naming_its_line(tmp_path):
    log = logged_run(tmp_path)
    lines = log.read_text().splitlines()
    edited = json.loads(lines[0])
    edited["messages"][0]["content"] = "something else"
    log.write_text("\n".join([lines[1], json.dumps(edited)]) + "\n")
    with pytest.raises(ValueError, match=r"calls.jsonl:2: the key does not match"):
        ReplayPolicy([log])
    log.write_text("not json\n")
    with pytest.raises(ValueError, match=r"calls.jsonl:1: not a logged call"):
        ReplayPolicy([log])
