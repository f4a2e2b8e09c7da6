"""`planner demo`, `planner bringup`, `planner send` and `planner tell`: the stack started, requests sent
to it, and changes in the home told to it."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import get_args

from planner.adapters.processes import DIE_WITH_PARENT
from planner.config import StackConfig, load_config
from planner.core.files import printable
from planner.core.planning.settings import PlanningMode
from planner.ros.node import CONFIGURATION_REJECTED
from planner.ros.stack import LAUNCH_ARGUMENTS, NODES, NodeLaunch, stack_nodes

KIND_WIDTH = 12
GOAL_ANSWER_S = 10.0  # a planner seen in discovery that never answers is a stale, stopped one


def format_step(kind: str, text: str) -> str:
    return f"[{kind}]".ljust(KIND_WIDTH) + " " + printable(text)


def node_command(node: NodeLaunch, log_level: str) -> list[str]:
    """The command line that runs one node of the stack as a launch would start it."""
    command = [sys.executable, "-m", "planner.ros.stack", node.name, "--ros-args",
               *replace(node, log_level=log_level).ros_arguments()]
    for name, value in node.parameters.items():
        command += ["-p", f"{name}:={str(value).lower() if isinstance(value, bool) else value}"]
    if node.params_file:
        command += ["--params-file", node.params_file]
    if node.namespace:
        command += ["-r", f"__ns:=/{node.namespace}"]
    return command


RESTART_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)   # waits before restarting a node that died, in turn
STABLE_S = 60.0   # a node that ran this long since its last start is back to the shortest wait
START_ATTEMPTS = 3   # a node that died this many times in a row, never running stably, cannot start
SUPERVISE_PERIOD_S = 0.5   # how often bringup looks for nodes that died


class Stack:
    """The stack's nodes as separate processes, stopped together: what bringup.launch.py starts for
    the same launch arguments (planner.ros.stack.LAUNCH_ARGUMENTS), less the nodes not in `only`."""

    def __init__(self, arguments: dict[str, str], only: tuple[str, ...] = NODES, quiet: bool = False,
                 env: dict | None = None):
        self.nodes = {node.name: node for node in stack_nodes(arguments) if node.name in only}
        self.quiet = quiet
        self.env = env or os.environ.copy()
        self.processes: dict[str, subprocess.Popen] = {}
        self.started: dict[str, float] = {}
        self.deaths: dict[str, int] = {}      # deaths in a row, each without a stable run before it
        self.restart_at: dict[str, float] = {}

    def start(self) -> None:
        for name in self.nodes:
            self._launch(name)

    def _launch(self, name: str) -> None:
        node = self.nodes[name]
        command = node_command(node, "warn" if self.quiet else node.log_level)
        process = subprocess.Popen(command, env={**self.env, **node.env}, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, bufsize=1,
                                   start_new_session=True, preexec_fn=DIE_WITH_PARENT)
        self.processes[name], self.started[name] = process, time.monotonic()
        threading.Thread(target=self._relay, args=(name, process), daemon=True).start()

    def _relay(self, name: str, process: subprocess.Popen) -> None:
        for line in process.stdout:
            if not self.quiet or "ERROR" in line or "Traceback" in line:
                sys.stderr.write(f"{name:>13} | {line}")

    def cannot_start(self) -> list[str]:
        """Restart the nodes that died (see supervise) and name those that died START_ATTEMPTS times
        in a row: a node that crashes once while starting (a CI run saw a segfault in the DDS library
        on a loaded machine) gets another go, one that cannot start is not waited for."""
        self.supervise()
        return [f"{name} (exit {process.returncode}, configuration rejected)" if process.returncode == CONFIGURATION_REJECTED
                else f"{name} (exit {process.returncode}, {self.deaths[name]} times in a row)"
                for name, process in self.processes.items()
                if process.poll() is not None and (self.deaths.get(name, 0) >= START_ATTEMPTS
                                                   or process.returncode == CONFIGURATION_REJECTED)]

    def supervise(self) -> None:
        """Restart nodes that died, each after a wait that doubles with every death in a row, so a
        node that cannot start does not spin; the others keep running meanwhile (as respawn does)."""
        now = time.monotonic()
        for name, process in self.processes.items():
            if process.poll() is None or process.returncode == CONFIGURATION_REJECTED:  # starting it again cannot help
                continue
            if name not in self.restart_at:
                stable = now - self.started[name] >= STABLE_S
                self.deaths[name] = 1 if stable else self.deaths.get(name, 0) + 1
                wait = RESTART_BACKOFF_S[min(self.deaths[name], len(RESTART_BACKOFF_S)) - 1]
                self.restart_at[name] = now + wait
                print(format_step("stack", f"{name} exited ({process.returncode}); restarting it in {wait:.0f} s"),
                      file=sys.stderr, flush=True)
            elif now >= self.restart_at[name]:
                del self.restart_at[name]
                self._launch(name)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def cli_node(namespace: str):
    """The command's own node, in the robot's namespace: names without a leading / are the robot's."""
    import rclpy

    return rclpy.create_node(f"planner_cli_{os.getpid()}", namespace=f"/{namespace.strip('/')}")


