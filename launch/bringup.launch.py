"""ros2 launch planner bringup.launch.py [config:=/path/to/planner.yaml]

Starts the same nodes as `planner bringup`, from the same list (planner.stack.NODES)."""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from planner.stack import NODES


def generate_launch_description():
    config = LaunchConfiguration("config")
    nodes = [
        Node(package="planner", executable="planner-node", name=name, arguments=[name],
             parameters=[{"config": config}], output="screen")
        for name in NODES
    ]
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value="", description="stack config (default: the installed one)"),
        *nodes,
    ])
