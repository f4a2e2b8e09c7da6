"""The node base every stack node shares: its config, its status reports and the LLM it opens; the
main loop that spins it."""

from __future__ import annotations

import faulthandler
import sys
import threading
import time

import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Empty, String

from planner.adapters.llm import probe_schema
from planner.config import StackConfig, deployed, load_config
from planner.core.errors import PlannerError, PolicyError
from planner.core.files import printable
from planner.ros.futures import DISCOVERY_S, ActionCall, Heartbeat, call_service, discovery_limit
from planner.ros.qos import ALIVE, STATUS_QOS, STATUS_TOPIC
from planner.wiring import open_llm, open_part_llm

# A node's exit status when its configuration (config, robot profile, parameters, what it needs
# installed) is rejected: starting it again cannot help, so a launch stops with the reason.
CONFIGURATION_REJECTED = 2

NODE_THREADS = 4  # executor threads of each node process
READY = "ready"   # said on the status once a node process has made all it serves, publishes and calls
# A node this new may not have discovered the others yet: a restarted executor asked for a command
# ~2 s after it started did not see the controller within 5 s in CI (two loaded cores). Every call a
# node makes (PlannerNode.call, PlannerNode.action_call) waits for its server accordingly.
JUST_STARTED_S = 15.0
TEARDOWN_LIMIT_S = 3.0  # a node process leaves the graph within this once closed (normally under 0.5 s)
# On SIGTERM or SIGINT, rclpy's signal thread wakes the executor and shuts the context down, one after
# the other: an executor woken in between finds the context still up and waits again, for ever on a
# node no message comes to (8 of 60 idle nodes on two loaded cores). Waiting at most this long at a
# time, it finds the shutdown within it.
SHUTDOWN_CHECK_S = 0.5


class UnavailablePolicy:
    """Stands where the configured LLM could not be set up, so each call ends with the reason."""

    def __init__(self, reason: str):
        self.reason = reason

    def complete(self, messages, schema):
        raise PolicyError(self.reason)


