"""The MoveIt 2 adapter against a double of moveit_py's MoveItPy: the goals each manipulation
command becomes, in the robot's base frame, and how planning and execution failures map."""

import math
import sys
import threading
from types import SimpleNamespace

import pytest

import moveit_doubles
from conftest import CONFIG
from planner.adapters.moveit import GripReading, MoveItArms, MoveItSettings, to_base_frame
from planner.core.collision_scene import CollisionBox, obstacles_within_reach
from planner.core.errors import InputError
from planner.core.geometry import Pose2D
from planner.core.robot_profile import RobotProfile, load_robot_profile
from planner.core.skills import Command

SETTINGS = MoveItSettings()
ONE_ARM = RobotProfile(name="one_arm", reach_m=1.0, payload_kg=5.0, standoff_m=0.35,
                       arms={"left": {"group": "left_arm", "tool_link": "left_tool0", "gripper_group": "left_hand"}})


# The SRDF's named gripper states of ONE_ARM, by group and name.
NAMED_STATES = {("left_hand", "open"): {"left_finger_joint": 0.04}, ("left_hand", "closed"): {"left_finger_joint": 0.0}}
ON_A_CUP = {"left_finger_joint": 0.015}   # the finger stalled on a cup's side


def FakeMoveIt(joints=None, **options) -> moveit_doubles.FakeMoveIt:
    return moveit_doubles.FakeMoveIt(NAMED_STATES, ON_A_CUP if joints is None else joints, **options)


@pytest.fixture(autouse=True)
def moveit_modules(monkeypatch):
    """moveit_py's, moveit_msgs' and shape_msgs' modules as doubles; moveit.planning.MoveItPy records
    what it is given in `given`."""
    given = {}

    class MoveItPy(moveit_doubles.FakeMoveIt):
        def __init__(self, **options):
            super().__init__(NAMED_STATES, ON_A_CUP)
            given.update(options)
    for name, module in moveit_doubles.modules(MoveItPy).items():
        monkeypatch.setitem(sys.modules, name, module)
    return given


ROBOT = Pose2D(2.0, 1.0, math.pi / 2)


def no_obstacles(handled):
    return {}


def run(moveit, name, robot=ROBOT, **command):
    arms = MoveItArms(moveit, SETTINGS, ONE_ARM, lambda: robot, no_obstacles)
    return arms.run(Command(name, arm="left", **command), threading.Event())


def test_map_points_become_points_in_front_of_the_base():
    # The robot at (2, 1) faces +y: a point 0.5 m further along y is 0.5 m straight ahead.
    assert to_base_frame((2.0, 1.5, 0.8), Pose2D(2.0, 1.0, math.pi / 2)) == pytest.approx((0.5, 0.0, 0.8))
    assert to_base_frame((1.0, 1.0, 0.0), Pose2D(2.0, 1.0, math.pi / 2)) == pytest.approx((0.0, 1.0, 0.0))


def test_a_pick_is_hover_then_down_and_close_then_up_and_a_place_ends_opening_and_resting():
    moveit = FakeMoveIt()
    cup = (2.0, 1.6, 0.8)
    for name in ("approach", "grasp", "lift", "place_approach", "release", "retreat"):
        assert run(moveit, name, object_id="cup_1", point=cup).ok
    poses = [(group, goal["pose_stamped_msg"].pose.position.z, goal["pose_link"])
             for group, goal in moveit.goals if "pose_stamped_msg" in goal]
    assert [z for _, z, _ in poses] == pytest.approx([0.9, 0.8, 0.9, 0.9, 0.8])
    assert {(group, link) for group, _, link in poses} == {("left_arm", "left_tool0")}
    named = [(group, goal["configuration_name"]) for group, goal in moveit.goals if "configuration_name" in goal]
    assert named == [("left_hand", "closed"), ("left_hand", "open"), ("left_arm", "home")]
    goal = next(goal["pose_stamped_msg"] for _, goal in moveit.goals if "pose_stamped_msg" in goal)
    assert goal.header.frame_id == "base_link"
    assert (goal.pose.position.x, goal.pose.position.y) == pytest.approx((0.6, 0.0))
    assert (goal.pose.orientation.x, goal.pose.orientation.w) == (1.0, 0.0)  # tool pointing down
    assert moveit.executed == 8


