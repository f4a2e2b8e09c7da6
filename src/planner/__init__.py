"""planner: LLM task planning for service robots on ROS 2.

Layers, each importing only those before it (scripts/import_layers.py checks):
`planner.core` holds every decision in plain Python; `planner.adapters` talk to the outside (LLM
servers, embeddings, speech, Nav2, MoveIt 2) and `planner.sim` is the built-in simulator;
`planner.config` composes the settings and `planner.wiring` opens what they ask for;
`planner.ros` is the thin ROS 2 layer (conversions, the node base, the nodes); `planner.cli` and
`planner.bench` sit on top. The interfaces generated from msg/ srv/ action/ are `planner.msg`,
`planner.srv`, `planner.action`.
"""

__version__ = "0.1.0"
