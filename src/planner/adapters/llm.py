"""LLM access: one client path (the `openai` package) to any OpenAI-compatible server, with the
structured-output form each server understands, and the embedded llama.cpp server the stack
starts itself when no endpoint is configured."""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import openai
from openai.types.chat import ChatCompletion
from pydantic import Field, ValidationError

from planner.adapters.model_store import DEFAULT_MODEL, MODELS
from planner.adapters.processes import DIE_WITH_PARENT
from planner.core.errors import PolicyError, ServerUnreachable
from planner.core.files import StrictModel, load_yaml
from planner.core.ports import JUDGEMENT_SCHEMA, Policy, fits_of, judged
from planner.core.types import PolicyReply

log = logging.getLogger(__name__)

# How a server is asked for output that follows a JSON schema.
#  json_object_schema: llama.cpp's {"type": "json_object", "schema": ...} (grammar-constrained)
#  json_schema:        OpenAI's {"type": "json_schema", "json_schema": {...}} (also vLLM, Ollama)
#  tool_call:          a forced call of one function whose parameters are the schema
StructuredOutput = Literal["json_object_schema", "json_schema", "tool_call"]

OPENAI_API_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"


class EmbeddedSettings(StrictModel):
    model: Literal[tuple(MODELS)] = DEFAULT_MODEL  # type: ignore[valid-type]
    model_path: str = Field(default="", description="a GGUF file of one's own, served instead of `model` "
                                                    "(relative to the config file)")
    n_ctx: int = Field(default=4096, ge=512)
    threads: int = Field(default=2, ge=1)
    startup_timeout_s: float = Field(default=120, gt=0)
    servers: int = Field(default=2, ge=1, le=8, description="copies of the model's server (~0.8 GB of memory each "
                         "beyond the first; they share the weights): each keeps the prompt it read last, so parts of "
                         "the stack that take turns (the object finder's two readings, its name checks) do not "
                         "read each other's prompts again")

    def name(self) -> str:
        """The model served: the shipped model's name, or the file name of one's own."""
        return Path(self.model_path).stem if self.model_path else self.model


def structured_output_for(embedded: bool, mode: str) -> StructuredOutput:
    """`auto`: llama.cpp's form for the embedded server (llama-cpp-python enforces no other), and
    OpenAI's json_schema form for every other server — OpenAI, vLLM, Ollama and llama.cpp's own
    llama-server enforce it, while Ollama turns llama.cpp's form into plain JSON with no schema.
    `planner llm check` says which forms a server enforces."""
    if mode != "auto":
        return mode  # type: ignore[return-value]
    return "json_object_schema" if embedded else "json_schema"


class FallbackEndpoint(StrictModel):
    """Another OpenAI-compatible server, asked when the ones before it do not answer;
    base_url `embedded` is the embedded llama.cpp server (started with the stack)."""
    base_url: str = Field(min_length=1)
    api_key: str = ""
    model: str = "default"
    structured_output: Literal["auto"] | StructuredOutput = "auto"


