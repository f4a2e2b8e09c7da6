"""A run recorded to an MCAP file that Foxglove (and `ros2 bag` with the MCAP plugin) opens: the
plan as it unfolds (/planner/trace, and /planner/plan with its markers), the scene graph and its markers, the robot state and the
simulator's events, as the CDR messages that went over DDS, each channel with its ROS 2 message
definition so a reader needs none of our packages.

On a ROS 2 install `ros2 bag record -s mcap` records the same topics; this is the pip path's recorder."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from rclpy.node import Node
from rclpy.qos import QoSProfile

from planner.ros.qos import LATCHED, RELIABLE

# What a recording holds: (topic, message type, QoS it is published with).
RECORDED = (("planner/trace", "planner/msg/PlanStep", RELIABLE),
            ("planner/plan", "planner/msg/PlanState", LATCHED),
            ("planner/plan/markers", "visualization_msgs/msg/MarkerArray", LATCHED),
            ("scene_graph", "planner/msg/SceneGraph", LATCHED),
            ("scene_graph/markers", "visualization_msgs/msg/MarkerArray", LATCHED),
            ("robot/state", "planner/msg/RobotState", RELIABLE),
            ("sim/events", "std_msgs/msg/String", RELIABLE))

PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "string", "wstring"}
SEPARATOR = "=" * 80


def _definition_file(message_type: str) -> Path:
    package, _, name = message_type.split("/")
    try:
        share = Path(get_package_share_directory(package))
    except PackageNotFoundError:
        raise ValueError(f"{message_type}: package {package} is not installed") from None
    path = share / "msg" / f"{name}.msg"
    if not path.is_file():
        raise ValueError(f"{message_type}: no {path}")
    return path


def _field_types(text: str, package: str) -> list[str]:
    """The message types (pkg/msg/Name) of a definition's fields, in order; constants and
    primitives left out."""
    types = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) < 2 or "=" in words[1]:
            continue
        base = re.sub(r"<=\d+$", "", re.sub(r"\[.*\]$", "", words[0]))  # arrays and bounded strings: their element
        if base in PRIMITIVES:
            continue
        if base == "Header":
            types.append("std_msgs/msg/Header")
        elif "/" in base:
            pkg, name = base.split("/")[0], base.split("/")[-1]
            types.append(f"{pkg}/msg/{name}")
        else:
            types.append(f"{package}/msg/{base}")
    return types


def message_definition(message_type: str) -> str:
    """The full ROS 2 message definition of `message_type` (pkg/msg/Name): its own text, then each
    type it uses, once, under a separator and `MSG: pkg/Name`, as rosbag2 writes it into MCAP."""
    root = _definition_file(message_type).read_text()
    parts, seen = [root], {message_type}
    pending = _field_types(root, message_type.split("/")[0])
    while pending:
        used = pending.pop(0)
        if used in seen:
            continue
        seen.add(used)
        text = _definition_file(used).read_text()
        package, _, name = used.split("/")
        parts.append(f"{SEPARATOR}\nMSG: {package}/{name}\n{text}")
        pending += _field_types(text, package)
    return "\n".join(part.rstrip("\n") for part in parts) + "\n"


class McapRecorder:
    """Records RECORDED's topics of `node` (its namespace applied) into `path` until close()."""

    def __init__(self, node: Node, path: Path, topics=RECORDED):
        from mcap.writer import Writer

        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.file = path.open("wb")
        self.writer = Writer(self.file)
        self.writer.start(profile="ros2", library="planner")
        self.lock = threading.Lock()
        self.closed = False
        self.count = 0
        self.subscriptions = []
        for topic, message_type, qos in topics:
            self._record(node, topic, message_type, qos)

    def _record(self, node: Node, topic: str, message_type: str, qos: QoSProfile) -> None:
        from rosidl_runtime_py.utilities import get_message

        schema = self.writer.register_schema(name=message_type.replace("/msg/", "/"), encoding="ros2msg",
                                             data=message_definition(message_type).encode())
        channel = self.writer.register_channel(topic=node.resolve_topic_name(topic), message_encoding="cdr",
                                               schema_id=schema)

        def write(data: bytes) -> None:
            stamp = time.time_ns()
            with self.lock:
                if not self.closed:
                    self.writer.add_message(channel, log_time=stamp, publish_time=stamp, data=data, sequence=self.count)
                    self.count += 1
        self.subscriptions.append(node.create_subscription(get_message(message_type), topic, write, qos, raw=True))

    def close(self) -> int:
        """Finish the file; the number of messages in it."""
        with self.lock:
            if not self.closed:
                self.closed = True
                self.writer.finish()
                self.file.close()
        return self.count
