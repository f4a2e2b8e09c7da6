"""Simulator node: serves the simulated world's navigation and manipulation as ROS actions with
realistic durations, publishes robot state, TF and camera detections (and /clock when the stack
runs on simulated time), and lets an external agent move objects (scenario events or the
/sim/move_object service)."""

from __future__ import annotations

import json
import math
import threading
import time

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from std_msgs.msg import String

from planner.action import Manipulate, Navigate
from planner.core.errors import InputError
from planner.core.failures import FailureCode
from planner.core.frames import planar, rigid
from planner.core.scene_graph import RobotSnapshot
from planner.core.skills import load_skill_library
from planner.msg import Detection3DArray, RobotState
from planner.ros.convert import frame_to_msg, pose_from_msg, robot_to_msg, seconds, stamp_now, transform_msg
from planner.ros.estop import EmergencyStopLatch
from planner.ros.node import PlannerNode, main_for
from planner.ros.qos import CLOCK_QOS, LATCHED, RELIABLE, TF_QOS, TF_STATIC_QOS
from planner.sim.added_commands import load_added_commands
from planner.sim.simulated_world import HANG, SimulatedWorld, command_seconds, load_scenario
from planner.srv import MoveObject
from planner.wiring import load_robot

NAVIGATION_TICK_S = 0.1   # wall-clock period of navigation updates
PREEMPT_WAIT_S = 1.0      # for the motion under way to end when a navigation goal arrives
ODOM_FRAME = "odom"       # REP 105: map -> odom -> base
CLOCK_PERIOD_S = 0.02     # how often /clock ticks when the stack runs on simulated time


