"""Perception node: keeps the scene graph (prior map + live detections + robot state), answers
the perception services, publishes /scene_graph, /scene_graph/updates and /scene_graph/markers,
takes changes people tell (/memory/tell) into the graph, and saves the graph as it changes."""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from geometry_msgs.msg import Point
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from std_msgs.msg import ColorRGBA, String
from visualization_msgs.msg import Marker, MarkerArray

from planner.adapters.embeddings import SentenceEmbedder
from planner.core.controller import missing_object
from planner.core.errors import InputError, PolicyError
from planner.core.frames import FrameError, FrameTree, TransformNotReady, planar, rigid
from planner.core.object_finder import ObjectFinder
from planner.core.observations import unknown_room_text
from planner.core.perception_actions import unknown_entity_text
from planner.core.scene_graph import Entity, SceneGraph, SensorFrame
from planner.core.scene_store import SceneStore, fingerprint
from planner.core.telling import RateLimit, TellResult, commit, read_change
from planner.core.voxeland import load_voxeland
from planner.core.world import load_rooms
from planner.msg import Detection3DArray, FailureMessage, RobotState, SceneEdge, SceneGraphUpdate, SceneNode
from planner.msg import SceneGraph as SceneGraphMsg
from planner.ros.convert import (
    UNREADABLE_CONTEXT,
    edge_to_msg,
    entity_to_msg,
    failure_from_msg,
    frame_from_msg,
    frame_from_vision_msg,
    robot_from_msg,
    robot_state_problem,
    robot_to_msg,
    seconds,
    stamp_now,
    to_stamp,
)
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import LATCHED, RELIABLE, SENSOR_DATA, VISION_DETECTIONS_TOPIC
from planner.ros.tf_frames import TfLookup, tf_available
from planner.sim.simulated_world import load_scenario
from planner.srv import FindObjects, GetObject, GetObjectsInRoom, GetRobotState, GetRooms, GetSceneGraph, Tell
from planner.wiring import finder_settings, load_robot, load_skill_planner, make_grounder

try:  # vision_msgs comes from a ROS 2 install, or on the pip path from scripts/install-ros-src.sh
    from vision_msgs.msg import Detection3DArray as VisionDetections
except ImportError:
    VisionDetections = None

TICK_S = 0.1
PENDING_FRAMES_MAX = 20
MAX_TOLD_CHARS = 500  # a sentence or two; longer is no single change
KIND_COLORS = {"room": (0.6, 0.6, 0.6, 0.3), "furniture": (0.55, 0.35, 0.2, 0.8), "object": (0.1, 0.5, 0.9, 0.9),
               "person": (0.95, 0.75, 0.1, 0.9)}
MISSING_COLOR = (0.9, 0.2, 0.2, 0.4)


