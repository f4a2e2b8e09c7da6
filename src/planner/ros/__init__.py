"""The ROS 2 layer: message conversions, futures, QoS, the node base, the nodes, the executor backends
and TF. Thin: decisions stay in the core."""
