"""QoS profiles and the topic names every node shares."""

from __future__ import annotations

from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy

# Late joiners get the last message (scene graph, status).
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
# Camera data: best effort as detectors publish it (the sensor-data QoS); a best-effort subscriber hears
# reliable publishers too. Deeper than the sensor-data QoS's 5, for bursts while a frame is being fused.
SENSOR_DATA = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
# Where perception takes vision_msgs/Detection3DArray (where vision_msgs is installed); remap a detector to it.
VISION_DETECTIONS_TOPIC = "perception/detections_3d"
# TF's own QoS (tf2_ros): /tf as a stream, /tf_static latched for listeners that start later.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
# /clock as Gazebo's bridge and rosbag publish it; a late clock tick is superseded by the next.
CLOCK_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
# Requests of an action goal service: the default keeps 10, so of 20 goals sent together the rest were
# never answered, neither accepted nor rejected.
GOAL_REQUESTS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
# Status keeps its recent lines for late subscribers: a problem found while a node starts (a
# rejected file, a database set aside) is reported before anyone can have subscribed.
STATUS_QOS = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
STATUS_TOPIC = "planner/status"
ESTOP_TOPIC = "emergency_stop"   # std_msgs/Bool: true stops every motion and task, false releases
ESTOP_STATE_TOPIC = "emergency_stop/state"   # planner/EmergencyStop, latched: the stop as the nodes hold it

# Every node's `~/alive` publisher: DDS asserts its liveliness for as long as the process runs, so
# a subscriber hears within the lease that it died, kill -9 included; discovery takes ~20 s.
ALIVE_LEASE_S = 1.0
ALIVE = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, liveliness=LivelinessPolicy.AUTOMATIC,
                   liveliness_lease_duration=Duration(seconds=ALIVE_LEASE_S))


def alive_topic(node_name: str) -> str:
    return f"{node_name}/alive"
