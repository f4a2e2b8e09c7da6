"""TF on a ROS 2 install: frames the robot publishes on /tf and /tf_static, through tf2_ros.

tf2_ros comes from a ROS 2 install, or on the pip path from scripts/install-ros-src.sh. With it the
perception node asks TF for the camera and every frame its own tree (the robot state) does not hold.
"""

from __future__ import annotations

import numpy as np

from planner.core.frames import TransformNotReady, from_quaternion


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
            # Not yet, as far as anyone can tell: TF fills in as its publishers start, so the caller
            # waits a while for it like for a late transform, and says why when it gives up.
            raise TransformNotReady(f"TF has no transform from {frame!r} to {self.fixed_frame!r}: {error}") from None
        translation, rotation = found.transform.translation, found.transform.rotation
        return from_quaternion((translation.x, translation.y, translation.z), (rotation.w, rotation.x, rotation.y, rotation.z))