def spin_in_background(node) -> Callable[[], None]:
    """Spin a command's node on a thread; the function that stops it, to call before the node is
    destroyed (a thread still spinning at exit aborts the process)."""
    from rclpy.executors import MultiThreadedExecutor

    executor = MultiThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()

    def stop() -> None:
        executor.shutdown()
        spinner.join(timeout=5)
    return stop


class Recording:
    """The run recorded to an MCAP file when a path is given (see planner.ros.recording)."""

    def __init__(self, node, path: str | None):
        self.path = path
        self.recorder = None
        if path:
            from planner.ros.recording import McapRecorder

            self.recorder = McapRecorder(node, Path(path))

    def close(self) -> None:
        if self.recorder is not None:
            print(format_step("recorded", f"{self.recorder.close()} messages to {self.path} (open it in Foxglove)"),
                  flush=True)


def send(request: str, timeout_s: float, wait_for_stack_s: float, stack: Stack | None = None,
         answer: str | None = None, mode: str = "", namespace: str = "", record: str | None = None) -> int:
    """Send a request to a running stack, print its trace, return 0 when the task succeeded.
    A question from the planner is answered with `answer`, or asked on the terminal; `mode`
    (react, llm_p, auto) plans this request so, whatever the stack's config says; `namespace` is
    the robot's (its launch's namespace:=); `record` an MCAP file the run is recorded to."""
    import rclpy
    from rclpy.action import ActionClient
    from std_msgs.msg import String

    from planner.action import ExecuteTask
    from planner.msg import PlanStep
    from planner.ros.futures import CallFailed, CallKind, Heartbeat, wait_future
    from planner.ros.qos import RELIABLE
    from planner.srv import Explain, GetSceneGraph

    rclpy.init()
    node = cli_node(namespace)
    printed: set[tuple[str, int]] = set()
    lock = threading.Lock()

    answers = node.create_publisher(String, "planner/answer", RELIABLE)

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

    node.create_subscription(PlanStep, "planner/trace", show, RELIABLE)
    node.create_subscription(String, "sim/events", lambda m: print(format_step("world", m.data), flush=True), RELIABLE)
    node.create_subscription(String, "planner/status",
                             lambda m: print(format_step("status", m.data), flush=True) if "ERROR" in m.data or "WARN" in m.data else None,
                             RELIABLE)
    client = ActionClient(node, ExecuteTask, "planner/execute_task")
    planner_alive = Heartbeat(node, "task_planner")
    # A fresh stack is ready when its slowest nodes answer: the explainer loads an embedding model.
    readiness = [node.create_client(Explain, "/explainer/explain"),
                 node.create_client(GetSceneGraph, "perception/get_scene_graph")] if stack is not None else []
    recording = Recording(node, record)
    stop_spinning = spin_in_background(node)
    try:
        deadline = time.monotonic() + wait_for_stack_s
        while not (client.wait_for_server(timeout_sec=1.0) and all(c.service_is_ready() for c in readiness)):
            if stack is not None and (failed := stack.cannot_start()):
                print(f"the stack failed to start: {', '.join(failed)}", file=sys.stderr)
                return 1
            if time.monotonic() > deadline:
                print(f"no planner answers on {node.resolve_topic_name('planner/execute_task')} "
                      f"after {wait_for_stack_s:.0f} s "
                      f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}); is the stack running?", file=sys.stderr)
                return 1
        time.sleep(1.0)  # let the trace subscription match before the first step
        try:
            handle = wait_future(client.send_goal_async(ExecuteTask.Goal(request=request, mode=mode),
                                                        feedback_callback=lambda fb: show(fb.feedback.step)),
                                 GOAL_ANSWER_S, "the request")
        except CallFailed:
            print(f"the planner did not answer the request within {GOAL_ANSWER_S:.0f} s", file=sys.stderr)
            return 1
        if not handle.accepted:
            print("the planner rejected the request: it is empty or too long, the queue of tasks is full or the emergency stop "
                  "is engaged (/planner/status says which)", file=sys.stderr)
            return 1
        try:
            # A task planner that dies mid-task never answers: its server leaving the graph ends the wait.
            result = wait_future(handle.get_result_async(), timeout_s, "the task", give_up=False,
                                 server_alive=planner_alive.watch(client.server_is_ready)).result
        except CallFailed as error:
            if error.kind == CallKind.TIMEOUT:
                handle.cancel_goal_async()
                print(f"no result after {timeout_s:.0f} s; canceled", file=sys.stderr)
            else:
                print(f"the task planner went away while the task ran, so its outcome is unknown ({error})",
                      file=sys.stderr)
            return 1
        time.sleep(0.3)  # trailing trace messages
        print(format_step("done", f"{result.outcome} after {result.steps} steps: {result.summary}"), flush=True)
        return 0 if result.success else 1
    except KeyboardInterrupt:
        return 130
    finally:
        stop_spinning()
        recording.close()
        client.destroy()
        node.destroy_node()
        rclpy.shutdown()


