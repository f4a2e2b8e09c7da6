"""What the watchdog stops: the robot's motion actions, found by their type among the actions in the
graph, and the goals of theirs that still run. Nav2's navigator, ros2_control's trajectory and
gripper controllers and MoveIt's move group all go on with a goal whose client died, so a motion
goal outlives the executor that sent it unless something else cancels it."""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import Field

from planner.core.files import StrictModel

# action_msgs/GoalStatus: a goal still running or about to (canceling is already on its way out).
ACCEPTED, EXECUTING = 1, 2


class WatchdogSettings(StrictModel):
    action_types: list[str] = Field(
        default_factory=lambda: ["nav2_msgs/action/*", "control_msgs/action/FollowJointTrajectory",
                                 "control_msgs/action/GripperCommand", "control_msgs/action/ParallelGripperCommand",
                                 "moveit_msgs/action/MoveGroup", "moveit_msgs/action/ExecuteTrajectory",
                                 "planner/action/Navigate", "planner/action/Manipulate"],
        description="the types of action (shell patterns) whose goals move the robot: every server of one in the "
                    "robot's namespace has its goals canceled when the executor dies, and any goal of theirs that "
                    "runs while the emergency stop is engaged")


def motion_actions(names_and_types: list[tuple[str, list[str]]], patterns: list[str], namespace: str) -> list[str]:
    """The actions of the graph (name, types) that move this robot: of a type one of `patterns` matches,
    in `namespace` ('/' or '': all of them)."""
    prefix = "/" + namespace.strip("/") + "/" if namespace.strip("/") else "/"
    return sorted(name for name, types in names_and_types
                  if name.startswith(prefix) and any(fnmatchcase(kind, pattern) for kind in types for pattern in patterns))


def running(statuses: list[int]) -> bool:
    """Whether a status list of an action (action_msgs/GoalStatusArray) holds a goal that runs."""
    return any(status in (ACCEPTED, EXECUTING) for status in statuses)
