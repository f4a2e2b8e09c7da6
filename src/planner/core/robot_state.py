"""What a real robot knows about itself, where no simulator reports it: its base pose from the map →
base transform, and what each hand holds, from the commands that succeeded and what the skill
library says they make true (`holding(arm, object)`, `not holding_any(arm)`). The backend makes a
grasp succeed only when the hand's fingers stopped on something, and reports a hand found empty."""

from __future__ import annotations

import threading

from planner.core.htn import Condition
from planner.core.skills import Command, SkillLibrary


class HeldObjects:
    """Per arm, the object it holds ("" when free), kept from the commands the robot carried out."""

    def __init__(self, arms: list[str], library: SkillLibrary):
        self._held = {arm: "" for arm in arms}
        self._effects: dict[str, list[Condition]] = {name: [Condition.parse(text) for text in spec.effects]
                                                     for name, spec in library.commands.items()}
        self._lock = threading.Lock()

    def record(self, command: Command) -> None:
        """A command that succeeded: what it makes true of the hands."""
        slots = {"arm": command.arm, "object": command.object_id, "target": command.target_id}
        with self._lock:
            for effect in self._effects.get(command.name, []):
                arm = slots.get(effect.params[0], "") if effect.params else ""
                if arm not in self._held:
                    continue
                if effect.fact == "holding" and not effect.negated and len(effect.params) == 2:
                    self._held[arm] = slots.get(effect.params[1], "")
                elif effect.fact in ("holding_any", "holding") and effect.negated:
                    self._held[arm] = ""

    def emptied(self, arm: str) -> None:
        """The hand was found holding nothing (the object slipped or was taken)."""
        with self._lock:
            if arm in self._held:
                self._held[arm] = ""

    def held(self) -> dict[str, str]:
        with self._lock:
            return dict(self._held)
