"""`NAME(arg, ...)` terms: skill calls from the planner and steps in the skill library.

Arguments are separated by commas; one that holds a comma, a quote or a parenthesis is quoted
("Hello, I am back"), in double or single quotes, as a shell would read it.
"""

from __future__ import annotations

import re
import shlex

from planner.core.errors import PlannerError


class SkillSyntaxError(PlannerError, ValueError):
    """A call that is not `SKILL(arg, ...)` of a known skill with valid arguments."""


_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9]*)\s*\((.*)\)\s*$", re.S)
_NEEDS_QUOTES = re.compile(r"[,'\"()]|^\s|\s$")


def parse_call(text: str) -> tuple[str, list[str]]:
    match = _CALL.match(text)
    if not match:
        raise SkillSyntaxError(f"{text!r} is not of the form NAME(arg, ...)")
    inner = match.group(2).strip()
    if not inner:
        return match.group(1), []
    lexer = shlex.shlex(inner, posix=True)
    lexer.whitespace, lexer.whitespace_split, lexer.commenters = ",", True, ""
    try:
        args = [arg.strip() for arg in lexer]
    except ValueError as error:  # an unbalanced quote
        raise SkillSyntaxError(f"{text!r}: {error} (quote an argument that holds a quote or a comma)") from None
    return match.group(1), args


def format_call(name: str, args: tuple[str, ...] | list[str]) -> str:
    """The call as text that parse_call reads back to the same name and arguments."""
    def quoted(arg: str) -> str:
        if not _NEEDS_QUOTES.search(arg):
            return arg
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{name}({', '.join(quoted(a) for a in args)})"


FIX_OPENING = "What worked after this failure before: "
# An argument of a call in a learned fix: a room, an arm, or "a table" / "the bottle" — words, never
# a sentence that a model could read as an instruction.
_FIX_ARGUMENT = re.compile(r"[\w' -]{1,60}")
FIX_CALLS_MAX = 12


def fix_text(calls: list[str]) -> str:
    """A learned fix in words: the calls that followed a failure until it was overcome."""
    return FIX_OPENING + ", then ".join(calls) + "."


def fix_calls(text: str, actions: frozenset[str]) -> list[str]:
    """The calls of a fix written by `fix_text`, each of one of `actions` with plain-word arguments;
    SkillSyntaxError saying what else the text holds. A fix reaches other robots' prompts, so it is
    a list of calls and nothing else."""
    if not (text.startswith(FIX_OPENING) and text.endswith(".")):
        raise SkillSyntaxError(f"a fix is {FIX_OPENING!r} and calls joined by ', then ', ended by '.'; not {text[:80]!r}")
    calls = text[len(FIX_OPENING):-1].split(", then ")
    if len(calls) > FIX_CALLS_MAX:
        raise SkillSyntaxError(f"a fix has at most {FIX_CALLS_MAX} calls, this one {len(calls)}")
    for call in calls:
        name, args = parse_call(call)
        if name not in actions:
            raise SkillSyntaxError(f"{call[:80]!r}: {name} is none of the actions a fix may name "
                                   f"({', '.join(sorted(actions))})")
        if not all(_FIX_ARGUMENT.fullmatch(arg) for arg in args):
            raise SkillSyntaxError(f"{call[:80]!r}: an argument of a fix is a few plain words")
    return calls