def test_gripper_handover_and_wiping_motions():
    moveit = FakeMoveIt()
    assert run(moveit, "open_gripper").ok and moveit.goals == [("left_hand", {"configuration_name": "open"})]
    moveit.goals.clear()
    for name in ("look_at", "verify_grasp"):  # nothing moves: a fixed camera; the controller checks the grasp
        assert run(moveit, name, object_id="cup_1", point=(2.0, 1.6, 0.8)).ok
    assert moveit.goals == [] and moveit.executed == 1
    anna = (2.0, 1.8, 0.85)
    assert run(moveit, "hand_out", object_id="cup_1", target_id="anna", point=anna).ok
    assert run(moveit, "wait_for_take", object_id="cup_1", target_id="anna").ok
    out, opened = moveit.goals
    assert out[1]["pose_stamped_msg"].pose.position.x == pytest.approx(0.8) and opened == ("left_hand", {"configuration_name": "open"})
    moveit.goals.clear()
    assert run(moveit, "sweep", target_id="table_1", point=(2.0, 1.6, 0.75)).ok
    heights = [goal["pose_stamped_msg"].pose.position.z for _, goal in moveit.goals]
    assert heights == pytest.approx([0.85, 0.77, 0.85])  # over the top, down close to it, and up again


# moveit_msgs/msg/MoveItErrorCodes.msg, as the message defines them.
@pytest.mark.parametrize("error, name, code", [
    (-1, "PLANNING_FAILED", "ARM_PLANNING_FAILED"), (-2, "INVALID_MOTION_PLAN", "ARM_PLANNING_FAILED"),
    (-3, "MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE", "WORLD_CHANGED"),
    (-4, "CONTROL_FAILED", "ARM_EXECUTION_FAILED"), (-5, "UNABLE_TO_AQUIRE_SENSOR_DATA", "ARM_PLANNING_FAILED"),
    (-6, "TIMED_OUT", "TIMEOUT"), (-7, "PREEMPTED", "CANCELED"), (-10, "START_STATE_IN_COLLISION", "ARM_IN_COLLISION"),
    (-12, "GOAL_IN_COLLISION", "ARM_GOAL_IN_COLLISION"), (-21, "FRAME_TRANSFORM_FAILURE", "LOCALIZATION_LOST"),
    (-31, "NO_IK_SOLUTION", "OUT_OF_REACH"), (-99, "error -99", "ARM_PLANNING_FAILED")])
def test_planning_failures_map_to_reasons_and_nothing_moves(error, name, code):
    moveit = FakeMoveIt(plan_error=error, failing={"left_arm"})
    outcome = run(moveit, "approach", object_id="cup_1", point=(2.0, 1.6, 0.8))
    assert (outcome.ok, outcome.code) == (False, code)
    assert f"MoveIt could not plan left_tool0 to cup_1 ({name}, {error})" == outcome.detail
    assert moveit.executed == 0


def test_a_gripper_that_cannot_close_fails_the_grasp_after_the_arm_moved():
    moveit = FakeMoveIt(plan_error=-2, failing={"left_hand"})
    outcome = run(moveit, "grasp", object_id="cup_1", point=(2.0, 1.6, 0.8))
    assert outcome.code == "ARM_PLANNING_FAILED" and "left_hand to 'closed'" in outcome.detail
    assert moveit.executed == 1


@pytest.mark.parametrize("status, code", [("ABORTED", "ARM_EXECUTION_FAILED"), ("TIMED_OUT", "TIMEOUT"),
                                          ("PREEMPTED", "CANCELED")])
def test_execution_failures_map_to_reasons(status, code):
    failed = type("ExecutionStatus", (), {"status": status, "__bool__": lambda self: False})()
    outcome = run(FakeMoveIt(execution=failed), "retreat")
    assert outcome.code == code and outcome.detail == f"moving left_arm to 'home' ended {status}"