class PlannerNode(Node):
    """A node that loads the stack config from its `config` parameter, as deployed by its `sim` and
    `robot` parameters (bringup.launch.py's arguments), and reports on /planner/status."""

    def __init__(self, name: str, config: StackConfig | None = None, namespace: str | None = None):
        super().__init__(name, namespace=namespace)
        path = self.declare_parameter("config", "").value
        sim = self.declare_parameter("sim", Parameter.Type.BOOL).value  # unset: as the config says
        robot = self.declare_parameter("robot", "").value
        self.config = deployed(config or load_config(path or None), sim, robot)
        self._status = self.create_publisher(String, STATUS_TOPIC, STATUS_QOS)
        self._alive = self.create_publisher(Empty, "~/alive", ALIVE)   # see Heartbeat: never published to
        self.embedded = None  # the embedded LLM server this node started, stopped by close
        self.closed = threading.Event()  # set by close: threads of the node report nothing after it
        self.started = time.monotonic()

    def open_llm(self, part: str = ""):
        """The configured LLM (for `part`, its own servers first), or a policy whose every call fails
        with why there is none (reported)."""
        try:
            self.get_logger().info(f"LLM: {self.config.llm.chosen()}")
            policy, self.embedded = open_llm(self.config)
        except PlannerError as error:
            self.report("error", f"LLM unavailable: {error}")
            return UnavailablePolicy(f"LLM unavailable: {error}")
        if self.embedded is not None:
            self.get_logger().info(f"embedded LLM {self.config.llm.embedded.name()} serving at {self.embedded.base_url}")
        settings = self.config.llm.resolved()
        if settings.provider == "openai":  # the embedded server is known to enforce its form
            threading.Thread(target=self._check_schema_enforced, args=(settings,), daemon=True).start()
        return self.part_llm(part, policy) if part else policy

    def _check_schema_enforced(self, settings) -> None:
        """Warn when the server does not bind replies to the schema in the configured form: the planner
        then relies on validating and repairing replies, which a small model needs many calls for."""
        check = probe_schema(settings.base_url, settings.api_key, settings.model, settings.structured_output,
                             settings.timeout_s)
        if self.closed.is_set() or check.enforced:
            return
        if check.answered:
            self.report("warn", f"the LLM server {settings.base_url} does not enforce the schema sent as "
                                f"{check.mode} (it answered {check.reply[:60]!r}); `planner llm check` says which "
                                f"llm.structured_output it enforces")
        else:
            self.report("warn", f"could not check the LLM server {settings.base_url}: {check.reply[:160]}")

    def part_llm(self, part: str, main):
        """`main` behind the servers configured for one part of the stack (`goal_step`, `object_finder`);
        `main` alone (reported) when they cannot be opened."""
        try:
            policy, self.embedded = open_part_llm(self.config, part, main, self.embedded)
        except PlannerError as error:
            self.report("error", f"the {part} LLM is unavailable, using the main one: {error}")
            return main
        return policy

    def discovery_s(self, limit: float = DISCOVERY_S) -> float:
        """How long a call may wait for its server to be discovered: `limit`, or, in a node just
        started, until it is JUST_STARTED_S old."""
        return max(limit, self.started + JUST_STARTED_S - time.monotonic())

    def call(self, client, request, timeout_s: float = 5.0, clock=None, heartbeat: Heartbeat | None = None):
        """call_service, the server given as long to be discovered as this node's age says."""
        return call_service(client, request, timeout_s, clock, discovery_s=self.discovery_s(discovery_limit(timeout_s)),
                            heartbeat=heartbeat)

    def action_call(self, client, name: str, clock=None, heartbeat: Heartbeat | None = None) -> ActionCall:
        """An ActionCall whose server is given as long to be discovered as this node's age says."""
        return ActionCall(client, name, clock, heartbeat, discovery_s=self.discovery_s())

    def close(self) -> None:
        """What the node holds outside ROS goes with it (spin_node calls this at shutdown)."""
        self.closed.set()
        if self.embedded is not None:
            self.embedded.stop()

    def destroy_node(self) -> None:
        # rclpy's leaves action servers and clients (waitables) alive, and with them the node in the
        # graph: a client would send goals to a server nobody spins.
        for waitable in list(self.waitables):
            destroy = getattr(waitable, "destroy", None)
            if destroy is not None:
                destroy()
        super().destroy_node()

    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):
        """As Node's, with the callback guarded: an exception in a callback ends the node's spin,
        so a message nobody foresaw would stop perception, or a whole `planner bringup`."""
        return super().create_subscription(msg_type, topic, self._guarded(callback, f"a message on {topic}"),
                                           qos_profile, **kwargs)

    def create_service(self, srv_type, srv_name, callback, **kwargs):
        """As Node's, with the callback guarded: the caller gets an empty reply instead."""
        guarded = self._guarded(callback, f"a request to {srv_name}")

        def answer(request, response):
            reply = guarded(request, response)
            return response if reply is None else reply
        return super().create_service(srv_type, srv_name, answer, **kwargs)

    def _guarded(self, callback, what: str):
        def run(*args):
            try:
                return callback(*args)
            except Exception as error:  # noqa: BLE001 - any fault in one message must not stop the node
                self.report("error", f"{what} was dropped, it raised {type(error).__name__}: {error}")
                return None
        return run

    def report(self, level: str, message: str) -> None:
        """A problem or state change a user should see, on /planner/status and in the log."""
        message = printable(message)
        # rclpy wants one severity per logging call site.
        if level == "error":
            self.get_logger().error(message)
        elif level == "warn":
            self.get_logger().warning(message)
        else:
            self.get_logger().info(message)
        self._status.publish(String(data=f"[{self.get_name()}] {level.upper()}: {message}"))


def spin_node(node: Node) -> None:
    executor = MultiThreadedExecutor(num_threads=NODE_THREADS)
    executor.add_node(node)
    try:
        while executor.context.ok():
            executor.spin_once(timeout_sec=SHUTDOWN_CHECK_S)
    except KeyboardInterrupt:
        pass
    finally:
        close = getattr(node, "close", None)
        if close:
            close()
        # The node leaving the graph (destroy_node, rclpy.shutdown) hung in DDS in 2 of ~8 CI runs,
        # holding the process 10 s past SIGTERM: past this limit it ends anyway, saying where it hung.
        faulthandler.dump_traceback_later(TEARDOWN_LIMIT_S, exit=True)
        # Callbacks still waiting (on a node that is stopping too) are not waited for: the process
        # ends, as it must promptly on SIGTERM; what they would have answered, nobody is left to hear.
        executor.shutdown(wait_for_threads=False)
        node.destroy_node()


def main_for(node_class) -> int:
    rclpy.init()
    try:
        try:
            node = node_class()
        except (PlannerError, ValueError) as error:
            print(f"{node_class.__name__}: configuration rejected:\n{error}", file=sys.stderr)
            return CONFIGURATION_REJECTED
        node.report("info", READY)  # every interface made: `planner security policy` reads them now
        spin_node(node)
    finally:
        if rclpy.ok():
            rclpy.shutdown()
    return 0
