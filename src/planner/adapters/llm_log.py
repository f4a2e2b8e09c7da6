"""Every model call of a run written down, and a run answered again from what was written.

A log is a JSON-lines file, one call a line: what was sent (messages, schema, and whether a plain
reply or a yes/no judgement was asked for), what came back (text, probability of yes), tokens and
seconds. It makes a run reproducible and inspectable, and it makes an experiment on the code that
reads replies cheap: replayed, the same queries give the same replies in milliseconds, and only a
call the change made different goes to a model."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.core.errors import PolicyError
from planner.core.ports import JUDGEMENT_SCHEMA, Policy, judged
from planner.core.types import PolicyReply

CallKind = Literal["complete", "judge"]


def call_key(kind: CallKind, messages: list[dict], schema: dict) -> str:
    """The same call, asked again, has the same key."""
    text = json.dumps({"call": kind, "messages": messages, "schema": schema}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class LoggedCall(BaseModel):
    """One line of a call log."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    key: str
    call: CallKind
    messages: list[dict]
    schema_: dict = Field(alias="schema")
    text: str
    yes_probability: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    source: str = ""

    def reply(self) -> PolicyReply:
        return PolicyReply(self.text, self.prompt_tokens, self.completion_tokens, 0.0,
                           f"replay of {self.source}" if self.source else "replay", self.yes_probability)


class LoggingPolicy:
    """A policy whose every call is appended to `path` as it returns (a failed call is not written:
    it has no reply to replay)."""

    def __init__(self, inner: Policy, path: Path):
        self.inner, self.path = inner, path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _logged(self, kind: CallKind, messages: list[dict], schema: dict, reply: PolicyReply) -> PolicyReply:
        line = LoggedCall(key=call_key(kind, messages, schema), call=kind, messages=messages, schema_=schema,
                          text=reply.text, yes_probability=reply.yes_probability, prompt_tokens=reply.prompt_tokens,
                          completion_tokens=reply.completion_tokens, seconds=round(reply.seconds, 3),
                          source=reply.source)
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line.model_dump_json(by_alias=True) + "\n")
        return reply

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        return self._logged("complete", messages, schema, self.inner.complete(messages, schema))

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        return self._logged("judge", messages, schema, judged(self.inner, messages, schema))


def read_log(path: Path) -> dict[str, LoggedCall]:
    """The calls of a log by key (a call asked twice: its first reply). ValueError naming the file
    and line of a line that is no logged call."""
    calls: dict[str, LoggedCall] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read the call log: {error}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            call = LoggedCall.model_validate_json(line)
        except ValidationError as error:
            raise ValueError(f"{path}:{number}: not a logged call: {error.errors()[0]['msg']}") from None
        if call.key != call_key(call.call, call.messages, call.schema_):
            raise ValueError(f"{path}:{number}: the key does not match the call (the line was edited)")
        calls.setdefault(call.key, call)
    return calls


class ReplayPolicy:
    """Replies from call logs: a call they hold is answered as it was; any other goes to `live`, or
    is a PolicyError that shows its last message when there is none. `replayed` and `asked` count
    the two."""

    def __init__(self, logs: list[Path], live: Policy | None = None):
        self.calls: dict[str, LoggedCall] = {}
        for path in logs:
            for key, call in read_log(path).items():
                self.calls.setdefault(key, call)
        self.live = live
        self.replayed = self.asked = 0
        self._lock = threading.Lock()

    def model(self) -> str:
        """The model that answered the recorded calls, as the first of them names it."""
        source = next(iter(self.calls.values())).source if self.calls else ""
        return source.split(" at ")[0].removeprefix("embedded ") or "unknown"

    def _answer(self, kind: CallKind, messages: list[dict], schema: dict) -> PolicyReply:
        recorded = self.calls.get(call_key(kind, messages, schema))
        with self._lock:
            if recorded is not None:
                self.replayed += 1
            elif self.live is not None:
                self.asked += 1
        if recorded is not None:
            return recorded.reply()
        if self.live is None:
            last = str(messages[-1].get("content", "")) if messages else ""
            raise PolicyError(f"no recorded reply for this {kind} call (its last message: {last[:120]!r}) "
                              f"and no model to ask")
        return self.live.complete(messages, schema) if kind == "complete" else judged(self.live, messages, schema)

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        return self._answer("complete", messages, schema)

    def judge(self, messages: list[dict], schema: dict = JUDGEMENT_SCHEMA) -> PolicyReply:
        return self._answer("judge", messages, schema)
