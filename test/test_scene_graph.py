import json
import math

import pytest

from planner.core.files import InputError
from planner.core.geometry import Pose2D
from planner.core.scene_graph import Detection, DetectionFrame, SceneGraph
from planner.core.voxeland import label_distribution, load_voxeland, parse_voxeland


def frame(sensor, *detections, fov=360.0, range_m=6.0):
    return DetectionFrame(sensor, fov, range_m, 1.0, [Detection({label: 0.9, "object": 0.1}, center, (0.07, 0.07, 0.25))
                                                       for label, center in detections])


def test_world_becomes_rooms_furniture_objects_with_relations(scene):
    assert scene.rooms() == ["bedroom", "kitchen"]
    assert [f.id for f in scene.furniture("kitchen")] == ["counter_1", "table_1", "table_2"]
    assert scene.support("bottle_1") == ("on", "table_1")
    assert scene.relations("bottle_1") == ["bottle_1 on table_1"]
    assert scene.entity("book_1").room == "bedroom"
    assert scene.graph.has_edge("kitchen", "bottle_1")


def test_find_matches_labels_and_plurals(scene):
    assert [e.id for e in scene.find("bottles")] == ["bottle_1"]
    assert {e.id for e in scene.find("a table please")} == {"table_1", "table_2", "table_3"}
    assert scene.find("unicorn") == []


def test_redetected_object_is_updated_not_duplicated(scene):
    bottle = scene.entity("bottle_1").center
    report = scene.fuse(frame(Pose2D(3.5, 1.5), ("bottle", (bottle[0] + 0.1, bottle[1], bottle[2]))))
    assert report.updated == ["bottle_1"] and not report.created
    assert math.isclose(scene.entity("bottle_1").center[0], bottle[0] + 0.1)


def test_object_moved_within_view_keeps_its_id_and_new_support(scene):
    table_2 = scene.entity("table_2")
    spot = (table_2.center[0] - 0.2, table_2.center[1], 0.75 + 0.125)
    apple = scene.entity("apple_1").center
    cup = scene.entity("cup_1").center
    report = scene.fuse(frame(Pose2D(3.5, 1.5), ("bottle", spot), ("apple", apple), ("cup", cup)))
    assert report.moved == ["bottle_1"] and not report.created
    assert scene.support("bottle_1") == ("on", "table_2")


def test_object_not_seen_where_expected_becomes_missing(scene):
    apple = scene.entity("apple_1").center
    cup = scene.entity("cup_1").center
    report = scene.fuse(frame(Pose2D(3.5, 1.5), ("apple", apple), ("cup", cup)))
    assert report.missing == ["bottle_1"]
    assert scene.entity("bottle_1").status == "missing"
    assert "may have been moved" in scene.relations("bottle_1")[0]


def test_objects_out_of_view_are_not_marked_missing(scene):
    # Looking away from table_1 with a narrow camera.
    report = scene.fuse(frame(Pose2D(3.5, 1.5, math.pi), fov=60))
    assert "bottle_1" not in report.missing


def test_a_second_object_of_a_known_label_is_created(scene):
    bottle = scene.entity("bottle_1").center
    report = scene.fuse(frame(Pose2D(3.5, 1.5), ("bottle", bottle), ("bottle", (5.6, 4.4, 0.9 + 0.125)),
                              ("apple", scene.entity("apple_1").center), ("cup", scene.entity("cup_1").center)))
    assert report.created == ["bottle_2"]
    assert scene.support("bottle_2") == ("on", "counter_1")


def test_round_trip_through_dict(scene):
    copy = SceneGraph.from_dict(json.loads(json.dumps(scene.to_dict())))
    assert copy.rooms() == scene.rooms()
    assert copy.support("bottle_1") == ("on", "table_1")
    assert copy.room_at(1.0, 1.0) == "kitchen"


def test_label_scores_become_a_distribution_of_the_top_labels():
    labels = label_distribution({"chair": 300.0, "sofa": 100.0, "table": 60.0, "bed": 40.0})
    assert list(labels) == ["chair", "sofa", "table"]
    assert labels["chair"] == pytest.approx(0.6)


VOXELAND = {"instances": {
    "obj0": {"bbox": {"center": [2, 2, 1.5], "size": [6, 5, 3]}, "n_observations": 900, "results": {"unknown": 500}},
    "obj1": {"bbox": {"center": [1, 1, 0.4], "size": [1.2, 0.8, 0.8]}, "n_observations": 40, "results": {"table": 310, "desk": 90}},
    "obj2": {"bbox": {"center": [1.1, 1.0, 0.9], "size": [0.1, 0.1, 0.2]}, "n_observations": 12, "results": {"cup": 50, "bottle": 45}},
    "obj3": {"bbox": {"center": [1.1, 1.0, 1.05], "size": [0.1, 0.1, 0.1]}, "n_observations": 3, "results": {"book": 9}},
    "obj4": {"bbox": {"center": [0, 0], "size": [1, 1, 1]}, "n_observations": 1, "results": {"chair": 3}},
    "obj5": {"bbox": {"center": [0, 0, 0], "size": [1, -1, 1]}, "n_observations": 1, "results": {"chair": 3}},
    "obj6": {"bbox": {"center": [0, 0, 0], "size": [1, 1, 1]}, "n_observations": 1, "results": {"chair": float("nan")}},
}}


def test_voxeland_map_keeps_ids_uncertainty_and_skips_structure():
    parsed = parse_voxeland(VOXELAND, "home.json")
    assert [i.id for i in parsed.structure] == ["obj0"]
    assert [i.id for i in parsed.instances] == ["obj1", "obj2", "obj3"]
    cup = parsed.instances[1]
    assert cup.labels == pytest.approx({"cup": 50 / 95, "bottle": 45 / 95})
    scene = SceneGraph.from_voxeland(parsed)
    assert scene.rooms() == ["map"]
    assert scene.entity("obj1").kind == "furniture"
    assert scene.support("obj2") == ("on", "obj1")


def test_bad_instances_are_named_and_the_rest_is_kept():
    parsed = parse_voxeland(VOXELAND, "home.json")
    text = "\n".join(parsed.errors)
    assert "home.json: instance obj4: bbox.center" in text
    assert "instance obj5: bbox.size" in text and "positive" in text
    assert "instance obj6: results" in text
    assert len(parsed.instances) == 3


def test_malformed_json_is_rejected_with_the_file_named(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"instances": {"obj1": ')
    with pytest.raises(InputError, match="broken.json: not valid JSON"):
        load_voxeland(path)
    path.write_text('{"objects": []}')
    with pytest.raises(InputError, match="'instances'"):
        load_voxeland(path)
