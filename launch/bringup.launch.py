"""ros2 launch planner bringup.launch.py [sim:=false] [robot:=my_robot.yaml] [namespace:=robot1]
    [config:=planner.yaml] [params_file:=params.yaml] [use_sim_time:=true] [log_level:=debug]
    [llm_base_url:=http://gpu-box:8000/v1] [llm_model:=qwen2.5-7b] [explainer:=false]
    [keystore:=~/planner_keystore]

`ros2 launch planner bringup.launch.py --show-args` describes each. The arguments and the nodes
they start come from planner.ros.stack, which `planner bringup` uses too, so the two cannot drift.
Nodes keep their own names (a launch `name=` would rename the helper nodes in their processes too).
A node that dies is started again after RESPAWN_DELAY_S (`planner bringup` waits longer each time).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from planner.ros.stack import LAUNCH_ARGUMENTS, RESPAWN_DELAY_S, stack_nodes


def launch_nodes(context):
    arguments = {name: LaunchConfiguration(name).perform(context) for name, _, _ in LAUNCH_ARGUMENTS}
    return [
        Node(package="planner", executable="planner-node", arguments=[node.name], namespace=node.namespace,
             parameters=[*([node.params_file] if node.params_file else []), node.parameters],
             additional_env=node.env, ros_arguments=node.ros_arguments(), output="screen",
             respawn=True, respawn_delay=RESPAWN_DELAY_S)
        for node in stack_nodes(arguments)
    ]


def generate_launch_description():
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in LAUNCH_ARGUMENTS),
        OpaqueFunction(function=launch_nodes),
    ])
