"""The stack's nodes and how they are started, shared by `planner bringup` (pip side) and
launch/bringup.launch.py (ROS 2 side) so the two cannot drift: the launch arguments, and for a set
of their values the node list with each node's namespace, parameters, environment and log level."""

from __future__ import annotations

import faulthandler
import importlib
import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import rclpy

from planner.ros.node import main_for

# Start order: the world and perception first, the planner (which may start the LLM) last.
NODES = ("simulator", "perception", "watchdog", "executor", "controller", "explainer", "skill_planner", "speech", "task_planner",
         "fleet")
SHARED = ("explainer", "fleet")   # at the root: one serves the robots of every namespace

_CLASSES = {
    "simulator": "planner.ros.nodes.simulator:SimulatorNode",
    "perception": "planner.ros.nodes.perception:PerceptionNode",
    "watchdog": "planner.ros.nodes.watchdog:WatchdogNode",
    "executor": "planner.ros.nodes.executor:ExecutorNode",
    "controller": "planner.ros.nodes.controller:ControllerNode",
    "explainer": "planner.ros.nodes.explainer:ExplainerNode",
    "skill_planner": "planner.ros.nodes.skill_planner:SkillPlannerNode",
    "speech": "planner.ros.nodes.speech:SpeechNode",
    "task_planner": "planner.ros.nodes.task_planner:TaskPlannerNode",
    "fleet": "planner.ros.nodes.fleet:FleetNode",
}


# Launch arguments: name, default, description. Every value is a string, as `ros2 launch` gives it.
RESPAWN_DELAY_S = 2.0   # ros2 launch starts a node that died again after this long
RESPAWN_MAX_RETRIES = 3   # ... this many times; a node that crashes more is broken, not unlucky

LAUNCH_ARGUMENTS = (
    ("sim", "true", "start the built-in simulator; false on a robot or in Gazebo: no simulator node, and the "
                    "executor drives Nav2 and MoveIt 2"),
    ("robot", "", "a robot profile YAML (arms, frames, camera, payload); default: the config's"),
    ("namespace", "", "the robot's namespace, e.g. robot1 (the explainer and the fleet node stay at the root, shared)"),
    ("config", "", "stack config YAML; default: the installed config/planner.yaml"),
    ("params_file", "", "a ROS parameters file for the nodes (keys: node names or /**)"),
    ("use_sim_time", "false", "the nodes' clocks follow /clock (Gazebo, bag replay; with sim:=true the built-in "
                              "simulator publishes it); skill, command and confirmation time limits count "
                              "simulated seconds"),
    ("log_level", "info", "debug, info, warn, error or fatal"),
    ("llm_base_url", "", "an OpenAI-compatible LLM server, e.g. http://gpu-box:8000/v1 (default: the config's)"),
    ("llm_model", "", "the model name on that server (default: the config's)"),
    ("explainer", "true", "start the explainer; false when another robot's launch runs the shared one"),
    ("fleet", "true", "start the fleet node (/fleet/ask: questions answered from every robot of fleet.robots); "
                      "false when another robot's launch runs the shared one"),
    ("keystore", "", "an SROS2 keystore: every node runs with security enforced in its own enclave "
                     "(/planner/[namespace/]node; see `planner security policy`)"),
)
LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")


@dataclass(frozen=True)
class NodeLaunch:
    """One node as a launch starts it."""
    name: str
    namespace: str
    parameters: dict[str, str | bool] = field(default_factory=dict)
    params_file: str = ""
    env: dict[str, str] = field(default_factory=dict)
    log_level: str = "info"
    enclave: str = ""   # its SROS2 identity, when the stack runs secured

    def ros_arguments(self) -> list[str]:
        # A namespaced robot keeps its TF in its namespace, as Nav2's multi-robot bring-ups do:
        # two robots' base_link must not meet on one /tf.
        tf = [argument for topic in ("tf", "tf_static") for argument in ("-r", f"/{topic}:={topic}")] \
            if self.namespace else []
        return ["--log-level", self.log_level, *tf, *(["--enclave", self.enclave] if self.enclave else [])]


def enclave_for(namespace: str, name: str) -> str:
    return "/" + "/".join(part for part in ("planner", namespace, name) if part)


