"""`planner security policy`: the SROS2 policy of the stack, read off its nodes as they run."""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

from planner.cli.stack import Stack, add_launch_arguments, format_step, launch_arguments, spin_in_background
from planner.ros.stack import enclave_for

SETTLED_S = 3.0   # the interfaces unchanged this long after every node is ready: what they follow found


def policy(args) -> int:
    import rclpy
    from std_msgs.msg import String

    from planner.ros.node import READY
    from planner.ros.qos import STATUS_QOS, STATUS_TOPIC
    from planner.ros.security import node_interfaces, policy_xml

    arguments = launch_arguments(args)
    env = {**os.environ, "ROS_DOMAIN_ID": str(random.randint(20, 99))}  # a private domain: only this stack
    try:
        stack = Stack(arguments, quiet=True, env=env)
    except ValueError as error:
        print(f"planner security policy: {error}", file=sys.stderr)
        return 2
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    print(format_step("stack", f"starting {len(stack.nodes)} nodes to read their interfaces ..."), file=sys.stderr)
    stack.start()
    rclpy.init()
    graph = rclpy.create_node(f"planner_policy_{os.getpid()}")
    # Interfaces are read once every node said it is ready: the explainer makes its services only
    # after loading its model, seconds after its first publisher.
    said: list[str] = []
    for topic in {"/".join(filter(None, ["", node.namespace, STATUS_TOPIC])) for node in stack.nodes.values()}:
        graph.create_subscription(String, topic, lambda msg: said.append(msg.data), STATUS_QOS)
    ready = lambda: all(f"[{node.name}] INFO: {READY}" in said for node in stack.nodes.values())  # noqa: E731
    stop_spinning = spin_in_background(graph)
    try:
        read = lambda: [(node, node_interfaces(graph, node.name, node.namespace))  # noqa: E731
                        for node in stack.nodes.values()]
        deadline, last, since = time.monotonic() + args.startup_timeout, None, time.monotonic()
        while True:
            if failed := stack.cannot_start():
                print(f"the stack failed to start: {', '.join(failed)}", file=sys.stderr)
                return 1
            if time.monotonic() > deadline:
                print(f"the nodes did not all start within {args.startup_timeout:.0f} s", file=sys.stderr)
                return 1
            current = read()
            if current != last or not ready():
                last, since = current, time.monotonic()
            elif time.monotonic() - since > SETTLED_S:
                break
            time.sleep(0.5)
        nodes = [(replace(node, enclave=enclave_for(node.namespace, node.name)), interfaces) for node, interfaces in last]
        Path(args.out).write_text(policy_xml(nodes))
        print(format_step("done", f"{args.out}: {len(nodes)} enclaves; sign it into a keystore with "
                                  f"`ros2 security generate_artifacts -k KEYSTORE -p {args.out}`"), file=sys.stderr)
        return 0
    finally:
        stop_spinning()
        graph.destroy_node()
        rclpy.shutdown()
        stack.stop()


def add_commands(sub) -> None:
    p = sub.add_parser("security", help="SROS2: the stack's access-control policy")
    security_sub = p.add_subparsers(dest="security_command", required=True)
    p = security_sub.add_parser("policy", help="start the stack as bringup would with these launch arguments, read "
                                               "what each node publishes, subscribes to, serves and calls, and write "
                                               "an SROS2 policy with one enclave per node")
    add_launch_arguments(p, leave_out=("keystore",))  # the policy is read off an unsecured stack
    p.add_argument("--out", default="planner-policy.xml", help="the policy file to write")
    p.add_argument("--startup-timeout", type=float, default=240, help="seconds the stack may take to start")
    p.set_defaults(run=policy)
