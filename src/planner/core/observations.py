"""Perception results as the short text the planner reads: ids first, labels with their
probability when uncertain, and where things are."""

from __future__ import annotations

from planner.core.scene_graph import Entity, RobotSnapshot


def _label(entity: Entity) -> str:
    top = entity.labels.get(entity.label, 1.0)
    label = entity.label if top >= 0.8 else f"{entity.label} {top:.0%}"
    return f"{label}, {entity.state}" if entity.state else label


def unknown_room_text(room: str, rooms: list[str]) -> str:
    return f"unknown room {room!r}; rooms: {', '.join(rooms)}"


def rooms_text(rooms: list[str]) -> str:
    return "Rooms: " + ", ".join(rooms) if rooms else "No rooms are known."


def room_contents_text(room: str, entities: list[Entity], relations: list[str]) -> str:
    furniture = [f"{e.id} ({_label(e)})" for e in entities if e.kind == "furniture"]
    objects = [e for e in entities if e.kind == "object"]
    placed = {r.split(" ", 1)[0]: r for r in relations}
    lines = [f"In the {room}: furniture " + (", ".join(furniture) or "none") + "."]
    if objects:
        lines.append("Objects: " + "; ".join(f"{e.id} ({_label(e)}) " + placed.get(e.id, "").split(" ", 1)[-1]
                                             for e in objects) + ".")
    else:
        lines.append("No objects seen.")
    return " ".join(lines)


def entity_text(entity: Entity, relations: list[str]) -> str:
    where = "; ".join(relations) or f"in the {entity.room}"
    return f"{entity.id} ({_label(entity)}, {entity.kind}) in the {entity.room}: {where}."


def found_text(query: str, entities: list[Entity]) -> str:
    if not entities:
        return f"Nothing matching {query!r} is known."
    return f"Matching {query!r}: " + ", ".join(f"{e.id} ({_label(e)}) in the {e.room}" for e in entities) + "."


def robot_text(robot: RobotSnapshot | None) -> str:
    if robot is None:
        return "The robot state is not known yet."
    held = [f"{arm} arm holds {obj}" for arm, obj in robot.held.items() if obj]
    free = [arm for arm, obj in robot.held.items() if not obj]
    parts = [f"The robot is in the {robot.room} at ({robot.pose.x:.1f}, {robot.pose.y:.1f})"]
    parts += held
    if free:
        parts.append("free arms: " + ", ".join(free))
    return "; ".join(parts) + "."
