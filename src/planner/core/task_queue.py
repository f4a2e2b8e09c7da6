"""Who runs next: one task at a time; requests arriving meanwhile wait their turn in order, up to
a configured number, and are rejected beyond it (capacity 0: rejected whenever one runs)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable


class TaskQueue:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._tickets = itertools.count(1)
        self._waiting: list[int] = []
        self._running: int | None = None
        self._changed = threading.Condition()

    def admit(self) -> int | None:
        """A ticket for a new request, or None when it would wait beyond the capacity."""
        with self._changed:
            if not self._has_room():
                return None
            ticket = next(self._tickets)
            self._waiting.append(ticket)
            self._changed.notify_all()
            return ticket

    def has_room(self) -> bool:
        with self._changed:
            return self._has_room()

    def _has_room(self) -> bool:
        admitted = len(self._waiting) + (self._running is not None)
        return admitted < self.capacity + 1  # the one that runs (or is about to) and `capacity` behind it

    def position(self, ticket: int) -> int:
        """How many tasks are ahead of a waiting ticket (the running one included)."""
        with self._changed:
            return self._waiting.index(ticket) + (self._running is not None)

    def wait_turn(self, ticket: int, give_up: Callable[[], bool], poll_s: float = 0.1) -> bool:
        """Block until the ticket may run (True) or `give_up()` says stop waiting (False: it is withdrawn)."""
        with self._changed:
            # Asked before the turn is taken too: a ticket whose turn comes as the emergency stop ends the
            # task ahead of it must not start.
            while True:
                if give_up():
                    self._waiting.remove(ticket)
                    self._changed.notify_all()
                    return False
                if self._running is None and self._waiting[0] == ticket:
                    break
                self._changed.wait(poll_s)
            self._waiting.pop(0)
            self._running = ticket
            return True

    def finished(self, ticket: int) -> None:
        with self._changed:
            if self._running == ticket:
                self._running = None
            self._changed.notify_all()

    def waiting(self) -> int:
        with self._changed:
            return len(self._waiting)
