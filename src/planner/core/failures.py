"""Every failure code the stack can report, with the sentence that explains it to the planner.

One registry: the precondition checks, the simulator, the Nav2 and MoveIt adapters (which map
their own codes into these), the executor, the controller and the explainer's case memory (keyed
on these strings) all use it, and FailureMessage.msg declares the same names as string constants
for other-language clients. On the wire codes stay strings: readable in `ros2 topic echo`. A leaf
module: it imports nothing from the project.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator


class FailureCode(StrEnum):
    # A skill refused before it starts (preconditions and syntax)
    INVALID_SKILL = "INVALID_SKILL"
    INVALID_SKILL_LIBRARY = "INVALID_SKILL_LIBRARY"
    NO_METHOD = "NO_METHOD"
    ROBOT_STATE_UNKNOWN = "ROBOT_STATE_UNKNOWN"
    OBJECT_LOCATION_UNKNOWN = "OBJECT_LOCATION_UNKNOWN"
    ARM_OCCUPIED = "ARM_OCCUPIED"
    ALREADY_HOLDING = "ALREADY_HOLDING"
    NOT_HOLDING = "NOT_HOLDING"
    OUT_OF_REACH = "OUT_OF_REACH"
    OUT_OF_WORKSPACE = "OUT_OF_WORKSPACE"
    TOO_HEAVY = "TOO_HEAVY"
    ALREADY_THERE = "ALREADY_THERE"
    CONTAINER_CLOSED = "CONTAINER_CLOSED"
    ALREADY_OPEN = "ALREADY_OPEN"
    ALREADY_CLOSED = "ALREADY_CLOSED"
    PERSON_NOT_FOUND = "PERSON_NOT_FOUND"
    HAZARD = "HAZARD"                   # a hazard rule of the skill library forbids the call
    # Navigation
    PATH_BLOCKED = "PATH_BLOCKED"
    NO_PATH = "NO_PATH"
    GOAL_IN_COLLISION = "GOAL_IN_COLLISION"
    GOAL_OUTSIDE_MAP = "GOAL_OUTSIDE_MAP"
    START_BLOCKED = "START_BLOCKED"
    NAVIGATION_ABORTED = "NAVIGATION_ABORTED"
    STALLED = "STALLED"
    LOCALIZATION_LOST = "LOCALIZATION_LOST"
    # Manipulation
    OBJECT_NOT_FOUND = "OBJECT_NOT_FOUND"
    GRASP_LOST = "GRASP_LOST"
    ARM_PLANNING_FAILED = "ARM_PLANNING_FAILED"
    ARM_EXECUTION_FAILED = "ARM_EXECUTION_FAILED"
    ARM_IN_COLLISION = "ARM_IN_COLLISION"
    ARM_GOAL_IN_COLLISION = "ARM_GOAL_IN_COLLISION"
    NOT_OPENABLE = "NOT_OPENABLE"
    UNKNOWN_OBJECT = "UNKNOWN_OBJECT"
    UNKNOWN_FURNITURE = "UNKNOWN_FURNITURE"
    UNKNOWN_OPERATION = "UNKNOWN_OPERATION"
    UNKNOWN_ARM = "UNKNOWN_ARM"
    OBJECT_HELD = "OBJECT_HELD"
    # What the controller's checks find before and after a command
    WORLD_CHANGED = "WORLD_CHANGED"
    NOT_AT_GOAL = "NOT_AT_GOAL"
    GRASP_NOT_CONFIRMED = "GRASP_NOT_CONFIRMED"
    PLACE_NOT_CONFIRMED = "PLACE_NOT_CONFIRMED"
    HANDOVER_NOT_CONFIRMED = "HANDOVER_NOT_CONFIRMED"
    ARTICULATION_NOT_CONFIRMED = "ARTICULATION_NOT_CONFIRMED"
    # The stack itself
    TIMEOUT = "TIMEOUT"
    CANCELED = "CANCELED"
    EMERGENCY_STOP = "EMERGENCY_STOP"
    BACKEND_UNAVAILABLE = "BACKEND_UNAVAILABLE"
    PERCEPTION_UNAVAILABLE = "PERCEPTION_UNAVAILABLE"
    CONTROLLER_UNAVAILABLE = "CONTROLLER_UNAVAILABLE"
    SKILL_PLANNER_UNAVAILABLE = "SKILL_PLANNER_UNAVAILABLE"
    EXECUTOR_UNAVAILABLE = "EXECUTOR_UNAVAILABLE"
    ROBOT_UNAVAILABLE = "ROBOT_UNAVAILABLE"   # the robot's motion servers (Nav2, MoveIt, the simulator) are gone
    SPEECH_UNAVAILABLE = "SPEECH_UNAVAILABLE"
    FAILED = "FAILED"  # a failure that came with no code


# The reason the planner reads, from the detail the failing part gave. Where the detail is a
# whole sentence for the planner already (the precondition checks end with what to do; the
# adapters quote the backend), it is the reason as it is.
AS_GIVEN = "{detail}"
REASONS: dict[str, str] = {  # keyed by FailureCode members, which are their strings
    FailureCode.INVALID_SKILL: AS_GIVEN,
    FailureCode.INVALID_SKILL_LIBRARY: AS_GIVEN,
    FailureCode.NO_METHOD: AS_GIVEN,
    FailureCode.ROBOT_STATE_UNKNOWN: AS_GIVEN,
    FailureCode.OBJECT_LOCATION_UNKNOWN: AS_GIVEN,
    FailureCode.ARM_OCCUPIED: AS_GIVEN,
    FailureCode.ALREADY_HOLDING: AS_GIVEN,
    FailureCode.NOT_HOLDING: AS_GIVEN,
    FailureCode.OUT_OF_REACH: AS_GIVEN,
    FailureCode.OUT_OF_WORKSPACE: AS_GIVEN,
    FailureCode.TOO_HEAVY: "the object is too heavy for the arm: {detail}",
    FailureCode.ALREADY_THERE: AS_GIVEN,
    FailureCode.CONTAINER_CLOSED: AS_GIVEN,
    FailureCode.ALREADY_OPEN: AS_GIVEN,
    FailureCode.ALREADY_CLOSED: AS_GIVEN,
    FailureCode.PERSON_NOT_FOUND: "the person is not where the robot expected: {detail}",
    FailureCode.HAZARD: AS_GIVEN,
    FailureCode.PATH_BLOCKED: "navigation could not reach the goal: {detail}",
    FailureCode.NO_PATH: "there is no known way to the goal: {detail}",
    FailureCode.GOAL_IN_COLLISION: "the navigation goal is inside furniture: {detail}",
    FailureCode.GOAL_OUTSIDE_MAP: "the navigation goal is outside the map: {detail}",
    FailureCode.START_BLOCKED: "the robot's own position is blocked or off the map: {detail}",
    FailureCode.NAVIGATION_ABORTED: "navigation stopped before the goal: {detail}",
    FailureCode.STALLED: "the robot stopped making progress: {detail}",
    FailureCode.LOCALIZATION_LOST: "the robot does not know where it is: {detail}",
    FailureCode.OBJECT_NOT_FOUND: "{object} was not where the map placed it ({detail}); someone may have moved it{where}",
    FailureCode.GRASP_LOST: "the object slipped or is no longer in the gripper: {detail}",
    FailureCode.ARM_PLANNING_FAILED: AS_GIVEN,
    FailureCode.ARM_EXECUTION_FAILED: AS_GIVEN,
    FailureCode.ARM_IN_COLLISION: AS_GIVEN,
    FailureCode.ARM_GOAL_IN_COLLISION: AS_GIVEN,
    FailureCode.NOT_OPENABLE: AS_GIVEN,
    FailureCode.UNKNOWN_OBJECT: AS_GIVEN,
    FailureCode.UNKNOWN_FURNITURE: AS_GIVEN,
    FailureCode.UNKNOWN_OPERATION: AS_GIVEN,
    FailureCode.UNKNOWN_ARM: AS_GIVEN,
    FailureCode.OBJECT_HELD: AS_GIVEN,
    FailureCode.WORLD_CHANGED: "the world changed under the plan: {detail}",
    FailureCode.NOT_AT_GOAL: "navigation reported arrival, but {detail}",
    FailureCode.GRASP_NOT_CONFIRMED: "the grasp reported success, but {detail}",
    FailureCode.PLACE_NOT_CONFIRMED: "the place reported success, but {detail}",
    FailureCode.HANDOVER_NOT_CONFIRMED: "the person did not take the object: {detail}",
    FailureCode.ARTICULATION_NOT_CONFIRMED: "the door or drawer did not move: {detail}",
    FailureCode.TIMEOUT: "the command did not finish in time: {detail}",
    FailureCode.CANCELED: "the command was canceled: {detail}",
    FailureCode.EMERGENCY_STOP: "the emergency stop is engaged: {detail}",
    FailureCode.BACKEND_UNAVAILABLE: "the robot did not accept the command: {detail}",
    FailureCode.PERCEPTION_UNAVAILABLE: "perception did not answer, so the command could not be checked: {detail}",
    FailureCode.CONTROLLER_UNAVAILABLE: "the controller did not check the command, so it was not run: {detail}",
    FailureCode.SKILL_PLANNER_UNAVAILABLE: AS_GIVEN,
    FailureCode.EXECUTOR_UNAVAILABLE: "the executor did not run the command: {detail}",
    FailureCode.ROBOT_UNAVAILABLE: "the robot's motion server did not answer: {detail}",
    FailureCode.SPEECH_UNAVAILABLE: "the robot could not speak: {detail}",
    FailureCode.FAILED: AS_GIVEN,
}


def reason_for(code: str, detail: str, object_id: str = "", where: str = "") -> str:
    """The planner's sentence for a failure; a code outside the registry (from a client of
    another version) gives its detail as it is."""
    return REASONS.get(code, AS_GIVEN).format(object=object_id or "the object", where=where, detail=detail)


def _known(code: str) -> str:
    if code not in REASONS:
        raise ValueError(f"unknown failure code {code!r}; the codes are FailureCode in planner/core/failures.py")
    return code


# A field of an input file or message that holds a failure code.
KnownCode = Annotated[str, AfterValidator(_known)]
