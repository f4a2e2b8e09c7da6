"""`planner calibrate checks`: the thresholds of the goal step's name and room checks, for one
model, chosen on the checks data of both sources (`planner bench checks` records) to a stated
error rate, and written to calibration/MODEL.yaml beside the object finder's.

Each threshold is a probability of yes the model must give before a word is read as a label or a
room it does not say. Its error is reading a word as something the home does not have: a near miss
(a thing no label is) taken for its likeliest label, or a room the home lacks taken for one it has.
The value chosen is the lowest (the most words read) at which that error is at most `target`
percent on all sources' cases together and on every source with cases enough to tell that rate
(at least 100/target of them: one error among fewer is already more than the target); when none
is, the value before is kept and the file says so."""

from __future__ import annotations

from collections.abc import Callable

from planner.bench.checks import answered_best, rooms_read, share

SWEEP = tuple(round(0.30 + 0.01 * step, 2) for step in range(51))   # 0.30 to 0.80


def name_row(records: dict, threshold: float) -> dict:
    """Other names read as their label, and near misses read as some label, at `threshold`."""
    others = [name for name in records["names"] if name["label"] is not None]
    misses = [name for name in records["names"] if name["label"] is None]
    return {"other_names_read": share([(name["asked"].get(name["label"]) or 0.0) >= threshold for name in others]),
            "near_misses_read": share([answered_best(name["asked"]) >= threshold for name in misses]),
            "other_names": len(others), "near_misses": len(misses)}


def room_row(records: dict, threshold: float) -> dict:
    """Other names of rooms read as their room or as another, and rooms the home lacks read as one."""
    rooms = records["rooms"]
    return {**rooms_read(rooms, threshold), "other_names": sum(room["room"] is not None for room in rooms),
            "absent": sum(room["room"] is None for room in rooms)}


ALL_SOURCES = "all sources"

# setting -> (its row at a threshold, the errors its target bounds with the count of cases each is
# a share of, what it gains, its meaning)
CALIBRATED: dict[str, tuple[Callable[[dict, float], dict], dict[str, str], str, str]] = {
    "other_name_threshold": (name_row, {"near_misses_read": "near_misses"}, "other_names_read",
                             "a word of a request no label's name fits is read as the label the model chooses "
                             "for it, or the one it names best, from this probability of yes that it is another "
                             "name for it"),
    "room_name_threshold": (room_row, {"wrong": "other_names", "absent_read": "absent"}, "right",
                            "a place where only a room can be is read as the room of the map the model chooses "
                            "for it from this probability of yes that it is another name for that room"),
}


def sweep(setting: str, by_source: dict[str, dict]) -> dict[float, dict[str, dict]]:
    """Each threshold's row on each source and on all sources' cases together (ALL_SOURCES)."""
    row = CALIBRATED[setting][0]
    pooled = {kind: [case for records in by_source.values() for case in records[kind]] for kind in ("names", "rooms")}
    return {threshold: {**{source: row(records, threshold) for source, records in by_source.items()},
                        ALL_SOURCES: row(pooled, threshold)}
            for threshold in SWEEP}


def choose(setting: str, table: dict[float, dict[str, dict]], target: float, before: float) -> tuple[float, bool]:
    """The lowest threshold whose errors are at most `target` (%) on all sources together and on
    each source with at least 100/target cases of the error, and True; else `before`, and False."""
    errors = CALIBRATED[setting][1]

    def within(source: str, row: dict, error: str) -> bool:
        told = source == ALL_SOURCES or row[errors[error]] * target >= 100
        return not told or (row[error] or 0.0) <= target

    meeting = [threshold for threshold, rows in sorted(table.items())
               if all(within(source, row, error) for source, row in rows.items() for error in errors)]
    return (meeting[0], True) if meeting else (before, False)


def how_chosen(setting: str, table: dict[float, dict[str, dict]], chosen: float, reached: bool, target: float,
               before: float, data: dict[str, str]) -> dict:
    """How a setting's value was chosen, for its calibration file: what it means, the rule, the data,
    and the rows it reached and had before."""
    _, errors, gain, meaning = CALIBRATED[setting]
    return {"meaning": meaning, "rule": f"the lowest value at which {' and '.join(errors)} is at most {target:g}% on "
            f"all sources together and on each with at least {100 / target:g} cases of it (most {gain})",
            "target_reached": reached, "data": data, "reached": table.get(chosen, {}),
            "before": {"value": before, **table.get(before, {})}, "swept": f"{SWEEP[0]} to {SWEEP[-1]} by 0.01"}


def plot(results: dict, path) -> None:
    """Per setting, each source's errors and gain against the threshold, with the target, the value
    chosen and the one before."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(results["sweep"])
    figure, axes_row = plt.subplots(1, len(settings), figsize=(6 * len(settings), 4), squeeze=False)
    for axes, setting in zip(axes_row[0], settings):
        table = {float(t): rows for t, rows in results["sweep"][setting].items()}
        thresholds = sorted(table)
        _, errors, gain, _ = CALIBRATED[setting]
        # One colour a source; the gain drawn solid, each error dashed or dotted.
        for colour, source in enumerate(table[thresholds[0]]):
            axes.plot(thresholds, [table[t][source][gain] or 0 for t in thresholds], color=f"C{colour}",
                      label=f"{source}: {gain}")
            for style, error in zip(("--", ":"), errors):
                axes.plot(thresholds, [table[t][source][error] or 0 for t in thresholds], style, color=f"C{colour}",
                          label=f"{source}: {error}")
        entry = results["calibration"][setting]
        axes.axhline(results["target"], color="grey", lw=0.8, label=f"target {results['target']:g}%")
        axes.axvline(results["chosen"][setting], color="black", lw=0.8, label=f"chosen {results['chosen'][setting]}")
        axes.axvline(entry["before"]["value"], color="grey", lw=0.8, ls=":", label=f"before {entry['before']['value']}")
        axes.set_xlabel(setting)
        axes.set_ylabel("%")
        axes.set_ylim(0, 100)
        axes.legend(fontsize=7)
    figure.suptitle(f"name and room check calibration, {results['model']}")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
