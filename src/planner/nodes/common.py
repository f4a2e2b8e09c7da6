"""What every node shares: conversions between messages and core types, waiting on service and
action futures from worker threads, QoS profiles, and the node main loop."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose2D as Pose2DMsg, Vector3
from rclpy.action import ActionClient
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from transforms3d.quaternions import mat2quat

from planner.config import StackConfig, load_config
from planner.core.controller import ExecutionEventInfo
from planner.core.files import InputError
from planner.core.geometry import Pose2D
from planner.core.react import FailureInfo
from planner.core.frames import from_quaternion
from planner.core.scene_graph import Detection, Entity, RobotSnapshot, SceneGraph, SensorFrame
from planner.core.skills import Command
from planner.msg import (Command as CommandMsg, Detection3D, Detection3DArray, ExecutionEvent, FailureMessage,
                         LabelScore, RobotState, SceneEdge, SceneGraph as SceneGraphMsg, SceneGraphUpdate, SceneNode)

# Late joiners get the last message (scene graph, status).
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
# Status keeps its recent lines for late subscribers: a problem found while a node starts (a
# rejected file, a database set aside) is reported before anyone can have subscribed.
STATUS_QOS = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
STATUS_TOPIC = "planner/status"
ESTOP_TOPIC = "emergency_stop"   # std_msgs/Bool: true stops every motion and task, false releases


class CallFailed(RuntimeError):
    pass


# ---- time --------------------------------------------------------------------------------------
def stamp_now(node: Node) -> Time:
    return node.get_clock().now().to_msg()


def seconds(stamp: Time) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def to_stamp(value: float) -> Time:
    whole = int(value)
    return Time(sec=whole, nanosec=int((value - whole) * 1e9))


# ---- geometry ------------------------------------------------------------------------------------
def pose_to_msg(pose: Pose2D) -> Pose2DMsg:
    return Pose2DMsg(x=float(pose.x), y=float(pose.y), theta=float(pose.yaw))


def pose_from_msg(msg: Pose2DMsg) -> Pose2D:
    return Pose2D(msg.x, msg.y, msg.theta)


def point_msg(values) -> Point:
    return Point(x=float(values[0]), y=float(values[1]), z=float(values[2]))


# ---- scene graph -----------------------------------------------------------------------------
def entity_to_msg(entity: Entity, scene: SceneGraph | None = None) -> SceneNode:
    parent = entity.room
    if scene is not None and entity.kind == "object":
        support = scene.support(entity.id)
        parent = support[1] if support and support[0] != "near" else entity.room
    return SceneNode(
        id=entity.id, kind=entity.kind, label=entity.label,
        labels=[LabelScore(label=k, probability=float(v)) for k, v in entity.labels.items()],
        room=entity.room, parent=parent, center=point_msg(entity.center),
        size=Vector3(x=float(entity.size[0]), y=float(entity.size[1]), z=float(entity.size[2])),
        status=entity.status, state=entity.state, mass_kg=float(entity.mass_kg), last_seen=to_stamp(entity.last_seen),
        outline=[Point(x=float(x), y=float(y), z=0.0) for x, y in entity.polygon])


def entity_from_msg(msg: SceneNode) -> Entity:
    return Entity(id=msg.id, kind=msg.kind, label=msg.label, labels={s.label: s.probability for s in msg.labels},
                  center=(msg.center.x, msg.center.y, msg.center.z), size=(msg.size.x, msg.size.y, msg.size.z),
                  room=msg.room, status=msg.status, state=msg.state, mass_kg=msg.mass_kg, last_seen=seconds(msg.last_seen),
                  polygon=[(p.x, p.y) for p in msg.outline])


def edge_to_msg(edge: dict) -> SceneEdge:
    return SceneEdge(source=edge["source"], relation=edge["relation"], target=edge["target"])


def scene_from_msg(msg: SceneGraphMsg, robot: RobotState | None = None) -> SceneGraph:
    nodes = [entity_from_msg(node).__dict__ for node in msg.nodes]
    scene = SceneGraph.from_dict({"nodes": nodes, "edges": [{"source": e.source, "relation": e.relation, "target": e.target}
                                                            for e in msg.edges]})
    if robot is not None and robot.arms:
        scene.robot = robot_from_msg(robot)
    return scene


def apply_update_msg(scene: SceneGraph, msg: SceneGraphUpdate) -> None:
    """Bring a scene graph taken from /scene_graph up to date with one /scene_graph/updates message."""
    scene.apply_update({"nodes": [entity_from_msg(node).__dict__ for node in msg.nodes],
                        "edges": [{"source": e.source, "relation": e.relation, "target": e.target} for e in msg.edges],
                        "removed": list(msg.removed)})


def robot_to_msg(robot: RobotSnapshot, stamp: Time) -> RobotState:
    msg = RobotState(base_pose=pose_to_msg(robot.pose), room=robot.room, arms=list(robot.arms),
                     held=[robot.held.get(arm, "") for arm in robot.arms], busy=robot.busy)
    msg.header.stamp = stamp
    msg.header.frame_id = "map"
    return msg


def robot_from_msg(msg: RobotState) -> RobotSnapshot:
    return RobotSnapshot(pose=pose_from_msg(msg.base_pose), room=msg.room, arms=list(msg.arms),
                         held=dict(zip(msg.arms, msg.held)), busy=msg.busy)


# ---- detections ------------------------------------------------------------------------------
def frame_to_msg(frame: SensorFrame, stamp: Time) -> Detection3DArray:
    msg = Detection3DArray(fov_deg=float(frame.fov_deg), range_m=float(frame.range_m))
    msg.header.stamp = stamp
    msg.header.frame_id = frame.frame_id
    position = msg.sensor_pose.position
    position.x, position.y, position.z = (float(v) for v in frame.sensor[:3, 3])
    # transforms3d quaternions are (w, x, y, z); ROS messages are (x, y, z, w).
    w, x, y, z = mat2quat(frame.sensor[:3, :3])
    orientation = msg.sensor_pose.orientation
    orientation.x, orientation.y, orientation.z, orientation.w = float(x), float(y), float(z), float(w)
    for detection in frame.detections:
        item = Detection3D(labels=[LabelScore(label=k, probability=float(v)) for k, v in detection.labels.items()],
                           center=point_msg(detection.center), state=detection.state,
                           size=Vector3(x=float(detection.size[0]), y=float(detection.size[1]), z=float(detection.size[2])))
        if detection.rotation is not None:
            w, x, y, z = mat2quat(detection.rotation)
            orientation = item.orientation
            orientation.x, orientation.y, orientation.z, orientation.w = float(x), float(y), float(z), float(w)
        msg.detections.append(item)
    return msg


def frame_from_msg(msg: Detection3DArray) -> tuple[SensorFrame, list[str]]:
    """Detections as they came (in header.frame_id); unusable ones are left out and described."""
    position, q = msg.sensor_pose.position, msg.sensor_pose.orientation
    sensor = from_quaternion((position.x, position.y, position.z), (q.w, q.x, q.y, q.z))
    detections, problems = [], []
    for index, item in enumerate(msg.detections):
        o = item.orientation
        # x = y = z = 0 is no rotation whatever w is (1 by default, 0 when left unset).
        rotation = None if (o.x, o.y, o.z) == (0.0, 0.0, 0.0) else from_quaternion((0, 0, 0), (o.w, o.x, o.y, o.z))[:3, :3]
        detection = Detection({s.label: s.probability for s in item.labels}, (item.center.x, item.center.y, item.center.z),
                              (item.size.x, item.size.y, item.size.z), rotation, item.state)
        problem = detection.problem()
        if problem is None:
            detections.append(detection)
        else:
            problems.append(f"detection {index} ({detection.label if detection.labels else '?'}): {problem}")
    frame = SensorFrame(msg.header.frame_id or "map", sensor, msg.fov_deg, msg.range_m, seconds(msg.header.stamp), detections)
    return frame, problems


# ---- execution and failures ------------------------------------------------------------------
def command_to_msg(command: Command) -> CommandMsg:
    msg = CommandMsg(name=command.name, arm=command.arm, object_id=command.object_id, target_id=command.target_id,
                     text=command.text, timeout_s=float(command.timeout_s))
    if command.base_pose is not None:
        msg.base_pose = pose_to_msg(command.base_pose)
    if command.point is not None:
        msg.point = point_msg(command.point)
    return msg


def command_from_msg(msg: CommandMsg) -> Command:
    point = (msg.point.x, msg.point.y, msg.point.z)
    return Command(name=msg.name, arm=msg.arm, object_id=msg.object_id, target_id=msg.target_id,
                   base_pose=Pose2D(msg.base_pose.x, msg.base_pose.y, msg.base_pose.theta) if msg.name == "navigate" else None,
                   point=point if any(point) else None, text=msg.text, timeout_s=msg.timeout_s or 60.0)


def event_from_msg(msg: ExecutionEvent) -> ExecutionEventInfo:
    return ExecutionEventInfo(execution_id=msg.execution_id, task_id=msg.task_id, skill=msg.skill, command=msg.command,
                              index=msg.index, total=msg.total, state=msg.state, code=msg.code, detail=msg.detail)


def failure_to_msg(failure: FailureInfo, stamp: Time, execution_id: str = "", task_id: str = "",
                   request: str = "") -> FailureMessage:
    return FailureMessage(stamp=stamp, execution_id=execution_id, task_id=task_id, request=request,
                          skill=failure.skill, command=failure.command, code=failure.code, reason=failure.reason,
                          context_json=json.dumps(failure.context))


def failure_from_msg(msg: FailureMessage) -> FailureInfo:
    try:
        context = json.loads(msg.context_json) if msg.context_json else {}
    except json.JSONDecodeError:
        context = {"unparsed": msg.context_json}
    return FailureInfo(skill=msg.skill, command=msg.command, code=msg.code, reason=msg.reason, context=context)


# ---- waiting on ROS futures from worker threads ----------------------------------------------
STOP_POLL_S = 0.05


def wait_future(future, timeout_s: float, what: str, give_up: bool = True, stop: threading.Event | None = None) -> Any:
    """The future's result; CallFailed after `timeout_s`, or as soon as `stop` is set, when the
    future is dropped unless `give_up` is False (its answer is still wanted, e.g. an action
    result after a cancel)."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    deadline = time.monotonic() + timeout_s
    problem = ""
    while not done.is_set() and not problem:
        remaining = deadline - time.monotonic()
        if stop is not None and stop.is_set():
            problem = "stopped"
        elif remaining <= 0:
            problem = f"no answer within {timeout_s:.0f} s"
        else:
            done.wait(min(remaining, STOP_POLL_S) if stop is not None else remaining)
    if problem:
        if give_up:
            future.cancel()
        raise CallFailed(f"{what}: {problem}")
    if future.exception() is not None:
        raise CallFailed(f"{what}: {future.exception()}")
    return future.result()