class LLMSettings(StrictModel):
    # auto: an endpoint if one is configured (here or in OPENAI_BASE_URL), else the embedded server.
    provider: Literal["auto", "embedded", "openai", "scripted"] = "auto"
    base_url: str = ""
    api_key: str = ""
    model: str = "default"
    structured_output: Literal["auto"] | StructuredOutput = "auto"
    fallbacks: list[FallbackEndpoint] = Field(default_factory=list, description="asked in order when the main "
                                                                                "endpoint does not answer")
    goal_step: list[FallbackEndpoint] = Field(default_factory=list, description="servers that read a request into "
                                              "goals, asked before the endpoints above (e.g. a larger model)")
    object_finder: list[FallbackEndpoint] = Field(default_factory=list, description="servers for the object "
                                                  "finder, asked before the endpoints above")
    rest_s: float = Field(default=30, ge=0, description="an endpoint that did not answer is passed over this long")
    benchmark_gives_up_after: int = Field(default=3, ge=1, description="a benchmark stops, saying why, after this "
                                          "many model calls in a row failed (each after its own retries)")
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=256, ge=16)
    timeout_s: float = Field(default=60, gt=0)
    max_retries: int = Field(default=2, ge=0)
    script: str = Field(default="", description="YAML list of replies for provider: scripted")
    embedded: EmbeddedSettings = Field(default_factory=EmbeddedSettings)

    def chosen(self) -> str:
        """Which model this config asks and why, in a sentence said at start-up: the environment can
        switch it (OPENAI_API_KEY alone sends every call to OpenAI's paid API)."""
        resolved = self.resolved()
        if resolved.provider == "scripted":
            return "scripted replies from llm.script"
        if resolved.provider == "embedded":
            why = "llm.provider is embedded" if self.provider == "embedded" else \
                "no server is configured (llm.base_url, or OPENAI_BASE_URL or OPENAI_API_KEY in the environment)"
            return f"the embedded model {self.embedded.name()}, because {why}"
        reasons = [("llm.provider is openai", self.provider == "openai"),
                   ("OPENAI_BASE_URL is set", "OPENAI_BASE_URL" in os.environ),
                   ("llm.base_url is set", bool(self.base_url)),
                   ("OPENAI_API_KEY is set", "OPENAI_API_KEY" in os.environ),
                   ("llm.api_key is set", bool(self.api_key))]
        why = next(reason for reason, holds in reasons if holds)
        text = f"{resolved.base_url} with model {resolved.model!r}, because {why}"
        if resolved.model == "default":
            text += (" (a llama.cpp server serves its one model under any name; Ollama and vLLM need the model's "
                     "name in llm.model or PLANNER_LLM_MODEL)")
        return text

    def resolved(self) -> LLMSettings:
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
        mode = structured_output_for(provider == "embedded", self.structured_output)
        return self.model_copy(update={"provider": provider, "base_url": base_url, "api_key": api_key,
                                       "model": model, "structured_output": mode})



class ScriptedPolicy:
    """Replies given in advance, in order: for deterministic tests and replays of recorded runs."""

    def __init__(self, replies: list[str | dict]):
        self._replies = [r if isinstance(r, str) else json.dumps(r) for r in replies]
        self._lock = threading.Lock()
        self.prompts: list[list[dict]] = []

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        with self._lock:
            self.prompts.append(messages)
            if not self._replies:
                raise PolicyError("the scripted policy has no replies left")
            return PolicyReply(self._replies.pop(0))

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        """The next reply, in either form; {"fits": ..., "p": 0.7} scripts the probability of yes
        too, which is otherwise 1 or 0 as the reply says (none for a reply that is no judgement,
        which the caller then refuses as it would a server's)."""
        reply = self.complete(messages, schema)
        try:
            data = json.loads(reply.text)
            p = data.get("p") if isinstance(data, dict) else None
            return PolicyReply(reply.text, yes_probability=float(fits_of(reply.text)) if p is None else p)
        except ValueError:
            return reply




