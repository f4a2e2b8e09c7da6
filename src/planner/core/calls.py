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
