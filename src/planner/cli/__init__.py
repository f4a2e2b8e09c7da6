"""`planner` command line: one module per command group (stack, model, llm, maps, bench, cases, security, pddl, plans)."""

from __future__ import annotations

import argparse
import faulthandler
import sys

from planner.cli import bench, cases, llm, maps, model, pddl, plans, security, stack
from planner.core.errors import InputError, ServerUnreachable


class ShowVersion(argparse.Action):
    """`--version`: the package's version and the commit it runs from, looked up only when asked."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the version and the source commit, then exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        from planner.bench.common import source_revision

        try:
            release = version("planner")
        except PackageNotFoundError:
            release = "not installed"
        commit = source_revision()
        print(f"planner {release}" + (f" (source {commit})" if commit else ""))
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """Every command and its arguments."""
    parser = argparse.ArgumentParser(prog="planner", description="LLM task planning for service robots on ROS 2")
    parser.add_argument("--version", action=ShowVersion)
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (stack, model, llm, maps, bench, cases, security, pddl, plans):
        group.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # A crash inside a native library (rclpy, llama.cpp) then says in which Python call each
    # thread was, instead of ending with a bare exit code. Written to the process's own stderr, which
    # a caller that captures sys.stderr (a test) leaves in place.
    faulthandler.enable(file=sys.__stderr__)
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ServerUnreachable as error:
        print(f"error: the run stopped: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
