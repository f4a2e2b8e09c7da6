"""Commands a skill library adds to the built-in simulator (docs/add-a-skill.md).

A command of the skill library that the simulator does not have itself names, in `simulated_by`,
the function that carries it out there: `package.module:function`, importable where the simulator
runs. It is called under the world's lock, once the command's simulated time has passed, with the
`SimulatedWorld`, the command's arm, object, target and point, and returns an `Outcome`; a failure
carries a `FailureCode` the controller turns into a reason. On a robot, the same command goes to the
action `skills/<command>` served by the robot's own node (planner.ros.skill_actions).
"""

from __future__ import annotations

import importlib

from planner.core.errors import InputError
from planner.core.skills import SkillLibrary
from planner.sim.simulated_world import SIMULATED_COMMANDS, AddedCommand


def load_added_commands(library: SkillLibrary, where: str = "skill library") -> dict[str, AddedCommand]:
    """The simulated commands the library adds, by name; InputError naming `where` and the command
    when a function cannot be imported or is not callable."""
    added: dict[str, AddedCommand] = {}
    for name, spec in library.commands.items():
        if not spec.simulated_by:
            continue
        field = f"{where}: commands.{name}.simulated_by {spec.simulated_by!r}"
        if name in SIMULATED_COMMANDS:
            raise InputError(f"{field}: the simulator has its own {name}")
        module_name, attribute = spec.simulated_by.split(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # noqa: BLE001 - whatever a user's module raises on import is reported
            raise InputError(f"{field}: cannot import {module_name}: {type(error).__name__}: {error}") from None
        function = getattr(module, attribute, None)
        if not callable(function):
            raise InputError(f"{field}: {module_name} has no function {attribute}")
        added[name] = function
    return added


def not_simulated(library: SkillLibrary) -> list[str]:
    """The library's commands the simulator can carry out neither itself nor by an added function."""
    return sorted(name for name, spec in library.commands.items() if name not in SIMULATED_COMMANDS and not spec.simulated_by)
