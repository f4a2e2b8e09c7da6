"""`planner` command line: one module per command group (stack, model, llm, maps, bench, cases, security, pddl, plans)."""

from __future__ import annotations

import argparse
import faulthandler
import sys

from planner.cli import bench, cases, llm, maps, model, pddl, plans, security, stack
from planner.core.errors import InputError


def main(argv: list[str] | None = None) -> int:
    # A crash inside a native library (rclpy, llama.cpp) then says in which Python call each
    # thread was, instead of ending with a bare exit code. Written to the process's own stderr, which
    # a caller that captures sys.stderr (a test) leaves in place.
    faulthandler.enable(file=sys.__stderr__)
    parser = argparse.ArgumentParser(prog="planner", description="LLM task planning for service robots on ROS 2")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (stack, model, llm, maps, bench, cases, security, pddl, plans):
        group.add_commands(sub)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
