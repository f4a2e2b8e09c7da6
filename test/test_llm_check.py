"""`planner llm check` against servers that enforce a schema in one form, in none, and against
the embedded llama.cpp server; and the warning a node gives at start when its server enforces none."""

import time

import pytest
from std_msgs.msg import String

from conftest import RosClient, chat_server, wait_for, write_config
from planner.cli import main
from planner.config import load_config
from planner.ros.nodes.task_planner import TaskPlannerNode
from planner.ros.qos import STATUS_QOS, STATUS_TOPIC

PROBE_REPLY = '{"probe": "violet-42"}'
FREE_REPLY = '{"greeting": "Hello! Nice to meet you."}'  # what a model writes when nothing binds it


def stub_server(enforces: set[str]):
    """An OpenAI-compatible server that follows the schema only when it is sent in the forms in
    `enforces` (json_schema, json_object_schema, tool_call); otherwise it answers freely."""

    def reply(body: dict) -> dict:
        form = body.get("response_format", {}).get("type", "")
        mode = {"json_schema": "json_schema", "json_object": "json_object_schema"}.get(form, "tool_call")
        if mode == "json_object_schema" and "schema" not in body["response_format"]:
            mode = ""
        content = PROBE_REPLY if mode in enforces else FREE_REPLY
        message = {"role": "assistant", "content": content}
        if mode == "tool_call" and mode in enforces:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "1", "type": "function", "function": {"name": "reply", "arguments": content}}]}
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    return chat_server(reply)


@pytest.fixture
def served():
    servers = []

    def start(enforces: set[str]) -> str:
        servers.append(stub_server(enforces))
        return f"http://127.0.0.1:{servers[-1].server_port}/v1"

    yield start
    for httpd in servers:
        httpd.shutdown()


def test_a_server_that_enforces_the_openai_form_passes_with_the_default(served, capsys):
    assert main(["llm", "check", "--base-url", served({"json_schema"}), "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "json_schema         enforced" in out and "json_object_schema  NOT enforced" in out
    assert "ok: json_schema, which the config picks for this server, is enforced." in out


def test_a_server_that_only_binds_the_llama_cpp_form_is_told_which_mode_to_set(served, capsys):
    assert main(["llm", "check", "--base-url", served({"json_object_schema"})]) == 1
    out = capsys.readouterr().out
    assert "set llm.structured_output: json_object_schema for this server" in out


def test_a_server_that_ignores_every_schema_is_reported_as_unconstrained(served, capsys):
    # As Ollama does with llama.cpp's form: valid JSON, but not the schema's.
    assert main(["llm", "check", "--base-url", served(set())]) == 1
    out = capsys.readouterr().out
    assert out.count("NOT enforced") == 3 and "this server enforces none of the forms" in out
    assert "Hello! Nice to meet you." in out


def test_an_unreachable_server_is_reported_per_form_not_as_a_crash(capsys):
    assert main(["llm", "check", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "2"]) == 1
    out = capsys.readouterr().out
    assert out.count("NOT enforced") == 3 and "failed" in out


@pytest.mark.embedded
@pytest.mark.timeout(600)
def test_the_embedded_server_enforces_the_form_the_config_picks_for_it(capsys, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PLANNER_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["llm", "check"]) == 0
    out = capsys.readouterr().out
    assert "json_object_schema  enforced" in out and "ok: json_object_schema" in out


@pytest.mark.parametrize("enforces, warned", [({"json_schema"}, False), (set(), True)])
def test_a_node_warns_at_start_when_its_server_ignores_the_schema(ros, served, tmp_path, enforces, warned):
    url = served(enforces)
    config = load_config(write_config(tmp_path, llm={"provider": "openai", "base_url": url, "model": "stub"}))
    client = RosClient("schema_warning_test")
    try:
        status = client.collect(String, STATUS_TOPIC, STATUS_QOS)
        client.add(TaskPlannerNode(config))
        warning = f"the LLM server {url} does not enforce the schema sent as json_schema"
        if warned:
            wait_for(lambda: any(warning in m.data for m in status), 20)
            assert any("WARN" in m.data and "planner llm check" in m.data for m in status)
        else:
            time.sleep(3.0)  # the probe is one local request
            assert not any("does not enforce" in m.data for m in status)
    finally:
        client.close()