class OpenAICompatiblePolicy:
    def __init__(self, base_url: str, api_key: str, model: str, structured_output: StructuredOutput,
                 timeout_s: float, max_retries: int, temperature: float, max_tokens: int, label: str = ""):
        self.base_url = base_url
        self.model = model
        self.label = label or f"{model} at {base_url}"
        self.structured_output = structured_output
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s   # for the whole reply: the client's own timeout is per read
        # The openai client retries connection errors, 429 and 5xx with exponential backoff.
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                    timeout=timeout_s, max_retries=max_retries)

    def _format_arguments(self, schema: dict, mode: StructuredOutput) -> dict:
        if mode == "json_object_schema":
            return {"response_format": {"type": "json_object", "schema": schema}}
        if mode == "json_schema":
            return {"response_format": {"type": "json_schema",
                                        "json_schema": {"name": "reply", "schema": schema, "strict": False}}}
        return {"tools": [{"type": "function", "function": {"name": "reply", "parameters": schema}}],
                "tool_choice": {"type": "function", "function": {"name": "reply"}}}

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        started = time.monotonic()
        try:
            # Read as it comes, so that a server that trickles its reply is given up at the deadline.
            with self.client.chat.completions.with_streaming_response.create(
                    model=self.model, messages=messages, temperature=self.temperature,
                    max_tokens=self.max_tokens, **self._format_arguments(schema, self.structured_output)) as response:
                body = bytearray()
                for part in response.iter_bytes():
                    body += part
                    self._within_deadline(started)
            completion = ChatCompletion.model_validate_json(bytes(body))
        except openai.APIError as error:
            raise self._failed(error) from None
        except ValidationError as error:
            raise PolicyError(f"LLM server {self.base_url} sent something that is no chat completion: "
                              f"{error.errors()[0]['msg']} at {'.'.join(map(str, error.errors()[0]['loc'])) or 'the top'}"
                              ) from None
        if not completion.choices:
            raise PolicyError(f"LLM server {self.base_url} returned no choices")
        message = completion.choices[0].message
        if self.structured_output == "tool_call" and message.tool_calls:
            text = message.tool_calls[0].function.arguments
        else:
            text = message.content or ""
        usage = completion.usage
        return PolicyReply(text=text.strip(), prompt_tokens=usage.prompt_tokens if usage else 0,
                           completion_tokens=usage.completion_tokens if usage else 0,
                           seconds=time.monotonic() - started, source=self.label)

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        """A yes/no reply with the model's probability of yes, read from the alternatives of the
        token where it wrote true or false. Servers give the model's own probabilities there,
        before the schema's grammar masks them, so the figure says how sure the model was.
        The reply is streamed: llama.cpp's Python server works out the probabilities of a reply
        sent whole over every token of the context, but of a streamed one only over the tokens
        written (measured after a 1,500-token map: 6.5 s a judgement whole, 1.3 s streamed)."""
        # Tool calls carry no token probabilities; the schema goes in the response format.
        mode = "json_schema" if self.structured_output == "tool_call" else self.structured_output
        if mode == "json_schema" and schema.get("type") != "object":
            schema = JUDGEMENT_SCHEMA  # OpenAI's structured outputs take only an object at the root
        started = time.monotonic()
        text: list[str] = []
        tokens: list = []
        usage = None
        try:
            with self.client.chat.completions.create(
                    model=self.model, messages=messages, temperature=self.temperature, max_tokens=self.max_tokens,
                    logprobs=True, top_logprobs=5, stream=True, stream_options={"include_usage": True},
                    **self._format_arguments(schema, mode)) as stream:
                for chunk in stream:
                    self._within_deadline(started)
                    usage = chunk.usage or usage
                    for choice in chunk.choices[:1]:
                        text.append((choice.delta.content if choice.delta else None) or "")
                        tokens += (choice.logprobs.content if choice.logprobs else None) or []
        except openai.APIError as error:
            raise self._failed(error) from None
        except (ValidationError, ValueError, AttributeError) as error:  # a chunk that is not one
            raise PolicyError(f"LLM server {self.base_url} sent a stream that is no chat completion: "
                              f"{type(error).__name__}") from None
        if not text:
            raise PolicyError(f"LLM server {self.base_url} returned no choices")
        # A server that gives no usage when streaming (llama.cpp's Python one) leaves the prompt uncounted.
        return PolicyReply(text="".join(text).strip(), prompt_tokens=usage.prompt_tokens if usage else 0,
                           completion_tokens=usage.completion_tokens if usage else len(tokens),
                           seconds=time.monotonic() - started, source=self.label,
                           yes_probability=_yes_probability(tokens))

    def _within_deadline(self, started: float) -> None:
        if time.monotonic() - started > self.timeout_s:
            raise PolicyError(f"LLM server {self.base_url} did not finish its reply within llm.timeout_s "
                              f"({self.timeout_s:g} s)")

    def _failed(self, error: openai.APIError) -> PolicyError:
        return PolicyError(f"LLM server {self.base_url} failed: {error.__class__.__name__}: {error}")


def _yes_probability(tokens) -> float | None:
    """P(true) / (P(true) + P(false)) at the first token that is true or false."""
    for token in tokens:
        if token.token.strip().lower() not in ("true", "false"):
            continue
        weight = {"true": 0.0, "false": 0.0}
        for alternative in token.top_logprobs or []:
            word = alternative.token.strip().lower()
            if word in weight:
                weight[word] += math.exp(alternative.logprob)
        total = weight["true"] + weight["false"]
        return weight["true"] / total if total > 0 else None
    return None


