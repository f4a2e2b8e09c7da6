"""Doubles of what a ROS 2 install with MoveIt 2 provides and no package index here has (moveit_py,
moveit_msgs, shape_msgs, control_msgs): they record what the adapter gives them, and the planning
scene keeps its world and attached objects the way MoveIt's does."""

from __future__ import annotations

import contextlib
import types
from types import SimpleNamespace


class Plan(SimpleNamespace):
    def __bool__(self):
        return self.error_code.val == 1


class Message:
    """A ROS message: the fields of FIELDS, set from keywords or to their defaults."""
    FIELDS: dict = {}

    def __init__(self, **fields):
        unknown = set(fields) - set(self.FIELDS)
        assert not unknown, f"{type(self).__name__} has no field {unknown}"
        for name, default in self.FIELDS.items():
            setattr(self, name, fields.get(name, default() if callable(default) else default))


class SolidPrimitive(Message):
    BOX = 1
    FIELDS = {"type": 0, "dimensions": list}


class CollisionObject(Message):
    ADD, REMOVE = 0, 1
    FIELDS = {"id": "", "operation": 0, "primitives": list, "primitive_poses": list,
              "header": lambda: SimpleNamespace(frame_id="")}


class AttachedCollisionObject(Message):
    FIELDS = {"link_name": "", "object": CollisionObject, "touch_links": list}


class PlanningScene:
    """MoveIt's planning scene as far as the adapter uses it: collision objects added, moved and removed;
    an attached object leaves the world and, detached, comes back to it."""

    def __init__(self, joints: dict[str, float]):
        self.current_state = SimpleNamespace(joint_positions=joints)
        self.world: dict[str, CollisionObject] = {}
        self.attached: dict[str, AttachedCollisionObject] = {}   # by link

    def apply_collision_object(self, message: CollisionObject) -> None:
        if message.operation == CollisionObject.REMOVE:
            self.world.pop(message.id, None)
        else:
            self.world[message.id] = message

    def process_attached_collision_object(self, message: AttachedCollisionObject) -> None:
        if message.object.operation == CollisionObject.REMOVE:
            attached = self.attached.pop(message.link_name)
            assert attached.object.id == message.object.id
            self.world[attached.object.id] = attached.object
        else:
            self.world.pop(message.object.id, None)
            self.attached[message.link_name] = message


class PlanRequestParameters:
    def __init__(self, moveit, namespace: str = ""):
        self.planning_pipeline, self.planner_id = "ompl", ""


class FakeMoveIt:
    """MoveItPy: every goal set is recorded with its group, and every plan with its pipeline and the
    ids of the planning scene's world at the time; plans
    fail with `plan_error` for the groups in `failing`; execution ends with `execution`; the robot's
    joints and the named states of its SRDF are `joints` and `named_states`."""

    def __init__(self, named_states: dict, joints: dict, plan_error=-31, failing=(), execution=None):
        self.goals, self.pipelines, self.worlds, self.executed = [], [], [], 0
        self.named_states = named_states
        self.plan_error, self.failing, self.execution = plan_error, set(failing), execution
        self.scene = PlanningScene(dict(joints))

    @property
    def joints(self) -> dict[str, float]:
        return self.scene.current_state.joint_positions

    def get_planning_scene_monitor(self):
        return SimpleNamespace(read_only=lambda: contextlib.nullcontext(self.scene),
                               read_write=lambda: contextlib.nullcontext(self.scene))

    def get_robot_model(self):
        def group(name):
            joints = sorted({j for (g, _), state in self.named_states.items() if g == name for j in state})
            return SimpleNamespace(active_joint_model_names=joints, link_model_names=[f"{name}_link"])
        return SimpleNamespace(get_joint_model_group=group, named_states=self.named_states)

    def get_planning_component(self, group):
        moveit = self

        class Component:
            def set_start_state_to_current_state(self):
                pass

            def set_goal_state(self, **goal):
                moveit.goals.append((group, goal))

            def plan(self, single_plan_parameters=None):
                parameters = single_plan_parameters or PlanRequestParameters(moveit)
                moveit.pipelines.append((parameters.planning_pipeline, parameters.planner_id))
                moveit.worlds.append(sorted(moveit.scene.world))
                ok = group not in moveit.failing
                return Plan(error_code=SimpleNamespace(val=1 if ok else moveit.plan_error), trajectory=f"{group} path")
        return Component()

    def execute(self, trajectory, controllers):
        self.executed += 1
        return self.execution


class RobotState:
    """moveit.core.robot_state.RobotState: joint positions set, or set to a named state of the model's SRDF."""

    def __init__(self, model):
        self.model, self.joint_positions, self.updated = model, {}, False

    def update(self):
        self.updated = True

    def set_to_default_values(self, group, name):
        self.group_positions = list(self.model.named_states[group, name].values())

    def get_joint_group_positions(self, group):
        return self.group_positions


def modules(moveit_py=None) -> dict[str, types.ModuleType]:
    """The modules to put into sys.modules: moveit_py's (with `moveit_py` as MoveItPy), moveit_msgs', shape_msgs'."""
    made = {name: types.ModuleType(name) for name in ("moveit", "moveit.planning", "moveit.core",
                                                      "moveit.core.robot_state", "moveit_msgs", "moveit_msgs.msg",
                                                      "shape_msgs", "shape_msgs.msg")}
    made["moveit.planning"].MoveItPy = moveit_py
    made["moveit.planning"].PlanRequestParameters = PlanRequestParameters
    made["moveit.core.robot_state"].RobotState = RobotState
    made["moveit_msgs.msg"].CollisionObject = CollisionObject
    made["moveit_msgs.msg"].AttachedCollisionObject = AttachedCollisionObject
    made["shape_msgs.msg"].SolidPrimitive = SolidPrimitive
    return made
