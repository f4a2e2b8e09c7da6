"""`planner cases ...`: look after the explainer's failure-case memory."""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path

import yaml

from planner.core.case_store import StoredCase


def _open_store(args):
    from planner.config import load_config
    from planner.wiring import open_case_store

    store, problems = open_case_store(load_config(args.config), args.database)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return store


def _add_to_memory(args, cases: list[StoredCase], replace: bool) -> int:
    """Cases are embedded as they go in, so the explainer finds their vectors cached."""
    from planner.config import load_config
    from planner.wiring import open_case_memory

    memory, problems = open_case_memory(load_config(args.config), database=args.database,
                                        progress=lambda line: print(line, file=sys.stderr))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return memory.add(cases, replace)


def _record(case: StoredCase) -> str:
    uses = f"{case.successes} helped, {case.failures} failed" + (", demoted" if case.demoted else "")
    return f"{case.id:<32} {case.source:<8} {case.skill:<11} {case.code:<24} {uses}"


def cases_list(args) -> int:
    store = _open_store(args)
    shown = [c for c in store.cases() if (not args.source or c.source == args.source)
             and (not args.skill or c.skill == args.skill.upper()) and (not args.demoted or c.demoted)]
    for case in shown:
        print(_record(case))
        print(textwrap.indent(textwrap.shorten(case.suggestion, 110), " " * 4))
    print(f"{len(shown)} of {store.count()} cases in {store.path or 'memory'}", file=sys.stderr)
    return 0


def cases_show(args) -> int:
    store = _open_store(args)
    case = store.get(args.id)
    if case is None:
        print(f"error: no case {args.id!r} in {store.path}", file=sys.stderr)
        return 2
    print(yaml.safe_dump(_as_dict(case), sort_keys=False, allow_unicode=True, width=100))
    return 0


def _as_dict(case: StoredCase) -> dict:
    return {"id": case.id, "skill": case.skill, "code": case.code, "request": case.request, "reason": case.reason,
            "suggestion": case.suggestion, "source": case.source, "context": case.context,
            "successes": case.successes, "failures": case.failures, "demoted": case.demoted, "robot": case.robot}


def cases_add(args) -> int:
    from pydantic import ValidationError

    from planner.core.errors import InputError
    from planner.core.explainer import FailureCase
    from planner.core.files import describe_validation_error

    try:
        case = FailureCase(id=args.id or f"human-{uuid.uuid4().hex[:8]}", skill=args.skill.upper(),
                           code=args.code.upper(), request=args.request, reason=args.reason, suggestion=args.suggestion,
                           source="human")
    except ValidationError as error:
        raise InputError(describe_validation_error("planner cases add", error)) from None
    if not _add_to_memory(args, [case.stored()], replace=False):
        print(f"error: a case {case.id!r} exists already", file=sys.stderr)
        return 2
    print(f"added {case.id}")
    return 0


def cases_import(args) -> int:
    from planner.core.explainer import load_cases

    cases = load_cases(args.file, source=args.source)
    added = _add_to_memory(args, [c.stored() for c in cases], replace=args.replace)
    print(f"{'imported' if args.replace else 'added'} {added} of {len(cases)} cases from {args.file}"
          + ("" if args.replace or added == len(cases) else " (ids already present were kept; --replace overwrites)"))
    return 0


def cases_export(args) -> int:
    store = _open_store(args)
    keys = ("id", "skill", "code", "request", "reason", "suggestion", "context", "source")
    cases = [{k: v for k, v in _as_dict(c).items() if k in keys} for c in store.cases()
             if not args.source or c.source == args.source]
    path = Path(args.file)
    text = json.dumps(cases, indent=1) if path.suffix == ".json" else yaml.safe_dump(cases, sort_keys=False,
                                                                                     allow_unicode=True, width=100)
    path.write_text(text)
    print(f"exported {len(cases)} cases to {path}")
    return 0


def cases_prune(args) -> int:
    """Demoted cases go; seed cases stay (they would come back from the seed file) but stay demoted."""
    store = _open_store(args)
    doomed = [c for c in store.cases() if c.demoted and c.source != "seed"]
    for case in doomed:
        print(("would remove " if args.dry_run else "removing ") + _record(case))
    if not args.dry_run:
        store.remove([c.id for c in doomed])
    print(f"{len(doomed)} demoted cases {'to prune' if args.dry_run else 'pruned'}; {store.count()} left")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("cases", help="the explainer's failure-case memory")
    cases_sub = p.add_subparsers(dest="cases_command", required=True)

    def command(name: str, run, help: str):
        parser = cases_sub.add_parser(name, help=help)
        parser.add_argument("--config", help="stack config (default: the installed config/planner.yaml)")
        parser.add_argument("--database", help="a case database (default: explainer.database of the config)")
        parser.set_defaults(run=run)
        return parser

    listing = command("list", cases_list, "the cases, a line each with how often they helped")
    listing.add_argument("--source", choices=["seed", "learned", "human"], help="only cases of this origin")
    listing.add_argument("--skill", help="only cases of this skill (e.g. PICK)")
    listing.add_argument("--demoted", action="store_true", help="only demoted cases")
    command("show", cases_show, "one case, whole").add_argument("id", help="the case id (see planner cases list)")
    add = command("add", cases_add, "add a case written by a person")
    for name, meaning in (("skill", "the skill that failed, e.g. PICK"), ("code", "its failure code, e.g. OBJECT_NOT_FOUND"),
                          ("request", "the request it failed in"), ("reason", "why it failed, in words"),
                          ("suggestion", "what to do next time")):
        add.add_argument(f"--{name}", required=True, help=meaning)
    add.add_argument("--id", help="default: human-<random>")
    imported = command("import", cases_import, "add the cases of a YAML or JSON list (as `export` writes)")
    imported.add_argument("file", help="a YAML file of cases, as planner cases export writes")
    imported.add_argument("--source", choices=["seed", "learned", "human"], help="instead of what the file says")
    imported.add_argument("--replace", action="store_true", help="overwrite cases with the same id")
    exported = command("export", cases_export, "write the cases to a YAML (or .json) file")
    exported.add_argument("file", help="the YAML file to write")
    exported.add_argument("--source", choices=["seed", "learned", "human"], help="only cases of this origin")
    command("prune", cases_prune, "remove demoted learned and human cases").add_argument(
        "--dry-run", action="store_true", help="only list what would go")
