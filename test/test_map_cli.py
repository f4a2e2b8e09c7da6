"""`planner map show` and `planner bench perception` as a user runs them."""

import json

from conftest import CONFIG
from planner.cli import main

MAP = CONFIG / "maps" / "apartment_voxeland.json"
ROOMS = CONFIG / "maps" / "apartment_rooms.yaml"


def test_map_show_draws_a_voxeland_map_with_its_rooms(tmp_path, capsys):
    out = tmp_path / "map.png"
    assert main(["map", "show", str(MAP), "--rooms", str(ROOMS), "--out", str(out)]) == 0
    assert out.stat().st_size > 20_000 and out.read_bytes()[:4] == b"\x89PNG"
    assert "3 rooms, 10 furniture, 14 objects" in capsys.readouterr().out


def test_map_show_draws_worlds_scenarios_and_saved_graphs(tmp_path, capsys):
    from planner.core.scene_graph import SceneGraph
    from planner.core.scene_store import SceneStore
    from planner.core.world import load_world

    assert main(["map", "show", str(CONFIG / "scenarios" / "kitchen_bottle_moved.yaml"), "--out", str(tmp_path / "a.svg")]) == 0
    store = SceneStore(tmp_path / "saved.json", "prior")
    store.write(store.snapshot(SceneGraph.from_world(load_world(CONFIG / "worlds" / "kitchen_bedroom.yaml"))))
    assert main(["map", "show", str(tmp_path / "saved.json"), "--out", str(tmp_path / "b.png")]) == 0
    assert capsys.readouterr().out.count("2 rooms, 5 furniture, 4 objects") == 2


def test_map_show_names_the_bad_file_entry_and_field(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text('{"instances": {')
    assert main(["map", "show", str(broken), "--out", str(tmp_path / "x.png")]) == 2
    assert "broken.json: not valid JSON" in capsys.readouterr().err
    rooms = tmp_path / "rooms.yaml"
    rooms.write_text("kitchen: [[0, 0], [1, 0]]\n")
    assert main(["map", "show", str(MAP), "--rooms", str(rooms), "--out", str(tmp_path / "x.png")]) == 2
    assert "rooms.yaml: 0.polygon" in capsys.readouterr().err
    partly = tmp_path / "partly.json"
    partly.write_text(json.dumps({"instances": {
        "obj1": {"bbox": {"center": [1, 1, 0.4], "size": [1, 1, 0.8]}, "n_observations": 3, "results": {"table": 9}},
        "obj2": {"bbox": {"center": [1, 1, 0.9], "size": [0.1, 0.1, -0.2]}, "n_observations": 1, "results": {"cup": 2}}}}))
    assert main(["map", "show", str(partly), "--out", str(tmp_path / "y.png")]) == 0
    captured = capsys.readouterr()
    assert "instance obj2: bbox.size" in captured.err and "1 entries skipped" in captured.out


def test_bench_perception_writes_results_and_a_plot(tmp_path):
    assert main(["bench", "perception", "--sizes", "10", "100", "--repeat", "1", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "perception.json").read_text())
    assert set(results["sizes"]) == {"10", "100"}
    entry = results["sizes"]["100"]
    assert entry["fusion"]["detections"] >= 3000 and entry["queries"]["get_object"]["median_ms"] > 0
    assert results["machine"]["cores"] >= 1 and "targets_met" in results["summary"]
    assert (tmp_path / "perception.png").read_bytes()[:4] == b"\x89PNG"
