"""The robot the stack plans for, read from a robot profile file (config/robots/*.yaml): its arms
with the MoveIt names of their groups and links, reach, workspace, payload, speed, the distance it
keeps from furniture, its camera and its frames. The skill planner, perception, the executor and
the simulator read it; a world file only places the robot, so a real robot needs no world."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from planner.core.files import Point3, StrictModel, load_model

OPTICAL_FRAME_SUFFIX = "_optical_frame"   # REP 103's name for a camera frame that looks along +z


class GripperAction(StrictModel):
    """A hand driven through its controller's control_msgs/GripperCommand action rather than as a
    MoveIt group: the result's finger position says whether it holds something."""
    action: str = Field(min_length=1, description="the action's name, e.g. /gripper_controller/gripper_cmd")
    open_position: float = Field(description="fingers open, in the controller's unit (m or rad)")
    closed_position: float = Field(description="fingers fully closed on nothing")
    max_effort: float = Field(gt=0, description="the force a close may use (N, or Nm for a revolute gripper): "
                                                "enough to hold, little enough not to crush")


class ArmProfile(StrictModel):
    """One arm; the MoveIt names are needed only by the MoveIt executor backend."""
    group: str = Field(default="", description="MoveIt planning group of the arm, e.g. left_arm")
    tool_link: str = Field(default="", description="link whose pose the arm goals give, e.g. left_tool0")
    gripper_group: str = Field(default="", description="MoveIt planning group of the gripper, e.g. left_hand")
    # A state is a named state of the robot's SRDF, or joint positions for robots whose SRDF has none.
    open_state: str | dict[str, float] = Field(default="open", description="gripper open: SRDF state or {joint: position}")
    closed_state: str | dict[str, float] = Field(default="closed", description="gripper closed: SRDF state or "
                                                                              "{joint: position}")
    rest_state: str | dict[str, float] = Field(default="home", description="arm state it retreats to: SRDF state or "
                                                                          "{joint: position}")
    grasp_xyzw: tuple[float, float, float, float] = Field(
        default=(1.0, 0.0, 0.0, 0.0), description="the tool link's orientation (x, y, z, w) in the base frame when it "
                                                   "grasps from above; the default points a tool link's z axis down")
    empty_grip_tolerance: float = Field(default=0.002, ge=0, description="fingers this close to their closed state "
                                        "(m or rad, each joint) hold nothing: a grasp that ends so has missed")
    gripper_action: GripperAction | None = Field(default=None, description="the hand's GripperCommand action; "
                                                 "none: the hand moves as the MoveIt group gripper_group")

    def missing_moveit_names(self) -> list[str]:
        needed = ("group", "tool_link") if self.gripper_action else ("group", "tool_link", "gripper_group")
        return [name for name in needed if not getattr(self, name)]

    def holds_something(self, opening: float) -> bool:
        """Whether fingers that ended `opening` short of their closed state (m or rad) stopped on something."""
        return opening > self.empty_grip_tolerance


class Camera(StrictModel):
    # A head camera that sweeps the room: 360 degrees, walls occlude (only the robot's room).
    fov_deg: float = Field(default=360.0, gt=0, le=360)
    range_m: float = Field(default=6.0, gt=0)
    rate_hz: float = Field(default=2.0, gt=0)
    frame_id: str = Field(default="camera_link", min_length=1)
    mount_xyz: Point3 = Field(default=(0.1, 0.0, 1.3), description="camera position in the base frame")
    mount_rpy: tuple[float, float, float] = Field(default=(0.0, 0.0, 0.0), description="camera orientation in the base frame")
    optical: bool | None = Field(default=None, description="frame_id is a REP 103 optical frame, looking along +z "
                                                           "(x right, y down); default: when its name ends in "
                                                           "_optical_frame, as REP 103 names them")

    def view_axis(self, frame_id: str) -> tuple[float, float, float]:
        """The axis a camera pose given in `frame_id` looks along: z for an optical frame, else x."""
        optical = self.optical if frame_id == self.frame_id and self.optical is not None \
            else frame_id.endswith(OPTICAL_FRAME_SUFFIX)
        return (0.0, 0.0, 1.0) if optical else (1.0, 0.0, 0.0)


class RobotProfile(StrictModel):
    name: str = Field(min_length=1)
    base_frame: str = Field(default="base_link", min_length=1, description="the mobile base's frame")
    map_frame: str = Field(default="map", min_length=1, description="the fixed frame of the map and navigation goals")
    arms: dict[str, ArmProfile] = Field(min_length=1, description="by the names skills use, e.g. left, right")
    reach_m: float = Field(gt=0, description="how far from the base centre the hands reach")
    workspace_z_m: tuple[float, float] = Field(default=(0.0, 1.9), description="lowest and highest point the hands "
                                                                                "reach, above the floor")
    payload_kg: float = Field(gt=0, description="the heaviest object one hand lifts")
    speed_mps: float = Field(default=0.5, gt=0, description="base speed, for time estimates and the simulator")
    standoff_m: float = Field(gt=0, description="distance the base keeps from furniture")
    camera: Camera = Field(default_factory=Camera)

    @property
    def arm_names(self) -> list[str]:
        return list(self.arms)

    def works_at(self, height_m: float) -> bool:
        """Whether the hands reach this height above the floor."""
        low, high = self.workspace_z_m
        return low <= height_m <= high

    def arm_problem(self, arm: str) -> str:
        """Why an arm name is wrong for this robot ('' when it has that arm)."""
        return "" if arm in self.arms else f"the robot has no arm {arm!r} (it has {', '.join(self.arms)})"


def load_robot_profile(path: str | Path) -> RobotProfile:
    return load_model(path, RobotProfile)
