"""What the model is told each step: the system prompt, the step prompt, a worked example in the
same format, the history of the episode, and the reply it must give."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import Field

from planner.core.files import StrictModel
from planner.core.scene_graph import SceneGraph

SYSTEM_PROMPT = """You control a household service robot. You plan one step at a time.
Each step, answer with JSON: a short "thought" on what to do next and why, then an "action" from the valid actions.
Perception actions ask the robot's map: get_rooms(), get_objects_in_room(room), get_object(id), find_objects(label), get_robot_state().
Skills move the robot:
{skills}
The robot must be next to a piece of furniture to PICK from it, PLACE on it, OPEN or CLOSE it.
Things inside a closed fridge, cabinet or drawer can be picked only after OPEN. To bring something to the user,
hold it and go to the room where the user is.
Example: to put cup_1 (on desk_1 in the office) on shelf_2 in the hall: GOTO(desk_1), PICK(cup_1, right), GOTO(shelf_2), PLACE(cup_1, shelf_2, right).
Objects may not be where the map says: after a failure, read the reason and the suggestion, look at the map again, and adapt.
Use ids exactly as the observations give them (e.g. table_1). GIVE_UP() only when the request is impossible.
ASK_USER() puts your "question" to the user, once per task, when the request is unclear and the map cannot tell.
search_map() looks through the whole map for what your "query" asks in plain words ("a thing to hold flowers")."""  # noqa: E501 (prompt text, word for word)


# What the robot tells the user at the end of a task.
SPOKEN_OUTCOME = {"succeeded": "Done.", "impossible": "I cannot do that: {summary}",
                  "refused": "I will not do that: {summary}",
                  "budget_exhausted": "I could not finish the task.", "canceled": "Stopped.",
                  "error": "Something went wrong: {summary}"}


def spoken_outcome(outcome: str, summary: str, steps: int) -> str:
    """What the robot says at the end; a success after no step says what was understood, so a
    misreading ("throw the cup" read as the cup where it stands) is not told as a job done."""
    if outcome == "succeeded" and steps == 0:
        return f"Nothing to do: {summary}."
    return SPOKEN_OUTCOME[outcome].format(summary=summary)


class StepReply(StrictModel):
    thought: str = Field(max_length=1000)
    action: str
    question: str = Field(default="", max_length=300, description="for ASK_USER()")
    query: str = Field(default="", max_length=300, description="for search_map()")



@dataclass
class PromptHistory:
    """What the model is told of the episode so far: every action with its outcome in one line
    each, and the full text of the latest observations only, so the prompt stays short."""
    done: list[str] = field(default_factory=list)
    latest: list[str] = field(default_factory=list)

    def done_text(self, keep: int) -> str:
        if not self.done:
            return "nothing"
        older = len(self.done) - keep
        return ("(" + str(older) + " earlier actions) " if older > 0 else "") + "; ".join(self.done[-keep:])


def robot_line(scene: SceneGraph, reach_m: float) -> str:
    robot = scene.known_robot
    near = scene.furniture_near(robot.pose.x, robot.pose.y, reach_m)
    held = [f"{arm} arm holds {obj}" for arm, obj in robot.held.items() if obj]
    return (f"in the {robot.room}, " + (f"next to {near[0]}" if near else "next to nothing") + "; "
            + (", ".join(held) if held else "holds nothing"))


def user_message(request: str, robot: str, goals: list[str], done: str, latest: list[str], actions: list[str]) -> str:
    lines = [f"Request: {request}", f"Robot: {robot}."]
    lines += [f"Goal: {goal}" for goal in goals]
    lines.append(f"Done so far: {done}")
    lines += [f"Observation: {text}" for text in latest]
    lines.append("Valid actions: " + " | ".join(actions))
    return "\n".join(lines)


def _example_turns() -> list[dict]:
    """A worked example in exactly the format of a real step: small models follow the pattern."""
    request = "Put the cup from the desk in the office on the shelf in the hall"
    goal = "a cup on a shelf in the hall: not yet; {where}; target: shelf_2 in the hall."
    steps = [
        ("in the office, next to nothing; holds nothing", "cup_1 is on desk_1 in the office", "nothing",
         "In the office: furniture desk_1 (desk). Objects: cup_1 (cup) on desk_1.",
         ["GOTO(desk_1)", "GOTO(shelf_2)", "GOTO(hall)", "get_rooms()"], "cup_1 is on desk_1; I go there first.", "GOTO(desk_1)"),
        ("in the office, next to desk_1; holds nothing", "cup_1 is on desk_1 in the office", "GOTO(desk_1): done",
         "GOTO(desk_1) succeeded.", ["GOTO(shelf_2)", "GOTO(hall)", "PICK(cup_1, left)", "PICK(cup_1, right)", "get_rooms()"],
         "I am next to desk_1 where cup_1 is; I pick it up.", "PICK(cup_1, right)"),
        ("in the office, next to desk_1; right arm holds cup_1", "cup_1 is held by the robot",
         "GOTO(desk_1): done; PICK(cup_1, right): done", "PICK(cup_1, right) succeeded.",
         ["GOTO(shelf_2)", "GOTO(hall)", "PLACE(cup_1, desk_1, right)", "get_rooms()"], "I hold cup_1; I bring it to shelf_2.",
         "GOTO(shelf_2)"),
        ("in the hall, next to shelf_2; right arm holds cup_1", "cup_1 is held by the robot",
         "GOTO(desk_1): done; PICK(cup_1, right): done; GOTO(shelf_2): done", "GOTO(shelf_2) succeeded.",
         ["GOTO(desk_1)", "GOTO(office)", "PLACE(cup_1, shelf_2, right)", "get_rooms()"],
         "I am next to shelf_2 holding cup_1; I put it there.", "PLACE(cup_1, shelf_2, right)"),
    ]
    turns = []
    for robot, where, done, observation, actions, thought, action in steps:
        turns.append({"role": "user", "content": user_message(request, robot, [goal.format(where=where)], done, [observation], actions)})
        turns.append({"role": "assistant", "content": json.dumps({"thought": thought, "action": action})})
    return turns


EXAMPLE_TURNS = _example_turns()
