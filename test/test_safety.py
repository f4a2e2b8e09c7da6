"""Hazard rules of the skill library: calls refused whatever the plan, and the task ends "refused"
with the reason, never "Done."."""

import pytest

from conftest import CONFIG
from fakes import FixedSuggestion
from planner.adapters.llm import ScriptedPolicy
from planner.core.errors import InputError
from planner.core.geometry import Pose2D
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.task_planner import TaskPlanner
from planner.core.skills import SkillRefused, load_skill_library
from planner.core.world import load_world
from planner.sim.in_process import SimulatedRobot


def holding_near(scene, object_id: str, x: float, y: float):
    scene.robot.pose = Pose2D(x, y, 0.0)
    scene.robot.room = scene.room_at(x, y)
    scene.robot.held = {"left": "", "right": object_id}
    return scene


def test_a_knife_is_not_handed_to_a_person_nor_a_fork_put_in_the_microwave(skill_planner, scene):
    scene.entity("bottle_1").label = "kitchen_knife"
    holding_near(scene, "bottle_1", -1.0, 1.0)  # beside the user
    with pytest.raises(SkillRefused) as refused:
        skill_planner.plan("HANDOVER(bottle_1, user)", scene)
    assert refused.value.code == "HAZARD"
    assert refused.value.reason == ("HANDOVER(bottle_1, user) is not done: a sharp object is not handed or put "
                                         "to a person")
    scene.entity("table_1").label = "microwave"
    holding_near(scene, "bottle_1", 3.55, 1.5)
    scene.entity("bottle_1").label = "forks"
    with pytest.raises(SkillRefused, match="metal in a microwave sparks"):
        skill_planner.plan("PLACE(bottle_1, table_1, right)", scene)
    # A cup may go in; a fork on a plain table too.
    scene.entity("bottle_1").label = "cup"
    skill_planner.plan("PLACE(bottle_1, table_1, right)", scene)
    scene.entity("bottle_1").label, scene.entity("table_1").label = "fork", "table"
    skill_planner.plan("PLACE(bottle_1, table_1, right)", scene)


def test_a_hazard_rule_for_a_skill_the_library_lacks_is_refused_at_start_up(tmp_path):
    import yaml

    library = yaml.safe_load((CONFIG / "skills.yaml").read_text())
    library["hazards"].append({"skills": ["THROW"], "thing": ["object"], "near": ["person"], "reason": "no"})
    path = tmp_path / "skills.yaml"
    path.write_text(yaml.safe_dump(library))
    with pytest.raises(InputError, match=r"hazards\[2\].skills: no skill THROW in the library"):
        load_skill_library(path)


def test_a_request_that_leads_to_a_forbidden_call_ends_refused_with_the_reason(skill_planner, tmp_path):
    """The model plans the handover of a knife as asked; the skill planner refuses it, the robot keeps
    the knife, and the user hears why instead of "Done."."""
    world_file = tmp_path / "world.yaml"
    world_file.write_text((CONFIG / "worlds" / "kitchen_bedroom.yaml").read_text()
                          .replace("{id: bottle_1, label: bottle", "{id: bottle_1, label: knife"))
    robot = SimulatedRobot(load_world(world_file), [], skill_planner, FixedSuggestion())
    replies = [{"goals": [{"kind": "bring_to_user", "object": "knife"}]},
               {"thought": "The knife is on table_1.", "action": "GOTO(table_1)"},
               {"thought": "Pick it up.", "action": "PICK(bottle_1, right)"},
               {"thought": "Hand it over.", "action": "HANDOVER(bottle_1, user)"},
               {"thought": "Try again.", "action": "HANDOVER(bottle_1, user)"}]
    trace = []
    planner = TaskPlanner(ScriptedPolicy(replies), robot, skill_planner, PlannerSettings(confirm_timeout_s=0),
                          on_step=lambda step: trace.append((step.kind, step.text)))
    result = planner.run("Bring me the knife")
    assert not result.success and result.outcome == "refused" and result.steps == 3
    assert result.summary == "HANDOVER(bottle_1, user) is not done: a sharp object is not handed or put to a person"
    assert ("say", f"I will not do that: {result.summary}") in trace
    assert robot.sim.held["right"] == "bottle_1"
