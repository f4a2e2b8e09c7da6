"""Reading YAML/JSON input files into pydantic models with errors that name file, entry and field."""

from __future__ import annotations

import gc
import json
import math
import os
import re
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from planner.core.errors import InputError

Model = TypeVar("Model", bound=BaseModel)


class StrictModel(BaseModel):
    """The base of every input model: a key the model does not know is an error, not ignored, and
    a number must be finite (`.inf` in a file passed every bound and failed far from the file)."""
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic garbage collector while many small objects are built at once (a map of
    thousands of instances): CPython 3.11 otherwise rescans the growing heap over and over,
    which more than doubles load times. Nothing built here holds reference cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def describe_validation_error(source: str, error: ValidationError, locate: Callable[[tuple], str] | None = None) -> str:
    """One line per problem: `source: where: what`; a check of the whole file names no field."""
    lines = []
    for item in error.errors():
        where = locate(item["loc"]) if locate else ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {where}: {message}" if where else f"{source}: {message}")
    return "\n".join(lines)


def write_json_atomic(path: Path, data: object, indent: int | None = None) -> None:
    """Write JSON so that a reader (or a crash) sees the old file or the new one, never half of
    one: a temporary file beside it, flushed to disk, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w") as handle:
        json.dump(data, handle, indent=indent)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


MAX_YAML_BYTES = 64 * 1024 * 1024   # larger than any world, map or config: /dev/zero is not read to the end
MAX_YAML_VALUES = 10_000_000        # values once aliases are expanded: aliases of aliases ("billion laughs")
                                    # are small on disk and expand into memory wherever they are used


def _expanded_values(value: object, seen: dict[int, int]) -> int:
    """How many values `value` holds with every alias expanded, counting each shared one once per use."""
    if not isinstance(value, (list, dict)):
        return 1
    if id(value) not in seen:
        seen[id(value)] = 0  # a cycle (an alias to its own parent) counts no further
        children = value.values() if isinstance(value, dict) else value
        seen[id(value)] = min(1 + sum(_expanded_values(child, seen) for child in children), MAX_YAML_VALUES + 1)
    return seen[id(value)]


def load_yaml(path: Path) -> object:
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_YAML_BYTES + 1)
        if len(data) > MAX_YAML_BYTES:
            raise InputError(f"{path}: larger than {MAX_YAML_BYTES // (1024 * 1024)} MB: not read")
        text = data.decode()
        value = yaml.safe_load(text)
        if "*" in text and _expanded_values(value, {}) > MAX_YAML_VALUES:
            raise InputError(f"{path}: its aliases (*name) expand to more than {MAX_YAML_VALUES:,} values: not read")
        return value
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a YAML file") from None
    except PermissionError:
        raise InputError(f"{path}: not readable (permission denied)") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid YAML: {error}") from None


def load_model(path: str | Path, model: type[Model]) -> Model:
    path = Path(path)
    try:
        return model.model_validate(load_yaml(path))
    except ValidationError as error:
        raise InputError(describe_validation_error(str(path), error)) from None


def load_jsonl(path: str | Path, model: type[Model], unique: str = "") -> list[Model]:
    """One model per non-blank line; every bad line is named (`FILE:LINE: field: problem`) in one
    error, as is a value of the `unique` field that comes twice."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read: {error}") from None
    records, problems = [], []
    first_line: dict[object, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(model.model_validate_json(line))
        except ValidationError as error:
            problems.append(describe_validation_error(f"{path}:{number}", error))
            continue
        if unique:
            key = getattr(records[-1], unique)
            if key in first_line:
                problems.append(f"{path}:{number}: {unique} {key!r} is already on line {first_line[key]}")
            first_line.setdefault(key, number)
    if problems:
        raise InputError("\n".join(problems))
    return records


# Beyond these a value is broken, not a place or a thing: a 1e30 m box would touch everything.
MAX_COORDINATE_M = 1e4   # 10 km from the map's origin
MAX_SIZE_M = 100.0       # a box's extent along an axis
MAX_LABEL_CHARS = 80     # a label is a name, and it goes into every prompt


def point_problem(values: tuple[float, ...]) -> str | None:
    """What is wrong with a position, or None."""
    if any(not math.isfinite(v) for v in values):
        return f"must be finite numbers, got {list(values)}"
    if max(abs(v) for v in values) > MAX_COORDINATE_M:
        return f"must lie within {MAX_COORDINATE_M:.0f} m of the origin, got {list(values)}"
    return None


def size_problem(values: tuple[float, ...]) -> str | None:
    """What is wrong with a box's extent, or None."""
    if any(not math.isfinite(v) for v in values):
        return f"must be finite numbers, got {list(values)}"
    if min(values) <= 0 or max(values) > MAX_SIZE_M:
        return f"must be positive and at most {MAX_SIZE_M:.0f} m in every axis, got {list(values)}"
    return None


def stack_label(label: str) -> str:
    """A label as the stack writes labels: Unicode-normalised, lower case, words joined by "_"
    ("Picture Frame", "picture-frame" -> picture_frame), whatever the mapper or detector wrote."""
    return "_".join(re.split(r"[\s_-]+", unicodedata.normalize("NFKC", label).casefold().strip(" \t_-")))


def stack_labels(scores: dict[str, float]) -> dict[str, float]:
    """Label scores under stack labels, the scores of labels that become one added up."""
    merged: dict[str, float] = {}
    for label, score in scores.items():
        key = stack_label(label)
        merged[key] = merged.get(key, 0.0) + score
    return merged


def printable(text: str) -> str:
    """The text with each character a terminal would act on (an escape sequence's ESC, a carriage
    return, other controls) written as its escape, so text from outside is shown, never obeyed;
    new lines stay."""
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


def label_problem(label: str) -> str | None:
    if not label.strip():
        return "an empty label"
    if len(label) > MAX_LABEL_CHARS or not label.isprintable():
        return f"a label must be at most {MAX_LABEL_CHARS} printable characters, got {label[:40]!r}..."
    return None


def _raise_on(check: Callable[[tuple[float, ...]], str | None]) -> Callable[[tuple[float, ...]], tuple[float, ...]]:
    def validate(values: tuple[float, ...]) -> tuple[float, ...]:
        if (problem := check(values)) is not None:
            raise ValueError(problem)
        return values
    return validate


# Field types for boxes in input files: a NaN, an infinity, a flat box or one out of any house is
# refused with its values.
Point3 = Annotated[tuple[float, float, float], AfterValidator(_raise_on(point_problem))]
Size3 = Annotated[tuple[float, float, float], AfterValidator(_raise_on(size_problem))]


def exactly_one(model: BaseModel, *fields: str) -> BaseModel:
    """For model validators: exactly one of these optional fields is set."""
    if sum(bool(getattr(model, name)) for name in fields) != 1:
        raise ValueError(f"set exactly one of {' or '.join(fields)}")
    return model
