"""The MoveIt 2 adapter against a double of moveit_py's MoveItPy: the goals each manipulation
command becomes, in the robot's base frame, and how planning and execution failures map."""

import contextlib
import math
import sys
import threading
import types
from types import SimpleNamespace

import pytest

from conftest import CONFIG
from planner.adapters.moveit import MoveItArms, MoveItSettings, to_base_frame
from planner.core.errors import InputError
from planner.core.geometry import Pose2D
from planner.core.robot_profile import RobotProfile, load_robot_profile
from planner.core.skills import Command

SETTINGS = MoveItSettings()
ONE_ARM = RobotProfile(name="one_arm", reach_m=1.0, payload_kg=5.0, standoff_m=0.35,
                       arms={"left": {"group": "left_arm", "tool_link": "left_tool0", "gripper_group": "left_hand"}})


class Plan(SimpleNamespace):
    def __bool__(self):
        return self.error_code.val == 1


# The SRDF's named gripper states of ONE_ARM, by group and name.
NAMED_STATES = {("left_hand", "open"): {"left_finger_joint": 0.04}, ("left_hand", "closed"): {"left_finger_joint": 0.0}}
ON_A_CUP = {"left_finger_joint": 0.015}   # the finger stalled on a cup's side


class FakeMoveIt:
    """MoveItPy's planning components: every goal set is recorded with its group; plans fail
    with `plan_error` for the groups in `failing`; execution ends with `execution`; the robot's
    current joint positions, as its planning scene monitor has them, are `joints`."""

    def __init__(self, plan_error=-31, failing=(), execution=None, joints=None):
        self.goals, self.executed = [], 0
        self.plan_error, self.failing, self.execution = plan_error, set(failing), execution
        self.joints = dict(ON_A_CUP if joints is None else joints)

    def get_planning_scene_monitor(self):
        scene = SimpleNamespace(current_state=SimpleNamespace(joint_positions=self.joints))
        return SimpleNamespace(read_only=lambda: contextlib.nullcontext(scene))

    def get_robot_model(self):
        return SimpleNamespace(get_joint_model_group=lambda group: SimpleNamespace(
            active_joint_model_names=sorted({j for (g, _), state in NAMED_STATES.items() if g == group for j in state})))

    def get_planning_component(self, group):
        moveit = self

        class Component:
            def set_start_state_to_current_state(self):
                pass

            def set_goal_state(self, **goal):
                moveit.goals.append((group, goal))

            def plan(self):
                ok = group not in moveit.failing
                return Plan(error_code=SimpleNamespace(val=1 if ok else moveit.plan_error), trajectory=f"{group} path")
        return Component()

    def execute(self, trajectory, controllers):
        self.executed += 1
        return self.execution


ROBOT = Pose2D(2.0, 1.0, math.pi / 2)


def run(moveit, name, robot=ROBOT, **command):
    arms = MoveItArms(moveit, SETTINGS, ONE_ARM, lambda: robot)
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
    arms = MoveItArms(FakeMoveIt(), SETTINGS, ONE_ARM, lambda: Pose2D(0, 0, 0))
    outcome = arms.run(Command("approach", arm="right", point=(1, 0, 1)), threading.Event())
    assert outcome.code == "BACKEND_UNAVAILABLE" and "right arm" in outcome.detail
    outcome = arms.run(Command("open", arm="left", target_id="fridge_1"), threading.Event())
    assert outcome.code == "BACKEND_UNAVAILABLE" and "'open'" in outcome.detail


def test_a_stop_ends_the_running_trajectory_and_the_remaining_motions():
    moveit = FakeMoveIt()
    arms = MoveItArms(moveit, SETTINGS, ONE_ARM, lambda: Pose2D(0, 0, 0))
    stop, stopped = threading.Event(), threading.Event()
    moveit.get_trajectory_execution_manager = lambda: SimpleNamespace(stop_execution=stopped.set)

    def execute_until_stopped(trajectory, controllers):  # a trajectory that takes its time
        moveit.executed += 1
        threading.Timer(0.1, stop.set).start()
        assert stopped.wait(5.0)
    moveit.execute = execute_until_stopped
    outcome = arms.run(Command("grasp", arm="left", object_id="cup_1", point=(0.5, 0, 0.8)), stop)
    assert outcome.code == "CANCELED" and moveit.executed == 1  # the gripper never closed


