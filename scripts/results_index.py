#!/usr/bin/env python3
"""Write bench/results/INDEX.md: every committed result (its JSON, report and plot together), the
benchmark and commit that made it, and which guide, doc or calibration file quotes it. With
--prune, delete the results nothing quotes first (git history keeps them).

A result is quoted when a text names it: its file name without extension, or a pattern in a
`bench/results/...` path (`*`, `…` and a placeholder in capitals such as MODEL for any text,
`{a,b}` for either).

Usage: python scripts/results_index.py [--prune] [--check]   (--check: exit 1 if INDEX.md is stale)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
INDEX = RESULTS / "INDEX.md"
QUOTING = ["README.md", "docs/**/*.md", "bench/TEST-SEEDS.md", "config/calibration/*.yaml"]


def quoting_texts() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
            for pattern in QUOTING for path in sorted(ROOT.glob(pattern))}


def _pattern(path_text: str) -> re.Pattern:
    """A regex for the stems a `bench/results/...` path in a text names."""
    stem = re.sub(r"\.(\*|json|md|png|jsonl|\{[^}]*\})$", "", path_text)
    parts = re.split(r"(\*|…|\{[^}]*\}|\b[A-Z]{3,}\b)", stem)

    def regex_of(part: str) -> str:
        if part in ("*", "…") or re.fullmatch(r"[A-Z]{3,}", part):
            return ".*"
        if part.startswith("{"):
            return "(" + "|".join(map(re.escape, part[1:-1].split(","))) + ")"
        return re.escape(part)
    regex = "".join(map(regex_of, parts))
    return re.compile(regex + r"$")


def results_by_stem() -> dict[str, list[Path]]:
    stems: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(RESULTS.iterdir()):
        if path.is_file() and path != INDEX:
            stems[re.sub(r"\.(json|jsonl|md|png|svg|csv|yaml|txt)$", "", path.name)].append(path)
    return dict(stems)


def quoted_by(stems: list[str], texts: dict[str, str]) -> dict[str, list[str]]:
    # A test block's aggregates are what its row of the ledger reports, kept with it.
    quotes: dict[str, list[str]] = {stem: ["bench/TEST-SEEDS.md"] if stem.startswith("test-block-") else []
                                    for stem in stems}
    for name, text in texts.items():
        patterns = [_pattern(found) for found in re.findall(r"bench/results/((?:\{[^}]*\}|[^\s)`\"'\],{])+)", text)]
        for stem in stems:
            if name not in quotes[stem] and (stem in text or any(pattern.match(stem) for pattern in patterns)):
                quotes[stem].append(name)
    return quotes


def with_sources(stems: dict[str, list[Path]], quotes: dict[str, list[str]]) -> dict[str, list[str]]:
    """A result another quoted result was made from (its JSON names it, as a comparison names its
    runs) is quoted by that one."""
    texts = {stem: "".join(path.read_text(encoding="utf-8", errors="replace") for path in paths if path.suffix == ".json")
             for stem, paths in stems.items()}
    changed = True
    while changed:
        changed = False
        for quoting in [stem for stem in stems if quotes[stem]]:
            for stem in stems:
                if not quotes[stem] and stem != quoting and stem in texts[quoting]:
                    quotes[stem] = [f"`{quoting}`"]
                    changed = True
    return quotes


def made_by(paths: list[Path]) -> tuple[str, str]:
    """The benchmark and the commit a result's JSON names, where it has one."""
    data_file = next((path for path in paths if path.suffix == ".json"), None)
    if data_file is None:
        return "", ""
    try:
        data = json.loads(data_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return "", ""
    if not isinstance(data, dict):
        return "", ""
    machine = data.get("machine") if isinstance(data.get("machine"), dict) else {}
    return str(data.get("benchmark", "")), str(data.get("commit") or machine.get("source", ""))


def index_text(stems: dict[str, list[Path]], quotes: dict[str, list[str]]) -> str:
    lines = ["# Committed benchmark results", "",
             "Written by `python scripts/results_index.py`; do not edit. Each row is one run: its files, the",
             "benchmark and commit its JSON names, and the texts that quote it. New runs go to `bench/runs/`",
             "(see the README's *Read results*); a run is committed here when a guide or doc quotes it.", "",
             "| result | files | benchmark | commit | quoted by |", "|---|---|---|---|---|"]
    for stem, paths in stems.items():
        benchmark, commit = made_by(paths)
        files = ", ".join(path.suffix.lstrip(".") or path.name for path in paths)
        lines.append(f"| `{stem}` | {files} | {benchmark} | {commit} | {', '.join(quotes[stem]) or 'nothing'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prune", action="store_true", help="delete the results nothing quotes")
    parser.add_argument("--check", action="store_true", help="exit 1 when INDEX.md is not what this writes")
    args = parser.parse_args()
    stems = results_by_stem()
    quotes = with_sources(stems, quoted_by(list(stems), quoting_texts()))
    if args.prune:
        unquoted = [stem for stem in stems if not quotes[stem]]
        for stem in unquoted:
            for path in stems.pop(stem):
                path.unlink()
        print(f"deleted {len(unquoted)} results nothing quotes", file=sys.stderr)
    text = index_text(stems, quotes)
    if args.check:
        if not INDEX.is_file() or INDEX.read_text(encoding="utf-8") != text:
            print(f"{INDEX.relative_to(ROOT)} is stale: run python scripts/results_index.py", file=sys.stderr)
            return 1
        return 0
    INDEX.write_text(text, encoding="utf-8")
    print(f"{INDEX.relative_to(ROOT)}: {len(stems)} results, {sum(not quotes[s] for s in stems)} quoted by nothing",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
