"""`planner map show`: a top-down picture of a scene graph — rooms, furniture, objects with their
most probable labels, and the relations between them."""

from __future__ import annotations

import json
from pathlib import Path

from planner.core.errors import InputError
from planner.core.files import load_yaml
from planner.core.scene_graph import SceneGraph
from planner.core.voxeland import load_voxeland
from planner.core.world import load_rooms

LABELLED_OBJECTS_MAX = 200   # beyond this many objects, labels would cover the picture
RELATION_STYLES = {"on": ("tab:green", "-"), "in": ("tab:blue", "-"), "under": ("tab:purple", "--"),
                   "near": ("0.55", ":")}


def load_scene(path: Path, rooms_path: Path | None = None) -> tuple[SceneGraph, list[str]]:
    """A scene graph from a Voxeland map (+ room polygons), a saved scene graph, a world or a
    scenario file; also the problems found in the file (entries left out)."""
    from planner.core.world import load_world
    from planner.sim.simulated_world import load_scenario

    if path.suffix.lower() in (".yaml", ".yml"):
        data = load_yaml(path)
        world = load_scenario(path).world if isinstance(data, dict) and "world" in data else load_world(path)
        return SceneGraph.from_world(world), []
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid JSON: {error}") from None
    if isinstance(data, dict) and "graph" in data:     # saved by perception (perception.state_file)
        data = data["graph"]
    if isinstance(data, dict) and "nodes" in data:
        return scene_from_saved(data, str(path)), []
    semantic_map = load_voxeland(path)
    rooms = load_rooms(rooms_path) if rooms_path else None
    return SceneGraph.from_voxeland(semantic_map, rooms), semantic_map.errors


def scene_from_saved(data: dict, source: str) -> SceneGraph:
    try:
        return SceneGraph.from_dict(data)
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"{source}: not a saved scene graph: {error!r}") from None


def census(scene: SceneGraph) -> str:
    """What a scene graph holds, counted: "2 rooms, 5 furniture, 4 objects, 1 person"."""
    people = len(scene.people())
    return (f"{len(scene.rooms())} rooms, {len(scene.furniture())} furniture, {len(scene.objects())} objects"
            + (f", {people} {'person' if people == 1 else 'people'}" if people else ""))


def draw(scene: SceneGraph, out: Path, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle, Rectangle
    from matplotlib.patches import Polygon as PolygonPatch

    rooms = [scene.entity(r) for r in scene.rooms()]
    furniture, objects = scene.furniture(), scene.objects()
    xs = [x for r in rooms for x, _ in r.polygon] or [0.0, 1.0]
    ys = [y for r in rooms for _, y in r.polygon] or [0.0, 1.0]
    width, height = max(xs) - min(xs), max(ys) - min(ys)
    scale = min(16 / max(width, 1e-3), 12 / max(height, 1e-3), 1.6)
    fig, ax = plt.subplots(figsize=(max(6.0, width * scale + 2), max(4.5, height * scale + 1.5)))
    palette = plt.get_cmap("Pastel1")
    for index, room in enumerate(rooms):
        ax.add_patch(PolygonPatch(room.polygon, closed=True, facecolor=palette(index % 9), edgecolor="0.3", lw=1.2, alpha=0.6))
        corner = (min(x for x, _ in room.polygon) + 0.1, max(y for _, y in room.polygon) - 0.1)
        ax.text(*corner, room.id, ha="left", va="top", fontsize=11, color="0.3", weight="bold", zorder=5)
    for item in furniture:
        ax.add_patch(Rectangle((item.center[0] - item.size[0] / 2, item.center[1] - item.size[1] / 2), item.size[0],
                               item.size[1], facecolor="burlywood", edgecolor="saddlebrown", lw=1))
        ax.text(item.center[0], item.center[1] - item.size[1] / 2 - 0.05, f"{item.id} ({item.label})", ha="center",
                va="top", fontsize=7, color="saddlebrown")
    for person in scene.people():
        ax.add_patch(Circle(person.center[:2], person.size[0] / 2, facecolor="gold", edgecolor="darkgoldenrod", zorder=3))
        ax.text(person.center[0], person.center[1] + person.size[1] / 2 + 0.05, person.id, ha="center", va="bottom",
                fontsize=7, color="darkgoldenrod")
    labels = sorted({o.label for o in objects})
    colors = plt.get_cmap("tab20")
    color_of = {label: colors(i % 20) for i, label in enumerate(labels)}
    for obj in objects:
        for relation, target in scene.relation_edges(obj.id):
            color, style = RELATION_STYLES[relation]
            other = scene.entity(target)
            ax.plot([obj.center[0], other.center[0]], [obj.center[1], other.center[1]], color=color, ls=style, lw=0.8,
                    zorder=2)
        missing = obj.status != "seen"
        ax.add_patch(Rectangle((obj.center[0] - obj.size[0] / 2, obj.center[1] - obj.size[1] / 2), obj.size[0], obj.size[1],
                               facecolor="none" if missing else color_of[obj.label], edgecolor=color_of[obj.label],
                               ls="--" if missing else "-", lw=1.2, zorder=3))
    if len(objects) <= LABELLED_OBJECTS_MAX:
        for obj in objects:
            top = ", ".join(f"{label} {p:.2f}" for label, p in list(obj.labels.items())[:2])
            status = "" if obj.status == "seen" else f" [{obj.status}]"
            ax.annotate(f"{obj.id}: {top}{status}", (obj.center[0], obj.center[1]), xytext=(4, 4),
                        textcoords="offset points", fontsize=6, zorder=4)
    handles = [Line2D([], [], color=c, ls=s, label=r) for r, (c, s) in RELATION_STYLES.items()]
    handles += [Rectangle((0, 0), 1, 1, facecolor="burlywood", edgecolor="saddlebrown", label="furniture"),
                Circle((0, 0), 1, facecolor="gold", edgecolor="darkgoldenrod", label="person"),
                Rectangle((0, 0), 1, 1, facecolor="none", edgecolor="k", ls="--", label="missing / held")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, title="relations", title_fontsize=8)
    ax.set_aspect("equal")
    ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
    ax.set_xlabel("x (m, map frame)")
    ax.set_ylabel("y (m)")
    note = "" if len(objects) <= LABELLED_OBJECTS_MAX else f"; labels hidden above {LABELLED_OBJECTS_MAX} objects"
    ax.set_title(f"{title}\n{census(scene)}{note}", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)