def _call_once(service_type, name: str, request, server: str, what: str, wait_s: float, timeout_s: float,
               namespace: str = ""):
    """One call of a running stack's service (a name without a leading / is in the robot's
    `namespace`); its response, or None after saying why there is none."""
    import rclpy

    from planner.ros.futures import CallFailed, wait_future

    rclpy.init()
    node = cli_node(namespace)
    client = node.create_client(service_type, name)
    name = node.resolve_service_name(name)
    stop_spinning = spin_in_background(node)
    try:
        if not client.wait_for_service(timeout_sec=wait_s):
            print(f"no {server} answers on {name} after {wait_s:.0f} s "
                  f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}); is the stack running?", file=sys.stderr)
            return None
        try:
            return wait_future(client.call_async(request), timeout_s, what)
        except CallFailed as error:
            print(f"no answer: {error}", file=sys.stderr)
            return None
    finally:
        stop_spinning()
        node.destroy_node()
        rclpy.shutdown()


def tell(sentence: str, wait_s: float, timeout_s: float, namespace: str = "") -> int:
    """Tell a running stack what changed in the home; print what changed in its map, or why
    nothing did. 0 when the change was applied."""
    from planner.srv import Tell

    answer = _call_once(Tell, "memory/tell", Tell.Request(sentence=sentence), "perception", "the told change",
                        wait_s, timeout_s, namespace)
    if answer is None:
        return 1
    for triplet in answer.removed:
        print(format_step("removed", triplet))
    for triplet in answer.added:
        print(format_step("added", triplet))
    for change in answer.changed:
        print(format_step("map", change))
    for error in answer.errors:
        print(format_step("error", error), file=sys.stderr)
    print(format_step("result", f"{'applied' if answer.applied else 'not applied'} ({answer.llm_calls} LLM calls)"))
    return 0 if answer.applied else 1


def ask(question: str, wait_s: float, timeout_s: float) -> int:
    """Ask the fleet about the home (is a thing in a room? where is it?); print each robot's answer
    with its evidence, then the fleet's. 0 when answered."""
    from planner.srv import AskFleet

    answer = _call_once(AskFleet, "/fleet/ask", AskFleet.Request(question=question), "fleet node", "the answer",
                        wait_s, timeout_s)
    if answer is None:
        return 1
    for vote in answer.votes:
        said = f"{'yes' if vote.yes else 'no'} (p {vote.p_yes:.2f}; {vote.evidence})" \
            if answer.aggregator != "sightings" else vote.evidence
        print(format_step("robot", f"{vote.robot or 'robot'}: {said}"))
    if not answer.answered:
        print(format_step("error", answer.message), file=sys.stderr)
        return 1
    print(format_step("result", f"{answer.message} ({answer.aggregator})"))
    return 0


def packages_missing_for(config: StackConfig, command: str, llm_base_url: str = "") -> bool:
    """Whether the stack of this config (its LLM server given on the command line, if it is) lacks
    Python packages, said on stderr: better once here than as an import error in each node."""
    from planner.wiring import install_hint, missing_packages

    if llm_base_url:
        config.llm = config.llm.model_copy(update={"base_url": llm_base_url})
    missing = missing_packages(config)
    if missing:
        print(f"planner {command}: {install_hint(missing)}", file=sys.stderr)
    return bool(missing)


def demo(args) -> int:
    from planner.sim.simulated_world import load_scenario

    config = load_config(args.config)
    if packages_missing_for(config, "demo"):
        return 2
    request = args.request or load_scenario(config.path(config.scenario)).scenario.request
    if not request:
        print("no request given and the scenario names none", file=sys.stderr)
        return 2
    env = os.environ.copy()
    # A private DDS domain, so the demo neither joins nor disturbs another running stack.
    env.setdefault("ROS_DOMAIN_ID", str(random.randint(20, 99)))
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    stack = Stack({"config": args.config or ""}, quiet=not args.verbose, env=env)
    print(format_step("stack", f"starting {len(stack.nodes)} nodes on ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']} ..."), flush=True)
    print(format_step("llm", config.llm.chosen()), flush=True)
    stack.start()
    try:
        return send(request, args.timeout, args.startup_timeout, stack, mode=args.mode or "", record=args.record)
    finally:
        stack.stop()


