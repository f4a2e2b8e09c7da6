"""Asking a model for a reply that must validate: an invalid reply is answered with what was wrong
and asked again, a bounded number of times; and counting the calls and tokens a piece of work
spends. Shared by the task planner, the object finder, the memory and the scene planner."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from pydantic import Field, ValidationError

from planner.core.files import StrictModel
from planner.core.ports import Policy
from planner.core.types import Observation, PolicyReply

T = TypeVar("T")


class _Reply(Protocol):
    text: str


def short_error(error: Exception) -> str:
    """The first problem of a validation error as `field: message`, for the model and the log."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'reply'}: {first['msg']}"
    return str(error)


def ask_validated(call: Callable[[list[dict]], _Reply], messages: list[dict], parse: Callable[[str], T],
                  max_repairs: int, on_invalid: Callable[[str, str], None] = lambda problem, text: None) -> T | None:
    """`call(messages)` until `parse` accepts the reply's text (it raises ValueError or a pydantic
    ValidationError otherwise); None when the last repair failed too."""
    for _ in range(max_repairs + 1):
        reply = call(messages)
        try:
            return parse(reply.text)
        except (ValueError, ValidationError) as error:
            problem = short_error(error)
            on_invalid(problem, reply.text)
            messages = [*messages, {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": f"That reply is invalid: {problem}. Answer again with valid JSON."}]
    return None


# What a person's words mean, asked when the map alone cannot tell: which of several things, which
# room, which kind of thing. Shared by the memory (told changes) and the goal step (requests).
CHOOSE_PROMPT = """A person told a home robot: "{sentence}"
Which of these is "{words}"?
{options}
Answer with JSON: "meaning", what "{words}" is in a few words, then "choice", one of the lines above."""


LABELS_OFFERED = 5  # the labels most like words that fit none well, offered to the model to choose from
NONE = "none"       # the option "none of these" among labels
ROOM_FURNITURE_SHOWN = 4  # the furniture a room is shown with when the model chooses a room


def words(name: str) -> str:
    """A map name as people say it: `coffee_table` -> coffee table."""
    return name.replace("_", " ")


def label_options(labels: Iterable[str]) -> dict[str, str]:
    """Labels to choose among (see choose_one), each as people say it, and "none of these"."""
    return {label: words(label) for label in labels} | {NONE: "none of these"}


def room_options(contents: dict[str, list[str]]) -> dict[str, str]:
    """Rooms to choose among (see choose_one), each as people say it with the furniture it holds, the
    most telling first, and "none of these": a room is known by what is in it ("the spare room" is the
    one with the bed; without its furniture the 1.5B took it for the living room)."""
    return {room: f"{words(room)} (holds {', '.join(words(label) for label in held[:ROOM_FURNITURE_SHOWN])})"
            if held else words(room) for room, held in contents.items()} | {NONE: "none of these"}


class Choice(StrictModel):
    meaning: str = ""
    choice: str = Field(min_length=1)


def choose_one(call: Callable[[list[dict], dict], _Reply], sentence: str, words: str, options: dict[str, str],
               max_repairs: int) -> str | None:
    """The option (a key of `options`, each shown as its value) the model says `words` means in
    `sentence`; `call(messages, schema)` asks; None when no valid choice came."""
    by_line = {shown: option for option, shown in options.items()}
    # What the words mean, said first: held to the options alone, a small model starts writing the
    # word it has in mind and the grammar completes it into an option that begins alike
    # ("tangerine" -> "tablet").
    schema = {"type": "object", "properties": {"meaning": {"type": "string", "maxLength": 60},
                                               "choice": {"enum": list(by_line)}}, "required": ["meaning", "choice"]}
    reply = ask_validated(lambda messages: call(messages, schema), [{"role": "user", "content": CHOOSE_PROMPT.format(
        sentence=sentence, words=words, options="\n".join(f"- {line}" for line in by_line))}],
        Choice.model_validate_json, max_repairs)
    return by_line.get(reply.choice) if reply is not None else None


@dataclass
class LLMUsage:
    """The LLM calls of one piece of work (a task, an update, a plan) and their tokens."""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, reply: PolicyReply) -> None:
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens

    def add_observed(self, seen: Observation) -> None:
        """The model calls another part made to answer an observation (a search of the map)."""
        self.calls += seen.model_calls
        self.prompt_tokens += seen.prompt_tokens
        self.completion_tokens += seen.completion_tokens

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class CountingPolicy:
    """A policy that adds every reply it passes on to `usage`."""
    policy: Policy
    usage: LLMUsage = field(default_factory=LLMUsage)

    def complete(self, messages: list[dict], schema: dict) -> PolicyReply:
        reply = self.policy.complete(messages, schema)
        self.usage.add(reply)
        return reply

    def asking(self, schema: dict) -> Callable[[list[dict]], PolicyReply]:
        """A call for ask_validated that always asks with `schema`."""
        return lambda messages: self.complete(messages, schema)
