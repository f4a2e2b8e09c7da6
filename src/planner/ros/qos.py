"""QoS profiles and the topic names every node shares."""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

# Late joiners get the last message (scene graph, status).
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
# Requests of an action goal service: the default keeps 10, so of 20 goals sent together the rest were
# never answered, neither accepted nor rejected.
GOAL_REQUESTS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
# Status keeps its recent lines for late subscribers: a problem found while a node starts (a
# rejected file, a database set aside) is reported before anyone can have subscribed.
STATUS_QOS = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
STATUS_TOPIC = "planner/status"
ESTOP_TOPIC = "emergency_stop"   # std_msgs/Bool: true stops every motion and task, false releases
