"""Conversions between the package's messages and the core's types, and ROS time stamps."""

from __future__ import annotations

import json

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, TransformStamped, Vector3
from geometry_msgs.msg import Pose2D as Pose2DMsg
from rclpy.node import Node
from transforms3d.quaternions import mat2quat

from planner.core.controller import ExecutionEventInfo
from planner.core.files import point_problem, stack_labels
from planner.core.frames import from_quaternion
from planner.core.geometry import Pose2D
from planner.core.robot_profile import Camera
from planner.core.scene_graph import Detection, Entity, RobotSnapshot, SceneGraph, SensorFrame
from planner.core.skills import Command
from planner.core.types import FailureInfo
from planner.msg import Command as CommandMsg
from planner.msg import (
    Detection3D,
    Detection3DArray,
    ExecutionEvent,
    FailureMessage,
    LabelScore,
    RobotState,
    SceneEdge,
    SceneGraphUpdate,
    SceneNode,
)
from planner.msg import SceneGraph as SceneGraphMsg


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
        told=to_stamp(entity.told),
        outline=[Point(x=float(x), y=float(y), z=0.0) for x, y in entity.polygon])


def entity_from_msg(msg: SceneNode) -> Entity:
    return Entity(id=msg.id, kind=msg.kind, label=msg.label, labels={s.label: s.probability for s in msg.labels},
                  center=(msg.center.x, msg.center.y, msg.center.z), size=(msg.size.x, msg.size.y, msg.size.z),
                  room=msg.room, status=msg.status, state=msg.state, mass_kg=msg.mass_kg, last_seen=seconds(msg.last_seen),
                  told=seconds(msg.told),
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


def robot_to_msg(robot: RobotSnapshot, stamp: Time, map_frame: str) -> RobotState:
    msg = RobotState(base_pose=pose_to_msg(robot.pose), room=robot.room, arms=list(robot.arms),
                     held=[robot.held.get(arm, "") for arm in robot.arms], busy=robot.busy)
    msg.header.stamp = stamp
    msg.header.frame_id = map_frame
    return msg


def transform_msg(parent: str, child: str, matrix, stamp: Time) -> TransformStamped:
    """A geometry_msgs/TransformStamped of parent_T_child, as TF carries it."""
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, parent, child
    translation, rotation = msg.transform.translation, msg.transform.rotation
    translation.x, translation.y, translation.z = (float(v) for v in matrix[:3, 3])
    rotation.w, rotation.x, rotation.y, rotation.z = (float(v) for v in mat2quat(matrix[:3, :3]))
    return msg


def robot_state_problem(msg: RobotState) -> str | None:
    """What makes a robot state unusable, naming the field; None when it is fine."""
    pose = msg.base_pose
    if (problem := point_problem((pose.x, pose.y, pose.theta))) is not None:
        return f"base_pose: {problem}"
    if len(msg.held) != len(msg.arms):
        return f"held: one entry per arm ({len(msg.arms)}), got {len(msg.held)}"
    return None


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


def _rotation(o):
    # x = y = z = 0 is no rotation whatever w is (1 by default, 0 when left unset).
    return None if (o.x, o.y, o.z) == (0.0, 0.0, 0.0) else from_quaternion((0, 0, 0), (o.w, o.x, o.y, o.z))[:3, :3]


def _usable(detections: list[Detection], max_detections: int) -> tuple[list[Detection], list[str]]:
    """At most `max_detections`, the most confident, in their order; unusable ones left out and described."""
    problems = []
    items = list(enumerate(detections))
    if len(items) > max_detections:
        problems.append(f"{len(items) - max_detections} of {len(items)} detections left out, the least confident: "
                        f"at most {max_detections} per frame (perception.max_detections_per_frame)")
        items = sorted(items, key=lambda item: -max(item[1].labels.values(), default=0.0))
        items = sorted(items[:max_detections], key=lambda item: item[0])
    usable = []
    for index, detection in items:
        problem = detection.problem()
        if problem is None:
            usable.append(detection)
        else:
            problems.append(f"detection {index} ({detection.label if detection.labels else '?'}): {problem}")
    return usable, problems


def frame_from_msg(msg: Detection3DArray, map_frame: str, max_detections: int) -> tuple[SensorFrame, list[str]]:
    """Detections as they came (in header.frame_id, else the map frame), at most `max_detections`
    of them, the most confident; unusable ones are left out and described. The frame itself may
    still be unusable: see SensorFrame.problem."""
    position, q = msg.sensor_pose.position, msg.sensor_pose.orientation
    sensor = from_quaternion((position.x, position.y, position.z), (q.w, q.x, q.y, q.z))
    detections, problems = _usable([
        Detection({s.label: s.probability for s in item.labels}, (item.center.x, item.center.y, item.center.z),
                  (item.size.x, item.size.y, item.size.z), _rotation(item.orientation), item.state)
        for item in msg.detections], max_detections)
    frame = SensorFrame(msg.header.frame_id or map_frame, sensor, msg.fov_deg, msg.range_m, seconds(msg.header.stamp), detections)
    return frame, problems


def frame_from_vision_msg(msg, camera: Camera, map_frame: str, max_detections: int) -> tuple[SensorFrame, list[str]]:
    """A vision_msgs/Detection3DArray as a camera frame: each detection's hypotheses (class_id: score)
    are its label distribution, its bbox the box. The message says nothing of the camera, so the
    robot profile's camera gives the field of view and range when the detections are in its frame;
    in any other frame nothing is inferred missing for not being seen."""
    frame_id = msg.header.frame_id or map_frame
    detections, problems = _usable([
        Detection(stack_labels({result.hypothesis.class_id: result.hypothesis.score for result in item.results}),
                  (item.bbox.center.position.x, item.bbox.center.position.y, item.bbox.center.position.z),
                  (item.bbox.size.x, item.bbox.size.y, item.bbox.size.z), _rotation(item.bbox.center.orientation))
        for item in msg.detections], max_detections)
    in_camera = frame_id == camera.frame_id
    frame = SensorFrame(frame_id, np.eye(4), camera.fov_deg if in_camera else 0.0, camera.range_m if in_camera else 0.0,
                        seconds(msg.header.stamp), detections)
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


def event_to_msg(event: ExecutionEventInfo, stamp: Time) -> ExecutionEvent:
    return ExecutionEvent(stamp=stamp, execution_id=event.execution_id, task_id=event.task_id, skill=event.skill,
                          command=event.command, index=event.index, total=event.total, state=event.state,
                          code=event.code, detail=event.detail)


def failure_to_msg(failure: FailureInfo, stamp: Time, execution_id: str = "", task_id: str = "",
                   request: str = "") -> FailureMessage:
    return FailureMessage(stamp=stamp, execution_id=execution_id, task_id=task_id, request=request,
                          skill=failure.skill, command=failure.command, code=failure.code, reason=failure.reason,
                          context_json=json.dumps(failure.context))


UNREADABLE_CONTEXT = "unparsed"  # the key a failure context that is not JSON is kept under


def failure_from_msg(msg: FailureMessage) -> FailureInfo:
    try:
        context = json.loads(msg.context_json) if msg.context_json else {}
    except json.JSONDecodeError:
        context = {UNREADABLE_CONTEXT: msg.context_json}
    return FailureInfo(skill=msg.skill, command=msg.command, code=msg.code, reason=msg.reason, context=context)