def _security(keystore: str, enclaves: list[str]) -> dict[str, str]:
    """The environment that makes the nodes authenticate, encrypt and check permissions; ValueError
    when the keystore lacks an enclave, as the node would only fail to start."""
    root = Path(keystore).expanduser()
    missing = [enclave for enclave in enclaves if not (root / "enclaves" / enclave.lstrip("/")).is_dir()]
    if missing:
        raise ValueError(f"launch argument keystore:={keystore} has no enclave {', '.join(missing)}: create them "
                         f"with `planner security policy` and `ros2 security generate_artifacts` (see docs/safety.md, Running secured)")
    return {"ROS_SECURITY_KEYSTORE": str(root.resolve()), "ROS_SECURITY_ENABLE": "true",
            "ROS_SECURITY_STRATEGY": "Enforce"}


def _flag(name: str, value: str) -> bool:
    if value.strip().lower() in ("true", "1", "yes", "on"):
        return True
    if value.strip().lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"launch argument {name}:={value!r} is not true or false")


def _existing_file(name: str, value: str) -> str:
    if not value:
        return ""
    path = Path(value).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"launch argument {name}:={value} names no file")
    return str(path)


def stack_nodes(arguments: dict[str, str]) -> list[NodeLaunch]:
    """The nodes to start for these launch argument values (missing ones take their defaults);
    ValueError says which argument is wrong."""
    unknown = set(arguments) - {name for name, _, _ in LAUNCH_ARGUMENTS}
    if unknown:
        raise ValueError(f"unknown launch arguments: {', '.join(sorted(unknown))}")
    values = {name: arguments.get(name, default) for name, default, _ in LAUNCH_ARGUMENTS}
    sim = _flag("sim", values["sim"])
    shared = {name: _flag(name, values[name]) for name in SHARED}
    use_sim_time = _flag("use_sim_time", values["use_sim_time"])
    if values["log_level"] not in LOG_LEVELS:
        raise ValueError(f"launch argument log_level:={values['log_level']} is not one of {', '.join(LOG_LEVELS)}")
    namespace = values["namespace"].strip("/")
    parameters: dict[str, str | bool] = {"sim": sim, "use_sim_time": use_sim_time}
    for name in ("config", "robot"):
        if path := _existing_file(name, values[name]):
            parameters[name] = path
    # The LLM server reaches the nodes as the config's own environment overrides.
    env = {variable: values[name] for name, variable in (("llm_base_url", "OPENAI_BASE_URL"),
                                                         ("llm_model", "PLANNER_LLM_MODEL")) if values[name]}
    if sim and "ROS_AUTOMATIC_DISCOVERY_RANGE" not in os.environ:
        # A simulated robot has no business on the network: nobody on the LAN can steer it or feed
        # it detections. A robot's launch keeps the network's discovery (secure it with SROS2).
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    names = [name for name in NODES if (sim or name != "simulator") and shared.get(name, True)]
    namespaces = {name: "" if name in SHARED else namespace for name in names}
    enclaves = {name: enclave_for(namespaces[name], name) if values["keystore"] else "" for name in names}
    if values["keystore"]:
        env.update(_security(values["keystore"], list(enclaves.values())))
    own = {name: dict(parameters) for name in names}
    if sim and use_sim_time:   # the built-in simulator is the clock the others follow
        own["simulator"].update(use_sim_time=False, publish_clock=True)
    return [NodeLaunch(name, namespaces[name], own[name], _existing_file("params_file", values["params_file"]),
                       env, values["log_level"], enclaves[name])
            for name in names]


def node_class(name: str):
    module, _, attribute = _CLASSES[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def run_node_main(argv: list[str]) -> int:
    """`planner-node NAME [ROS args]`: run one node of the stack."""
    # A node that does not end or answer shows where it is: `kill -USR1 PID` writes the stack of
    # every thread to its output, even when they are all stuck in C code; one that crashes in C
    # code shows where each thread was.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    faulthandler.enable()
    args = rclpy.utilities.remove_ros_args(argv)
    if len(args) < 2 or args[1] not in _CLASSES:
        print(f"usage: planner-node NODE [--ros-args ...]; NODE is one of {', '.join(NODES)}", file=sys.stderr)
        return 2
    try:
        return main_for(node_class(args[1]))
    except KeyboardInterrupt:  # stopped while still starting up
        return 130


def exit_process(code: int) -> NoReturn:
    """End a node's process once its node has closed (files, graph, rclpy): the interpreter's own
    teardown of the libraries a node loaded (torch for the explainer) added a second or more to a stop."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_process(run_node_main(sys.argv))
