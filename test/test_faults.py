"""Faults and articulated furniture in the simulator, as the planner meets them through the
in-process simulated robot: what fails, with which code, and what the world looks like after."""

import random

import pytest

from conftest import CONFIG, ROBOT
from planner.adapters.llm import ScriptedPolicy
from planner.core.skills import SkillPlanner, load_skill_library
from planner.core.world import load_world
from planner.sim.faults import Fault, GarbledPolicy, fault_events
from planner.sim.in_process import SimulatedRobot
from planner.sim.simulated_world import BlockPath, DropDetections, Occlude, ScenarioEvent, SimulatedWorld, Trigger


@pytest.fixture(scope="module")
def apartment():
    return load_world(CONFIG / "worlds" / "apartment.yaml")


def robot_for(world, faults=(), at="", seed=0, objects=("bottle_1",)):
    world = world.with_robot_at(at, ROBOT.standoff_m)
    events, _ = fault_events(list(faults), world, ROBOT, list(objects), random.Random(seed))
    skills = SkillPlanner(load_skill_library(CONFIG / "skills.yaml"), ROBOT)
    return SimulatedRobot(world, events, skills)


def test_a_grasp_that_slips_fails_the_pick_and_leaves_the_object_where_it_was(world):
    robot = robot_for(world, [Fault(kind="grasp_slip")], at="table_1")
    before = robot.sim.positions["bottle_1"]
    result = robot.execute_skill("PICK(bottle_1, right)")
    assert not result.success and result.failure.code == "GRASP_LOST" and result.failure.command == "lift"
    assert "slipped" in result.failure.reason
    assert robot.sim.object_on("bottle_1") == "table_1" and robot.sim.held["right"] == ""
    assert robot.sim.positions["bottle_1"][:2] == before[:2]
    # Perception sees it back on the table, so the planner can try again, and this time it holds.
    assert robot.graph.entity("bottle_1").status == "seen"
    assert robot.execute_skill("PICK(bottle_1, right)").success


def test_a_worn_gripper_loses_every_lift_until_the_other_arm_picks(world):
    robot = robot_for(world, [Fault(kind="worn_gripper")], at="table_1")  # the arm a pick takes first
    for _ in range(3):  # not once, as a slip: the pads stay worn
        result = robot.execute_skill("PICK(bottle_1, left)")
        assert result.failure.code == "GRASP_LOST" and "left gripper" in result.failure.reason
        assert robot.sim.object_on("bottle_1") == "table_1"
    assert robot.execute_skill("PICK(bottle_1, right)").success and robot.sim.held["right"] == "bottle_1"


def test_a_blocked_path_refuses_one_navigation_and_then_clears(world):
    robot = robot_for(world, [Fault(kind="nav_blocked")])
    blocked = robot.execute_skill("GOTO(table_1)")
    assert blocked.failure.code == "PATH_BLOCKED" and robot.sim.robot_room == "bedroom"
    assert robot.execute_skill("GOTO(table_1)").success and robot.sim.robot_room == "kitchen"


def test_an_aborted_navigation_stops_the_robot_part_of_the_way(world):
    robot = robot_for(world, [Fault(kind="nav_aborted")])
    start = (robot.sim.robot.x, robot.sim.robot.y)
    result = robot.execute_skill("GOTO(table_1)")
    assert result.failure.code == "NAVIGATION_ABORTED" and "stopped in the" in result.failure.reason
    assert start != (robot.sim.robot.x, robot.sim.robot.y)
    assert robot.graph.robot.pose.x == pytest.approx(robot.sim.robot.x)  # perception follows the robot
    assert robot.execute_skill("GOTO(table_1)").success


def test_a_command_that_never_answers_times_out_after_its_timeout(world):
    robot = robot_for(world, [Fault(kind="command_timeout")], at="table_1")
    start = robot.clock
    result = robot.execute_skill("PICK(bottle_1, right)")
    assert result.failure.code == "TIMEOUT" and result.failure.command == "grasp"
    assert robot.clock - start >= 15.0  # the grasp command's timeout in config/skills.yaml
    assert robot.execute_skill("PICK(bottle_1, right)").success


