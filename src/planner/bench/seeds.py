"""Which generated homes are development data and which are test data, and the ledger of the test.

Development data: any seed below 1000, and 1000–1019 (once the test range; run and read so often
that it became development data). Anything may be tuned on them. Test data: blocks of 20 seeds
from 2000 on, each drawn once, in order, by `planner bench test`, which generates the block where
nobody reads it, runs it, keeps aggregates only and records the block, the commit and the figures
in the ledger (bench/TEST-SEEDS.md). A drawn block is spent even if its run fails, so no block is
ever run twice; `planner bench generate` refuses test seeds."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DEVELOPMENT_BELOW = 1020          # seeds 0–1019
TEST_FROM, TEST_BLOCK = 2000, 20
LEDGER = Path("bench") / "TEST-SEEDS.md"
RUNNING = "running"               # the figure of a block drawn and not (yet) reported

LEDGER_HEADER = """# Test seeds

Each row is a block of test seeds drawn once by `planner bench test`, run on one commit, with its
aggregate figures. Seeds below 1020 are development data; blocks of 20 from 2000 on are test data,
each used once, in order. The tool writes this file: a row says "running" while its block runs, and
keeps it if the run did not finish (that block is spent all the same).

| block | drawn (UTC) | commit | benchmark | command | figures |
|---|---|---|---|---|---|
"""
ROW = re.compile(r"^\| (\d+)–(\d+) \| ([^|]*) \| ([^|]*) \| ([^|]*) \| ([^|]*) \| ([^|]*) \|$")


def kind_of(seed: int) -> str:
    """"test" or "development", for the headers of what is generated from the seed."""
    return "test" if seed >= TEST_FROM else "development"


def parse_seeds(text: str) -> list[int]:
    """"300-309" or "3" or "1,5,9" -> seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        try:
            seeds += list(range(int(first), int(last or first) + 1))
        except ValueError:
            raise ValueError(f"seeds: {part!r} is not a seed or a range like 300-309") from None
    if not seeds:
        raise ValueError("seeds: none given")
    return seeds


def development_seeds(text: str) -> list[int]:
    """The seeds of `text`; ValueError naming those that are not development data."""
    seeds = parse_seeds(text)
    test = [seed for seed in seeds if seed >= TEST_FROM]
    if test:
        raise ValueError(f"seeds: {test[0]} is a test seed (from {TEST_FROM} on); a test block is drawn and run "
                         f"only by planner bench test, which keeps its homes out of sight")
    unused = [seed for seed in seeds if not 0 <= seed < DEVELOPMENT_BELOW]
    if unused:
        raise ValueError(f"seeds: {unused[0]} is neither development data (0–{DEVELOPMENT_BELOW - 1}) nor a test "
                         f"seed (blocks of {TEST_BLOCK} from {TEST_FROM})")
    return seeds


@dataclass(frozen=True)
class Block:
    first: int

    @property
    def seeds(self) -> list[int]:
        return list(range(self.first, self.first + TEST_BLOCK))

    def __str__(self) -> str:
        return f"{self.first}–{self.first + TEST_BLOCK - 1}"


class Ledger:
    """bench/TEST-SEEDS.md: the blocks drawn so far, one row each."""

    def __init__(self, path: Path):
        self.path = path

    def rows(self) -> list[dict[str, str]]:
        if not self.path.exists():
            return []
        rows = []
        for number, line in enumerate(self.path.read_text().splitlines(), 1):
            if line.startswith("| ") and line[2].isdigit():
                match = ROW.match(line)
                if match is None:
                    raise ValueError(f"{self.path}:{number}: not a ledger row: {line!r}")
                first, last, drawn, commit, benchmark, command, figures = match.groups()
                if int(first) < TEST_FROM or (int(first) - TEST_FROM) % TEST_BLOCK or int(last) != int(first) + TEST_BLOCK - 1:
                    raise ValueError(f"{self.path}:{number}: {first}–{last} is not a test block")
                rows.append({"first": first, "drawn": drawn, "commit": commit, "benchmark": benchmark,
                             "command": command, "figures": figures})
        return rows

    def next_block(self) -> Block:
        """The lowest block never drawn."""
        used = {int(row["first"]) for row in self.rows()}
        first = TEST_FROM
        while first in used:
            first += TEST_BLOCK
        return Block(first)

    def draw(self, commit: str, benchmark: str, command: str) -> Block:
        """The next block, spent from now on: its row is written before anything runs."""
        block = self.next_block()
        text = self.path.read_text() if self.path.exists() else LEDGER_HEADER
        drawn = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
        cells = [str(block), drawn, commit, benchmark, f"`{_cell(command)}`", RUNNING]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(text.rstrip("\n") + "\n| " + " | ".join(cells) + " |\n")
        return block

    def report(self, block: Block, figures: str) -> None:
        """The block's figures in its row."""
        lines = self.path.read_text().splitlines()
        for index, line in enumerate(lines):
            if line.startswith(f"| {block} |") and line.endswith(f"| {RUNNING} |"):
                lines[index] = line[: -len(f"{RUNNING} |")] + f"{_cell(figures)} |"
                self.path.write_text("\n".join(lines) + "\n")
                return
        raise ValueError(f"{self.path}: block {block} is not running")


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def clean_commit(repo: Path) -> str:
    """HEAD of the checkout at `repo`; ValueError when it has changes a test would measure with it."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            raise ValueError(f"{repo}: not a git checkout ({error})") from None
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    if changed:
        raise ValueError(f"{repo}: {len(changed)} changed file(s) ({', '.join(changed[:3])}): a test block measures a "
                         f"commit; commit or stash first")
    return git("rev-parse", "--short=7", "HEAD").strip()