class FallbackPolicy:
    """Endpoints asked in order until one answers. One that did not answer is passed over for
    `rest_s`, so a dead server costs its timeout once rather than on every step; when all of
    them rest, all are asked again."""

    def __init__(self, policies: list[Policy], rest_s: float, clock: Callable[[], float] = time.monotonic):
        self.policies = policies
        self.rest_s = rest_s
        self.clock = clock
        self.resting_until: dict[int, float] = {}

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        return self._first_answer(lambda policy: policy.complete(messages, schema))

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        return self._first_answer(lambda policy: judged(policy, messages, schema))

    def _first_answer(self, ask: Callable[[Policy], PolicyReply]) -> PolicyReply:
        now = self.clock()
        awake = [i for i in range(len(self.policies)) if self.resting_until.get(i, 0.0) <= now] or range(len(self.policies))
        errors = []
        for index in awake:
            try:
                reply = ask(self.policies[index])
            except PolicyError as error:
                self.resting_until[index] = self.clock() + self.rest_s
                errors.append(str(error))
                continue
            self.resting_until.pop(index, None)
            return reply
        raise PolicyError(f"no LLM endpoint answered ({len(errors)} asked): " + "; ".join(errors))


class WatchedPolicy:
    """A benchmark's policy: the `limit`-th call in a row that fails raises ServerUnreachable,
    which ends the run instead of one episode."""

    def __init__(self, policy: Policy, limit: int):
        self.policy = policy
        self.limit = limit
        self.failed_in_a_row = 0

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        return self._watched(lambda: self.policy.complete(messages, schema))

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        return self._watched(lambda: judged(self.policy, messages, schema))

    def _watched(self, ask: Callable[[], PolicyReply]) -> PolicyReply:
        try:
            reply = ask()
        except PolicyError as error:
            self.failed_in_a_row += 1
            if self.failed_in_a_row >= self.limit:
                raise ServerUnreachable(f"{self.failed_in_a_row} model calls in a row failed, the last with: {error}") from None
            raise
        self.failed_in_a_row = 0
        return reply


PREFLIGHT_SCHEMA = {"type": "object", "properties": {"ready": {"type": "boolean"}}, "required": ["ready"]}


def preflight(policy: Policy) -> None:
    """One short call before a benchmark's first episode: ServerUnreachable saying why when the server
    does not answer, so a wrong URL or a stopped server ends the run at once."""
    try:
        policy.complete([{"role": "user", "content": 'Answer {"ready": true}.'}], PREFLIGHT_SCHEMA)
    except PolicyError as error:
        raise ServerUnreachable(f"the model server does not answer: {error}") from None


class RevivingPolicy:
    """The policy of one copy of the embedded server: a server that died (llama.cpp can crash, e.g.
    on a grammar it cannot parse) is started again and the call repeated once, so one crash does
    not end every task that follows."""

    def __init__(self, policy: OpenAICompatiblePolicy, server: EmbeddedServer):
        self.policy = policy
        self.server = server
        self.restarts = 0

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        return self._revived(lambda: self.policy.complete(messages, schema))

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        return self._revived(lambda: self.policy.judge(messages, schema))

    def _revived(self, ask: Callable[[], PolicyReply]) -> PolicyReply:
        try:
            return ask()
        except PolicyError as error:
            code = self.server.exit_code()
            if code is None:
                raise
            log.warning("the embedded LLM server exited with code %s (%s); starting it again", code, error)
            self.restarts += 1
            self.server.start()
            return ask()


