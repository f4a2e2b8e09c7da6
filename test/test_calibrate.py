"""planner calibrate: a model's tuned settings chosen on development data of both sources, written to
its calibration file, and read by the stack in place of the defaults."""

import json

import pytest
import yaml

from conftest import write_config
from planner.bench import calibrate
from planner.cli import main
from planner.config import load_config
from planner.core.errors import InputError
from planner.wiring import finder_settings, planner_settings


def row(top1, precision):
    return {"top1": top1, "nothing_precision": precision}


def test_the_threshold_chosen_has_the_best_top1_where_nothing_is_said_precisely_enough_on_every_source():
    table = {0.5: {"household": row(60, 90), "scan": row(50, 80)},
             0.55: {"household": row(70, 80), "scan": row(55, 76)},
             0.6: {"household": row(75, 85), "scan": row(58, 60)},    # the best Top-1, but too often wrong on scan
             0.65: {"household": row(65, None), "scan": row(40, 75)}}  # no "nothing" at all counts as precise
    assert calibrate.choose(table, 75, 0.6) == (0.55, True)
    # None reaches 95: only a value at least as good as the one before on every source and in both is taken.
    assert calibrate.choose(table, 95, 0.6) == (0.6, False)
    table[0.62] = {"household": row(76, 85), "scan": row(58, 61)}
    assert calibrate.choose(table, 95, 0.6) == (0.62, False)
    assert calibrate.choose(table, 95, 0.575) == (0.5, False)   # a value not swept: the most precise


def test_calibrating_on_both_sources_writes_the_models_file_and_the_stack_reads_it(tmp_path, capsys):
    for source, seeds, items in (("household", "3", "12"), ("scan", "3", "40")):
        assert main(["bench", "generate", "objects", "--source", source, "--seeds", seeds, "--items", items,
                     "--out", str(tmp_path / source)]) == 0
    config = write_config(tmp_path, object_finder={"name_check": 1.0, "constraints": False})
    # The scripted model names the same kinds for every query, twice.
    (tmp_path / "replies.yaml").write_text(json.dumps([{"need": "x", "kinds": ["chair", "cup", "bed"]}] * 400))
    out = tmp_path / "calibration" / "scripted replies.yaml"
    assert main(["calibrate", "objects", "--data", str(tmp_path / "household"), str(tmp_path / "scan"),
                 "--llm", "scripted", "--replies", str(tmp_path / "replies.yaml"), "--config", str(config),
                 "--results", str(tmp_path / "results")]) == 0
    said = capsys.readouterr().out
    written = yaml.safe_load(out.read_text())
    chosen = written["object_finder"]["kind_threshold"]
    assert calibrate.THRESHOLDS[0] <= chosen <= calibrate.THRESHOLDS[-1] and f"kind_threshold {chosen}" in said
    how = written["calibration"]["kind_threshold"]
    assert set(how["data"]) == set(how["reached"]) == {"household", "scan"}
    assert "1 map (scan-3), 2" in how["data"]["scan"] and how["before"]["value"] == 0.6
    sweep = json.loads((tmp_path / "results" / "calibration-objects-scripted replies.json").read_text())
    assert len(sweep["sweep"]) == len(calibrate.THRESHOLDS)
    assert (tmp_path / "results" / "calibration-objects-scripted replies.png").stat().st_size > 10_000

    # Chosen again from the answers kept, without the model.
    assert main(["calibrate", "objects", "--records", str(tmp_path / "results" / "calibration-objects-scripted "
                                                                                 "replies-records.json"),
                 "--config", str(config), "--out", str(tmp_path / "again.yaml"), "--results", str(tmp_path / "r2")]) == 0
    again = yaml.safe_load((tmp_path / "again.yaml").read_text())
    assert again["calibration"]["kind_threshold"]["reached"] == how["reached"]
    assert main(["calibrate", "objects", "--config", str(config)]) == 2

    # The stack takes the calibrated value, unless the config sets one itself.
    settings, source = finder_settings(load_config(config), "scripted replies")
    assert settings.kind_threshold == chosen and str(out) in source
    assert finder_settings(load_config(config), "another model")[0].kind_threshold == 0.6
    (tmp_path / "own" / "calibration").mkdir(parents=True)
    (tmp_path / "own" / "calibration" / out.name).write_text(out.read_text())
    explicit = write_config(tmp_path / "own", object_finder={"kind_threshold": 0.7})
    assert finder_settings(load_config(explicit), "scripted replies")[0].kind_threshold == 0.7
    out.write_text("object_finder: {kind_treshold: 0.5}\n")
    with pytest.raises(InputError, match="scripted replies.yaml: object_finder.kind_treshold is no object finder"):
        finder_settings(load_config(config), "scripted replies")


