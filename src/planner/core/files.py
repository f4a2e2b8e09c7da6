"""Reading YAML/JSON input files into pydantic models with errors that name file, entry and field."""

from __future__ import annotations

import gc
import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from planner.core.errors import InputError

Model = TypeVar("Model", bound=BaseModel)


class StrictModel(BaseModel):
    """The base of every input model: a key the model does not know is an error, not ignored."""
    model_config = ConfigDict(extra="forbid")


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


def load_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid YAML: {error}") from None


def load_model(path: str | Path, model: type[Model]) -> Model:
    path = Path(path)
    try:
        return model.model_validate(load_yaml(path))
    except ValidationError as error:
        raise InputError(describe_validation_error(str(path), error)) from None


def _finite(values: tuple[float, ...]) -> tuple[float, ...]:
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"must be finite numbers, got {list(values)}")
    return values


def _positive(values: tuple[float, ...]) -> tuple[float, ...]:
    if min(_finite(values)) <= 0:
        raise ValueError(f"must be positive in every axis, got {list(values)}")
    return values


# Field types for boxes in input files: a NaN, an infinity or a flat box is refused with its values.
Point3 = Annotated[tuple[float, float, float], AfterValidator(_finite)]
Size3 = Annotated[tuple[float, float, float], AfterValidator(_positive)]


def exactly_one(model: BaseModel, *fields: str) -> BaseModel:
    """For model validators: exactly one of these optional fields is set."""
    if sum(bool(getattr(model, name)) for name in fields) != 1:
        raise ValueError(f"set exactly one of {' or '.join(fields)}")
    return model