def call_service(client, request, timeout_s: float = 5.0) -> Any:
    if not client.wait_for_service(timeout_sec=min(timeout_s, 5.0)):
        raise CallFailed(f"service {client.srv_name} is not available")
    return wait_future(client.call_async(request), timeout_s, f"service {client.srv_name}")


CANCEL_WAIT_S = 5.0   # how long a timed-out goal may take to end after its cancel


class ActionCall:
    """Send one goal and wait for its result from a worker thread; cancel() from any thread."""

    def __init__(self, client: ActionClient, name: str):
        self.client = client
        self.name = name
        self.goal_handle = None

    def run(self, goal, timeout_s: float, feedback_callback=None, stop: threading.Event | None = None):
        """The result; the goal is canceled when it takes longer than `timeout_s` or `stop` is set,
        even if that happened before the goal was sent."""
        if not self.client.wait_for_server(timeout_sec=5.0):
            raise CallFailed(f"action {self.name} is not available")
        self.goal_handle = wait_future(self.client.send_goal_async(goal, feedback_callback=feedback_callback),
                                       10.0, f"action {self.name} goal")
        if not self.goal_handle.accepted:
            raise CallFailed(f"action {self.name} rejected the goal")
        result = self.goal_handle.get_result_async()
        try:
            return wait_future(result, timeout_s, f"action {self.name}", give_up=False, stop=stop).result
        except CallFailed:
            # Cancel, and give the server a moment to wind the goal down, so that the next goal
            # does not find the robot still busy with this one.
            self.cancel()
            try:
                wait_future(result, CANCEL_WAIT_S, f"action {self.name} cancel")
            except CallFailed:
                pass
            raise

    def cancel(self) -> None:
        if self.goal_handle is not None:
            self.goal_handle.cancel_goal_async()


