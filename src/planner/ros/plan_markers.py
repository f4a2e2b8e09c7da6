"""The plan of the task under way as ROS messages: /planner/plan (planner/PlanState) and its
markers on /planner/plan/markers, which RViz and Foxglove draw over the scene graph's: a numbered
sphere at the place of each skill, coloured by how it went, and the line the robot takes through
them."""

from __future__ import annotations

from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from planner.core.planning.plan_view import PlanView, skill_place
from planner.core.scene_graph import SceneGraph
from planner.msg import PlanState

STATE_COLORS = {"done": (0.2, 0.8, 0.3, 0.9), "failed": (0.9, 0.2, 0.2, 0.9), "running": (1.0, 0.8, 0.1, 1.0),
                "planned": (0.7, 0.7, 0.7, 0.6)}
ROUTE_COLOR = (1.0, 1.0, 1.0, 0.7)
MARK_SIZE_M = 0.25
ABOVE_M = 0.4   # marks float this far above what they mark, clear of the scene graph's boxes


def plan_state(view: PlanView, task_id: str, stamp) -> PlanState:
    return PlanState(stamp=stamp, task_id=task_id, request=view.request, goals=view.goals, state=view.state,
                     skills=[skill.call for skill in view.skills], skill_states=[skill.state for skill in view.skills])


def _color(rgba) -> ColorRGBA:
    return ColorRGBA(**dict(zip("rgba", rgba)))


def plan_markers(view: PlanView, scene: SceneGraph, frame: str, stamp) -> MarkerArray:
    """The marks of the plan, after one that clears the last plan's."""
    markers = [Marker(ns="plan", action=Marker.DELETEALL)]
    route = [Point(x=float(scene.robot.pose.x), y=float(scene.robot.pose.y), z=ABOVE_M)] if scene.robot else []
    for number, skill in enumerate(view.skills, start=1):
        place = skill_place(skill.call, scene)
        if not place:
            continue
        x, y, z = map(float, scene.entity(place).center)
        top = z + float(scene.entity(place).size[2]) / 2 + ABOVE_M
        mark = Marker(ns="plan", id=2 * number, action=Marker.ADD, type=Marker.SPHERE, color=_color(STATE_COLORS[skill.state]))
        mark.pose.position.x, mark.pose.position.y, mark.pose.position.z = x, y, top
        mark.scale.x = mark.scale.y = mark.scale.z = MARK_SIZE_M
        label = Marker(ns="plan", id=2 * number + 1, action=Marker.ADD, type=Marker.TEXT_VIEW_FACING,
                       text=f"{number}. {skill.call}", color=_color(STATE_COLORS[skill.state]))
        label.pose.position.x, label.pose.position.y, label.pose.position.z = x, y, top + MARK_SIZE_M
        label.scale.z = 0.15
        markers += [mark, label]
        route.append(Point(x=x, y=y, z=top))
    if len(route) > 1:
        line = Marker(ns="plan", id=1, action=Marker.ADD, type=Marker.LINE_STRIP, points=route, color=_color(ROUTE_COLOR))
        line.scale.x = 0.04
        markers.append(line)
    for marker in markers:
        marker.header.frame_id, marker.header.stamp = frame, stamp
        marker.pose.orientation.w = 1.0
    return MarkerArray(markers=markers)