class SimulatorNode(PlannerNode):
    def __init__(self, config=None):
        super().__init__("simulator", config)
        path = self.config.path(self.config.scenario)
        loaded = load_scenario(path)
        skills_path = self.config.path(self.config.skills)
        added = load_added_commands(load_skill_library(skills_path), str(skills_path))
        try:
            self.sim = SimulatedWorld(loaded.world, load_robot(self.config), list(loaded.scenario.events),
                                      now=seconds(stamp_now(self)), added_commands=added)
        except InputError as error:
            raise InputError(f"{path}: {error}") from None
        self.time_scale = self.config.simulator.time_scale
        self.lock = threading.RLock()       # guards self.sim
        self.busy = threading.Lock()        # one motion at a time: base or arms
        self.navigating = threading.Event()
        self.preempt = threading.Event()    # a new navigation goal (or the emergency stop) ends the one under way
        # The stop reaches the motion here too: an executor that died mid-drive can no longer cancel it.
        group = ReentrantCallbackGroup()
        self.estop = EmergencyStopLatch(self, group, self._on_estop)
        self.state_pub = self.create_publisher(RobotState, "robot/state", RELIABLE)
        self.detections_pub = self.create_publisher(Detection3DArray, "perception/detections", RELIABLE)
        self.events_pub = self.create_publisher(String, "sim/events", RELIABLE)
        self.truth_pub = self.create_publisher(String, "sim/ground_truth", LATCHED)
        ActionServer(self, Navigate, "sim/navigate", self._navigate, callback_group=group,
                     goal_callback=self._accept_navigation, cancel_callback=lambda _: CancelResponse.ACCEPT)
        ActionServer(self, Manipulate, "sim/manipulate", self._manipulate, callback_group=group,
                     goal_callback=self._accept_if_idle, cancel_callback=lambda _: CancelResponse.ACCEPT)
        self.create_service(MoveObject, "sim/move_object", self._move_object, callback_group=group)
        self.tf_pub = self._start_tf()
        if self.declare_parameter("publish_clock", False).value:
            # The stack's other nodes run on use_sim_time: they follow this node's clock on /clock.
            from rosgraph_msgs.msg import Clock

            clock = self.create_publisher(Clock, "/clock", CLOCK_QOS)
            self.create_timer(CLOCK_PERIOD_S, lambda: clock.publish(Clock(clock=stamp_now(self))), callback_group=group)
        self.create_timer(1.0 / self.config.simulator.state_rate_hz, self._publish_state, callback_group=group)
        self.create_timer(1.0 / self.sim.profile.camera.rate_hz, self._publish_detections, callback_group=group)
        self._publish_world()
        self.get_logger().info(f"simulating {loaded.world.name}: {len(loaded.world.objects)} objects, "
                               f"{len(self.sim.events)} scripted events, time x{self.time_scale}")

    # ---- publishing ---------------------------------------------------------------------------
    def _start_tf(self):
        """The frames a robot's drivers would put on TF, where tf2_msgs is installed: map -> odom
        (localisation is perfect here) and the camera mount on /tf_static, odom -> base on /tf with
        each robot state. None without tf2_msgs: perception then places the camera from the profile."""
        try:
            from tf2_msgs.msg import TFMessage
        except ImportError:
            return None
        profile, stamp = self.sim.profile, stamp_now(self)
        static = self.create_publisher(TFMessage, "/tf_static", TF_STATIC_QOS)
        static.publish(TFMessage(transforms=[
            transform_msg(profile.map_frame, ODOM_FRAME, rigid(), stamp),
            transform_msg(profile.base_frame, profile.camera.frame_id,
                          rigid(profile.camera.mount_xyz, profile.camera.mount_rpy), stamp)]))
        self.tf_static_pub = static   # kept: the latched transforms live as long as their publisher
        return self.create_publisher(TFMessage, "/tf", TF_QOS)

    def _publish_state(self, stamp=None) -> None:
        # The stamp is taken under the lock, with the pose it stamps: the robot moves meanwhile.
        with self.lock:
            robot = RobotSnapshot(self.sim.robot, self.sim.robot_room, list(self.sim.held), dict(self.sim.held),
                                  busy=self.busy.locked())
            stamp = stamp or stamp_now(self)
            if self.tf_pub is not None:   # TF first: a listener has the pose before the frame it places
                self.tf_pub.publish(self.tf_pub.msg_type(transforms=[
                    transform_msg(ODOM_FRAME, self.sim.profile.base_frame, planar(robot.pose), stamp)]))
            self.state_pub.publish(robot_to_msg(robot, stamp, self.sim.profile.map_frame))

    def _publish_detections(self) -> None:
        """A camera frame in the camera's own frame, after the robot pose of the same stamp (what
        TF would hold on a robot), so perception can place it in the map."""
        with self.lock:
            stamp = stamp_now(self)
            self.sim.now = seconds(stamp)
            self._publish_state(stamp)
            frame = self.sim.camera_view(seconds(stamp))
        if frame is not None:  # None: detections drop out (a fault)
            self.detections_pub.publish(frame_to_msg(frame, stamp))

    def _publish_world(self) -> None:
        """State first, then what the camera sees, then ground truth for observers and tests."""
        self._publish_state()
        self._publish_detections()
        with self.lock:
            truth = {"robot": {"x": self.sim.robot.x, "y": self.sim.robot.y, "room": self.sim.robot_room},
                     "held": dict(self.sim.held), "on": dict(self.sim.support)}
        self.truth_pub.publish(String(data=json.dumps(truth)))

    def _announce(self, messages: list[str]) -> None:
        for message in messages:
            self.events_pub.publish(String(data=message))
            self.get_logger().info(message)

    # ---- actions --------------------------------------------------------------------------------
    def _on_estop(self, engaged: bool) -> None:
        if engaged:
            self.preempt.set()
            self.get_logger().warning("emergency stop: motion stopped; goals are refused until it is released")

    def _accept_if_idle(self, goal) -> GoalResponse:
        if self.estop.engaged.is_set():
            self.get_logger().warning("rejecting a goal: the emergency stop is engaged")
            return GoalResponse.REJECT
        if self.busy.acquire(blocking=False):
            return GoalResponse.ACCEPT
        self.get_logger().warning("rejecting a goal: the robot is already moving")
        return GoalResponse.REJECT

    def _accept_navigation(self, goal) -> GoalResponse:
        """As Nav2 does, a new navigation goal preempts the one under way: its client may have died
        with it, and the restarted executor must be able to drive. An arm motion is waited out briefly."""
        if self.estop.engaged.is_set():
            self.get_logger().warning("rejecting a navigation goal: the emergency stop is engaged")
            return GoalResponse.REJECT
        if self.navigating.is_set():
            self.preempt.set()
        if self.busy.acquire(timeout=PREEMPT_WAIT_S):
            self.preempt.clear()
            self.navigating.set()
            return GoalResponse.ACCEPT
        self.get_logger().warning("rejecting a navigation goal: the arms are moving")
        return GoalResponse.REJECT

    def _sleep(self, sim_seconds: float, goal_handle, preempt: threading.Event | None = None) -> bool:
        """Let simulated time pass; False if the goal was canceled or preempted meanwhile."""
        deadline = time.monotonic() + sim_seconds / self.time_scale
        while time.monotonic() < deadline:
            if goal_handle.is_cancel_requested or (preempt is not None and preempt.is_set()):
                return False
            time.sleep(min(NAVIGATION_TICK_S, max(deadline - time.monotonic(), 0)))
        return True

    def _navigate(self, goal_handle):
        try:
            goal = pose_from_msg(goal_handle.request.goal)
            result = Navigate.Result()
            with self.lock:
                self.sim.now = seconds(stamp_now(self))
                self._announce(self.sim.start_command("navigate", ""))
                route = self.sim.plan_route(goal)
            if not hasattr(route, "waypoints"):
                goal_handle.abort()
                result.code, result.detail = route.code, route.detail
                return result
            speed = self.sim.profile.speed_mps
            travelled = 0.0
            while travelled < route.drive_length:
                if not self._sleep(NAVIGATION_TICK_S * self.time_scale, goal_handle, self.preempt):
                    if goal_handle.is_cancel_requested:
                        goal_handle.canceled()
                        result.code, result.detail = FailureCode.CANCELED, "navigation canceled"
                    elif self.estop.engaged.is_set():
                        goal_handle.abort()
                        result.code, result.detail = FailureCode.EMERGENCY_STOP, "navigation stopped by the emergency stop"
                    else:
                        goal_handle.abort()
                        result.code, result.detail = FailureCode.CANCELED, "navigation preempted by a new goal"
                    return result
                travelled = min(route.drive_length, travelled + speed * NAVIGATION_TICK_S * self.time_scale)
                with self.lock:
                    self.sim.set_robot_pose(route.pose_at(travelled))
                goal_handle.publish_feedback(Navigate.Feedback(distance_remaining=float(route.length - travelled)))
            if route.abort_at is not None:
                with self.lock:
                    outcome = self.sim.abort(route)
                self._publish_world()
                goal_handle.abort()
                result.code, result.detail = outcome.code, outcome.detail
                return result
            with self.lock:
                fired = self.sim.arrive(goal)
            self._announce(fired)
            self._publish_world()
            goal_handle.succeed()
            result.success = True
            result.detail = f"arrived at ({goal.x:.2f}, {goal.y:.2f}) in {self.sim.robot_room}"
            return result
        finally:
            self.navigating.clear()
            self.busy.release()

    def _manipulate(self, goal_handle):
        try:
            request = goal_handle.request
            point = (request.point.x, request.point.y, request.point.z)
            with self.lock:
                self.sim.now = seconds(stamp_now(self))
                fired = self.sim.start_command(request.operation, request.object_id or request.target_id)
            if fired:
                self._announce(fired)
                self._publish_world()
            # The arm moves first; the world changes when the motion ends.
            if not self._sleep(command_seconds(request.operation), goal_handle, self.estop.engaged):
                if goal_handle.is_cancel_requested:
                    goal_handle.canceled()
                    return Manipulate.Result(success=False, code=FailureCode.CANCELED, detail="manipulation canceled")
                goal_handle.abort()
                return Manipulate.Result(success=False, code=FailureCode.EMERGENCY_STOP,
                                         detail="manipulation stopped by the emergency stop")
            with self.lock:
                # Commands without a point (retreat, release) carry zeros.
                outcome = self.sim.manipulate(request.operation, request.arm, request.object_id, request.target_id,
                                              point if any(point) else None)
            if outcome.code == HANG:  # a driver that stopped answering: only the executor's timeout ends it
                self._sleep(math.inf, goal_handle)
                goal_handle.canceled()
                return Manipulate.Result(success=False, code=FailureCode.CANCELED, detail=outcome.detail)
            result = Manipulate.Result(success=outcome.ok, code=outcome.code, detail=outcome.detail)
            self._publish_world()
            goal_handle.succeed() if outcome.ok else goal_handle.abort()
            return result
        finally:
            self.busy.release()

    def _move_object(self, request, response):
        with self.lock:
            outcome = self.sim.move_object(request.object_id, request.target_id)
        response.success, response.message = outcome.ok, outcome.detail
        if outcome.ok:
            self._announce([outcome.detail])
            self._publish_world()
        return response


def main() -> int:
    return main_for(SimulatorNode)
