"""Test set-up: every test session gets its own ROS_DOMAIN_ID, so parallel or repeated runs
(and a running stack) cannot talk to each other, and its own state folder, so what the
explainer learns in tests stays out of the user's case memory."""

import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

os.environ["ROS_DOMAIN_ID"] = str(random.Random(os.getpid()).randint(110, 230))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["PLANNER_STATE"] = tempfile.mkdtemp(prefix="planner-test-state-")

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config"
DATA = Path(__file__).resolve().parent / "data"
PLANNER = shutil.which("planner", path=os.path.dirname(sys.executable)) or "planner"  # the command line installed
# Where scripts/install-ros-src.sh takes the ROS 2 packages PyPI lacks from (set-up runs it).
ROS_SOURCES = Path(os.environ.get("PLANNER_ROS_SRC") or REPO.parent / "shared" / "ros-src")


def ros_from_source(*modules: str):
    """A mark for tests that need ROS 2 packages PyPI lacks (tf2_ros, vision_msgs, launch): skipped only
    on a machine that has neither them nor their sources, where the stack runs without them; with
    the sources at hand, a package that does not import fails the test, as a missing install step."""
    import importlib.util

    def importable(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except ImportError:
            return False
    missing = [module for module in modules if not importable(module)]
    return pytest.mark.skipif(bool(missing) and not ROS_SOURCES.is_dir(),
                              reason=f"{', '.join(missing)} not installed and no ROS 2 sources at {ROS_SOURCES} "
                                     f"(scripts/install-ros-src.sh builds them from there)")


def pytest_sessionfinish(session, exitstatus):
    # The state folder holds only what this session's tests wrote.
    shutil.rmtree(os.environ["PLANNER_STATE"], ignore_errors=True)


def _robee():
    from planner.core.robot_profile import load_robot_profile

    return load_robot_profile(CONFIG / "robots" / "robee.yaml")


ROBOT = _robee()   # the robot profile the default config runs


@pytest.fixture
def world():
    from planner.core.world import load_world

    return load_world(CONFIG / "worlds" / "kitchen_bedroom.yaml")


@pytest.fixture
def scene(world):
    from planner.core.geometry import Pose2D
    from planner.core.scene_graph import RobotSnapshot, SceneGraph

    graph = SceneGraph.from_world(world)
    x, y, yaw = world.robot.pose
    graph.set_robot(RobotSnapshot(Pose2D(x, y, yaw), "bedroom", ["left", "right"], {"left": "", "right": ""}))
    return graph


@pytest.fixture
def skill_planner():
    from planner.config import load_config
    from planner.wiring import load_skill_planner

    return load_skill_planner(load_config(CONFIG / "planner.yaml"))


# Two requests on the kitchen_bedroom world, scripted for ReAct: the first drives from the bedroom
# to table_2 in the kitchen; the second drives to table_1, where the robot cannot be yet, and picks
# the bottle up, so it needs every part that moves the robot.
GO_THEN_PICK = [{"goals": [{"kind": "robot_in_room", "room": "kitchen"}]},
                {"thought": "What is in the kitchen?", "action": "get_objects_in_room(kitchen)"},
                {"thought": "table_2 is in the kitchen.", "action": "GOTO(table_2)"},
                {"goals": [{"kind": "holding", "object": "bottle"}]},
                {"thought": "Where is the bottle?", "action": "get_objects_in_room(kitchen)"},
                {"thought": "The bottle is on table_1.", "action": "GOTO(table_1)"},
                {"thought": "It is within reach.", "action": "PICK(bottle_1, right)"}]


def go_then_pick_config(directory: Path, **sections) -> Path:
    """A stack config over the kitchen_bedroom world, without events, scripted with GO_THEN_PICK."""
    import yaml

    scenario = directory / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({"world": str(CONFIG / "worlds" / "kitchen_bedroom.yaml"), "events": []}))
    script = directory / "script.yaml"
    script.write_text(yaml.safe_dump(GO_THEN_PICK))
    return write_config(directory, scenario=str(scenario), llm={"provider": "scripted", "script": str(script)}, **sections)


