import math

import pytest
from pydantic import ValidationError

from conftest import CONFIG, ROBOT
from planner.core.errors import InputError
from planner.core.geometry import Pose2D
from planner.core.world import load_world
from planner.sim.simulated_world import BlockPath, ScenarioEvent, SimulatedWorld, Trigger, load_scenario


@pytest.fixture
def sim(world):
    return SimulatedWorld(world, ROBOT)


def test_routes_go_through_doors_and_take_time(sim):
    route = sim.plan_route(Pose2D(3.55, 1.5, 0.0))
    assert route.waypoints[1] == (0.0, 2.5)  # the bedroom-kitchen door
    assert route.length == pytest.approx(math.hypot(3.0, 0.5) + math.hypot(3.55, 1.0))
    assert route.pose_at(1.0).x < route.pose_at(4.0).x


def test_failure_modes_of_navigation(sim):
    assert sim.plan_route(Pose2D(50, 50)).code == "GOAL_OUTSIDE_MAP"
    assert sim.plan_route(Pose2D(4.5, 1.5)).code == "GOAL_IN_COLLISION"
    sim.events = [ScenarioEvent(trigger=Trigger(arrived_in_room="bedroom"),
                                block_path=BlockPath(polygon=[(-0.3, 2.0), (0.3, 2.0), (0.3, 3.0), (-0.3, 3.0)]))]
    assert sim.arrive(Pose2D(-2.5, 2.5)) == ["path blocked at [(-0.3, 2.0), (0.3, 2.0), (0.3, 3.0), (-0.3, 3.0)]"]
    blocked = sim.plan_route(Pose2D(3.55, 1.5))
    assert blocked.code == "PATH_BLOCKED" and "blocked near (" in blocked.detail and "2.5)" in blocked.detail


def test_pick_and_place_change_the_world(sim):
    sim.arrive(Pose2D(3.55, 1.5, 0.0))
    bottle = sim.positions["bottle_1"]
    for operation in ("approach", "grasp", "lift"):
        assert sim.manipulate(operation, "right", "bottle_1", "", bottle).ok
    assert sim.held["right"] == "bottle_1" and sim.object_on("bottle_1") is None
    assert sim.manipulate("approach", "right", "cup_1", "", sim.positions["cup_1"]).code == "ARM_OCCUPIED"
    sim.arrive(Pose2D(-1.15, 4.0, 3.14159))
    assert sim.positions["bottle_1"][0] < -1.0  # carried along
    for operation in ("place_approach", "release", "retreat"):
        assert sim.manipulate(operation, "right", "bottle_1", "table_3", None).ok
    assert sim.object_on("bottle_1") == "table_3" and sim.held["right"] == ""


def test_an_object_too_heavy_for_the_arm_is_put_back_at_the_lift(sim):
    sim.arrive(Pose2D(3.55, 1.5, 0.0))
    sim._mass["bottle_1"] = 9.0  # a full crate of bottles, say
    bottle = sim.positions["bottle_1"]
    for operation in ("approach", "grasp"):
        assert sim.manipulate(operation, "right", "bottle_1", "", bottle).ok
    lift = sim.manipulate("lift", "right", "bottle_1", "", bottle)
    assert lift.code == "TOO_HEAVY" and "9.0 kg" in lift.detail and "5.0 kg" in lift.detail
    assert sim.held["right"] == "" and sim.object_on("bottle_1") == "table_1"


def test_an_object_not_where_expected_or_out_of_reach(sim):
    sim.arrive(Pose2D(3.55, 1.5, 0.0))
    expected = sim.positions["bottle_1"]
    assert sim.move_object("bottle_1", "table_2").ok
    missing = sim.manipulate("grasp", "right", "bottle_1", "", expected)
    assert missing.code == "OBJECT_NOT_FOUND" and "on table_1" in missing.detail
    assert sim.manipulate("grasp", "right", "cup_1", "", sim.positions["cup_1"]).code == "OUT_OF_REACH"


def test_scenario_events_fire_once_at_their_moment():
    loaded = load_scenario(CONFIG / "scenarios" / "kitchen_bottle_moved.yaml")
    sim = SimulatedWorld(loaded.world, ROBOT, list(loaded.scenario.events))
    assert sim.arrive(Pose2D(3.55, 1.5, 0.0)) == []
    assert sim.start_command("approach", "cup_1") == []
    assert sim.start_command("approach", "bottle_1") == ["external agent moved bottle_1 onto table_2"]
    assert sim.start_command("approach", "bottle_1") == []
    assert sim.object_on("bottle_1") == "table_2"