# ---- node plumbing ---------------------------------------------------------------------------
class UnavailablePolicy:
    """Stands where the configured LLM could not be set up, so each call ends with the reason."""

    def __init__(self, reason: str):
        self.reason = reason

    def complete(self, messages, schema):
        from planner.core.react import PolicyError

        raise PolicyError(self.reason)


class PlannerNode(Node):
    """A node that loads the stack config from its `config` parameter and reports on /planner/status."""

    def __init__(self, name: str, config: StackConfig | None = None, namespace: str | None = None):
        super().__init__(name, namespace=namespace)
        path = self.declare_parameter("config", "").value
        self.config = config or load_config(path or None)
        self._status = self.create_publisher(String, STATUS_TOPIC, STATUS_QOS)
        self.embedded = None  # the embedded LLM server this node started, stopped by close

    def open_llm(self):
        """The configured LLM, or a policy whose every call fails with why there is none (reported)."""
        from planner.backends.llm import open_policy
        from planner.backends.model_store import ModelError
        from planner.core.react import PolicyError

        settings = self.config.llm.resolved()
        try:
            policy, self.embedded = open_policy(settings, self.config.path(settings.script) if settings.script else None)
        except (ModelError, PolicyError, InputError) as error:
            self.report("error", f"LLM unavailable: {error}")
            return UnavailablePolicy(f"LLM unavailable: {error}")
        if self.embedded is not None:
            self.get_logger().info(f"embedded LLM {settings.embedded.model} serving at {self.embedded.base_url}")
        return policy

    def close(self) -> None:
        """What the node holds outside ROS goes with it (spin_node calls this at shutdown)."""
        if self.embedded is not None:
            self.embedded.stop()

    def report(self, level: str, message: str) -> None:
        """A problem or state change a user should see, on /planner/status and in the log."""
        # rclpy wants one severity per logging call site.
        if level == "error":
            self.get_logger().error(message)
        elif level == "warn":
            self.get_logger().warning(message)
        else:
            self.get_logger().info(message)
        self._status.publish(String(data=f"[{self.get_name()}] {level.upper()}: {message}"))


def spin_node(node: Node) -> None:
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        close = getattr(node, "close", None)
        if close:
            close()
        node.destroy_node()
        executor.shutdown()


def main_for(node_class) -> int:
    rclpy.init()
    try:
        try:
            node = node_class()
        except (InputError, ValueError) as error:
            print(f"{node_class.__name__}: configuration rejected:\n{error}", file=sys.stderr)
            return 2
        spin_node(node)
    finally:
        if rclpy.ok():
            rclpy.shutdown()
    return 0


def wait_until(predicate, timeout_s: float, period_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(period_s)
    return predicate()
