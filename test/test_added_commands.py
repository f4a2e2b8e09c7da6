"""A robot command added to the skill library without touching the planner's code
(docs/add-a-skill.md): carried out in the in-process simulator by the function the library names,
and on the ROS stack by the simulator node or, for a command it cannot do, by another node serving
`skills/<command>`, as a robot's own node would."""

from pathlib import Path

import pytest
import yaml

from conftest import CONFIG, RosClient, wait_for, write_config
from planner.core.errors import InputError

# The user's package: a module importable where the simulator runs.
PRESSING = '''
from planner.core.failures import FailureCode
from planner.core.types import Outcome

PRESSED = []


def press(world, arm, object_id, target_id, point):
    """A button on a piece of furniture, pressed by a free arm within reach."""
    if world.held[arm]:
        return Outcome(False, FailureCode.ARM_OCCUPIED, f"the {arm} arm holds {world.held[arm]}")
    reach = world.within_reach(arm, target_id)
    if not reach.ok:
        return reach
    PRESSED.append((arm, target_id, point))
    return Outcome(True, detail=f"pressed the button of {target_id}")
'''
PRESS_BUTTON = {"description": "Press the button of a piece of furniture (an appliance) with a free arm.",
                "params": [{"name": "target", "type": "furniture"}],
                "choose": {"arm": "free_arm"},
                "preconditions": [{"check": "hand_free"}],
                "methods": [{"name": "press_it",
                             "steps": ["reach(target)", "look_at(target)", "press_button(arm, target)"]}]}
PRESS_FROM_HERE = {**PRESS_BUTTON, "methods": [{"name": "press_it", "steps": ["press_button(arm, target)"]}]}
KNOCK = {"description": "Knock on a piece of furniture (a door) to call someone.",
         "params": [{"name": "target", "type": "furniture"}],
         "methods": [{"name": "knock_on_it", "steps": ["reach(target)", "knock(target)"]}]}


def library_with_added_commands(directory, module: str) -> str:
    """The default library plus press_button (simulated by the user's function) and knock (no
    simulated_by: done by a node of the robot's own)."""
    library = yaml.safe_load((CONFIG / "skills.yaml").read_text())
    library["commands"]["press_button"] = {"args": ["arm", "target"], "timeout_s": 10, "point": "target",
                                           "requires": ["not holding_any(arm)"], "simulated_by": f"{module}:press"}
    library["commands"]["knock"] = {"args": ["target"], "timeout_s": 10}
    library["skills"]["PRESS_BUTTON"] = PRESS_BUTTON
    library["skills"]["PRESS_FROM_HERE"] = PRESS_FROM_HERE
    library["skills"]["KNOCK"] = KNOCK
    path = directory / "skills.yaml"
    path.write_text(yaml.safe_dump(library, sort_keys=False))
    return str(path)


@pytest.fixture
def pressing(tmp_path, monkeypatch):
    """The user's module, importable, and a config whose library adds its command."""
    module = f"pressing_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(PRESSING)
    monkeypatch.syspath_prepend(str(tmp_path))
    return module, library_with_added_commands(tmp_path, module)


def in_process_robot(skills_path: str):
    from planner.config import load_config
    from planner.core.world import load_world
    from planner.sim.in_process import SimulatedRobot
    from planner.wiring import load_skill_planner

    config = load_config(write_config(Path(skills_path).parent, skills=skills_path))
    world = load_world(CONFIG / "worlds" / "kitchen_bedroom.yaml")
    return SimulatedRobot(world, [], load_skill_planner(config))


