"""The stack's node list, shared by `planner bringup` (pip side) and launch/bringup.launch.py
(ROS 2 side) so the two cannot drift."""

from __future__ import annotations

import importlib
import sys

import rclpy

# Start order: the world and perception first, the planner (which may start the LLM) last.
NODES = ("simulator", "perception", "executor", "controller", "explainer", "skill_planner", "speech", "task_planner")

_CLASSES = {
    "simulator": "planner.ros.nodes.simulator:SimulatorNode",
    "perception": "planner.ros.nodes.perception:PerceptionNode",
    "executor": "planner.ros.nodes.executor:ExecutorNode",
    "controller": "planner.ros.nodes.controller:ControllerNode",
    "explainer": "planner.ros.nodes.explainer:ExplainerNode",
    "skill_planner": "planner.ros.nodes.skill_planner:SkillPlannerNode",
    "speech": "planner.ros.nodes.speech:SpeechNode",
    "task_planner": "planner.ros.nodes.task_planner:TaskPlannerNode",
}


def node_class(name: str):
    module, _, attribute = _CLASSES[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def run_node_main(argv: list[str]) -> int:
    """`planner-node NAME [ROS args]`: run one node of the stack."""
    args = rclpy.utilities.remove_ros_args(argv)
    if len(args) < 2 or args[1] not in _CLASSES:
        print(f"usage: planner-node NODE [--ros-args ...]; NODE is one of {', '.join(NODES)}", file=sys.stderr)
        return 2
    try:
        from planner.ros.node import main_for

        return main_for(node_class(args[1]))
    except KeyboardInterrupt:  # stopped while still starting up
        return 130


if __name__ == "__main__":
    sys.exit(run_node_main(sys.argv))
