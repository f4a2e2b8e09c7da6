"""ros2 launch planner bringup.launch.py [sim:=false] [robot:=my_robot.yaml] [namespace:=robot1]
    [config:=planner.yaml] [params_file:=params.yaml] [use_sim_time:=true] [log_level:=debug]
    [llm_base_url:=http://gpu-box:8000/v1] [llm_model:=qwen2.5-7b] [explainer:=false]
    [keystore:=~/planner_keystore]

`ros2 launch planner bringup.launch.py --show-args` describes each. The arguments and the nodes
they start come from planner.ros.stack, which `planner bringup` uses too, so the two cannot drift.
Nodes keep their own names (a launch `name=` would rename the helper nodes in their processes too).
A node that crashes is started again after RESPAWN_DELAY_S, at most RESPAWN_MAX_RETRIES times; one
whose configuration is rejected is not: the launch stops and says why. Stop it with SIGINT (Ctrl-C):
upstream launch leaves its nodes running on SIGTERM.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from planner.ros.node import CONFIGURATION_REJECTED
from planner.ros.stack import LAUNCH_ARGUMENTS, RESPAWN_DELAY_S, RESPAWN_MAX_RETRIES, stack_nodes


def stop_if_rejected(name: str):
    """A node that exits because its configuration was rejected ends the launch before its respawn."""
    def on_exit(event, context):
        if event.returncode != CONFIGURATION_REJECTED:
            return None
        reason = f"the {name} node rejected its configuration (exit {CONFIGURATION_REJECTED}): see its error above"
        return [LogInfo(msg=f"stopping the stack, {reason}"), EmitEvent(event=Shutdown(reason=reason))]
    return on_exit


def launch_nodes(context):
    arguments = {name: LaunchConfiguration(name).perform(context) for name, _, _ in LAUNCH_ARGUMENTS}
    actions = []
    for node in stack_nodes(arguments):
        process = Node(package="planner", executable="planner-node", arguments=[node.name], namespace=node.namespace,
                       parameters=[*([node.params_file] if node.params_file else []), node.parameters],
                       additional_env=node.env, ros_arguments=node.ros_arguments(), output="screen",
                       respawn=True, respawn_delay=RESPAWN_DELAY_S, respawn_max_retries=RESPAWN_MAX_RETRIES)
        actions += [process, RegisterEventHandler(OnProcessExit(target_action=process, on_exit=stop_if_rejected(node.name)))]
    return actions


def generate_launch_description():
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in LAUNCH_ARGUMENTS),
        OpaqueFunction(function=launch_nodes),
    ])
