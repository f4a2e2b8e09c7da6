"""Perception results as the short text the planner reads: ids first, labels with their
probability when uncertain, and where things are."""

from __future__ import annotations

from collections import Counter

from planner.core.scene_graph import Entity, RobotSnapshot


def _label(entity: Entity) -> str:
    top = entity.labels.get(entity.label, 1.0)
    label = entity.label if top >= 0.8 else f"{entity.label} {top:.0%}"
    return f"{label}, {entity.state}" if entity.state else label


def unknown_room_text(room: str, rooms: list[str]) -> str:
    return f"unknown room {room!r}; rooms: {', '.join(rooms)}"


def rooms_text(rooms: list[str]) -> str:
    return "Rooms: " + ", ".join(rooms) if rooms else "No rooms are known."


# A planner's prompt must not grow with the house: past LISTED_OBJECTS objects a room's contents
# list a few of the ones the planner is after and count the others by label.
LISTED_OBJECTS = 12
LISTED_IN_FOCUS = 5
COUNTED_LABELS = 8


def _counted(entities: list[Entity]) -> str:
    counts = Counter(e.label for e in entities)
    shown = ", ".join(f"{n} {label}" for label, n in counts.most_common(COUNTED_LABELS))
    more = len(counts) - COUNTED_LABELS
    return shown + (f" and {more} other kinds" if more > 0 else "")


def room_contents_text(room: str, entities: list[Entity], relations: list[str], focus: frozenset[str] = frozenset()) -> str:
    """What is in a room; in a crowded room, objects with a label in `focus` by id (at most
    LISTED_IN_FOCUS of them) and the rest counted."""
    furniture = [f"{e.id} ({_label(e)})" for e in entities if e.kind == "furniture"]
    objects = [e for e in entities if e.kind == "object"]
    placed = {r.split(" ", 1)[0]: r for r in relations}
    lines = [f"In the {room}: furniture " + (", ".join(furniture) or "none") + "."]
    listed = objects if len(objects) <= LISTED_OBJECTS else [e for e in objects if e.label in focus][:LISTED_IN_FOCUS]
    if listed:
        lines.append("Objects: " + "; ".join(f"{e.id} ({_label(e)}) " + placed.get(e.id, "").split(" ", 1)[-1]
                                             for e in listed) + ".")
    others = [e for e in objects if e not in listed]
    if others:
        lines.append(("Also " if listed else "Objects: ") + _counted(others) + ".")
    if not objects:
        lines.append("No objects seen.")
    return " ".join(lines)


def entity_text(entity: Entity, relations: list[str]) -> str:
    where = "; ".join(relations) or f"in the {entity.room}"
    return f"{entity.id} ({_label(entity)}, {entity.kind}) in the {entity.room}: {where}."


def found_text(query: str, entities: list[Entity]) -> str:
    """Matches best first; past LISTED_OBJECTS of them, the rest are counted."""
    if not entities:
        return f"Nothing matching {query!r} is known."
    listed = entities[:LISTED_OBJECTS]
    more = len(entities) - len(listed)
    return (f"Matching {query!r}: " + ", ".join(f"{e.id} ({_label(e)}) in the {e.room}" for e in listed)
            + (f", and {more} more" if more else "") + ".")


def search_text(query: str, entities: list[Entity], explanation: str, error: str = "") -> str:
    """What a search of the map in plain words found, best first, and why; or why it failed."""
    if error:
        return f"The map search failed: {error}"
    why = f" ({explanation.rstrip('.')})" if explanation else ""
    if not entities:
        return f"Nothing in the map fits {query!r}{why}."
    return (f"For {query!r} the map has, best first: "
            + ", ".join(f"{e.id} ({_label(e)}) in the {e.room}" for e in entities[:LISTED_OBJECTS]) + f"{why}.")


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