def test_an_unconfigured_arm_or_motion_is_refused_with_the_reason():
    arms = MoveItArms(FakeMoveIt(), SETTINGS, ONE_ARM, lambda: Pose2D(0, 0, 0), no_obstacles)
    outcome = arms.run(Command("approach", arm="right", point=(1, 0, 1)), threading.Event())
    assert outcome.code == "BACKEND_UNAVAILABLE" and "right arm" in outcome.detail
    outcome = arms.run(Command("open", arm="left", target_id="fridge_1"), threading.Event())
    assert outcome.code == "BACKEND_UNAVAILABLE" and "'open'" in outcome.detail


def test_a_stop_ends_the_running_trajectory_and_the_remaining_motions():
    moveit = FakeMoveIt()
    arms = MoveItArms(moveit, SETTINGS, ONE_ARM, lambda: Pose2D(0, 0, 0), no_obstacles)
    stop, stopped = threading.Event(), threading.Event()
    moveit.get_trajectory_execution_manager = lambda: SimpleNamespace(stop_execution=stopped.set)

    def execute_until_stopped(trajectory, controllers):  # a trajectory that takes its time
        moveit.executed += 1
        threading.Timer(0.1, stop.set).start()
        assert stopped.wait(5.0)
    moveit.execute = execute_until_stopped
    outcome = arms.run(Command("grasp", arm="left", object_id="cup_1", point=(0.5, 0, 0.8)), stop)
    assert outcome.code == "CANCELED" and moveit.executed == 1  # the gripper never closed


def test_moveit_gets_its_parameter_files_and_the_robots_namespace(moveit_modules, tmp_path):
    params = tmp_path / "moveit.yaml"
    params.write_text("planner_moveit:\n  ros__parameters: {}\n")
    MoveItArms.connect(SETTINGS, ONE_ARM, lambda: ROBOT, no_obstacles, {}, "/robot1", [params])
    assert moveit_modules == {"node_name": "planner_moveit", "name_space": "robot1",
                              "launch_params_filepaths": [str(params)]}
    moveit_modules.clear()
    MoveItArms.connect(SETTINGS, ONE_ARM, lambda: ROBOT, no_obstacles, {})  # MoveItPy's default: its --params-file
    assert moveit_modules == {"node_name": "planner_moveit", "name_space": ""}
    with pytest.raises(InputError, match="executor.moveit.params_files: .*missing.yaml not found"):
        MoveItArms.connect(SETTINGS, ONE_ARM, lambda: ROBOT, no_obstacles, {}, "", [tmp_path / "missing.yaml"])


def test_a_robot_whose_srdf_names_no_states_moves_to_the_joint_positions_of_its_profile():
    tiago = load_robot_profile(CONFIG / "robots" / "tiago.yaml")
    moveit = FakeMoveIt(joints={"gripper_left_finger_joint": 0.012, "gripper_right_finger_joint": 0.013})
    arms = MoveItArms(moveit, SETTINGS, tiago, lambda: ROBOT, no_obstacles)
    for name in ("open_gripper", "grasp", "retreat"):
        assert arms.run(Command(name, arm="arm", object_id="cup_1", point=(2.0, 1.6, 0.8)), threading.Event()).ok
    states = [(group, goal["robot_state"]) for group, goal in moveit.goals if "robot_state" in goal]
    assert [group for group, _ in states] == ["gripper", "gripper", "arm_torso"]
    opened, closed, rest = (state for _, state in states)
    assert opened.joint_positions == tiago.arms["arm"].open_state and opened.updated
    assert closed.joint_positions == {"gripper_left_finger_joint": 0.0, "gripper_right_finger_joint": 0.0}
    assert set(rest.joint_positions) == {"torso_lift_joint", *(f"arm_{i}_joint" for i in range(1, 8))}
    poses = [goal["pose_link"] for _, goal in moveit.goals if "pose_link" in goal]
    assert poses == ["gripper_grasping_frame"]