class PromptRoutedPolicy:
    """The embedded server's policy: each call is made by the copy that `servers` routes it to."""

    def __init__(self, policies: list[RevivingPolicy], servers: EmbeddedServers):
        self.policies, self.servers = policies, servers

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        return self.policies[self.servers.route(messages)].complete(messages, schema)

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        return self.policies[self.servers.route(messages)].judge(messages, schema)

    @property
    def restarts(self) -> int:
        return sum(policy.restarts for policy in self.policies)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class EmbeddedServer:
    """A llama.cpp OpenAI-compatible server on loopback, started and stopped with the stack."""

    def __init__(self, model_file: Path, n_ctx: int, threads: int, startup_timeout_s: float, log_file: Path):
        self.model_file = model_file
        self.n_ctx = n_ctx
        self.threads = threads
        self.startup_timeout_s = startup_timeout_s
        self.log_file = log_file
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.base_url = ""

    def start(self) -> str:
        self.spawn()
        return self.wait_ready()

    def spawn(self) -> None:
        """Start the server's process without waiting for it to answer."""
        self.port = self.port or _free_port()  # the same port after a restart: clients keep their URL
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_file), "--host", "127.0.0.1",
             "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=DIE_WITH_PARENT)
        log.close()

    def wait_ready(self) -> str:
        """The server's URL once it answers; PolicyError if it exits or stays silent too long."""
        assert self.process is not None, "spawn() first"
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PolicyError(f"the embedded LLM server exited with code {self.process.returncode}; see {self.log_file}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                    json.load(reply)
                return self.base_url
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                time.sleep(0.3)
        self.stop()
        raise PolicyError(f"the embedded LLM server did not answer within {self.startup_timeout_s:.0f} s; see {self.log_file}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def exit_code(self) -> int | None:
        """The code the server exited with, or None while it runs."""
        return self.process.poll() if self.process else None

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class EmbeddedServers:
    """The copies of the embedded server (`embedded.servers`), started and stopped together.
    llama.cpp keeps the prompt a server read last and reads only what follows the part a new prompt
    shares with it (on 2 cores the 1.5B reads ~95 tokens/s: a 250-token system prompt takes ~2 s
    anew). So a call goes to the copy whose last prompt shares most of its own or, when none shares
    half, to the copy used least recently: two prompts that take turns each keep a copy."""

    def __init__(self, servers: list[EmbeddedServer]):
        self.servers = servers
        self.last_prompt = [""] * len(servers)
        self.last_call = [0] * len(servers)
        self.calls = 0
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return self.servers[0].base_url

    def start(self) -> None:
        try:
            for server in self.servers:  # all loading at once: ready in about the time of one
                server.spawn()
            for server in self.servers:
                server.wait_ready()
        except Exception:  # one copy that cannot start (or a process that cannot be made) stops them all
            self.stop()
            raise

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def policy(self, client: Callable[[str], OpenAICompatiblePolicy]) -> PromptRoutedPolicy:
        """A policy over every copy; `client` makes one for a server's URL."""
        return PromptRoutedPolicy([RevivingPolicy(client(server.base_url), server) for server in self.servers], self)

    def route(self, messages: list[dict]) -> int:
        """The copy a call with these messages goes to."""
        prompt = "".join(f"<{message['role']}>{message.get('content') or ''}" for message in messages)
        copies = range(len(self.servers))
        with self.lock:
            shared = [len(os.path.commonprefix([prompt, last])) for last in self.last_prompt]
            copy = max(copies, key=lambda n: (shared[n], self.last_call[n]))
            if 2 * shared[copy] < len(prompt):
                copy = min(copies, key=lambda n: self.last_call[n])
            self.calls += 1
            self.last_prompt[copy], self.last_call[copy] = prompt, self.calls
        return copy


def open_policy(settings, script_file: Path | None = None):
    """The policy an LLMSettings (resolved) asks for — its endpoint, then its fallbacks — and the
    embedded server it started (stop it when done), or raise PolicyError / ModelError /
    InputError saying why there is none."""

    if settings.provider == "scripted":
        if script_file is None:
            raise PolicyError("provider scripted needs llm.script: a YAML list of replies")
        return ScriptedPolicy(load_yaml(script_file)), None
    main = FallbackEndpoint(base_url="embedded" if settings.provider == "embedded" else settings.base_url,
                            api_key=settings.api_key, model=settings.model,
                            structured_output=settings.structured_output)
    policies, server = _endpoint_policies(settings, [main, *settings.fallbacks], None)
    return (policies[0] if len(policies) == 1 else FallbackPolicy(policies, settings.rest_s)), server


def part_policy(settings, endpoints: list[FallbackEndpoint], main: Policy, server: EmbeddedServers | None
                ) -> tuple[Policy, EmbeddedServers | None]:
    """The policy of one part of the stack (the goal step, the object finder): its own `endpoints`
    first, then `main`, so the stack keeps working on the main model when a larger one is down.
    The embedded server is shared; the one returned is the server now running, if any."""
    if not endpoints or isinstance(main, ScriptedPolicy):
        return main, server
    policies, server = _endpoint_policies(settings, endpoints, server)
    return FallbackPolicy([*policies, main], settings.rest_s), server


# `planner llm check`: a schema the model would not follow by chance (asked for a greeting, it
# must answer with this one word), so a reply that matches it shows the server enforced it.
PROBE_SCHEMA = {"type": "object", "properties": {"probe": {"type": "string", "enum": ["violet-42"]}},
                "required": ["probe"], "additionalProperties": False}
PROBE_MESSAGES = [{"role": "user", "content": "Greet me in one short sentence."}]
STRUCTURED_OUTPUTS: tuple[StructuredOutput, ...] = ("json_schema", "json_object_schema", "tool_call")


@dataclass(frozen=True)
class SchemaCheck:
    mode: StructuredOutput
    enforced: bool
    reply: str   # what the server answered, or why it did not
    answered: bool = True


def probe_schema(base_url: str, api_key: str, model: str, mode: StructuredOutput, timeout_s: float) -> SchemaCheck:
    """Ask the server once with a schema in one structured-output form and see whether it binds the reply."""
    policy = OpenAICompatiblePolicy(base_url, api_key, model, mode, timeout_s, max_retries=0, temperature=0.0,
                                    max_tokens=48)
    try:
        text = policy.complete(PROBE_MESSAGES, PROBE_SCHEMA).text
    except PolicyError as error:
        return SchemaCheck(mode, False, str(error), answered=False)
    try:
        enforced = json.loads(text) == {"probe": "violet-42"}
    except ValueError:
        enforced = False
    return SchemaCheck(mode, enforced, text)


def check_schema_enforcement(base_url: str, api_key: str, model: str, timeout_s: float) -> list[SchemaCheck]:
    """Ask the server once in each structured-output form and see which ones bind the reply."""
    return [probe_schema(base_url, api_key, model, mode, timeout_s) for mode in STRUCTURED_OUTPUTS]


def _endpoint_policies(settings, endpoints: list[FallbackEndpoint], server: EmbeddedServers | None
                       ) -> tuple[list[Policy], EmbeddedServers | None]:
    started = server is None
    policies: list[Policy] = []
    try:
        for endpoint in endpoints:
            embedded = endpoint.base_url == "embedded"
            label = f"embedded {settings.embedded.name()}" if embedded else ""
            mode = structured_output_for(embedded, endpoint.structured_output)

            def client(base_url: str, endpoint=endpoint, mode=mode, label=label) -> OpenAICompatiblePolicy:
                return OpenAICompatiblePolicy(base_url, endpoint.api_key, endpoint.model, mode, settings.timeout_s,
                                              settings.max_retries, settings.temperature, settings.max_tokens, label)

            if embedded:
                server = server or _start_embedded(settings.embedded)
                policies.append(server.policy(client))
            else:
                policies.append(client(endpoint.base_url))
    except Exception:
        if server is not None and started:
            server.stop()
        raise
    return policies, server


def _start_embedded(embedded) -> EmbeddedServers:
    from planner.adapters.model_store import MODELS, cache_dir, own_model, verified_model

    model_file = own_model(Path(embedded.model_path)) if embedded.model_path else verified_model(MODELS[embedded.model])
    logs = cache_dir() / "logs"
    servers = EmbeddedServers([EmbeddedServer(model_file, embedded.n_ctx, embedded.threads, embedded.startup_timeout_s,
                                              logs / ("llama-server.log" if copy == 0 else f"llama-server-{copy + 1}.log"))
                               for copy in range(embedded.servers)])
    servers.start()
    return servers
