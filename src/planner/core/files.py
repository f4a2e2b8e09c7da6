"""Reading YAML/JSON input files into pydantic models with errors that name file, entry and field."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)


class InputError(ValueError):
    """An input file or message that cannot be used; the text says what and where."""


def describe_validation_error(source: str, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"{source}: {where}: {item['msg']}")
    return "\n".join(lines)


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