def test_a_grasp_holds_only_when_the_fingers_stopped_on_something():
    cup = (2.0, 1.6, 0.8)
    outcome = run(FakeMoveIt(joints={"left_finger_joint": 0.0005}), "grasp", object_id="cup_1", point=cup)
    assert (outcome.ok, outcome.code) == (False, "GRASP_NOT_CONFIRMED")
    assert "left_hand fingers stopped 0.5 mm or mrad from closed, on nothing" in outcome.detail
    assert "cup_1 is not in the hand" in outcome.detail
    assert run(FakeMoveIt(), "grasp", object_id="cup_1", point=cup).ok


def test_fingers_that_stall_on_the_object_are_a_grasp_though_the_controller_calls_the_close_failed():
    failed = type("ExecutionStatus", (), {"status": "ABORTED", "__bool__": lambda self: False})()

    def gripper_aborts(joints):   # the arm's motion succeeds, the gripper's close is reported ABORTED
        moveit = FakeMoveIt(joints=joints)
        moveit.execute = lambda trajectory, controllers: failed if trajectory == "left_hand path" else None
        return moveit
    assert run(gripper_aborts(ON_A_CUP), "grasp", object_id="cup_1", point=(2.0, 1.6, 0.8)).ok
    empty = run(gripper_aborts({"left_finger_joint": 0.0}), "grasp", object_id="cup_1", point=(2.0, 1.6, 0.8))
    assert empty.code == "GRASP_NOT_CONFIRMED"


def test_verify_grasp_reads_the_fingers_again_and_finds_a_slipped_object_lost():
    moveit = FakeMoveIt()
    assert run(moveit, "verify_grasp", object_id="cup_1").ok and moveit.executed == 0   # nothing moves
    moveit.joints["left_finger_joint"] = 0.0
    outcome = run(moveit, "verify_grasp", object_id="cup_1")
    assert (outcome.ok, outcome.code) == (False, "GRASP_LOST")


def test_a_gripper_joint_the_robot_state_lacks_is_named():
    outcome = run(FakeMoveIt(joints={"finger": 0.02}), "grasp", object_id="cup_1", point=(2.0, 1.6, 0.8))
    assert outcome.code == "BACKEND_UNAVAILABLE" and "has no left_finger_joint" in outcome.detail


def test_each_arm_grasps_with_the_orientation_of_its_profile():
    two_arms = RobotProfile(name="two_arms", reach_m=1.0, payload_kg=5.0, standoff_m=0.35, arms={
        "left": {"group": "left_arm", "tool_link": "left_tool0", "gripper_group": "left_hand"},
        "right": {"group": "right_arm", "tool_link": "right_tool0", "gripper_group": "right_hand",
                  "grasp_xyzw": (0.0, 0.7071068, 0.0, 0.7071068)}})
    moveit = FakeMoveIt()
    arms = MoveItArms(moveit, SETTINGS, two_arms, lambda: ROBOT, no_obstacles)
    for arm in ("left", "right"):
        assert arms.run(Command("approach", arm=arm, object_id="cup_1", point=(2.0, 1.6, 0.8)), threading.Event()).ok
    turns = {group: tuple(round(v, 6) for v in (goal["pose_stamped_msg"].pose.orientation.x,
                                                goal["pose_stamped_msg"].pose.orientation.y,
                                                goal["pose_stamped_msg"].pose.orientation.z,
                                                goal["pose_stamped_msg"].pose.orientation.w))
             for group, goal in moveit.goals}
    assert turns == {"left_arm": (1.0, 0.0, 0.0, 0.0), "right_arm": (0.0, 0.707107, 0.0, 0.707107)}


# A table in front of the robot at ROBOT, a cup on it, a chair beside it.
TABLE = CollisionBox("table_1", (2.0, 1.8, 0.4), (1.0, 0.6, 0.8))
CUP = CollisionBox("cup_1", (2.0, 1.6, 0.85), (0.08, 0.08, 0.1))
CHAIR = CollisionBox("chair_1", (2.8, 1.5, 0.45), (0.45, 0.45, 0.9))


