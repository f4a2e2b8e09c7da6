"""ros2 launch planner bringup.launch.py [config:=/path/to/planner.yaml] [namespace:=robot1]
                                         [explainer:=false]

Starts the same nodes as `planner bringup`, from the same list (planner.ros.stack.NODES). A robot's
nodes go under `namespace`; the explainer stays at the root, one for every robot, so the second
robot's launch passes explainer:=false."""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from planner.ros.stack import NODES


def generate_launch_description():
    config = LaunchConfiguration("config")
    namespace = LaunchConfiguration("namespace")
    nodes = [
        Node(package="planner", executable="planner-node", name=name, arguments=[name],
             parameters=[{"config": config}], output="screen",
             namespace="" if name == "explainer" else namespace,
             condition=IfCondition(LaunchConfiguration("explainer")) if name == "explainer" else None)
        for name in NODES
    ]
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value="", description="stack config (default: the installed one)"),
        DeclareLaunchArgument("namespace", default_value="", description="the robot's namespace, e.g. robot1"),
        DeclareLaunchArgument("explainer", default_value="true",
                              description="start the explainer (false when another robot's launch runs it)"),
        *nodes,
    ])
