"""Perception node: keeps the scene graph (prior map + live detections + robot state), answers
the perception services and publishes /scene_graph and /scene_graph/markers."""

from __future__ import annotations

import json
import threading

from geometry_msgs.msg import Point
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from planner.backends.simulation import load_scenario
from planner.core.files import InputError, load_yaml
from planner.core.scene_graph import SceneGraph
from planner.core.voxeland import load_voxeland
from planner.msg import Detection3DArray, FailureMessage, RobotState, SceneGraph as SceneGraphMsg
from planner.nodes.common import (LATCHED, RELIABLE, PlannerNode, entity_to_msg, frame_from_msg, main_for,
                                  robot_from_msg, robot_to_msg, scene_to_msg, stamp_now)
from planner.srv import FindObjects, GetObject, GetObjectsInRoom, GetRobotState, GetRooms, GetSceneGraph

PUBLISH_PERIOD_S = 0.1
KIND_COLORS = {"room": (0.6, 0.6, 0.6, 0.3), "furniture": (0.55, 0.35, 0.2, 0.8), "object": (0.1, 0.5, 0.9, 0.9)}


class PerceptionNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("perception", config)
        self.lock = threading.RLock()
        self.scene = self._initial_scene()
        self.dirty = True
        # One group: every callback sees and changes the graph in turn.
        group = MutuallyExclusiveCallbackGroup()
        self.graph_pub = self.create_publisher(SceneGraphMsg, "/scene_graph", LATCHED)
        self.marker_pub = self.create_publisher(MarkerArray, "/scene_graph/markers", LATCHED)
        self.create_subscription(Detection3DArray, "/perception/detections", self._on_detections, RELIABLE, callback_group=group)
        self.create_subscription(RobotState, "/robot/state", self._on_robot_state, RELIABLE, callback_group=group)
        self.create_subscription(FailureMessage, "/controller/failure", self._on_failure, RELIABLE, callback_group=group)
        self.create_service(GetRooms, "/perception/get_rooms", self._get_rooms, callback_group=group)
        self.create_service(GetObjectsInRoom, "/perception/get_objects_in_room", self._get_objects_in_room, callback_group=group)
        self.create_service(GetObject, "/perception/get_object", self._get_object, callback_group=group)
        self.create_service(FindObjects, "/perception/find_objects", self._find_objects, callback_group=group)
        self.create_service(GetRobotState, "/perception/get_robot_state", self._get_robot_state, callback_group=group)
        self.create_service(GetSceneGraph, "/perception/get_scene_graph", self._get_scene_graph, callback_group=group)
        self.create_timer(PUBLISH_PERIOD_S, self._publish_if_changed, callback_group=group)

    def _initial_scene(self) -> SceneGraph:
        """The prior map: a Voxeland map if configured, else the world as mapped before."""
        settings = self.config.perception
        world = load_scenario(self.config.path(self.config.scenario)).world
        if settings.voxeland_map:
            try:
                semantic_map = load_voxeland(self.config.path(settings.voxeland_map))
                rooms = load_yaml(self.config.path(settings.rooms)) if settings.rooms else {r.name: r.polygon for r in world.rooms}
                for error in semantic_map.errors:
                    self.report("error", f"map instance skipped: {error}")
                scene = SceneGraph.from_voxeland(semantic_map, rooms)
                self.report("info", f"loaded {len(semantic_map.instances)} instances from {settings.voxeland_map}")
                return scene
            except InputError as error:
                self.report("error", f"map not loaded, keeping the world's map instead: {error}")
        return SceneGraph.from_world(world)

    # ---- inputs ---------------------------------------------------------------------------------
    def _on_detections(self, msg: Detection3DArray) -> None:
        try:
            frame = frame_from_msg(msg)
        except ValueError as error:
            self.report("error", f"detections rejected: {error}")
            return
        with self.lock:
            report = self.scene.fuse(frame)
        if report.created or report.moved or report.missing or report.updated:
            self.dirty = True
        for object_id in report.moved:
            self.get_logger().info(f"{object_id} moved: now {'; '.join(self.scene.relations(object_id))}")
        for object_id in report.created:
            self.get_logger().info(f"new object {object_id}")

    def _on_robot_state(self, msg: RobotState) -> None:
        with self.lock:
            self.scene.set_robot(robot_from_msg(msg))
        self.dirty = True

    def _on_failure(self, msg: FailureMessage) -> None:
        """The controller found an object missing from its place: stop trusting that place."""
        if msg.code != "OBJECT_NOT_FOUND":
            return
        object_id = json.loads(msg.context_json or "{}").get("object", {}).get("id", "")
        with self.lock:
            if object_id and self.scene.has(object_id):
                self.scene.mark_missing(object_id)
                self.dirty = True

    # ---- outputs --------------------------------------------------------------------------------
    def _publish_if_changed(self) -> None:
        if not self.dirty:
            return
        self.dirty = False
        stamp = stamp_now(self)
        with self.lock:
            self.graph_pub.publish(scene_to_msg(self.scene, stamp))
            self.marker_pub.publish(self._markers(stamp))

    def _markers(self, stamp) -> MarkerArray:
        markers = MarkerArray()
        for index, (node_id, data) in enumerate(sorted(self.scene.graph.nodes(data=True))):
            entity = data["entity"]
            marker = Marker(ns=entity.kind, id=index, action=Marker.ADD)
            marker.header.stamp, marker.header.frame_id = stamp, "map"
            marker.color = ColorRGBA(**dict(zip("rgba", KIND_COLORS[entity.kind])))
            if entity.kind == "room":
                marker.type = Marker.LINE_STRIP
                marker.scale.x = 0.05
                marker.points = [Point(x=float(x), y=float(y)) for x, y in [*entity.polygon, entity.polygon[0]]]
            else:
                marker.type = Marker.CUBE
                marker.pose.position.x, marker.pose.position.y, marker.pose.position.z = map(float, entity.center)
                marker.pose.orientation.w = 1.0
                marker.scale.x, marker.scale.y, marker.scale.z = map(float, entity.size)
            markers.markers.append(marker)
            label = Marker(ns=f"{entity.kind}_labels", id=index, action=Marker.ADD, type=Marker.TEXT_VIEW_FACING, text=node_id)
            label.header = marker.header
            label.pose.position.x, label.pose.position.y = float(entity.center[0]), float(entity.center[1])
            label.pose.position.z = float(entity.center[2] + entity.size[2] / 2 + 0.15)
            label.pose.orientation.w = 1.0
            label.scale.z = 0.15
            label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
            markers.markers.append(label)
        return markers

    # ---- services -------------------------------------------------------------------------------
    def _get_rooms(self, request, response):
        with self.lock:
            response.rooms = self.scene.rooms()
        return response

    def _get_objects_in_room(self, request, response):
        with self.lock:
            if request.room not in self.scene.rooms():
                response.success, response.message = False, f"unknown room {request.room!r}; rooms: {', '.join(self.scene.rooms())}"
                return response
            items = [*self.scene.furniture(request.room), *self.scene.objects(request.room)]
            response.objects = [entity_to_msg(e, self.scene) for e in items]
            response.relations = [r for e in self.scene.objects(request.room) for r in self.scene.relations(e.id)]
            response.success = True
        return response

    def _get_object(self, request, response):
        with self.lock:
            if not self.scene.has(request.id) or self.scene.entity(request.id).kind == "room":
                response.success, response.message = False, f"no object or furniture {request.id!r}"
                return response
            response.object = entity_to_msg(self.scene.entity(request.id), self.scene)
            response.relations = self.scene.relations(request.id)
            response.success = True
        return response

    def _find_objects(self, request, response):
        with self.lock:
            found = self.scene.find(request.query)
            response.objects = [entity_to_msg(e, self.scene) for e in found]
        response.success = True
        response.message = f"{len(found)} match(es) for {request.query!r}"
        return response

    def _get_robot_state(self, request, response):
        with self.lock:
            if self.scene.robot is not None:
                response.state = robot_to_msg(self.scene.robot, stamp_now(self))
        return response

    def _get_scene_graph(self, request, response):
        stamp = stamp_now(self)
        with self.lock:
            response.graph = scene_to_msg(self.scene, stamp)
            if self.scene.robot is not None:
                response.robot = robot_to_msg(self.scene.robot, stamp)
        return response


def main() -> int:
    return main_for(PerceptionNode)