def test_the_obstacles_go_into_the_planning_scene_and_a_grasped_object_travels_with_the_hand():
    moveit = FakeMoveIt()
    around = {box.id: box for box in (TABLE, CUP, CHAIR)}
    arms = MoveItArms(moveit, SETTINGS, ONE_ARM, lambda: ROBOT, lambda handled: dict(around))

    def do(name, **command):
        moveit.worlds.clear()
        assert arms.run(Command(name, arm="left", **command), threading.Event()).ok
        return moveit.worlds

    assert do("approach", object_id="cup_1", point=CUP.center) == [["chair_1", "cup_1", "table_1"]]
    cup = moveit.scene.world["cup_1"]
    assert cup.header.frame_id == "base_link" and cup.primitives[0].dimensions == [0.08, 0.08, 0.1]
    # The robot at (2, 1) faces +y: the cup is 0.6 m straight ahead, the box turned back by the base's yaw.
    position, turn = cup.primitive_poses[0].position, cup.primitive_poses[0].orientation
    assert (position.x, position.y, position.z) == pytest.approx((0.6, 0.0, 0.85))
    assert (turn.z, turn.w) == pytest.approx((-math.sqrt(0.5), math.sqrt(0.5)))

    # Down to the cup with the cup out of the world (the fingers close on it), then it goes with the hand.
    assert do("grasp", object_id="cup_1", point=CUP.center) == [["chair_1", "table_1"]] * 2
    attached = moveit.scene.attached["left_tool0"]
    assert attached.object.id == "cup_1" and set(attached.touch_links) == {"left_tool0", "left_hand_link"}
    del around["chair_1"]   # the chair was moved away
    assert do("lift", object_id="cup_1", point=CUP.center) == [["table_1"]]
    assert "cup_1" not in moveit.scene.world
    # Down onto the table with the table out of the world; let go, the cup is in the world again.
    assert do("release", object_id="cup_1", target_id="table_1", point=(2.0, 1.9, 0.85)) == [[], []]
    assert moveit.scene.attached == {} and set(moveit.scene.world) == {"cup_1"}
    assert do("retreat") == [["cup_1", "table_1"]]


def test_a_hand_that_loses_its_object_lets_it_go_in_the_planning_scene_too():
    moveit = FakeMoveIt()
    arms = MoveItArms(moveit, SETTINGS, ONE_ARM, lambda: ROBOT, lambda handled: {"cup_1": CUP})
    assert arms.run(Command("grasp", arm="left", object_id="cup_1", point=CUP.center), threading.Event()).ok
    assert set(moveit.scene.attached) == {"left_tool0"}
    moveit.joints["left_finger_joint"] = 0.0
    assert arms.run(Command("verify_grasp", arm="left", object_id="cup_1"), threading.Event()).code == "GRASP_LOST"
    assert moveit.scene.attached == {}


def test_an_arm_that_cannot_know_its_obstacles_does_not_move():
    def unknown(handled):
        raise RuntimeError("service perception/get_scene_graph is not available")
    moveit = FakeMoveIt()
    arms = MoveItArms(moveit, SETTINGS, ONE_ARM, lambda: ROBOT, unknown)
    outcome = arms.run(Command("approach", arm="left", object_id="cup_1", point=CUP.center), threading.Event())
    assert outcome.code == "BACKEND_UNAVAILABLE" and "perception/get_scene_graph is not available" in outcome.detail
    assert moveit.goals == [] and moveit.executed == 0


def test_down_up_and_along_a_surface_are_straight_lines():
    moveit = FakeMoveIt()
    for name in ("approach", "grasp", "lift", "place_approach", "release", "retreat", "sweep"):
        assert run(moveit, name, object_id="cup_1", target_id="table_1", point=CUP.center).ok
    free, line = ("ompl", ""), ("pilz_industrial_motion_planner", "LIN")
    assert moveit.pipelines == [free, line, free, line, free, line, free, free, free, line, line]

    moveit = FakeMoveIt(plan_error=-1, failing={"left_arm"})
    outcome = run(moveit, "lift", object_id="cup_1", point=CUP.center)
    assert outcome.code == "ARM_PLANNING_FAILED" and "in a straight line with pilz_industrial_motion_planner's LIN " \
                                                      "(executor.moveit.straight_pipeline)" in outcome.detail
    moveit = FakeMoveIt()
    arms = MoveItArms(moveit, MoveItSettings(straight_pipeline=""), ONE_ARM, lambda: ROBOT, no_obstacles)
    assert arms.run(Command("lift", arm="left", object_id="cup_1", point=CUP.center), threading.Event()).ok
    assert moveit.pipelines == [free]


