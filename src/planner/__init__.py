"""planner: LLM task planning for service robots on ROS 2.

`planner.core` holds every decision in plain Python; `planner.nodes` are thin rclpy adapters;
`planner.backends` talk to the outside (LLM servers, embeddings, simulator, Nav2, MoveIt 2).
The interfaces generated from msg/ srv/ action/ are `planner.msg`, `planner.srv`, `planner.action`.
"""

__version__ = "0.1.0"
