"""Voxeland JSON semantic maps: instances with a 3D box and accumulated label evidence.

Format: {"instances": {"objN": {"bbox": {"center": [x,y,z], "size": [dx,dy,dz]},
"n_observations": int, "results": {"label": score, ...}}}}. Scores are accumulated evidence, not
probabilities, so they are normalised into a distribution and the top labels kept. A bad instance
is reported by id and field and left out; the rest of the map is kept.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from planner.core.errors import InputError
from planner.core.files import Point3, Size3, bulk_allocation, describe_validation_error, label_problem, stack_labels

TOP_LABELS = 3
# An instance whose best label is this and that is at least this large is room structure
# (walls, floor) rather than an object.
STRUCTURE_LABEL = "unknown"
STRUCTURE_MIN_EXTENT_M = 2.5


class _Box(BaseModel):
    center: Point3
    size: Size3


class _Instance(BaseModel):
    bbox: _Box
    n_observations: int = Field(ge=0)
    results: dict[str, float] = Field(min_length=1)

    @field_validator("results")
    @classmethod
    def _scores(cls, value):
        for label, score in value.items():
            if not math.isfinite(score) or score < 0:
                raise ValueError(f"score of {label!r} must be a finite number >= 0, got {score}")
        if sum(value.values()) <= 0:
            raise ValueError("all label scores are zero")
        labels = stack_labels(value)
        for label in labels:
            if (problem := label_problem(label)) is not None:
                raise ValueError(problem)
        return labels


@dataclass
class MapInstance:
    id: str
    labels: dict[str, float]  # label -> probability, most probable first, top TOP_LABELS
    evidence: dict[str, float]  # the accumulated scores as mapped
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    n_observations: int

    @property
    def label(self) -> str:
        return next(iter(self.labels))


@dataclass
class VoxelandMap:
    instances: list[MapInstance] = field(default_factory=list)
    structure: list[MapInstance] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def label_distribution(scores: dict[str, float], top: int = TOP_LABELS) -> dict[str, float]:
    """Accumulated evidence -> probabilities of the `top` best labels (renormalised over all)."""
    total = sum(scores.values())
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:top]
    return {label: score / total for label, score in ranked}


def parse_voxeland(data: object, source: str = "map") -> VoxelandMap:
    if not isinstance(data, dict) or not isinstance(data.get("instances"), dict):
        raise InputError(f"{source}: expected an object with an 'instances' object")
    with bulk_allocation():
        return _parse_instances(data["instances"], source)


def _parse_instances(raw_instances: dict, source: str) -> VoxelandMap:
    result = VoxelandMap()
    for instance_id, raw in raw_instances.items():
        try:
            instance = _Instance.model_validate(raw)
        except ValidationError as error:
            result.errors.append(describe_validation_error(f"{source}: instance {instance_id}", error))
            continue
        parsed = MapInstance(
            id=instance_id,
            labels=label_distribution(instance.results),
            evidence=dict(instance.results),
            center=instance.bbox.center,
            size=instance.bbox.size,
            n_observations=instance.n_observations,
        )
        is_structure = parsed.label == STRUCTURE_LABEL and max(parsed.size[:2]) >= STRUCTURE_MIN_EXTENT_M
        (result.structure if is_structure else result.instances).append(parsed)
    return result


def load_voxeland(path: str | Path) -> VoxelandMap:
    path = Path(path)
    try:
        with bulk_allocation():
            data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid JSON: {error}") from None
    return parse_voxeland(data, str(path))
