"""TF for real: tf2_ros's own broadcasters in another process (a robot's drivers, test/robot_process.py)
and perception here, with TIAGo's REP 103 optical camera frame; detections as planner's and as
vision_msgs' Detection3DArray, published with the sensor-data QoS detectors use."""

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from std_msgs.msg import String

from conftest import CONFIG, RosClient, ros_from_source, wait_for, write_config
from planner.config import load_config
from planner.core.frames import FrameTree, TransformNotReady, planar, rigid
from planner.core.geometry import Pose2D, in_field_of_view
from planner.core.robot_profile import load_robot_profile
from planner.core.scene_graph import SensorFrame
from planner.srv import GetSceneGraph

TIAGO = CONFIG / "robots" / "tiago.yaml"
CAMERA = "head_front_camera_color_optical_frame"
# base_footprint -> the optical frame: z forward, x right, y down (x, y, z, w).
OPTICAL_XYZW = (-0.5, 0.5, -0.5, 0.5)
BASE = (1.0, 0.0, math.pi / 2)   # in the map: at x = 1, facing +y
# The camera as TF has it: 0.22 m ahead of the base and, the torso raised, 1.3 m up (the profile's
# nominal mount says 1.1 m). 2 m in front of it, TF puts an object here.
CAMERA_IN_BASE = (0.22, 0.0, 1.3)
AHEAD_IN_CAMERA = (0.0, 0.0, 2.0)
AHEAD_IN_MAP = (1.0, 2.22, 1.3)


def robot_drivers(**settings) -> subprocess.Popen:
    settings = {"base_frame": "base_footprint", "camera_frame": CAMERA, "base": BASE, "camera_xyz": CAMERA_IN_BASE,
                "camera_xyzw": OPTICAL_XYZW, "detections": [["stapler", AHEAD_IN_CAMERA]], "kind": "planner",
                **settings}
    return subprocess.Popen([sys.executable, str(Path(__file__).with_name("robot_process.py")), json.dumps(settings)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class TiagoPerception:
    """The perception node with TIAGo's profile and TF on, spun here."""

    def __init__(self, tmp_path):
        from planner.ros.nodes.perception import PerceptionNode

        # Frames wait for TF for up to 10 s: on two loaded cores, discovering the drivers' TF publisher
        # alone took longer than the default second.
        config = load_config(write_config(tmp_path, robot=str(TIAGO), perception={"tf": "on", "state_file": "",
                                                                                  "transform_wait_s": 10.0}))
        self.client = RosClient(f"tf_test_{time.monotonic_ns()}")
        self.status = self.client.collect(String, "/planner/status")
        self.node = self.client.add(PerceptionNode(config))

    def staplers(self):
        graph = self.client.call(GetSceneGraph, "/perception/get_scene_graph", GetSceneGraph.Request()).graph
        return [node for node in graph.nodes if node.label == "stapler"]

    def close(self):
        self.client.close()


@pytest.fixture
def perception(ros, tmp_path):
    running = TiagoPerception(tmp_path)
    yield running
    running.close()


@ros_from_source("tf2_ros", "vision_msgs.msg")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["planner", "vision_msgs"])
def test_an_object_2_m_in_front_of_tiagos_optical_camera_lands_where_tf_puts_it(perception, kind):
    drivers = robot_drivers(kind=kind)
    try:
        wait_for(lambda: perception.staplers(), 60)
        stapler = perception.staplers()[0]
        center = (stapler.center.x, stapler.center.y, stapler.center.z)
        assert center == pytest.approx(AHEAD_IN_MAP, abs=0.01)
    finally:
        stop(drivers)
    rejected = [s.data for s in perception.status if "rejected" in s.data or "dropped" in s.data]
    assert not rejected, rejected


@ros_from_source("tf2_ros")
@pytest.mark.timeout(120)
def test_frames_that_arrive_before_their_transform_wait_for_it(perception):
    """Two camera frames, then TF: the frames wait (perception.transform_wait_s) instead of being
    rejected for a transform TF does not have yet."""
    drivers = robot_drivers(frames=2, tf_after_s=0.5)
    try:
        wait_for(lambda: perception.staplers(), 60)
        assert (perception.staplers()[0].center.x, perception.staplers()[0].center.y) == pytest.approx(
            AHEAD_IN_MAP[:2], abs=0.01)
    finally:
        stop(drivers)
    rejected = [s.data for s in perception.status if "rejected" in s.data]
    assert not rejected, rejected


def test_an_optical_cameras_field_of_view_points_where_it_looks():
    """Placed without TF (the profile's mount, as with perception.tf: off): the view wedge of TIAGo's
    optical camera points along the base's heading, so what is ahead should have been seen and what
    is to its right should not; the camera frame's own x axis points right."""
    camera = load_robot_profile(TIAGO).camera
    assert camera.view_axis(CAMERA) == (0.0, 0.0, 1.0) and camera.view_axis("base_footprint") == (1.0, 0.0, 0.0)
    tree = FrameTree("map")
    tree.set_dynamic("map", "base_footprint", 5.0, planar(Pose2D(*BASE)))
    tree.set_static("base_footprint", CAMERA, rigid(camera.mount_xyz, camera.mount_rpy))
    frame = SensorFrame(CAMERA, np.eye(4), camera.fov_deg, camera.range_m, 5.0, [], view_axis=camera.view_axis(CAMERA))
    seen = frame.in_map(tree)
    assert (seen.sensor.x, seen.sensor.y, seen.sensor.yaw) == pytest.approx((1.0, 0.22, math.pi / 2))
    assert in_field_of_view(seen.sensor, seen.fov_deg, seen.range_m, *AHEAD_IN_MAP[:2])
    assert not in_field_of_view(seen.sensor, seen.fov_deg, seen.range_m, 3.0, 0.22)   # to the base's right
    camera_in_map = tree.to_fixed(CAMERA, 5.0)
    assert camera_in_map[:3, :3] @ np.array(AHEAD_IN_CAMERA) + camera_in_map[:3, 3] == pytest.approx((1.0, 2.22, 1.1))


@ros_from_source("tf2_ros")
@pytest.mark.timeout(60)
def test_a_frame_tf_does_not_know_is_waited_for_and_then_named(ros):
    from planner.ros.tf_frames import TfLookup

    client = RosClient(f"tf_lookup_test_{time.monotonic_ns()}")
    try:
        lookup = TfLookup(client.node, "map")
        with pytest.raises(TransformNotReady, match="TF has no transform from 'lidar' to 'map'"):
            lookup("lidar", 5.0)
    finally:
        client.close()
