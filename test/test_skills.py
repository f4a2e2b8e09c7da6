import pytest

from planner.core.files import InputError
from planner.core.geometry import Pose2D
from planner.core.skills import SkillSyntaxError, load_skill_library, parse_call


def at(scene, x, y, yaw=0.0, held=None):
    scene.robot.pose = Pose2D(x, y, yaw)
    scene.robot.room = scene.room_at(x, y)
    scene.robot.held = {"left": "", "right": "", **(held or {})}
    return scene


@pytest.mark.parametrize("text, message", [
    ("FLY(kitchen)", "unknown skill 'FLY'"),
    ("PICK(bottle_1)", "PICK takes 2 argument"),
    ("PICK(bottle_9, right)", "bottle_9.*no such thing"),
    ("PICK(table_1, right)", "is a furniture, expected object"),
    ("PICK(bottle_1, tail)", "not an arm"),
    ("GOTO kitchen", "not of the form"),
])
def test_malformed_calls_are_refused_with_a_reason(skill_planner, scene, text, message):
    with pytest.raises(SkillSyntaxError, match=message):
        skill_planner.parse(text, scene)


def test_calls_parse_with_spaces_and_quotes():
    assert parse_call(" PLACE( bottle_1 , 'table_3', right ) ") == ("PLACE", ["bottle_1", "table_3", "right"])
    assert parse_call("get_rooms()") == ("get_rooms", [])


def check(skill_planner, scene, text):
    return skill_planner.check_preconditions(skill_planner.parse(text, scene), scene)


def test_pick_preconditions(skill_planner, scene):
    assert check(skill_planner, at(scene, -3.0, 3.0), "PICK(bottle_1, right)").code == "OUT_OF_REACH"
    assert check(skill_planner, at(scene, 3.55, 1.5), "PICK(bottle_1, right)").ok
    assert check(skill_planner, at(scene, 3.55, 1.5, held={"right": "cup_1"}), "PICK(bottle_1, right)").code == "ARM_OCCUPIED"
    assert check(skill_planner, at(scene, 3.55, 1.5, held={"left": "bottle_1"}), "PICK(bottle_1, right)").code == "ALREADY_HOLDING"
    scene.mark_missing("bottle_1")
    assert check(skill_planner, at(scene, 3.55, 1.5), "PICK(bottle_1, right)").code == "OBJECT_LOCATION_UNKNOWN"


def test_an_object_heavier_than_the_arm_lifts_is_refused_before_the_robot_moves(skill_planner, scene):
    near = at(scene, 3.55, 1.5)
    assert near.entity("bottle_1").mass_kg == 0.6  # from the world file
    near.entity("bottle_1").mass_kg = 7.5
    refused = check(skill_planner, near, "PICK(bottle_1, right)")
    assert refused.code == "TOO_HEAVY" and refused.reason == "bottle_1 weighs about 7.5 kg; the right arm lifts at most 5.0 kg"
    # Mass unknown to perception: the library's typical mass of the label decides.
    near.entity("bottle_1").mass_kg = 0.0
    assert check(skill_planner, near, "PICK(bottle_1, right)").ok  # a bottle: about 0.8 kg
    near.entity("bottle_1").label = "dumbbell"
    assert check(skill_planner, near, "PICK(bottle_1, right)").code == "TOO_HEAVY"


def test_place_preconditions(skill_planner, scene):
    assert check(skill_planner, at(scene, -1.15, 4.0), "PLACE(bottle_1, table_3, right)").code == "NOT_HOLDING"
    assert check(skill_planner, at(scene, 3.0, 2.0, held={"right": "bottle_1"}), "PLACE(bottle_1, table_3, right)").code == "OUT_OF_REACH"
    assert check(skill_planner, at(scene, -1.15, 4.0, held={"right": "bottle_1"}), "PLACE(bottle_1, table_3, right)").ok


def test_goto_preconditions(skill_planner, scene):
    assert check(skill_planner, at(scene, -3.0, 3.0), "GOTO(bedroom)").code == "ALREADY_THERE"
    assert check(skill_planner, at(scene, -3.0, 3.0), "GOTO(kitchen)").ok
    assert check(skill_planner, at(scene, 3.55, 1.5), "GOTO(table_1)").code == "ALREADY_THERE"


def test_decomposition_into_commands(skill_planner, scene):
    at(scene, -3.0, 3.0)
    goto = skill_planner.decompose(skill_planner.parse("GOTO(table_1)", scene), scene)
    assert [c.name for c in goto] == ["navigate"]
    # The approach pose faces table_1 from the side the robot comes from, at the standoff.
    assert goto[0].base_pose.x == pytest.approx(4.5 - 0.6 - 0.35) and goto[0].base_pose.y == pytest.approx(1.5)
    assert goto[0].base_pose.yaw == pytest.approx(0.0)
    pick = skill_planner.decompose(skill_planner.parse("PICK(bottle_1, right)", scene), scene)
    assert [(c.name, c.arm, c.object_id) for c in pick] == [("approach", "right", "bottle_1"), ("grasp", "right", "bottle_1"),
                                                            ("lift", "right", "bottle_1")]
    assert pick[0].point == scene.entity("bottle_1").center
    place = skill_planner.decompose(skill_planner.parse("PLACE(bottle_1, table_3, right)", scene), scene)
    assert [c.name for c in place] == ["place_approach", "release", "retreat"]
    assert place[0].point[2] == pytest.approx(0.75)
    assert all(c.timeout_s > 0 for c in goto + pick + place)


def test_a_malformed_library_is_rejected_naming_skill_and_field(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text("""
command_timeouts_s: {navigate: 1, approach: 1, grasp: 1, lift: 1, place_approach: 1, release: 1, retreat: 1}
skills:
  PICK:
    description: pick
    params: [{name: object, type: object}]
    preconditions: [{check: teleport, args: [object]}]
    methods: [{command: grasp, object: "{object}"}]
""")
    with pytest.raises(InputError, match=r"skills.PICK.preconditions\[0\].check: unknown check 'teleport'"):
        load_skill_library(path)
    path.write_text("command_timeouts_s: {}\nskills: {GOTO: {params: [], methods: []}}\n")
    with pytest.raises(InputError, match="skills.GOTO.description"):
        load_skill_library(path)
