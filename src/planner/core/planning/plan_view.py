"""The plan of a task as a person watching the robot wants it: the request, the goals, the skills
done and the one under way and, once a plan is made (LLM+P), the skills still to come. Kept from
the task's trace, so that every planning mode shows the same way; the task planner node publishes
it with markers at the places the skills go to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from planner.core.calls import SkillSyntaxError, parse_call
from planner.core.scene_graph import SceneGraph
from planner.core.types import TraceStep

SkillState = Literal["planned", "running", "done", "failed"]
PLACE_KINDS = ("furniture", "room", "person")   # where a skill takes the robot, before the object it handles


@dataclass
class PlannedSkill:
    call: str
    state: SkillState


@dataclass
class PlanView:
    request: str = ""
    goals: str = ""
    skills: list[PlannedSkill] = field(default_factory=list)
    state: str = "running"   # then how the task ended: succeeded, impossible, failed, canceled, error...

    def update(self, step: TraceStep) -> bool:
        """Take one trace step in; whether the view changed."""
        running = next((skill for skill in self.skills if skill.state == "running"), None)
        if step.kind == "request":
            self.request = step.text
        elif step.kind == "goal":
            self.goals = step.text
        elif step.kind == "plan" and step.calls:
            self._drop_planned()
            self.skills += [PlannedSkill(call, "planned") for call in step.calls]
        elif step.kind == "skill":
            upcoming = next((skill for skill in self.skills if skill.state == "planned"), None)
            if upcoming is not None and upcoming.call == step.text:
                upcoming.state = "running"
            else:  # off the plan (ReAct has none): what is left of it no longer holds
                self._drop_planned()
                self.skills.append(PlannedSkill(step.text, "running"))
        elif step.kind in ("observation", "failure") and running is not None:
            running.state = "done" if step.kind == "observation" else "failed"
        elif step.kind == "result":
            self.state = step.text.split(":", 1)[0]
            self._drop_planned()
        else:
            return False
        return True

    def _drop_planned(self) -> None:
        self.skills = [skill for skill in self.skills if skill.state != "planned"]


def skill_place(call: str, scene: SceneGraph) -> str:
    """The thing of the map a skill call is about, to draw it at: the last place it names (the
    table a PLACE puts on), else the first thing; empty when it names none the map has."""
    try:
        _, args = parse_call(call)
    except SkillSyntaxError:
        return ""
    known = [arg for arg in args if scene.has(arg)]
    places = [arg for arg in known if scene.entity(arg).kind in PLACE_KINDS]
    return places[-1] if places else known[0] if known else ""