class SceneMessages:
    """The graph as ROS messages, rebuilt only for the nodes that change: publishing a graph of
    10,000 objects must not rebuild 10,000 messages each time one cup moves."""

    def __init__(self, map_frame: str):
        self.map_frame = map_frame
        self.nodes: dict[str, SceneNode] = {}
        self.edges: dict[str, list[SceneEdge]] = {}
        self.markers: dict[str, list[Marker]] = {}
        self.marker_ids: dict[str, int] = {}
        self.deleted_markers: list[Marker] = []

    def refresh(self, scene: SceneGraph, node_ids, removed) -> None:
        for node_id in node_ids:
            entity = scene.entity(node_id)
            self.nodes[node_id] = entity_to_msg(entity, scene)
            self.edges[node_id] = [edge_to_msg(e) for e in scene.node_edges(node_id)] if entity.kind != "room" else []
            self.markers[node_id] = self._markers(entity, self.marker_ids.setdefault(node_id, len(self.marker_ids)))
        for node_id in removed:
            self.nodes.pop(node_id, None)
            self.edges.pop(node_id, None)
            for marker in self.markers.pop(node_id, []):
                self.deleted_markers.append(Marker(ns=marker.ns, id=marker.id, action=Marker.DELETE))

    def graph(self, stamp, seq: int, seen_until: float) -> SceneGraphMsg:
        msg = SceneGraphMsg(seq=seq, seen_until=to_stamp(seen_until), nodes=list(self.nodes.values()),
                            edges=[e for edges in self.edges.values() for e in edges])
        msg.header.stamp, msg.header.frame_id = stamp, self.map_frame
        return msg

    def marker_array(self, stamp) -> MarkerArray:
        markers = [*self.deleted_markers, *(m for group in self.markers.values() for m in group)]
        self.deleted_markers = []
        for marker in markers:
            marker.header.stamp = stamp
        return MarkerArray(markers=markers)

    def _markers(self, entity: Entity, number: int) -> list[Marker]:
        color = MISSING_COLOR if entity.status == "missing" else KIND_COLORS[entity.kind]
        shape = Marker(ns=entity.kind, id=number, action=Marker.ADD, color=ColorRGBA(**dict(zip("rgba", color))))
        shape.header.frame_id = self.map_frame
        shape.pose.orientation.w = 1.0
        if entity.kind == "room":
            shape.type = Marker.LINE_STRIP
            shape.scale.x = 0.05
            shape.points = [Point(x=float(x), y=float(y)) for x, y in [*entity.polygon, entity.polygon[0]]]
        else:
            shape.type = Marker.CUBE
            shape.pose.position.x, shape.pose.position.y, shape.pose.position.z = map(float, entity.center)
            shape.scale.x, shape.scale.y, shape.scale.z = (max(float(v), 0.01) for v in entity.size)
        probability = entity.labels.get(entity.label, 1.0)
        text = entity.id if entity.kind == "room" else f"{entity.id}: {entity.label} {probability:.2f}"
        label = Marker(ns=f"{entity.kind}_labels", id=number, action=Marker.ADD, type=Marker.TEXT_VIEW_FACING, text=text,
                       color=ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0))
        label.header.frame_id = self.map_frame
        label.pose.position.x, label.pose.position.y = float(entity.center[0]), float(entity.center[1])
        label.pose.position.z = float(entity.center[2] + entity.size[2] / 2 + 0.15)
        label.pose.orientation.w = 1.0
        label.scale.z = 0.15
        return [shape, label]


class PerceptionNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("perception", config)
        self.settings = self.config.perception
        self.lock = threading.RLock()
        world = load_scenario(self.config.path(self.config.scenario)).world
        self.profile = load_robot(self.config)
        use_tf = self.settings.tf == "on" or (self.settings.tf == "auto" and tf_available())
        self.frames = FrameTree(self.profile.map_frame, fallback=TfLookup(self, self.profile.map_frame) if use_tf else None)
        camera = self.profile.camera
        if not use_tf:  # with TF the camera is where TF says: the head turns, the mount is only nominal
            self.frames.set_static(self.profile.base_frame, camera.frame_id, rigid(camera.mount_xyz, camera.mount_rpy))
        self.pending: list[tuple[float, SensorFrame]] = []   # frames waiting for their transform into the map
        self.pending_reason = ""                              # why the latest of them waits
        prior, prior_files = self._prior_map(world)
        self.store = SceneStore(self.config.path(self.settings.state_file), fingerprint(prior_files)) \
            if self.settings.state_file else None
        restored, message = self.store.load() if self.store else (None, "")
        if message:
            self.report("warn" if "set aside" in message else "info", message)
        self.scene = restored or prior
        self.scene.missing_after_frames = self.settings.missing_after_frames
        self.messages = SceneMessages(self.profile.map_frame)
        self.messages.refresh(self.scene, list(self.scene.graph.nodes), [])
        self.scene.take_changes()
        # Sequence numbers start above any earlier run's, so a consumer's mirror takes a restart
        # for what it is, a gap (planner.ros.scene_mirror).
        self.seq = time.time_ns()
        self.seen_until = 0.0           # stamp of the latest camera frame fused
        self.published_until = 0.0      # ... as the last update said
        self.last_full = 0.0
        self.full_due = True
        self.last_save = time.monotonic()
        self.unsaved = restored is None
        self.saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scene-save")
        self.saving = None
        # Each callback its own group, all sharing the graph under self.lock: in one group rclpy
        # serves its ready timers before its subscriptions and services, so on a loaded machine,
        # where a tick outlasts its period, the tick alone ran and camera frames were dropped for
        # want of the robot pose that sat unread.
        own_group = MutuallyExclusiveCallbackGroup
        self.graph_pub = self.create_publisher(SceneGraphMsg, "scene_graph", LATCHED)
        self.update_pub = self.create_publisher(SceneGraphUpdate, "scene_graph/updates", RELIABLE)
        self.marker_pub = self.create_publisher(MarkerArray, "scene_graph/markers", LATCHED)
        # Camera data as detectors publish it: best effort, a lost frame is replaced by the next.
        self.create_subscription(Detection3DArray, "perception/detections", self._on_detections, SENSOR_DATA,
                                 callback_group=own_group())
        if VisionDetections is not None:
            self.create_subscription(VisionDetections, VISION_DETECTIONS_TOPIC, self._on_vision_detections, SENSOR_DATA,
                                     callback_group=own_group())
        self.create_subscription(RobotState, "robot/state", self._on_robot_state, RELIABLE, callback_group=own_group())
        self.create_subscription(FailureMessage, "controller/failure", self._on_failure, RELIABLE, callback_group=own_group())
        self.create_service(GetRooms, "perception/get_rooms", self._get_rooms, callback_group=own_group())
        self.create_service(GetObjectsInRoom, "perception/get_objects_in_room", self._get_objects_in_room, callback_group=own_group())
        self.create_service(GetObject, "perception/get_object", self._get_object, callback_group=own_group())
        # A request in plain words waits seconds for the LLM; the graph's callbacks go on meanwhile.
        self.create_service(FindObjects, "perception/find_objects", self._find_objects, callback_group=own_group())
        self.finder: ObjectFinder | None = None  # with its LLM, made at the first request in plain words
        self.llm = None  # the configured LLM, opened at the first request that needs one
        self.embedder: SentenceEmbedder | None = None  # likewise the sentence model
        # Changes people tell: read by the LLM into facts of the skill library's domain, one at a time.
        self.skills = load_skill_planner(self.config)
        telling = MutuallyExclusiveCallbackGroup()
        self.tells = RateLimit(self.config.memory.per_minute)
        self.create_service(Tell, "memory/tell", self._tell_service, callback_group=telling)
        self.create_subscription(String, "memory/tell", lambda msg: self._tell(msg.data), RELIABLE,
                                 callback_group=telling)
        self.create_service(GetRobotState, "perception/get_robot_state", self._get_robot_state, callback_group=own_group())
        self.create_service(GetSceneGraph, "perception/get_scene_graph", self._get_scene_graph, callback_group=own_group())
        self.create_timer(TICK_S, self._tick, callback_group=own_group())

    def _prior_map(self, world) -> tuple[SceneGraph, list]:
        """The map to start from: a Voxeland map if configured, else the world as mapped before;
        and the files it is made of."""
        settings, scenario = self.settings, self.config.path(self.config.scenario)
        if settings.voxeland_map:
            try:
                semantic_map = load_voxeland(self.config.path(settings.voxeland_map))
                rooms = (load_rooms(self.config.path(settings.rooms)) if settings.rooms
                         else {r.name: r.polygon for r in world.rooms})
                for error in semantic_map.errors:
                    self.report("error", f"map instance skipped: {error}")
                self.report("info", f"loaded {len(semantic_map.instances)} instances from {settings.voxeland_map}")
                rooms_file = self.config.path(settings.rooms) if settings.rooms else scenario
                return SceneGraph.from_voxeland(semantic_map, rooms), [self.config.path(settings.voxeland_map), rooms_file]
            except InputError as error:
                self.report("error", f"map not loaded, keeping the world's map instead: {error}")
        return SceneGraph.from_world(world), [scenario]

    # ---- inputs ---------------------------------------------------------------------------------
    def _on_detections(self, msg: Detection3DArray) -> None:
        self._receive(*frame_from_msg(msg, self.profile.map_frame, self.settings.max_detections_per_frame))

    def _on_vision_detections(self, msg) -> None:
        self._receive(*frame_from_vision_msg(msg, self.profile.camera, self.profile.map_frame,
                                             self.settings.max_detections_per_frame))

    def _receive(self, frame: SensorFrame, problems: list[str]) -> None:
        """A camera frame from either detection type: checked, told which way the camera looks, fused."""
        if (problem := frame.problem()) is not None:
            self.report("error", f"camera frame rejected: {problem}")
            return
        for problem in problems:
            self.report("error", f"detection rejected, the rest of the frame is used: {problem}")
        frame.view_axis = self.profile.camera.view_axis(frame.frame_id)
        self._fuse(frame, time.monotonic())

    def _fuse(self, frame: SensorFrame, received: float) -> bool:
        """Fuse a frame once its transform into the map is known; False while it must wait."""
        with self.lock:
            try:
                placed = frame.in_map(self.frames)
            except TransformNotReady as waiting:
                if len(self.pending) >= PENDING_FRAMES_MAX:
                    self.pending.pop(0)
                self.pending.append((received, frame))
                self.pending_reason = str(waiting)
                return False
            except FrameError as error:
                self.report("error", f"detections rejected: {error}")
                return True
            report = self.scene.fuse(placed)
            self.seen_until = max(self.seen_until, frame.stamp)
            for object_id in report.moved + report.merged:
                self.get_logger().info(f"{object_id} moved: now {'; '.join(self.scene.relations(object_id))}")
            for object_id in report.created:
                self.get_logger().info(f"new object {object_id}: {'; '.join(self.scene.relations(object_id))}")
        for object_id in report.missing:
            self.get_logger().info(f"{object_id} not seen where mapped; marked missing")
        return True

    def _on_robot_state(self, msg: RobotState) -> None:
        if (problem := robot_state_problem(msg)) is not None:
            self.report("error", f"robot state rejected: {problem}")
            return
        robot = robot_from_msg(msg)
        with self.lock:
            self.frames.set_dynamic(self.profile.map_frame, self.profile.base_frame, seconds(msg.header.stamp),
                                    planar(robot.pose))
            self.scene.set_robot(robot)
            self._retry_pending()

    def _retry_pending(self) -> None:
        with self.lock:
            waiting, self.pending = self.pending, []
            for received, frame in waiting:
                self._fuse(frame, received)

    def _on_failure(self, msg: FailureMessage) -> None:
        """The controller found an object missing from its place: stop trusting that place."""
        failure = failure_from_msg(msg)
        if UNREADABLE_CONTEXT in failure.context:
            self.report("warn", f"failure message with unreadable context ignored: {msg.context_json[:80]!r}")
            return
        object_id = missing_object(failure)
        with self.lock:
            copy_id = self.scene.mark_missing(object_id) if object_id and self.scene.has(object_id) else None
            if copy_id:
                self.get_logger().info(f"{object_id} moved: it was seen as {copy_id}; "
                                       f"now {'; '.join(self.scene.relations(object_id))}")

    # ---- outputs --------------------------------------------------------------------------------
    def _tick(self) -> None:
        now = time.monotonic()
        with self.lock:
            self._retry_pending()  # TF fills in on its own, not only with a robot state
            stale = [frame for received, frame in self.pending if now - received > self.settings.transform_wait_s]
            self.pending = [(r, f) for r, f in self.pending if now - r <= self.settings.transform_wait_s]
        if stale:
            self.report("warn", f"{len(stale)} camera frame(s) dropped: no transform into {self.profile.map_frame!r} "
                                f"for their stamp within {self.settings.transform_wait_s} s ({self.pending_reason}; "
                                f"are /robot/state and TF published?)")
        stamp = stamp_now(self)
        with self.lock:
            changes = self.scene.take_changes()
            if changes["nodes"] or changes["removed"] or self.seen_until > self.published_until:
                # Also for a frame that changed nothing: consumers wait for the robot to have looked.
                self.messages.refresh(self.scene, [n["id"] for n in changes["nodes"]], changes["removed"])
                self.seq += 1
                self.published_until = self.seen_until
                update = SceneGraphUpdate(seq=self.seq, seen_until=to_stamp(self.seen_until),
                    nodes=[self.messages.nodes[n["id"]] for n in changes["nodes"]],
                    edges=[e for n in changes["nodes"] for e in self.messages.edges[n["id"]]], removed=changes["removed"])
                update.header.stamp, update.header.frame_id = stamp, self.profile.map_frame
                self.update_pub.publish(update)
                if changes["nodes"] or changes["removed"]:
                    self.full_due = self.unsaved = True
            if self.full_due and now - self.last_full >= self.settings.full_graph_period_s:
                self.graph_pub.publish(self.messages.graph(stamp, self.seq, self.seen_until))
                self.marker_pub.publish(self.messages.marker_array(stamp))
                self.full_due, self.last_full = False, now
            if self.store and self.unsaved and now - self.last_save >= self.settings.save_period_s and not self._saving():
                snapshot = self.store.snapshot(self.scene)
                self.saving = self.saver.submit(self.store.write, snapshot)
                self.unsaved, self.last_save = False, now

    def _saving(self) -> bool:
        if self.saving is None or not self.saving.done():
            return self.saving is not None
        error, self.saving = self.saving.exception(), None
        if error is not None:
            self.unsaved = True
            self.report("error", f"scene graph not saved to {self.store.path}: {error}")
        return False

    def close(self) -> None:
        """Save what is not saved yet before the node goes."""
        super().close()
        self.saver.shutdown(wait=True)
        if self.store is not None:
            with self.lock:
                self.scene.take_changes()
                snapshot = self.store.snapshot(self.scene)
            try:
                self.store.write(snapshot)
            except OSError as error:
                self.get_logger().error(f"scene graph not saved to {self.store.path}: {error}")

    # ---- services -------------------------------------------------------------------------------
    def _unknown_room(self, room: str) -> str:
        return unknown_room_text(room, self.scene.rooms())

    def _get_rooms(self, request, response):
        with self.lock:
            response.rooms = self.scene.rooms()
        return response

    def _get_objects_in_room(self, request, response):
        with self.lock:
            if request.room not in self.scene.rooms():
                response.success, response.message = False, self._unknown_room(request.room)
                return response
            items, relations = self.scene.room_contents(request.room)
            response.objects = [entity_to_msg(e, self.scene) for e in items]
            response.relations = relations
            response.success = True
        return response

    def _get_object(self, request, response):
        with self.lock:
            if not self.scene.has(request.id) or self.scene.entity(request.id).kind == "room":
                response.success, response.message = False, unknown_entity_text(request.id)
                return response
            response.object = entity_to_msg(self.scene.entity(request.id), self.scene)
            response.relations = self.scene.relations(request.id)
            response.success = True
        return response

    def _find_objects(self, request, response):
        if request.workflow:
            return self._find_described(request, response)
        if request.relation and request.relation not in ("on", "in", "under", "near"):
            response.success, response.message = False, f"unknown relation {request.relation!r}; use on, in, under or near"
            return response
        if request.status and request.status not in ("seen", "missing", "held"):
            response.success, response.message = False, f"unknown status {request.status!r}; use seen, missing or held"
            return response
        with self.lock:
            if request.room and request.room not in self.scene.rooms():
                response.success, response.message = False, self._unknown_room(request.room)
                return response
            found = self.scene.find(request.query, room=request.room or None, status=request.status or None,
                                    relation=request.relation or None, reference=request.reference or None,
                                    min_probability=request.min_probability)
            response.objects = [entity_to_msg(e, self.scene) for e in found]
            response.relations = [r for e in found if e.kind == "object" for r in self.scene.relations(e.id)]
        response.success = True
        response.message = f"{len(found)} match(es) for {request.query!r}"
        return response

    def _find_described(self, request, response):
        """The objects a request in plain words needs, chosen by the object finder over the map."""
        if self.finder is None:
            settings, source = finder_settings(self.config)
            self.get_logger().info(f"object finder settings: {source}")
            self.finder = ObjectFinder(self.part_llm("object_finder", self._main_llm()), settings,
                                       self._embedder(), make_grounder(self.config, self._embedder()))
        try:
            with self.lock:  # a copy: the finder may ask the model while reading the query in the map
                scene = copy.deepcopy(self.scene)
            found = self.finder.find(scene, request.query, None if request.workflow == "default" else request.workflow)
        except (ValueError, PolicyError) as error:
            response.success, response.message = False, str(error)
            return response
        response.llm_calls = found.calls
        if found.error:
            response.success, response.message = False, found.error
            return response
        response.inferred_query, response.query_achievable = found.inferred_query, found.query_achievable
        response.relevant_objects, response.explanation = found.relevant_objects, found.explanation
        with self.lock:  # the map may have changed while the model thought
            present = [i for i in found.relevant_objects if self.scene.has(i)]
            response.objects = [entity_to_msg(self.scene.entity(i), self.scene) for i in present]
            response.relations = [r for i in present for r in self.scene.relations(i)
                                  if self.scene.entity(i).kind == "object"]
        response.success = True
        response.message = (f"{len(found.relevant_objects)} object(s) for {request.query!r} ({found.workflow}, "
                            f"{found.calls} LLM call(s), {found.seconds:.1f} s)")
        return response

    def _embedder(self) -> SentenceEmbedder:
        if self.embedder is None:
            self.embedder = SentenceEmbedder()
        return self.embedder

    def _main_llm(self):
        if self.llm is None:
            self.llm = self.open_llm()
        return self.llm

    def _tell_service(self, request, response):
        result = self._tell(request.sentence)
        response.applied, response.changed, response.errors = result.applied, result.done, result.errors
        if result.change is not None:
            response.removed, response.added = [str(t) for t in result.change.remove], [str(t) for t in result.change.add]
        response.llm_calls = result.llm_calls
        return response

    def _tell(self, sentence: str) -> TellResult:
        """A told change read on a copy of the graph (the LLM takes seconds; fusion goes on), then
        applied to the graph if it still holds, and saved before the answer."""
        sentence = sentence.strip()
        if not sentence or len(sentence) > MAX_TOLD_CHARS:
            result = TellResult(False, sentence[:80], errors=[f"a change is told in 1 to {MAX_TOLD_CHARS} characters"])
            self.report("warn", f"told change refused: {result.errors[0]}")
            return result
        if not self.tells.admit():
            result = TellResult(False, sentence[:80], errors=[f"more than {self.tells.per_minute} changes told in a "
                                                              "minute (memory.per_minute); say it again later"])
            self.report("warn", f"told change refused: {result.errors[0]}")
            return result
        with self.lock:
            copy = SceneGraph.from_dict(self.scene.to_dict())
            copy.robot = self.scene.robot
        if copy.robot is None:
            result = TellResult(False, sentence, errors=["the robot state is not known yet (nothing on /robot/state)"])
        else:
            try:
                embedder = self._embedder() if self.config.memory.context in ("search", "grounded") else None
                result = read_change(sentence, copy, self.skills, self._main_llm(), self.config.memory, embedder)
            except PolicyError as error:
                result = TellResult(False, sentence, errors=[f"the LLM failed: {error}"])
        snapshot = None
        with self.lock:
            commit(result, self.scene, self.skills, self.get_clock().now().nanoseconds / 1e9, self.config.memory.verify,
                   self.config.memory.recent_s)
            if result.applied and self.store is not None:
                snapshot = self.store.snapshot(self.scene)
        if snapshot is not None:
            # The one saving thread writes in order: no earlier snapshot lands after this one.
            self.saver.submit(self.store.write, snapshot).result()
        if result.applied:
            self.report("info", f"told {sentence!r}: {'; '.join(result.done) or 'nothing changed'}")
        else:
            self.report("warn", f"told {sentence!r}, not applied: {'; '.join(result.errors)}")
        return result

    def _get_robot_state(self, request, response):
        with self.lock:
            if self.scene.robot is not None:
                response.state = robot_to_msg(self.scene.robot, stamp_now(self), self.profile.map_frame)
        return response

    def _get_scene_graph(self, request, response):
        stamp = stamp_now(self)
        with self.lock:
            # Fresh, not as last published; the changes stay queued for the next update message.
            self.messages.refresh(self.scene, [i for i in self.scene.changed if self.scene.has(i)], self.scene.removed)
            response.graph = self.messages.graph(stamp, self.seq, self.seen_until)
            if self.scene.robot is not None:
                response.robot = robot_to_msg(self.scene.robot, stamp, self.profile.map_frame)
        return response


def main() -> int:
    return main_for(PerceptionNode)
