"""TF on a ROS 2 install: frames the robot publishes on /tf and /tf_static, through tf2_ros.

tf2_ros is not on PyPI, so this is used only where a ROS install provides it; the perception
node then asks TF for every frame its own tree (camera mount + robot state) does not know.
"""

from __future__ import annotations

import numpy as np

from planner.core.frames import FrameError, TransformNotReady, from_quaternion


def tf_available() -> bool:
    try:
        import tf2_ros  # noqa: F401
    except ImportError:
        return False
    return True


class TfLookup:
    """fixed_T_frame at a stamp from a tf2 buffer filled by a TransformListener on `node`."""

    def __init__(self, node, fixed_frame: str = "map"):
        import tf2_ros

        self._tf2 = tf2_ros
        self.fixed_frame = fixed_frame
        self.buffer = tf2_ros.Buffer()
        self.listener = tf2_ros.TransformListener(self.buffer, node)

    def __call__(self, frame: str, stamp: float) -> np.ndarray:
        from rclpy.time import Time

        try:
            found = self.buffer.lookup_transform(self.fixed_frame, frame, Time(seconds=stamp))
        except self._tf2.ExtrapolationException as error:
            raise TransformNotReady(f"TF: {error}") from None
        except (self._tf2.LookupException, self._tf2.ConnectivityException) as error:
            raise FrameError(f"TF has no transform from {frame!r} to {self.fixed_frame!r}: {error}") from None
        translation, rotation = found.transform.translation, found.transform.rotation
        return from_quaternion((translation.x, translation.y, translation.z), (rotation.w, rotation.x, rotation.y, rotation.z))
