"""The SROS2 access-control policy of the stack, read off the running nodes: for each node, in its
own enclave, the topics it publishes and subscribes to, the services it offers and calls and the
actions it serves and calls, and nothing else. Signed into permissions (`ros2 security
generate_artifacts`), it means for instance that only the skill planner may send commands to the
executor, and that no other node can write the explainer's case memory."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from planner.ros.stack import NodeLaunch

ACTION = "/_action/"
# Each policy element: what it lists, the permission attribute, and how it is read off the graph.
KINDS = (("topics", "topic", "publish"), ("topics", "topic", "subscribe"), ("services", "service", "reply"),
         ("services", "service", "request"), ("actions", "action", "execute"), ("actions", "action", "call"))


def node_interfaces(graph, name: str, namespace: str) -> dict[str, set[str]]:
    """What a running node uses, by permission: publish, subscribe, reply, request, execute, call."""
    namespace = "/" + namespace.strip("/")
    try:
        found = {"publish": graph.get_publisher_names_and_types_by_node(name, namespace),
                 "subscribe": graph.get_subscriber_names_and_types_by_node(name, namespace),
                 "reply": graph.get_service_names_and_types_by_node(name, namespace),
                 "request": graph.get_client_names_and_types_by_node(name, namespace)}
    except RuntimeError:  # rclpy's NodeNameNonExistentError: not discovered (yet)
        found = {"publish": [], "subscribe": [], "reply": [], "request": []}
    # An action is its goal service, result service, cancel service, feedback and status topics;
    # the policy names it once, as the action (a node that only cancels its goals calls it too).
    interfaces = {kind: {topic for topic, _ in entries if ACTION not in topic} for kind, entries in found.items()}
    for kind, side in (("execute", "reply"), ("call", "request")):
        interfaces[kind] = {topic.split(ACTION)[0] for topic, _ in found[side] if ACTION in topic}
    return interfaces


def policy_xml(nodes: list[tuple[NodeLaunch, dict[str, set[str]]]]) -> str:
    policy = ET.Element("policy", version="0.2.0")
    enclaves = ET.SubElement(policy, "enclaves")
    for node, interfaces in nodes:
        profile = ET.SubElement(ET.SubElement(ET.SubElement(enclaves, "enclave", path=node.enclave), "profiles"),
                                "profile", ns="/" + node.namespace, node=node.name)
        for group, item, permission in KINDS:
            if interfaces[permission]:
                listed = ET.SubElement(profile, group, {permission: "ALLOW"})
                for name in sorted(interfaces[permission]):
                    ET.SubElement(listed, item).text = name
    ET.indent(policy)
    return ET.tostring(policy, encoding="unicode") + "\n"