def test_test_data_is_refused_for_calibration(tmp_path, capsys):
    (tmp_path / "d" / "maps").mkdir(parents=True)
    assert main(["bench", "generate", "objects", "--seeds", "7", "--out", str(tmp_path / "d")]) == 0
    for folder in ("maps", "queries", "truth"):
        for path in (tmp_path / "d" / folder).iterdir():
            path.rename(path.with_name(path.name.replace("home-7", "home-2007")))
    assert main(["calibrate", "objects", "--data", str(tmp_path / "d"), "--llm", "scripted", "--replies",
                 str(tmp_path / "none.yaml")]) == 2
    assert "map home-2007: seeds: 2007 is a test seed" in capsys.readouterr().err


def checks_results(model, names, rooms):
    return {"benchmark": "checks", "llm": {"model": model}, "data": "checks.yaml", "machine": {"source": "abc1234"},
            "records": {"needs": [], "names": names, "rooms": rooms}}


def test_the_name_and_room_checks_are_calibrated_to_a_stated_rate_of_words_read_as_what_the_home_lacks(tmp_path):
    """The lowest threshold at which at most 10% of the words for things the home lacks are read as
    one of its labels, on all sources together and on each with cases enough to tell 10%; written
    beside the object finder's value, which is kept."""
    def name(label, **asked):
        return {"word": "w", "label": label, "asked": asked}

    def room(room, chosen, p_yes):
        return {"word": "w", "room": room, "chosen": chosen, "p_yes": p_yes}
    household = checks_results("m", [name("sofa", sofa=0.7, bed=0.2), *[name(None, sofa=0.55)] * 9,
                                     name(None, sofa=0.62)],
                               [room("kitchen", "kitchen", 0.8), room(None, "kitchen", 0.3)])
    scan = checks_results("m", [name("bed", bed=0.66), name(None, bed=0.64, sofa=None), name(None, bed=0.3)],
                          [room("office", "study", 0.4), room(None, "office", 0.2)])
    for source, results in (("household", household), ("scan", scan)):
        (tmp_path / f"{source}.json").write_text(json.dumps(results))
    out = tmp_path / "calibration" / "m.yaml"
    out.parent.mkdir()
    out.write_text("object_finder: {kind_threshold: 0.5}\n")
    assert main(["calibrate", "checks", "--checks", f"household={tmp_path / 'household.json'}",
                 f"scan={tmp_path / 'scan.json'}", "--out", str(out), "--results", str(tmp_path / "results")]) == 0
    written = yaml.safe_load(out.read_text())
    # From 0.56 one near miss in ten is read on household. Scan's two are too few to tell 10% alone,
    # so they count with household's: two in twelve are read until 0.63.
    assert written["planner"]["other_name_threshold"] == 0.63
    # A room read wrongly (0.4) counts as an error, as a room the home lacks would.
    assert written["planner"]["room_name_threshold"] == 0.41
    assert written["object_finder"] == {"kind_threshold": 0.5}      # what calibrate objects wrote is kept
    how = written["calibration"]["other_name_threshold"]
    assert how["target_reached"] and how["reached"]["scan"]["other_names_read"] == 100.0
    assert how["reached"]["all sources"]["near_misses_read"] == 8.3
    assert how["before"]["value"] == 0.6 and set(how["data"]) == {"household", "scan"}
    assert how["answers_at"] == "abc1234"      # the code whose answers the value was chosen from
    assert (tmp_path / "results" / "calibration-checks-m.png").stat().st_size > 10_000
    # The stack takes the calibrated values for that model, and the finder's as before; a config that
    # sets a value itself keeps it.
    config = load_config(write_config(tmp_path))
    settings, source = planner_settings(config, "m")
    assert (settings.other_name_threshold, settings.room_name_threshold) == (0.63, 0.41) and str(out) in source
    assert finder_settings(config, "m")[0].kind_threshold == 0.5
    assert planner_settings(config, "another model")[0].other_name_threshold == 0.6
    explicit = load_config(write_config(tmp_path, planner={"other_name_threshold": 0.7}))
    assert planner_settings(explicit, "m")[0].other_name_threshold == 0.7
    # One source is no calibration, nor are two models' results.
    assert main(["calibrate", "checks", "--checks", f"household={tmp_path / 'household.json'}"]) == 2
    (tmp_path / "other.json").write_text(json.dumps({**scan, "llm": {"model": "other"}}))
    assert main(["calibrate", "checks", "--checks", f"household={tmp_path / 'household.json'}",
                 f"scan={tmp_path / 'other.json'}", "--out", str(out)]) == 2
    assert main(["calibrate", "checks", "--checks", "scan"]) == 2
