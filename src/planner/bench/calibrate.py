"""`planner calibrate objects`: the object finder's threshold for "something fits", for one model,
chosen on development data of both sources to a stated error rate, and written with its data and
figures to calibration/MODEL.yaml beside the config, where the stack reads it (wiring.finder_settings).

The finder runs once over the queries, calibrating: it reads the kinds twice for every query and
keeps how well each item fitted each reading. The answer at any threshold follows from that
evidence alone (FitEvidence.answer, the same code the finder answers with), so every threshold of
the sweep is scored without asking the model again. The one chosen has the best mean Top-1 over
the sources among those whose "nothing fits" answers are right at least `target` of the time on
every source: saying nothing fits when something does is the error a person notices."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from pathlib import Path

import yaml

from planner.bench.objects import abstention, score
from planner.core.object_finder import FinderSettings, FitEvidence

THRESHOLDS = tuple(round(0.30 + 0.01 * step, 2) for step in range(51))   # the sweep: 0.30 to 0.80
SETTING = "kind_threshold"
MEANING = ("an item fits a query when its fit to a kind the model names for it (label-kind embedding similarity, "
           "less kind_step per kind named before it, times the label's share of the top label to the power "
           "share_power) reaches this; no item: nothing fits")


def source_of(map_name: str) -> str:
    """Which development source a map comes from, by its name (scan-S: the second source)."""
    return "scan" if map_name.startswith("scan-") else "household"


def scored_at(records: list[dict], threshold: float, settings: FinderSettings) -> list[dict]:
    """The records as they would have been answered at `threshold`."""
    scored = []
    for record in records:
        answer = FitEvidence.from_record(record["evidence"]).answer(threshold, settings)
        scored.append({"answer": answer, "truth": record["truth"], **score(answer, record["truth"])})
    return scored


def figures(records: list[dict], threshold: float, settings: FinderSettings) -> dict:
    scored = scored_at(records, threshold, settings)
    found = abstention(scored)
    return {"queries": len(scored), "top1": round(100 * sum(r["top1"] for r in scored) / len(scored), 1),
            "top1_answerable": found["top1_answerable"], "nothing_precision": found["abstention_precision"],
            "nothing_recall": found["abstention_recall"], "nothing_said": found["abstained"]}


def sweep(by_source: dict[str, list[dict]], settings: FinderSettings) -> dict[float, dict[str, dict]]:
    return {threshold: {source: figures(records, threshold, settings) for source, records in by_source.items()}
            for threshold in THRESHOLDS}


def choose(table: dict[float, dict[str, dict]], target: float, before: float) -> tuple[float, bool]:
    """The threshold with the best mean Top-1 over the sources among those whose "nothing" precision
    reaches `target` (%) on each (no "nothing" answer at all counts as precise). When none does, no
    trade is made on the sources' behalf: of the thresholds at least as good as `before` in Top-1 and
    in "nothing" precision on every source, the best in mean Top-1 (`before` itself when none is
    better). Whether the target was reached."""
    def precision(row: dict) -> float:
        return _precise(row["nothing_precision"])

    def top1(threshold: float) -> tuple[float, float]:
        rows = table[threshold].values()
        return statistics.mean(row["top1"] for row in rows), min(row["top1"] for row in rows)
    meeting = [t for t, rows in table.items() if all(precision(row) >= target for row in rows.values())]
    if meeting:
        return max(meeting, key=top1), True
    if before not in table:
        return max(table, key=lambda t: (min(precision(row) for row in table[t].values()), top1(t))), False
    no_worse = [t for t, rows in table.items()
                if all(row["top1"] >= table[before][source]["top1"]
                       and precision(row) >= precision(table[before][source]) for source, row in rows.items())]
    return max(no_worse, key=lambda t: (top1(t), t == before)), False


def _precise(precision: float | None) -> float:
    """A "nothing" precision, where none said counts as precise."""
    return 100.0 if precision is None else precision


def calibration_text(existing: str | None, model: str, section: str, values: dict, how: dict[str, dict],
                     answers_at: str) -> str:
    """The calibration file with `section`'s `values` (the settings the stack reads) and how each was
    chosen (`how`, by setting; `answers_at`: the commit of the code whose answers it was chosen
    from) written in; what other commands wrote to it is kept."""
    body = yaml.safe_load(existing) if existing else None
    body = body if isinstance(body, dict) else {}
    written = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    # Sections of settings are kept; a single value beside them (what an older writer put there) is not.
    sections = {key: value for key, value in body.items() if isinstance(value, dict) and key != "calibration"}
    sections[section] = {**sections.get(section, {}), **values}
    ordered = {"model": model, **sections,
               "calibration": {**(body.get("calibration") or {}),
                               **{setting: {"answers_at": answers_at, "written": written, **entry}
                                  for setting, entry in how.items()}}}
    header = (f"# Written by planner calibrate for {model}: run it again rather than edit this file.\n"
              f"# The stack reads the sections before `calibration`, which says how each value was chosen.\n")
    return header + yaml.dump(ordered, Dumper=_PlainDumper, sort_keys=False, width=120)


class _PlainDumper(yaml.SafeDumper):
    """Writes a value met twice in full each time, not as an anchor and alias a reader must follow."""

    def ignore_aliases(self, data) -> bool:
        return True


def objects_calibration(chosen: float, reached: bool, target: float, before: float, table: dict[float, dict[str, dict]],
                        data: dict[str, str]) -> tuple[dict, dict]:
    """The object finder's section and how its value was chosen."""
    return {SETTING: chosen}, {SETTING: {
        "meaning": MEANING,
        "rule": f"the best mean Top-1 over the sources whose \"nothing fits\" answers are right at least "
                f"{target:g}% of the time on each source",
        "target_reached": reached, "data": data, "reached": table[chosen],
        "before": {"value": before, **table.get(before, {})},
        "swept": f"{THRESHOLDS[0]} to {THRESHOLDS[-1]} by 0.01"}}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = {float(t): rows for t, rows in results["sweep"].items()}
    thresholds = sorted(table)
    figure, (top1, precision) = plt.subplots(1, 2, figsize=(11, 4))
    for source in results["data"]:
        top1.plot(thresholds, [table[t][source]["top1"] for t in thresholds], label=f"{source}: Top-1")
        top1.plot(thresholds, [table[t][source]["top1_answerable"] or 0 for t in thresholds], "--",
                  label=f"{source}: Top-1 where an answer exists")
        precision.plot(thresholds, [_precise(table[t][source]["nothing_precision"]) for t in thresholds],
                       label=f"{source}: \"nothing\" precision")
    for axes in (top1, precision):
        axes.axvline(results["chosen"], color="black", lw=0.8, label=f"chosen {results['chosen']}")
        axes.axvline(results["before"], color="grey", lw=0.8, ls=":", label=f"before {results['before']}")
        axes.set_xlabel(SETTING)
        axes.set_ylabel("%")
        axes.set_ylim(0, 100)
        axes.legend(fontsize=7)
    precision.axhline(results["target"], color="red", lw=0.8)
    figure.suptitle(f"object finder calibration, {results['model']}")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
