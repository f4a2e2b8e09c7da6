"""A robot's drivers in a process of their own, for tests against the real tf2_ros and vision_msgs:
    python robot_process.py SETTINGS_JSON
publishes the base on /tf (map -> base frame, x, y, yaw) and the camera on /tf_static with
tf2_ros's own broadcasters, and every 0.2 s one camera frame of detections, as
planner/Detection3DArray or vision_msgs/Detection3DArray, with the sensor-data QoS detectors use.
Settings: base_frame, camera_frame, base (x, y, yaw), camera_xyz, camera_xyzw, detections
([label, [x, y, z]] in the camera frame), kind ("planner" or "vision_msgs"), frames (how many camera
frames; default: one each tick for as long as it runs), tf_after_s (TF starts this long after the
first camera frame, then sends the base for the stamps it missed), namespace."""

import json
import math
import sys
import time

import rclpy
from geometry_msgs.msg import TransformStamped
from rclpy.qos import qos_profile_sensor_data
from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster


def transform(stamp, parent, child, xyz, xyzw):
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, parent, child
    msg.transform.translation.x, msg.transform.translation.y, msg.transform.translation.z = xyz
    msg.transform.rotation.x, msg.transform.rotation.y, msg.transform.rotation.z, msg.transform.rotation.w = xyzw
    return msg


def planner_frame(stamp, settings):
    from planner.msg import Detection3D, Detection3DArray, LabelScore

    msg = Detection3DArray(fov_deg=58.0, range_m=3.5)
    msg.header.stamp, msg.header.frame_id = stamp, settings["camera_frame"]
    msg.sensor_pose.orientation.w = 1.0
    for label, center in settings["detections"]:
        item = Detection3D(labels=[LabelScore(label=label, probability=0.9)])
        item.center.x, item.center.y, item.center.z = center
        item.size.x = item.size.y = item.size.z = 0.1
        msg.detections.append(item)
    return msg


def vision_frame(stamp, settings):
    from vision_msgs.msg import Detection3D, Detection3DArray, ObjectHypothesisWithPose

    msg = Detection3DArray()
    msg.header.stamp, msg.header.frame_id = stamp, settings["camera_frame"]
    for label, center in settings["detections"]:
        item = Detection3D()
        item.header = msg.header
        hypothesis = ObjectHypothesisWithPose()
        hypothesis.hypothesis.class_id, hypothesis.hypothesis.score = label, 0.9
        item.results.append(hypothesis)
        position = item.bbox.center.position
        position.x, position.y, position.z = center
        item.bbox.center.orientation.w = 1.0
        item.bbox.size.x = item.bbox.size.y = item.bbox.size.z = 0.1
        msg.detections.append(item)
    return msg


def main(settings):
    rclpy.init()
    node = rclpy.create_node("robot_drivers", namespace=settings.get("namespace", "/"))
    if settings["kind"] == "vision_msgs":
        from vision_msgs.msg import Detection3DArray
        topic, make = "perception/detections_3d", vision_frame
    else:
        from planner.msg import Detection3DArray
        topic, make = "perception/detections", planner_frame
    detections = node.create_publisher(Detection3DArray, topic, qos_profile_sensor_data)
    # Made at once, so discovery is done by the time TF starts: a message sent before a subscriber
    # matched is not delivered, and a lagging localizer's transforms do arrive.
    broadcaster, static = TransformBroadcaster(node), StaticTransformBroadcaster(node)
    tf_topic = node.resolve_topic_name("/tf")
    while node.count_subscribers(detections.topic_name) == 0 or node.count_subscribers(tf_topic) == 0:
        rclpy.spin_once(node, timeout_sec=0.05)
    started = time.monotonic()
    published, tf_started = 0, False
    late = []   # stamps TF has not sent the base for yet
    x, y, yaw = settings["base"]
    try:
        while rclpy.ok():
            stamp = node.get_clock().now().to_msg()
            if published < settings.get("frames", math.inf):
                detections.publish(make(stamp, settings))
                published += 1
            late.append(stamp)
            if not tf_started and time.monotonic() - started >= settings.get("tf_after_s", 0.0):
                static.sendTransform(transform(stamp, settings["base_frame"], settings["camera_frame"],
                                               settings["camera_xyz"], settings["camera_xyzw"]))
                tf_started = True
            if tf_started:  # the base at every stamp so far, as a localizer that lags sends them
                broadcaster.sendTransform([transform(at, "map", settings["base_frame"], (x, y, 0.0),
                                                     (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))) for at in late])
                late = []
            rclpy.spin_once(node, timeout_sec=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
