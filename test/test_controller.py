"""The controller's checks around each command: the world still as planned before it, the effect
seen by perception after it; and a failure found that way reaching the planner with its reason."""

import pytest

from conftest import CONFIG, ROBOT
from planner.config import load_config
from planner.core.controller import check_after, check_before
from planner.core.failures import REASONS
from planner.core.geometry import Pose2D
from planner.core.skills import Command
from planner.core.types import Outcome
from planner.core.world import load_world
from planner.sim.in_process import SimulatedRobot
from planner.wiring import load_skill_planner

APARTMENT = load_world(CONFIG / "worlds" / "apartment.yaml")


def robot_at(place: str) -> SimulatedRobot:
    return SimulatedRobot(APARTMENT.with_robot_at(place, ROBOT.standoff_m), [], load_skill_planner(load_config(CONFIG / "planner.yaml")))


def test_an_object_moved_or_gone_since_planning_is_a_world_change():
    robot = robot_at("table_1")
    scene, hazards = robot.scene(), robot.skills.hazards
    apple = scene.entity("apple_1").center
    assert check_before(Command("grasp", "left", "apple_1", point=apple), scene, hazards).ok
    check = check_before(Command("grasp", "left", "apple_1", point=(apple[0] + 0.6, apple[1], apple[2])), scene, hazards)
    assert (check.ok, check.code) == (False, "WORLD_CHANGED") and "apple_1 moved 0.60 m since the skill was planned" \
        in check.detail and "apple_1 on table_1" in check.detail
    scene.mark_missing("apple_1")
    check = check_before(Command("approach", "left", "apple_1", point=apple), scene, hazards)
    assert check.code == "WORLD_CHANGED" and "no longer seen" in check.detail
    assert check_before(Command("navigate", base_pose=Pose2D(0, 0)), scene, hazards).ok  # nothing to compare


def test_each_commands_effect_must_be_seen():
    robot = robot_at("table_1")
    scene = robot.scene()
    pose = scene.robot.pose
    assert check_after(Command("navigate", base_pose=Pose2D(pose.x + 0.1, pose.y)), scene).ok
    far = check_after(Command("navigate", base_pose=Pose2D(pose.x + 1.0, pose.y)), scene)
    assert far.code == "NOT_AT_GOAL" and "1.00 m from the goal" in far.detail
    grasp = check_after(Command("grasp", "left", "apple_1"), scene)
    assert grasp.code == "GRASP_NOT_CONFIRMED" and grasp.detail == "the left gripper holds nothing, not apple_1"
    assert check_after(Command("lift", "left", "apple_1"), scene).code == "GRASP_LOST"
    placed = check_after(Command("release", "left", "apple_1", "counter_1"), scene)
    assert placed.code == "PLACE_NOT_CONFIRMED" and "apple_1 is not seen on counter_1 (apple_1 on table_1)" in placed.detail
    assert check_after(Command("release", "left", "apple_1", "table_1"), scene).ok
    opened = check_after(Command("open", target_id="fridge_1"), scene)
    assert opened.code == "ARTICULATION_NOT_CONFIRMED" and "fridge_1 is closed, not open" in opened.detail
    assert check_after(Command("close", target_id="fridge_1"), scene).ok
    verified = check_after(Command("verify_grasp", "left", "apple_1"), scene)
    assert verified.code == "GRASP_NOT_CONFIRMED" and verified.detail == "the left gripper holds nothing, not apple_1"
    scene.robot.held["left"] = "apple_1"
    assert check_after(Command("verify_grasp", "left", "apple_1"), scene).ok
    kept = check_after(Command("wait_for_take", "left", "apple_1", "anna"), scene)
    assert kept.code == "HANDOVER_NOT_CONFIRMED" and kept.detail == "the left gripper still holds apple_1"


def test_a_grasp_the_camera_does_not_confirm_fails_the_skill_with_the_reason(monkeypatch):
    robot = robot_at("table_1")
    manipulate = robot.sim.manipulate

    def empty_handed(operation, arm, object_id, target_id, point):
        outcome = manipulate(operation, arm, object_id, target_id, point)
        if operation == "grasp":  # the gripper closed on nothing, yet the driver says fine
            robot.sim.held[arm] = ""
        return outcome
    monkeypatch.setattr(robot.sim, "manipulate", empty_handed)
    result = robot.execute_skill("PICK(apple_1, left)")
    assert not result.success and result.failure.code == "GRASP_NOT_CONFIRMED"
    assert result.failure.command == "grasp"
    assert result.failure.reason == "the grasp reported success, but the left gripper holds nothing, not apple_1"