def test_the_camera_sees_its_room_and_what_the_robot_holds(sim):
    labels = sorted(d.label for d in sim.camera_frame(0.0).detections)
    assert labels == ["book", "person"]  # the robot starts in the bedroom, with the user
    sim.arrive(Pose2D(3.55, 1.5, 0.0))
    assert sorted(d.label for d in sim.camera_frame(0.0).detections) == ["apple", "bottle", "cup"]


def test_bad_world_and_scenario_files_name_file_entry_and_field(tmp_path):
    world = tmp_path / "world.yaml"
    world.write_text((CONFIG / "worlds" / "kitchen_bedroom.yaml").read_text().replace("placed_on: table_2", "placed_on: table_9")
                     .replace("size: [1.0, 0.7, 0.75]}", "size: [1.0, .nan, 0.75]}", 1))
    with pytest.raises(InputError) as error:
        load_world(world)
    assert f"{world}: furniture.1.size.1: Input should be a finite number" in str(error.value)
    world.write_text((CONFIG / "worlds" / "kitchen_bedroom.yaml").read_text().replace("placed_on: table_2", "placed_on: table_9"))
    with pytest.raises(InputError, match=r"objects\[2\] \(apple_1\).placed_on: unknown furniture 'table_9'"):
        load_world(world)
    with pytest.raises(ValidationError, match="set exactly one of at_start or arrived_in_room or command_started"):
        Trigger()
    with pytest.raises(ValidationError, match="set exactly one of move_object or block_path or abort_navigation"):
        ScenarioEvent(trigger=Trigger(arrived_in_room="kitchen"))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(f"world: {CONFIG / 'worlds' / 'kitchen_bedroom.yaml'}\n"
                        "events: [{trigger: {at_start: true}, worn_gripper: {arm: centre}}]\n")
    loaded = load_scenario(scenario)  # the arms are the robot profile's: checked where the two meet
    with pytest.raises(InputError, match=r"events\[0\].worn_gripper.arm: the robot has no arm 'centre' \(it has left, right\)"):
        SimulatedWorld(loaded.world, ROBOT, loaded.scenario.events)


def test_a_person_is_seen_and_takes_what_is_handed_to_them():
    from planner.config import load_config
    from planner.core.world import Person
    from planner.sim.in_process import SimulatedRobot
    from planner.wiring import load_skill_planner

    apartment = load_world(CONFIG / "worlds" / "apartment.yaml")
    world = apartment.with_robot_at("table_1", ROBOT.standoff_m).model_copy(update={"people": [Person(id="anna", position=(8.0, 8.5))]})
    robot = SimulatedRobot(world, [], load_skill_planner(load_config(CONFIG / "planner.yaml")))
    assert robot.execute_skill("PICK(apple_1, left)").success
    result = robot.execute_skill("HANDOVER(apple_1, anna)")  # Anna is in the living room: the robot goes to her
    assert result.success, result.message
    assert "navigate, look_at, hand_out, wait_for_take, retreat" in result.message
    assert robot.sim.given == {"apple_1": "anna"} and robot.sim.held["left"] == ""
    scene = robot.scene()
    assert [p.id for p in scene.people("living_room")] == ["anna"] and scene.robot.held["left"] == ""
    # A new person in view becomes a person in the scene graph, not an object to pick.
    robot.sim.world.people.append(Person(id="ben", position=(11.0, 8.0)))
    robot.sim._people["ben"] = robot.sim.world.people[-1]
    robot._pass(2.0)
    assert len(scene.people("living_room")) == 2 and not [o for o in scene.objects() if o.label == "person"]


def test_looking_around_and_saying_take_time_and_change_nothing(sim):
    before = dict(sim.positions)
    assert sim.manipulate("look_around", "", "", "bedroom", None).ok
    assert sim.manipulate("look_at", "", "", "table_1", None).ok
    assert sim.manipulate("look_at", "", "", "unicorn_1", None).code == "UNKNOWN_OBJECT"
    assert sim.positions == before