class ScriptedGripper:
    """A GripperCommand action server's results, in turn; a string is the action failing with that reason."""

    def __init__(self, *results):
        self.results, self.goals = list(results), []

    def move(self, position, max_effort, timeout_s, stop):
        self.goals.append((position, max_effort))
        result = self.results.pop(0)
        if isinstance(result, str):
            raise RuntimeError(result)
        return result


ACTION_HAND = RobotProfile(name="action_hand", reach_m=1.0, payload_kg=5.0, standoff_m=0.35, arms={
    "left": {"group": "left_arm", "tool_link": "left_tool0",
             "gripper_action": {"action": "/gripper_controller/gripper_cmd", "open_position": 0.08,
                                "closed_position": 0.0, "max_effort": 40.0}}})


def test_a_gripper_command_hand_that_stalls_on_the_object_holds_it_and_one_that_closes_fully_missed():
    gripper = ScriptedGripper(GripReading(0.08, False, True), GripReading(0.031, True, False),
                              GripReading(0.0004, False, True), GripReading(0.031, True, False),
                              "action /gripper_controller/gripper_cmd: no answer within 5 s")
    moveit = FakeMoveIt()
    arms = MoveItArms(moveit, SETTINGS, ACTION_HAND, lambda: ROBOT, lambda handled: {"cup_1": CUP}, {"left": gripper})

    def do(name):
        return arms.run(Command(name, arm="left", object_id="cup_1", point=CUP.center, timeout_s=5.0),
                        threading.Event())
    assert do("open_gripper").ok
    assert do("grasp").ok and set(moveit.scene.attached) == {"left_tool0"}
    missed = do("verify_grasp")   # verifying closes the hand again: it closed fully, the cup is gone
    assert missed.code == "GRASP_LOST" and "the gripper stopped at 0.0004" in missed.detail
    assert moveit.scene.attached == {}
    assert do("verify_grasp").ok
    failed = do("grasp")
    assert failed.code == "ARM_EXECUTION_FAILED" and failed.detail == ("the gripper: action "
                                                                      "/gripper_controller/gripper_cmd: no answer within 5 s")
    assert gripper.goals == [(0.08, 40.0)] + [(0.0, 40.0)] * 4
    assert {group for group, _ in moveit.goals} == {"left_arm"}   # the hand never moved as a MoveIt group


def test_obstacles_are_what_the_arm_reaches_and_neither_held_nor_gone(scene):
    robot = scene.known_robot.pose
    reach = 1.5
    obstacles = obstacles_within_reach(scene, robot, reach)
    assert obstacles and {scene.entity(box_id).kind for box_id in obstacles} <= {"furniture", "object", "person"}
    for box in obstacles.values():
        entity = scene.entity(box.id)
        assert entity.bounds(reach)[0] <= robot.x <= entity.bounds(reach)[2]
        assert (box.center, box.size) == (entity.center, entity.size)
    far = [e.id for e in scene.objects() + scene.furniture()
           if math.dist((e.center[0], e.center[1]), (robot.x, robot.y)) > reach + max(e.size[:2])]
    assert far and not set(far) & set(obstacles)
    some_object = next(box_id for box_id in obstacles if scene.entity(box_id).kind == "object")
    scene.mark_missing(some_object)
    assert some_object not in obstacles_within_reach(scene, robot, reach)
    far_object = next(object_id for object_id in far if scene.entity(object_id).kind == "object")
    assert set(obstacles_within_reach(scene, robot, reach, far_object)) - set(obstacles) == {far_object}