def test_an_object_moved_while_the_arm_reaches_for_it_stops_the_grasp():
    robot = robot_at("table_1")
    run = robot.run

    def someone_takes_it(command):
        outcome = run(command)
        if command.name == "approach":
            robot.sim.move_object("apple_1", "counter_1")
            robot._pass(3.0)  # the camera watches meanwhile
        return outcome
    robot.run = someone_takes_it
    result = robot.execute_skill("PICK(apple_1, left)")
    assert not result.success and result.failure.code == "WORLD_CHANGED" and result.failure.command == "grasp"
    assert "apple_1 moved" in result.failure.reason and "apple_1 on counter_1" in result.failure.reason, result.failure
    assert robot.sim.held["left"] == ""  # it never closed the gripper on thin air


def test_a_handover_the_person_does_not_take_fails_with_the_reason(monkeypatch):
    """Anna does not take the apple: the gripper reports open, but the camera still sees it held."""
    from planner.core.world import Person

    world = APARTMENT.with_robot_at("table_1", ROBOT.standoff_m).model_copy(update={"people": [Person(id="anna", position=(3.0, 7.0))]})
    robot = SimulatedRobot(world, [], load_skill_planner(load_config(CONFIG / "planner.yaml")))
    assert robot.execute_skill("PICK(apple_1, left)").success
    monkeypatch.setattr(robot.sim, "_wait_for_take", lambda *args: robot.sim._hand_out(*args))
    result = robot.execute_skill("HANDOVER(apple_1, anna)")
    assert not result.success and result.failure.code == "HANDOVER_NOT_CONFIRMED"
    assert result.failure.command == "wait_for_take" and result.failure.skill == "HANDOVER(apple_1, anna)"
    assert result.failure.reason == "the person did not take the object: the left gripper still holds apple_1"
    assert result.failure.context["robot"]["held"] == {"left": "apple_1"}


@pytest.mark.parametrize("code", sorted(REASONS))
def test_every_failure_code_reaches_the_planner_as_a_message_with_skill_command_reason_and_context(code):
    """Whatever command fails with whatever code, the planner gets the code, the skill and the
    command it happened in, the code's reason with the backend's detail, and where it happened."""
    robot = robot_at("table_1")
    support = robot.scene().support("apple_1")
    run = robot.run
    robot.run = lambda command: Outcome(False, code, "the detail") if command.name == "grasp" else run(command)
    result = robot.execute_skill("PICK(apple_1, left)")
    failure = result.failure
    assert not result.success and (failure.code, failure.skill, failure.command) == (code, "PICK(apple_1, left)", "grasp")
    where = f"; the map now shows it {support[0]} {support[1]}" if support else ""
    assert failure.reason == REASONS[code].format(object="apple_1", where=where, detail="the detail")
    assert failure.context["stage"] == "execution" and failure.context["command_index"] == 3
    assert failure.context["robot"]["room"] == "kitchen" and failure.context["object"]["id"] == "apple_1"


def test_an_object_not_found_where_the_map_still_has_it_is_not_said_to_be_there():
    """The arm missed the bottle on table_1 before the camera saw it on table_2: the message must
    not send the planner back to table_1."""
    from planner.core.controller import ExecutionEventInfo, describe_failure

    scene = robot_at("table_1").scene()
    stale = ExecutionEventInfo("e", "t", "PICK(apple_1, left)", "approach", 2, 6, "failed", "OBJECT_NOT_FOUND",
                               "apple_1 is not at (3.10, 8.20, 0.79) on table_1")
    assert describe_failure(stale, scene).reason.endswith("someone may have moved it; it has not been seen "
                                                                     "anywhere else yet")
    scene.move_item("apple_1", (0.35, 9.15, 0.94), stamp=1.0)  # the camera has found it on the counter meanwhile
    assert describe_failure(stale, scene).reason.endswith("the map now shows it on counter_1")
