"""No benchmark's requests or queries (committed or generated) reach the model as prompt text, worked examples or seed
memories: what the benchmarks measure would otherwise be what the model was shown."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from conftest import ROBOT
from planner.bench.generate import make_home, make_queries
from planner.bench.generate_tasks import make_home as make_task_home
from planner.bench.generate_tasks import make_tasks
from planner.bench.scan_homes import make_queries as make_scan_queries
from planner.bench.scan_homes import make_scan_home
from planner.bench.scan_tasks import TaskMaker as ScanTaskMaker
from planner.bench.scan_tasks import make_plan
from planner.core import object_finder
from planner.core.planning import goal_reading, prompts, recoveries

REPO = Path(__file__).resolve().parents[1]
MIN_WORDS = 2          # "I'm thirsty" is a whole request
CONTAINED_MIN_WORDS = 3  # one text inside another counts from three words: "not a couch", not "the cup"


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower().replace("’", "'")))


def _clauses(text: str) -> list[str]:
    """A request's parts as a prompt could quote them: "I'm thirsty, can you help me?" gives
    "i'm thirsty" and "can you help me"."""
    parts = re.split(r"[,.;:!?]| and | then ", text.lower())
    return [w for part in parts if len((w := _words(part)).split()) >= MIN_WORDS]


def benchmark_requests() -> list[tuple[str, str]]:
    """Every request and query of the committed suites and object benchmark, and of generated
    homes and task suites of both sources, with where it comes from."""
    requests = [(task["request"], f"{suite.name} {task['id']}")
                for suite in sorted((REPO / "config" / "tasks").glob("*.yaml"))
                for task in yaml.safe_load(suite.read_text())["tasks"]]
    requests += [(query["text"], f"bench/objects {query['id']}")
                 for query in yaml.safe_load((REPO / "bench" / "objects" / "queries.yaml").read_text())["queries"]]
    requests += [(query["text"], f"generated home-{seed} {query['id']}")
                 for seed in (0, 1, 1000, 1001) for query in make_queries(make_home(seed, 25))]
    requests += [(query["text"], f"scan home-{seed} {query['id']}")
                 for seed in (0, 1, 1000, 1001) for query in make_scan_queries(make_scan_home(seed))]
    requests += [(task["request"], f"generated tasks {task['id']}")
                 for seed in (0, 1, 1000, 1001) for task in make_tasks(make_task_home(seed, ROBOT))]
    requests += [(task["request"], f"scan tasks {task['id']}")
                 for seed in (0, 1, 1000, 1001) for task in make_tasks(make_plan(seed, ROBOT), maker_class=ScanTaskMaker)]
    return requests


def benchmark_texts() -> dict[str, str]:
    """The requests and queries as clauses: clause -> where it comes from."""
    texts: dict[str, str] = {}
    for text, source in benchmark_requests():
        for clause in _clauses(text):
            texts.setdefault(clause, source)
    return texts


def prompt_texts() -> dict[str, str]:
    """Every prompt and role the model is given, normalised to words: name -> text."""
    sources = {name: value for module in (prompts, goal_reading, object_finder, recoveries)
               for name, value in vars(module).items()
               if isinstance(value, str) and (name.endswith("_PROMPT") or name.endswith("_ROLE"))}
    sources.update({f"MEMBER_LENSES[{i}]": lens for i, lens in enumerate(object_finder.MEMBER_LENSES)})
    return {name: _words(text) for name, text in sources.items()}


def example_requests() -> dict[str, str]:
    """Requests the model is shown as past or worked cases: the worked examples' (of the ReAct steps
    and of the object finder's kinds), and the explainer's seed cases' (retrieved by similarity to
    the request at hand)."""
    examples = {_words(turn["content"].splitlines()[0].removeprefix("Request: ")): name
                for name, turns in (("EXAMPLE_TURNS", prompts.EXAMPLE_TURNS),
                                    ("KINDS_EXAMPLE_TURNS", object_finder.KINDS_EXAMPLE_TURNS))
                for turn in turns if turn["role"] == "user"}
    for case in yaml.safe_load((REPO / "config" / "failure_cases.yaml").read_text()):
        examples[_words(case["request"])] = f"failure_cases.yaml {case['id']}"
    return examples


def _overlap(example: str, clause: str) -> bool:
    """The same text, or one inside the other from three words on ("not a couch", not "the cup")."""
    shorter, longer = sorted((example, clause), key=len)
    return shorter == longer or (len(shorter.split()) >= CONTAINED_MIN_WORDS
                                 and re.search(rf"\b{re.escape(shorter)}\b", longer) is not None)


def shown_benchmark_text() -> list[str]:
    """Clauses of three words or more, and whole short requests ("I'm thirsty"), found in a prompt;
    example requests that are a benchmark's clause or hold one."""
    texts = benchmark_texts()
    whole = {_words(text) for text, _ in benchmark_requests()}
    found = [f"{name}: {clause!r} ({source})" for name, prompt in prompt_texts().items()
             for clause, source in texts.items()
             if (len(clause.split()) >= CONTAINED_MIN_WORDS or clause in whole)
             and re.search(rf"\b{re.escape(clause)}\b", prompt)]
    found += [f"{where}: {example!r} ~ {clause!r} ({source})" for example, where in example_requests().items()
              for clause, source in texts.items() if _overlap(example, clause)]
    return found


def test_no_suite_request_or_query_appears_in_a_prompt_example_or_seed_case():
    assert len(benchmark_texts()) > 100 and len(prompt_texts()) >= 8  # the suites, queries and prompts were read
    found = shown_benchmark_text()
    assert not found, "benchmark text shown to the model:\n" + "\n".join(found)


def test_the_check_catches_a_suite_request_put_in_a_prompt(monkeypatch):
    monkeypatch.setattr(goal_reading, "GOAL_PROMPT", goal_reading.GOAL_PROMPT + ' e.g. "I\'m thirsty" -> water')
    found = shown_benchmark_text()
    assert len(found) == 1 and found[0].startswith("GOAL_PROMPT: \"i'm thirsty\" (full")
