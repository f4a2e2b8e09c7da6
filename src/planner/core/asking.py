"""Asking a model for a reply that must validate: an invalid reply is answered with what was wrong
and asked again, a bounded number of times. Shared by the task planner and the object finder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from pydantic import ValidationError

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
