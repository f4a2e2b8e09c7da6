"""In-process stand-ins for the ROS side, for fast tests of the planner core: a simulated world,
the scene graph fed by its camera, and skills checked and run with the real core code."""

from __future__ import annotations

from planner.backends.simulation import SimulatedWorld, load_scenario
from planner.core.controller import ExecutionEventInfo, describe_failure
from planner.core.observations import entity_text, found_text, robot_text, room_contents_text, rooms_text
from planner.core.react import FailureInfo, Observation, SkillResult, SuggestionInfo
from planner.core.scene_graph import RobotSnapshot, SceneGraph
from planner.core.skills import SkillSyntaxError


class InProcessRobot:
    def __init__(self, scenario_path, skill_planner):
        loaded = load_scenario(scenario_path)
        self.sim = SimulatedWorld(loaded.world, list(loaded.scenario.events))
        self.graph = SceneGraph.from_world(loaded.world)
        self.skills = skill_planner
        self.executed: list[str] = []
        self.explained: list[FailureInfo] = []
        self.clock = 0.0
        self._sync()

    def _sync(self) -> None:
        self.clock += 1.0
        self.graph.set_robot(RobotSnapshot(self.sim.robot, self.sim.robot_room, list(self.sim.held), dict(self.sim.held)))
        self.graph.fuse(self.sim.camera_frame(self.clock))

    def scene(self) -> SceneGraph:
        return self.graph

    def perceive(self, name, args) -> Observation:
        graph = self.graph
        if name == "get_rooms":
            return Observation(rooms_text(graph.rooms()))
        if name == "get_robot_state":
            return Observation(robot_text(graph.robot), [graph.robot.room])
        if name == "get_objects_in_room":
            items = [*graph.furniture(args[0]), *graph.objects(args[0])]
            relations = [r for e in graph.objects(args[0]) for r in graph.relations(e.id)]
            return Observation(room_contents_text(args[0], items, relations), [e.id for e in items])
        if name == "get_object":
            return Observation(entity_text(graph.entity(args[0]), graph.relations(args[0])), [args[0]])
        found = graph.find(args[0])
        return Observation(found_text(args[0], found), [e.id for e in found])

    def _failure(self, text, command, index, total, state, code, detail, object_id=""):
        event = ExecutionEventInfo("exec", "task", text, command, index, total, state, code, detail)
        failure = describe_failure(event, self.graph, object_id)
        return SkillResult(False, failure.reason, failure)

    def execute_skill(self, text) -> SkillResult:
        self.executed.append(text)
        try:
            call = self.skills.parse(text, self.graph)
        except SkillSyntaxError as error:
            return self._failure(text, "preconditions", 0, 0, "refused", "INVALID_SKILL", str(error))
        check = self.skills.check_preconditions(call, self.graph)
        if not check.ok:
            return self._failure(text, "preconditions", 0, 0, "refused", check.code, check.reason, call.args[0])
        commands = self.skills.decompose(call, self.graph)
        for index, command in enumerate(commands):
            if command.name == "navigate":
                route = self.sim.plan_route(command.base_pose)
                if not hasattr(route, "waypoints"):
                    return self._failure(text, "navigate", index, len(commands), "failed", route.code, route.detail)
                self.sim.arrive(command.base_pose)
            else:
                self.sim.start_command(command.name, command.object_id)
                self._sync()
                outcome = self.sim.manipulate(command.name, command.arm, command.object_id, command.target_id, command.point)
                if not outcome.success:
                    self._sync()
                    return self._failure(text, command.name, index, len(commands), "failed", outcome.code, outcome.detail,
                                         command.object_id)
            self._sync()
        return SkillResult(True, f"{call} succeeded")

    def explain(self, failure) -> SuggestionInfo:
        self.explained.append(failure)
        return SuggestionInfo("Re-check the map and go where the object is now.", ["case-1"], [0.9])
