"""On a real robot (sim:=false) /robot/state comes from the executor's robot backend: the base pose
from TF, the hands from the commands that succeeded. Over real rclpy/DDS, with doubles of the three
Python APIs this machine cannot install (tf2_ros, nav2_simple_commander, moveit_py and its messages),
with perception's scene graph giving the arm its obstacles."""

import math
import sys
import threading
import types

import pytest
from geometry_msgs.msg import TransformStamped

import moveit_doubles
from conftest import RosClient, wait_for, without_tf, write_config
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
        self.moveit = None       # the MoveItPy double the backend made
        self.moveit_options = None

    @property
    def finger(self) -> float:
        """The right hand's finger joint, as MoveIt's robot state has it (0: closed)."""
        return self.moveit.joints["right_finger_joint"]

    @finger.setter
    def finger(self, position: float) -> None:
        self.moveit.joints["right_finger_joint"] = position


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

    class MoveItPy(moveit_doubles.FakeMoveIt):
        def __init__(self, **options):
            super().__init__(NAMED_STATES, {"right_finger_joint": 0.02})
            robot.moveit, robot.moveit_options = self, options
    return {"tf2_ros": tf2, "nav2_simple_commander": types.ModuleType("nav2_simple_commander"),
            "nav2_simple_commander.robot_navigator": nav2, **moveit_doubles.modules(MoveItPy)}


# The SRDF's named states of robee's right hand: the finger at 0.0 closed, 0.04 open.
NAMED_STATES = {("right_hand", "open"): {"right_finger_joint": 0.04}, ("right_hand", "closed"): {"right_finger_joint": 0.0}}


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
    from planner.ros.nodes.perception import PerceptionNode

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

        # In front of the kitchen table with the bottle on it (perception's scene graph, from the map).
        client.add(PerceptionNode(without_tf(config)))
        robot.pose = (4.3, 0.9, math.pi / 2)
        wait_for(lambda: latest(states).pose.x == pytest.approx(4.3), 10)
        point = (4.3, 1.6, 0.875)
        backend, scene = executor.backend, robot.moveit.scene
        robot.finger = 0.0   # the hand closes on nothing: the grasp fails, whatever the controllers said
        missed = backend.run(Command("grasp", arm="right", object_id="bottle_1", point=point), threading.Event())
        assert missed.code == "GRASP_NOT_CONFIRMED"
        assert set(scene.world) == {"table_1"} and scene.attached == {}   # the bottle out while the hand closes
        robot.finger = 0.02
        assert backend.run(Command("grasp", arm="right", object_id="bottle_1", point=point), threading.Event()).ok
        assert scene.attached["right_tool0"].object.id == "bottle_1"
        wait_for(lambda: latest(states).held["right"] == "bottle_1", 10)
        robot.finger = 0.0   # it slipped out: verify_grasp finds the hand empty, and the state says so
        assert backend.run(Command("verify_grasp", arm="right", object_id="bottle_1"), threading.Event()).code == "GRASP_LOST"
        assert scene.attached == {}
        wait_for(lambda: latest(states).held["right"] == "", 10)
        robot.finger = 0.02
        assert backend.run(Command("grasp", arm="right", object_id="bottle_1", point=point), threading.Event()).ok
        wait_for(lambda: latest(states).held["right"] == "bottle_1", 10)
        # At the other kitchen table, with an apple on it: the first table is out of reach, out of the world.
        robot.pose = (2.0, 3.2, math.pi / 2)
        wait_for(lambda: latest(states).pose.x == pytest.approx(2.0), 10)
        assert backend.run(Command("release", arm="right", object_id="bottle_1", target_id="table_2",
                                   point=(2.0, 4.0, 0.875)), threading.Event()).ok
        assert scene.attached == {} and set(scene.world) == {"apple_1", "bottle_1"}
        wait_for(lambda: latest(states).held == {"left": "", "right": ""}, 10)
    finally:
        client.close()


def test_perception_puts_a_state_without_a_room_in_the_room_its_pose_is_in(scene):
    robot = scene.known_robot
    scene.set_robot(RobotSnapshot(robot.pose, "", robot.arms, robot.held))
    assert scene.known_robot.room == robot.room and robot.room