def test_an_occluded_object_goes_missing_for_a_while_and_comes_back(world):
    robot = robot_for(world, [Fault(kind="object_occluded", duration_s=5)], at="table_1")
    assert robot.graph.entity("bottle_1").status == "seen"  # the prior map; one frame is not enough
    robot.perceive("get_objects_in_room", ["kitchen"])
    assert robot.graph.entity("bottle_1").status == "missing"
    assert robot.execute_skill("PICK(bottle_1, right)").failure.code == "OBJECT_LOCATION_UNKNOWN"
    for _ in range(5):
        robot.perceive("get_robot_state", [])
    assert robot.graph.entity("bottle_1").status == "seen"
    assert robot.execute_skill("PICK(bottle_1, right)").success


def test_detection_dropout_sends_no_frames_so_nothing_is_marked_missing(world):
    sim = SimulatedWorld(world, ROBOT, [ScenarioEvent(trigger=Trigger(at_start=True), drop_detections=DropDetections(duration_s=3))])
    assert sim.camera_frame(1.0) is None and sim.camera_view(2.9) is None
    assert sim.camera_frame(3.0) is not None
    sim = SimulatedWorld(world, ROBOT, [ScenarioEvent(trigger=Trigger(at_start=True), occlude=Occlude(object="book_1"))])
    assert "book_1" not in {d.label + "_1" for d in sim.camera_frame(1.0).detections}


def test_a_block_without_an_area_must_say_how_many_attempts():
    with pytest.raises(ValueError, match="attempts"):
        BlockPath()


def test_garbage_replies_replace_the_chosen_calls_only():
    policy = GarbledPolicy(ScriptedPolicy(["a", "b"]), {2}, random.Random(1))
    assert [policy.complete([], {}).text for _ in range(3)][::2] == ["a", "b"]


def test_the_fridge_must_be_opened_to_see_reach_and_fill_it(apartment):
    robot = robot_for(apartment, at="fridge_1", objects=["milk_1"])
    graph = robot.graph
    assert graph.entity("fridge_1").state == "closed" and graph.enclosed("milk_1") == "fridge_1"
    # Closed: the camera cannot see the milk, and that does not make it missing.
    for _ in range(3):
        robot.perceive("get_robot_state", [])
    assert graph.entity("milk_1").status == "seen"
    refused = robot.execute_skill("PICK(milk_1, right)")
    assert refused.failure.code == "CONTAINER_CLOSED" and "OPEN(fridge_1)" in refused.failure.reason
    assert robot.execute_skill("CLOSE(fridge_1)").failure.code == "ALREADY_CLOSED"
    assert robot.execute_skill("OPEN(fridge_1)").success
    assert robot.sim.open_state["fridge_1"] and graph.entity("fridge_1").state == "open"  # seen open
    assert robot.execute_skill("PICK(milk_1, right)").success
    assert robot.execute_skill("PLACE(milk_1, fridge_1, right)").success
    assert "milk_1" in robot.sim.inside and graph.support("milk_1") == ("in", "fridge_1")
    assert robot.execute_skill("CLOSE(fridge_1)").success and graph.enclosed("milk_1") == "fridge_1"


def test_opening_needs_a_free_hand_and_things_without_doors_cannot_be_opened(apartment):
    robot = robot_for(apartment, at="table_1", objects=["apple_1"])
    assert "no door or drawer" in robot.execute_skill("OPEN(table_1)").failure.reason
    assert robot.execute_skill("PICK(apple_1, right)").success
    assert robot.execute_skill("PICK(banana_1, left)").success
    assert robot.execute_skill("GOTO(fridge_1)").success
    assert robot.execute_skill("OPEN(fridge_1)").failure.code == "ARM_OCCUPIED"