def test_a_command_the_library_adds_runs_in_the_simulator_with_its_checks_and_failures(pressing, tmp_path):
    import importlib

    module, skills = pressing
    library = yaml.safe_load(open(skills))
    library["commands"].pop("knock")
    library["skills"].pop("KNOCK")
    (tmp_path / "skills.yaml").write_text(yaml.safe_dump(library, sort_keys=False))
    robot = in_process_robot(skills)
    result = robot.execute_skill("PRESS_BUTTON(table_1)")
    assert result.success, result.failure.reason
    assert "navigate, look_at, press_button" in result.message
    arm, target, point = importlib.import_module(module).PRESSED[-1]
    assert target == "table_1" and robot.sim.robot_room == "kitchen"
    assert point == pytest.approx(robot.graph.entity("table_1").center)
    # The user's function says why it cannot, and that becomes the failure the planner acts on.
    far = robot.execute_skill("PRESS_FROM_HERE(bed_1)")
    assert not far.success and far.failure.code == "OUT_OF_REACH", far.failure
    assert "bed_1 is beyond the" in far.failure.reason


def test_the_in_process_simulator_names_the_commands_it_cannot_carry_out(pressing):
    _, skills = pressing
    with pytest.raises(InputError, match=r"commands knock have no simulated_by.*docs/add-a-skill.md"):
        in_process_robot(skills)


@pytest.mark.parametrize("simulated_by, message", [
    ("no_such_module_here:press", "cannot import no_such_module_here: ModuleNotFoundError"),
    ("{module}:pull", "has no function pull"),
])
def test_a_simulated_by_that_does_not_import_is_named_with_its_command(pressing, tmp_path, simulated_by, message):
    from planner.core.skills import load_skill_library
    from planner.sim.added_commands import load_added_commands

    module, skills = pressing
    library = load_skill_library(skills)
    library.commands["press_button"].simulated_by = simulated_by.format(module=module)
    with pytest.raises(InputError, match=f"lib.yaml: commands.press_button.simulated_by .*{message}"):
        load_added_commands(library, "lib.yaml")


@pytest.fixture
def stack(ros, pressing, tmp_path):
    """The nodes that carry out a skill, on a library with both added commands, and a node of the
    robot's own serving skills/knock."""
    import rclpy
    from rclpy.action import ActionServer

    from planner.action import Manipulate
    from planner.config import load_config
    from planner.msg import ExecutionEvent
    from planner.ros.stack import node_class
    from planner.srv import GetRobotState

    module, skills = pressing
    config = load_config(write_config(tmp_path, skills=skills))
    client = RosClient("added_commands_test")
    events = client.collect(ExecutionEvent, "/executor/feedback")
    knocks = []

    def knock(goal_handle):
        knocks.append(goal_handle.request.target_id)
        goal_handle.succeed()
        return Manipulate.Result(success=True, detail=f"knocked on {goal_handle.request.target_id}")
    robot_node = client.add(rclpy.create_node("robot_skills"))
    ActionServer(robot_node, Manipulate, "/skills/knock", knock)
    for name in ("simulator", "perception", "controller", "executor", "skill_planner"):
        client.add(node_class(name)(config))
    wait_for(lambda: client.node.count_publishers("/scene_graph") > 0)
    # A skill is refused until perception has the robot's state: the first one comes with the simulator's.
    wait_for(lambda: client.call(GetRobotState, "/perception/get_robot_state", GetRobotState.Request()).state.room, 30)
    yield client, events, knocks, module
    client.close()


def test_added_commands_run_on_the_ros_stack_in_the_simulator_or_on_the_robots_own_node(stack):
    import importlib

    from planner.action import ExecuteSkill

    client, events, knocks, module = stack
    pressed = client.action(ExecuteSkill, "/skill_planner/execute_skill",
                            ExecuteSkill.Goal(skill="PRESS_BUTTON(table_1)", task_id="press"))
    assert pressed.success, pressed.failure.reason
    assert importlib.import_module(module).PRESSED[-1][1] == "table_1"
    wait_for(lambda: any(e.task_id == "press" and e.command == "press_button" and e.state == "succeeded" for e in events))
    knocked = client.action(ExecuteSkill, "/skill_planner/execute_skill",
                            ExecuteSkill.Goal(skill="KNOCK(table_2)", task_id="knock"))
    assert knocked.success, knocked.failure.reason
    assert knocks == ["table_2"]
    wait_for(lambda: [(e.command, e.state) for e in events if e.task_id == "knock"][-1] == ("knock", "succeeded"))
