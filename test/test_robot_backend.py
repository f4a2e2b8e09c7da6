"""On a real robot (sim:=false) /robot/state comes from the executor's robot backend: the base pose
from TF, the hands from the commands that succeeded. Over real rclpy/DDS, with doubles of the three
Python APIs this machine cannot install (tf2_ros, nav2_simple_commander, moveit_py)."""

import contextlib
import math
import sys
import threading
import types

import pytest
from geometry_msgs.msg import TransformStamped

from conftest import RosClient, wait_for, write_config
from planner.config import deployed, load_config
from planner.core.scene_graph import RobotSnapshot
from planner.core.skills import Command
from planner.msg import RobotState
from planner.ros.convert import robot_from_msg


class Robot:
    """What the doubles report: the base's map pose (None: TF has no transform yet) and the calls made."""

    def __init__(self):
        self.pose = None
        self.initial_poses = []
        self.finger = 0.02   # the right hand's finger joint, as MoveIt's robot state has it (0: closed)
        self.moveit_options = None


def fake_modules(robot: Robot) -> dict[str, types.ModuleType]:
    tf2 = types.ModuleType("tf2_ros")

    class LookupException(Exception):
        pass

    tf2.LookupException = LookupException
    tf2.ConnectivityException = tf2.ExtrapolationException = type("OtherTfError", (Exception,), {})
    tf2.TransformListener = lambda buffer, node: None

    class Buffer:
        def lookup_transform(self, target, source, time):
            if robot.pose is None or (target, source) != ("map", "base_link"):
                raise LookupException(f'"{source}" passed to lookupTransform argument source_frame does not exist')
            found = TransformStamped()
            x, y, yaw = robot.pose
            found.transform.translation.x, found.transform.translation.y = x, y
            found.transform.rotation.z, found.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
            return found
    tf2.Buffer = Buffer

    nav2 = types.ModuleType("nav2_simple_commander.robot_navigator")

    class BasicNavigator:
        def __init__(self, node_name):
            pass

        def setInitialPose(self, pose):
            robot.initial_poses.append(pose)
    nav2.BasicNavigator = BasicNavigator

    moveit = types.ModuleType("moveit.planning")

    class MoveItPy:
        def __init__(self, **options):
            robot.moveit_options = options

        def get_planning_component(self, group):
            return types.SimpleNamespace(set_start_state_to_current_state=lambda: None,
                                         set_goal_state=lambda **goal: None, plan=Plan)

        def execute(self, trajectory, controllers):
            return None

        def get_planning_scene_monitor(self):
            scene = types.SimpleNamespace(current_state=types.SimpleNamespace(
                joint_positions={"right_finger_joint": robot.finger}))
            return types.SimpleNamespace(read_only=lambda: contextlib.nullcontext(scene))

        def get_robot_model(self):
            return types.SimpleNamespace(get_joint_model_group=lambda group: types.SimpleNamespace(
                active_joint_model_names=["right_finger_joint"]))
    moveit.MoveItPy = MoveItPy

    robot_state = types.ModuleType("moveit.core.robot_state")

    class RobotState:   # the SRDF's named states: the hand's finger at 0.0 closed, 0.04 open
        def __init__(self, model):
            self.positions = []

        def set_to_default_values(self, group, name):
            self.positions = [0.0 if name == "closed" else 0.04]

        def get_joint_group_positions(self, group):
            return self.positions
    robot_state.RobotState = RobotState
    return {"tf2_ros": tf2, "nav2_simple_commander": types.ModuleType("nav2_simple_commander"),
            "nav2_simple_commander.robot_navigator": nav2, "moveit": types.ModuleType("moveit"), "moveit.planning": moveit,
            "moveit.core": types.ModuleType("moveit.core"), "moveit.core.robot_state": robot_state}


class Plan:
    """A plan MoveIt found."""
    error_code = types.SimpleNamespace(val=1)
    trajectory = "path"

    def __bool__(self):
        return True


@pytest.fixture
def robot(monkeypatch):
    robot = Robot()
    for name, module in fake_modules(robot).items():
        monkeypatch.setitem(sys.modules, name, module)
    return robot


def latest(states):
    return robot_from_msg(states[-1]) if states else None


def test_robot_state_comes_from_tf_and_the_commands_that_succeeded(ros, robot, tmp_path):
    from planner.ros.nodes.executor import ExecutorNode

    config = deployed(load_config(write_config(tmp_path)), sim=False)
    client = RosClient("robot_state_test")
    try:
        states = client.collect(RobotState, "robot/state")
        executor = client.add(ExecutorNode(config))
        assert robot.initial_poses == []   # the robot's localizer is not told it stands at the origin
        assert robot.moveit_options == {"node_name": "planner_moveit", "name_space": ""}

        # No transform yet: nothing is published rather than a pose at the origin.
        threading.Event().wait(0.5)
        assert states == []
        robot.pose = (1.0, 2.0, 0.5)
        wait_for(lambda: latest(states) is not None, 10)
        state = latest(states)
        assert (state.pose.x, state.pose.y, state.pose.yaw) == pytest.approx((1.0, 2.0, 0.5))
        assert state.held == {"left": "", "right": ""} and state.room == "" and not state.busy
        assert states[-1].header.frame_id == "map"

        point = (1.5, 2.0, 0.8)
        backend = executor.backend
        robot.finger = 0.0   # the hand closes on nothing: the grasp fails, whatever the controllers said
        missed = backend.run(Command("grasp", arm="right", object_id="bottle_1", point=point), threading.Event())
        assert missed.code == "GRASP_NOT_CONFIRMED"
        robot.finger = 0.02
        assert backend.run(Command("grasp", arm="right", object_id="bottle_1", point=point), threading.Event()).ok
        wait_for(lambda: latest(states).held["right"] == "bottle_1", 10)
        robot.finger = 0.0   # it slipped out: verify_grasp finds the hand empty, and the state says so
        assert backend.run(Command("verify_grasp", arm="right", object_id="bottle_1"), threading.Event()).code == "GRASP_LOST"
        wait_for(lambda: latest(states).held["right"] == "", 10)
        robot.finger = 0.02
        assert backend.run(Command("grasp", arm="right", object_id="bottle_1", point=point), threading.Event()).ok
        wait_for(lambda: latest(states).held["right"] == "bottle_1", 10)
        robot.pose = (3.0, 2.0, math.pi)
        wait_for(lambda: latest(states).pose.x == pytest.approx(3.0), 10)
        assert backend.run(Command("release", arm="right", object_id="bottle_1", target_id="table_1", point=point),
                           threading.Event()).ok
        wait_for(lambda: latest(states).held == {"left": "", "right": ""}, 10)
    finally:
        client.close()


def test_perception_puts_a_state_without_a_room_in_the_room_its_pose_is_in(scene):
    robot = scene.known_robot
    scene.set_robot(RobotSnapshot(robot.pose, "", robot.arms, robot.held))
    assert scene.known_robot.room == robot.room and robot.room