def write_config(directory: Path, **sections) -> Path:
    """A stack config like test/data/scripted.yaml with some sections replaced."""
    import yaml

    config = {"robot": str(CONFIG / "robots" / "robee.yaml"),
              "scenario": str(CONFIG / "scenarios" / "kitchen_bottle_moved.yaml"), "skills": str(CONFIG / "skills.yaml"),
              "failure_cases": str(CONFIG / "failure_cases.yaml"),
              "llm": {"provider": "scripted", "script": str(DATA / "scripted_kitchen.yaml")},
              "simulator": {"time_scale": 20.0},
              # As in scripted.yaml: recorded replies, so no memory of earlier runs and no learning.
              "explainer": {"database": ":memory:", "learn": False}}
    config.update(sections)
    path = directory / "planner.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def without_tf(config):
    """Perception fed by hand here: camera frames in camera_link, placed with the robot states sent
    here and the profile's camera mount, as without TF (test_tf_frames has TF)."""
    return config.model_copy(update={"perception": config.perception.model_copy(update={"tf": "off"})})


def config_with_events(directory: Path, events: list[dict], grasp_timeout_s: float, **sections):
    """A stack config over the kitchen_bedroom world with scripted world events (faults) and the
    grasp's command timeout set."""
    import yaml

    from planner.config import load_config

    scenario = directory / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({"world": str(CONFIG / "worlds" / "kitchen_bedroom.yaml"), "events": events}))
    skills = yaml.safe_load((CONFIG / "skills.yaml").read_text())
    skills["commands"]["grasp"]["timeout_s"] = grasp_timeout_s
    (directory / "skills.yaml").write_text(yaml.safe_dump(skills))
    return load_config(write_config(directory, scenario=str(scenario), skills=str(directory / "skills.yaml"), **sections))


class RosClient:
    """A test node spun in the background, with helpers to call and collect."""

    def __init__(self, name: str):
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        self.node = rclpy.create_node(name)
        # Every node of a stack spins here, and calls block threads in chains (skill planner →
        # executor → controller → perception): one process needs the threads of several.
        self.executor = MultiThreadedExecutor(num_threads=16)
        self.executor.add_node(self.node)
        self.extra = []
        # An exception that escapes a callback ends rclpy's spin, and every node here would stop
        # answering: each is kept (for the tests to assert on) and the spin goes on.
        self.spin_errors: list[str] = []
        import threading

        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        import traceback

        import rclpy

        while rclpy.ok():
            try:
                self.executor.spin()
                return
            except Exception:  # noqa: BLE001 - reported through spin_errors
                self.spin_errors.append(traceback.format_exc())

    def add(self, node):
        self.extra.append(node)
        self.executor.add_node(node)
        return node

    def collect(self, msg_type, topic, qos=None):
        from planner.ros.qos import RELIABLE

        received = []
        self.node.create_subscription(msg_type, topic, received.append, qos or RELIABLE)
        return received

    def call(self, srv_type, name, request, timeout=10.0):
        from planner.ros.futures import call_service

        return call_service(self.node.create_client(srv_type, name), request, timeout)

    def action_client(self, action_type, name, **options):
        """An action client on a node of its own, spun once it is built: rclpy's ActionClient joins
        its node's wait set before it creates its lock, and an executor spinning that node in
        another thread can reach it in between and stop ('ActionClient' has no attribute '_lock',
        seen in CI)."""
        import rclpy
        from rclpy.action import ActionClient

        node = rclpy.create_node(f"{self.node.get_name()}_action_{len(self.extra)}")
        client = ActionClient(node, action_type, name, **options)
        self.add(node)
        return client

    def action(self, action_type, name, goal, timeout=120.0, feedback=None):
        from planner.ros.futures import ActionCall

        return ActionCall(self.action_client(action_type, name), name).run(goal, timeout, feedback)

    def close(self):
        self.executor.shutdown()
        self.thread.join(timeout=10)  # spin returns once the executor is shut down; a loaded machine takes a moment
        for node in self.extra:
            close = getattr(node, "close", None)
            if close:
                close()
            node.destroy_node()
        self.node.destroy_node()


@pytest.fixture(scope="module")
def ros():
    import rclpy

    rclpy.init()
    yield
    rclpy.shutdown()


def wait_for(predicate, timeout=10.0):
    from planner.ros.futures import wait_until

    assert wait_until(predicate, timeout), "condition not met in time"


def chat_server(reply):
    """A local OpenAI-compatible endpoint, started: every POST's JSON body goes to `reply`, whose dict
    is sent back as the response, or whose list is sent as a stream of server-sent events, one
    chunk each. Stop it with .shutdown()."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            answer = reply(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            if isinstance(answer, list):
                data = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in answer).encode() + b"data: [DONE]\n\n"
            else:
                data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if isinstance(answer, list) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd
