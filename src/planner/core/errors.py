"""One root for the stack's own exceptions, so a caller can catch whatever the stack raises on
purpose and let a bug through. Each keeps a builtin base (ValueError, RuntimeError, ...) too, so
handlers written for those still work. A leaf module: it imports nothing from the project."""

from __future__ import annotations


class PlannerError(Exception):
    """Raised on purpose by the stack; the text says what went wrong and where."""


class InputError(PlannerError, ValueError):
    """An input file or message that cannot be used; the text says what and where."""


class PolicyError(PlannerError, RuntimeError):
    """The policy could not answer (server unreachable, out of replies, ...)."""


class ServerUnreachable(PlannerError):
    """The model server failed call after call: a benchmark stops and says so rather than score every
    episode left as a failure. No PolicyError, so no step of a task takes it for one bad reply."""


class RequestImpossible(PlannerError):
    """The model found, and confirmed when asked again, that the request cannot be done."""


class TaskCanceled(PlannerError):
    """The task was canceled while it waited for the model; the text is why."""
