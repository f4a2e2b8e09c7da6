"""What the robot asks and tells the user during a task, each said in the trace."""

from __future__ import annotations

import re
from collections.abc import Callable

from planner.core.ambiguity import Question, chosen_candidate, words_of
from planner.core.ports import Tools


class Conversation:
    def __init__(self, tools: Tools, timeout_s: float, emit: Callable[[str, str], None]):
        self.tools, self.timeout_s, self._emit = tools, timeout_s, emit

    def ask(self, question: str) -> str | None:
        """The user's answer, or None when none came within the timeout."""
        self._emit("question", question)
        answer = self.tools.ask(question, self.timeout_s)
        self._emit("answer", answer or "no answer")
        return answer

    def say(self, text: str) -> None:
        self._emit("say", text)
        self.tools.say(text)

    def which_room(self, place: str, options: dict[str, str]) -> str | None:
        """The room of `options` (room -> how it is shown) the user says `place` is, by name or
        number; None without such an answer."""
        rooms = list(options)
        listed = "; ".join(f"{number}) {options[room]}" for number, room in enumerate(rooms, start=1))
        answer = self.ask(f"Which room is the {place}? {listed}")
        if not answer:
            return None
        said = words_of(answer)
        numbers = [rooms[int(n) - 1] for n in re.findall(r"\b(\d+)\b", said) if 1 <= int(n) <= len(rooms)]
        named = [room for room in rooms if words_of(room) in said]
        choices = list(dict.fromkeys(named or numbers))
        return choices[0] if len(choices) == 1 else None

    def which(self, question: Question) -> str:
        """Which object the user means; without a clear answer in time, the nearest the robot can take."""
        self._emit("question", question.text)
        answer = self.tools.ask(question.text, self.timeout_s)
        choice = chosen_candidate(answer, question, self.tools.scene()) if answer else None
        if choice is None:
            choice, place = question.candidates[0], question.places[0]
            why = f"{answer!r} did not say which one" if answer else "no answer"
            nearest = f"the nearest {question.label}" + (" the robot can reach" if question.can_take else "")
            self._emit("answer", f"{why}; taking {nearest}, {question.called(0)} {place} ({choice})")
            self.say(f"I will take {question.called(0, question.label)} {place}.")
        else:
            self._emit("answer", f"{answer!r}: {choice}")
        return choice