@pytest.fixture
def moveit_py(monkeypatch):
    """moveit.planning.MoveItPy and moveit.core.robot_state.RobotState doubles that record what they
    were given."""
    given = {}

    class MoveItPy(FakeMoveIt):
        def __init__(self, **options):
            super().__init__()
            given.update(options)

        def get_robot_model(self):
            return "robot model"

        def get_planning_scene_monitor(self):   # TIAGo's fingers stalled on a cup
            self.joints = {"gripper_left_finger_joint": 0.012, "gripper_right_finger_joint": 0.013}
            return super().get_planning_scene_monitor()

    monkeypatch.setitem(sys.modules, "moveit.planning", types.ModuleType("moveit.planning"))
    sys.modules["moveit.planning"].MoveItPy = MoveItPy
    return given


@pytest.fixture(autouse=True)
def moveit_robot_state(monkeypatch):
    """moveit.core.robot_state.RobotState: joint positions set, or set to a named state of NAMED_STATES."""
    class RobotState:
        def __init__(self, model):
            self.model, self.joint_positions, self.updated = model, {}, False

        def update(self):
            self.updated = True

        def set_to_default_values(self, group, name):
            self.group_positions = list(NAMED_STATES[group, name].values())

        def get_joint_group_positions(self, group):
            return self.group_positions

    modules = {"moveit": types.ModuleType("moveit"), "moveit.core": types.ModuleType("moveit.core"),
               "moveit.core.robot_state": types.ModuleType("moveit.core.robot_state")}
    modules["moveit.core.robot_state"].RobotState = RobotState
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


def test_moveit_gets_its_parameter_files_and_the_robots_namespace(moveit_py, tmp_path):
    params = tmp_path / "moveit.yaml"
    params.write_text("planner_moveit:\n  ros__parameters: {}\n")
    MoveItArms.connect(SETTINGS, ONE_ARM, lambda: ROBOT, "/robot1", [params])
    assert moveit_py == {"node_name": "planner_moveit", "name_space": "robot1", "launch_params_filepaths": [str(params)]}
    moveit_py.clear()
    MoveItArms.connect(SETTINGS, ONE_ARM, lambda: ROBOT)  # MoveItPy's own default: the process's --params-file
    assert moveit_py == {"node_name": "planner_moveit", "name_space": ""}
    with pytest.raises(InputError, match="executor.moveit.params_files: .*missing.yaml not found"):
        MoveItArms.connect(SETTINGS, ONE_ARM, lambda: ROBOT, "", [tmp_path / "missing.yaml"])


def test_a_robot_whose_srdf_names_no_states_moves_to_the_joint_positions_of_its_profile(moveit_py):
    tiago = load_robot_profile(CONFIG / "robots" / "tiago.yaml")
    arms = MoveItArms.connect(SETTINGS, tiago, lambda: ROBOT)
    moveit = arms.moveit
    for name in ("open_gripper", "grasp", "retreat"):
        assert arms.run(Command(name, arm="arm", object_id="cup_1", point=(2.0, 1.6, 0.8)), threading.Event()).ok
    states = [(group, goal["robot_state"]) for group, goal in moveit.goals if "robot_state" in goal]
    assert [group for group, _ in states] == ["gripper", "gripper", "arm_torso"]
    opened, closed, rest = (state for _, state in states)
    assert opened.joint_positions == tiago.arms["arm"].open_state and opened.updated and opened.model == "robot model"
    assert closed.joint_positions == {"gripper_left_finger_joint": 0.0, "gripper_right_finger_joint": 0.0}
    assert set(rest.joint_positions) == {"torso_lift_joint", *(f"arm_{i}_joint" for i in range(1, 8))}
    poses = [goal["pose_link"] for _, goal in moveit.goals if "pose_link" in goal]
    assert poses == ["gripper_grasping_frame"]


def test_a_grasp_holds_only_when_the_fingers_stopped_on_something():
    cup = (2.0, 1.6, 0.8)
    outcome = run(FakeMoveIt(joints={"left_finger_joint": 0.0005}), "grasp", object_id="cup_1", point=cup)
    assert (outcome.ok, outcome.code) == (False, "GRASP_NOT_CONFIRMED")
    assert "left_hand fingers closed on nothing" in outcome.detail and "cup_1 is not in the hand" in outcome.detail
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
    arms = MoveItArms(moveit, SETTINGS, two_arms, lambda: ROBOT)
    for arm in ("left", "right"):
        assert arms.run(Command("approach", arm=arm, object_id="cup_1", point=(2.0, 1.6, 0.8)), threading.Event()).ok
    turns = {group: tuple(round(v, 6) for v in (goal["pose_stamped_msg"].pose.orientation.x,
                                                goal["pose_stamped_msg"].pose.orientation.y,
                                                goal["pose_stamped_msg"].pose.orientation.z,
                                                goal["pose_stamped_msg"].pose.orientation.w))
             for group, goal in moveit.goals}
    assert turns == {"left_arm": (1.0, 0.0, 0.0, 0.0), "right_arm": (0.0, 0.707107, 0.0, 0.707107)}
