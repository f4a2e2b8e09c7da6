"""The TF adapter against a test double of the tf2_ros API (tf2_ros is not on PyPI): frames the
robot profile does not name are looked up in TF, and TF's errors become ours."""

import math
import sys
import types

import numpy as np
import pytest
from geometry_msgs.msg import TransformStamped

from planner.core.frames import FrameError, FrameTree, TransformNotReady
from planner.core.scene_graph import Detection, SensorFrame


class FakeTf2:
    """tf2_ros as the adapter uses it: Buffer.lookup_transform(target, source, time), the
    listener, and the three lookup exceptions."""

    class LookupException(Exception):
        pass

    class ConnectivityException(Exception):
        pass

    class ExtrapolationException(Exception):
        pass

    @classmethod
    def module(cls) -> types.ModuleType:
        module = types.ModuleType("tf2_ros")
        module.LookupException, module.ConnectivityException = cls.LookupException, cls.ConnectivityException
        module.ExtrapolationException = cls.ExtrapolationException
        module.TransformListener = lambda buffer, node: None

        class Buffer:
            def lookup_transform(self, target, source, time):
                if source != "head_camera_optical":
                    raise cls.LookupException(f'"{source}" passed to lookupTransform argument source_frame does not exist')
                if time.nanoseconds > 10e9:
                    raise cls.ExtrapolationException("Lookup would require extrapolation into the future")
                found = TransformStamped()
                found.header.frame_id, found.child_frame_id = target, source
                found.transform.translation.x, found.transform.translation.z = 1.0, 1.5
                # Rotated 90 degrees about z: the camera looks along the map's +y.
                found.transform.rotation.z, found.transform.rotation.w = math.sin(math.pi / 4), math.cos(math.pi / 4)
                return found

        module.Buffer = Buffer
        return module


@pytest.fixture
def tf_tree(monkeypatch):
    monkeypatch.setitem(sys.modules, "tf2_ros", FakeTf2.module())
    from planner.ros.tf_frames import TfLookup, tf_available

    assert tf_available()
    return FrameTree(fallback=TfLookup(node=None))


def test_frames_only_tf_knows_are_placed_through_tf(tf_tree):
    frame = SensorFrame("head_camera_optical", np.eye(4), 60.0, 4.0, 5.0, [Detection({"cup": 1.0}, (2.0, 0.0, 0.0), (0.1, 0.3, 0.1))])
    placed = frame.in_map(tf_tree)
    assert placed.detections[0].center == pytest.approx((1.0, 2.0, 1.5))
    assert placed.detections[0].size == pytest.approx((0.3, 0.1, 0.1))
    assert placed.sensor.yaw == pytest.approx(math.pi / 2)


def test_tf_errors_become_frame_errors(tf_tree):
    with pytest.raises(TransformNotReady):
        tf_tree.to_fixed("head_camera_optical", 20.0)
    with pytest.raises(FrameError, match="TF has no transform from 'lidar'"):
        tf_tree.to_fixed("lidar", 5.0)