def add_namespace_argument(parser) -> None:
    parser.add_argument("--namespace", default="", help="the robot's namespace, as given to its launch (namespace:=); "
                                                        "default: none")


def add_record_argument(parser) -> None:
    parser.add_argument("--record", metavar="FILE.mcap", help="record the run (the plan's trace, the scene graph and "
                                                              "its markers, the robot state) to an MCAP file Foxglove opens")


def add_mode_argument(parser) -> None:
    parser.add_argument("--mode", choices=get_args(PlanningMode),
                        help="how this request is planned (default: the config's planner.mode)")


def add_launch_arguments(parser, leave_out: tuple[str, ...] = ()) -> None:
    """The launch arguments as options (--params-file for params_file, ...), for commands that start the stack."""
    for name, default, description in LAUNCH_ARGUMENTS:
        if name not in leave_out:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar=name.upper(),
                                help=f"{description} (default: {default})" if default else description)


def launch_arguments(args) -> dict[str, str]:
    """The launch arguments given on the command line (see add_launch_arguments)."""
    return {name: getattr(args, name) for name, _, _ in LAUNCH_ARGUMENTS if getattr(args, name, None) is not None}


def bringup(args) -> int:
    try:
        stack = Stack(launch_arguments(args), tuple(args.nodes or NODES))
    except ValueError as error:
        print(f"planner bringup: {error}", file=sys.stderr)
        return 2
    if packages_missing_for(load_config(getattr(args, "config", None)), "bringup",
                            getattr(args, "llm_base_url", None) or ""):
        return 2
    # Both set here, not left to Python's default: a process started in the background by a
    # non-interactive shell (nohup, a CI script's `&`) inherits SIGINT ignored, and would not stop.
    # The handler only appends: it runs in the main thread between any two bytecodes, and taking a
    # lock there (threading.Event.set) deadlocks when the main thread holds that lock already.
    stop_signals: list[int] = []
    for stopping in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stopping, lambda signum, _: stop_signals.append(signum))
    stack.start()
    try:
        while not stop_signals:
            stack.supervise()
            time.sleep(SUPERVISE_PERIOD_S)
    finally:
        stack.stop()
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("demo", help="run the whole stack in the simulator and carry out a request")
    p.add_argument("request", nargs="?", help="default: the request the configured scenario is written for")
    p.add_argument("--config", help="stack config (default: the installed config/planner.yaml)")
    p.add_argument("--timeout", type=float, default=900, help="seconds the task may take")
    p.add_argument("--startup-timeout", type=float, default=240, help="seconds the stack may take to start")
    p.add_argument("--verbose", action="store_true", help="show the nodes' logs")
    add_mode_argument(p)
    add_record_argument(p)
    p.set_defaults(run=demo)

    p = sub.add_parser("bringup", help="start the nodes as separate processes, as ros2 launch planner "
                                         "bringup.launch.py does; the options are its launch arguments")
    add_launch_arguments(p)
    p.add_argument("--nodes", nargs="*", choices=NODES, help="only these nodes")
    p.set_defaults(run=bringup)

    p = sub.add_parser("tell", help="tell a running stack what changed in the home (\"I put the milk back in the "
                                    "fridge\"); its map takes it in if the change holds")
    p.add_argument("sentence", help="what changed, in plain words")
    p.add_argument("--wait", type=float, default=30, help="seconds to wait for perception to appear")
    p.add_argument("--timeout", type=float, default=120, help="seconds the LLM may take to read it")
    add_namespace_argument(p)
    p.set_defaults(run=lambda a: tell(a.sentence, a.wait, a.timeout, a.namespace))

    p = sub.add_parser("ask", help="ask the robots about the home (\"Is there a mug in the kitchen?\", \"Where is "
                                   "the mug?\"), answered from what each has seen")
    p.add_argument("question", help="a question about the home, in plain words")
    p.add_argument("--wait", type=float, default=30, help="seconds to wait for the fleet node to appear")
    p.add_argument("--timeout", type=float, default=120, help="seconds the robots' answers may take")
    p.set_defaults(run=lambda a: ask(a.question, a.wait, a.timeout))

    p = sub.add_parser("send", help="send a request to a running stack and stream its trace")
    p.add_argument("request", help="what the robot should do, in plain words")
    p.add_argument("--timeout", type=float, default=900, help="seconds the task may take")
    p.add_argument("--wait", type=float, default=30, help="seconds to wait for the planner to appear")
    p.add_argument("--answer", help="the answer if the planner asks which object is meant (default: asked here)")
    add_mode_argument(p)
    add_namespace_argument(p)
    add_record_argument(p)
    p.set_defaults(run=lambda a: send(a.request, a.timeout, a.wait, answer=a.answer, mode=a.mode or "",
                                      namespace=a.namespace, record=a.record))
