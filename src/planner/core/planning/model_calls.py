"""A task's calls to its model: each awaited so that a cancel ends the wait at once, counted,
traced, and validated with a bounded number of repairs. The loop and the request reader share one."""

from __future__ import annotations

import threading
from collections.abc import Callable

from planner.core.asking import LLMUsage, ask_validated
from planner.core.errors import TaskCanceled
from planner.core.ports import Policy
from planner.core.types import PolicyReply

CANCEL_POLL_S = 0.05   # how often a wait for the model looks whether the task was canceled


class ModelCalls:
    def __init__(self, policy: Policy, max_repairs: int, emit: Callable[[str, str], None]):
        self.policy = policy
        self.max_repairs = max_repairs
        self._emit = emit
        self.cancel_event = threading.Event()
        self.cancel_reason = "canceled by the user"

    def cancel(self, reason: str) -> None:
        """End the wait for the model, and the task, from any thread."""
        self.cancel_reason = reason
        self.cancel_event.set()

    def call(self, messages: list[dict], schema: dict, usage: LLMUsage, policy: Policy | None = None) -> PolicyReply:
        """One reply of `policy` (the task's own unless given), counted in `usage`."""
        reply = self._unless_canceled(lambda: (policy or self.policy).complete(messages, schema))
        usage.add(reply)
        if reply.prompt_tokens or reply.seconds:  # scripted replies have neither
            self._emit("llm", f"{reply.prompt_tokens}+{reply.completion_tokens} tokens, {reply.seconds:.2f} s"
                              + (f" ({reply.source})" if reply.source else ""))
        return reply

    def validated(self, messages: list[dict], schema: dict, usage: LLMUsage, parse: Callable[[str], object],
                  policy: Policy | None = None):
        """Ask, validate, and on an invalid reply tell the model what was wrong, a bounded number of times.
        A reply repaired so is a warning in the trace; one that stayed invalid after every repair, an error."""
        reply = ask_validated(lambda m: self.call(m, schema, usage, policy), messages, parse, self.max_repairs,
                              lambda problem, text: self._emit("warning", f"invalid reply ({problem}): {text[:200]}"))
        if reply is None:
            self._emit("error", f"no valid reply after {self.max_repairs} repairs")
        return reply

    def _unless_canceled(self, call: Callable[[], PolicyReply]) -> PolicyReply:
        """The call's reply, awaited on a thread of its own so that a cancel ends the wait at once (a
        small model on a CPU takes many seconds a reply); an abandoned call finishes unheard."""
        done = threading.Event()
        replies: list[PolicyReply] = []
        errors: list[Exception] = []

        def run() -> None:
            try:
                replies.append(call())
            except Exception as error:  # noqa: BLE001 - raised again in the caller's thread
                errors.append(error)
            finally:
                done.set()
        threading.Thread(target=run, name="model-call", daemon=True).start()
        while not done.wait(CANCEL_POLL_S):
            if self.cancel_event.is_set():
                raise TaskCanceled(self.cancel_reason)
        if errors:
            raise errors[0]
        return replies[0]
