"""`planner pddl`: the PDDL domain the skill library makes, the problem the stack would solve in a
world, and the plan a classical planner finds for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import TypeAdapter, ValidationError


def _skill_planner(args, config):
    from planner.core.skills import SkillPlanner, load_skill_library
    from planner.wiring import load_robot, load_skill_planner

    if args.skills:
        return SkillPlanner(load_skill_library(args.skills), load_robot(config))
    return load_skill_planner(config)


def _write(text: str, out: str | None) -> None:
    if out:
        Path(out).write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text, end="")


def pddl_domain(args) -> int:
    from planner.config import load_config
    from planner.core.planning.pddl import DomainError, make_domain

    try:
        domain = make_domain(_skill_planner(args, load_config(args.config)).library)
    except DomainError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    _write(domain.text, args.out)
    return 0


def _robot(args, config, skills):
    """The world simulated; its scene graph is what the stack perceives at the start."""
    from planner.core.world import load_world
    from planner.sim.in_process import SimulatedRobot
    from planner.sim.simulated_world import load_scenario

    world = load_world(args.world) if args.world else load_scenario(config.path(config.scenario)).world
    return SimulatedRobot(world.with_robot_at(args.robot_at, skills.robot.standoff_m), [], skills)


def _goals(text: str):
    from planner.core.errors import InputError
    from planner.core.goals import Goal

    try:
        return TypeAdapter(list[Goal]).validate_json(text)
    except ValidationError as error:
        raise InputError(f"--goals: {error}") from None


def _read_goals(args, config, skills, robot):
    """The goals the configured LLM reads the request into, as the task planner does first."""
    from planner.adapters.language import SpacyParser
    from planner.core.planning.task_planner import TaskPlanner
    from planner.wiring import make_grounder, open_llm, open_part_llm, planner_settings

    policy, server = open_llm(config)
    try:
        goal_policy, server = open_part_llm(config, "goal_step", policy, server)
        planner = TaskPlanner(policy, robot, skills, planner_settings(config)[0], grounder=make_grounder(config),
                              goal_policy=goal_policy, parser=SpacyParser())
        return planner.read_goals(args.request)
    finally:
        if server is not None:
            server.stop()


def _setting(args):
    from planner.config import load_config
    from planner.core.planning.pddl import make_domain

    config = load_config(args.config)
    skills = _skill_planner(args, config)
    robot = _robot(args, config, skills)
    goals = _goals(args.goals) if args.goals else _read_goals(args, config, skills, robot)
    print(f"goals: {'; '.join(str(g) for g in goals)}", file=sys.stderr)
    return make_domain(skills.library), skills, robot.graph, goals


def _with_goals(args, use) -> int:
    """Run `use` on the domain, skills, scene and goals; a request the model cannot turn into goals
    is said, with the reason, as the robot would say it."""
    from planner.core.errors import PolicyError, RequestImpossible

    try:
        setting = _setting(args)
    except RequestImpossible as why:
        print(f"the request cannot be done: {why}", file=sys.stderr)
        return 1
    except PolicyError as error:
        print(f"error: the model gave no goals: {error}", file=sys.stderr)
        return 2
    return use(*setting)


def pddl_problem(args) -> int:
    return _with_goals(args, lambda *setting: _print_problem(args, *setting))


def _print_problem(args, domain, skills, scene, goals) -> int:
    from planner.core.planning.pddl import Unmeetable, make_problem

    try:
        problem = make_problem(domain, skills, scene, goals, relevant_only=not args.full)
    except Unmeetable as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    _write(problem.text, args.out)
    return 0


def pddl_plan(args) -> int:
    return _with_goals(args, lambda *setting: _print_plan(args, *setting))


def _print_plan(args, domain, skills, scene, goals) -> int:
    from planner.core.planning.classical import plan_goals

    outcome = plan_goals(domain, skills, scene, goals, "satisficing" if args.satisficing else "optimal", args.timeout)
    if args.json:
        print(json.dumps({"status": outcome.status, "calls": outcome.calls, "reason": outcome.reason,
                          "seconds": round(outcome.seconds, 3), "engine": outcome.engine,
                          "full_state": outcome.full_state}))
    else:
        for number, call in enumerate(outcome.calls, 1):
            print(f"{number}. {call}")
        print(f"{outcome.status} ({outcome.engine}, {outcome.seconds:.2f} s){': ' + outcome.reason if outcome.reason else ''}")
    return 0 if outcome.found else 1


def add_commands(sub) -> None:
    p = sub.add_parser("pddl", help="the PDDL domain of the skill library, problems and plans (LLM+P)")
    pddl_sub = p.add_subparsers(dest="pddl_command", required=True)

    def common(parser, world: bool) -> None:
        parser.add_argument("--config", help="stack config (robot profile, skill library, scenario)")
        parser.add_argument("--skills", help="a skill library instead of the config's")
        parser.add_argument("--out", help="write here instead of to standard output")
        if world:
            parser.add_argument("--world", help="a world file instead of the config's scenario")
            parser.add_argument("--robot-at", default="", help="furniture or room the robot starts at")
            given = parser.add_mutually_exclusive_group(required=True)
            given.add_argument("--request", help="a request, read into goals by the configured LLM")
            given.add_argument("--goals", help='goals as the goal step writes them, JSON: '
                                               '[{"kind": "object_on", "object": "cup", "target": "table"}]')
    domain = pddl_sub.add_parser("domain", help="print the domain made from the skill library")
    common(domain, world=False)
    domain.set_defaults(run=pddl_domain)
    problem = pddl_sub.add_parser("problem", help="print the problem: the world's scene graph and the goals")
    common(problem, world=True)
    problem.add_argument("--full", action="store_true", help="the whole map, not only the part the goals need")
    problem.set_defaults(run=pddl_problem)
    plan = pddl_sub.add_parser("plan", help="plan with Fast Downward and print the skill calls")
    common(plan, world=True)
    plan.add_argument("--satisficing", action="store_true", help="the first plan found, not the shortest (for "
                                                                     "maps too large to plan optimally)")
    plan.add_argument("--timeout", type=float, default=10.0, help="seconds the planner may search")
    plan.add_argument("--json", action="store_true", help="one JSON line: status, calls, reason, seconds")
    plan.set_defaults(run=pddl_plan)
