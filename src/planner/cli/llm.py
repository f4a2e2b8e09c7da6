"""`planner llm check`: does an LLM server enforce the JSON schemas the planner sends?

The planner offers the model only grounded actions through a schema; a server that ignores the
schema leaves that to the validate-and-repair loop, which a small model needs many more calls for."""

from __future__ import annotations

import sys


def llm_check(args) -> int:
    from planner.adapters.llm import check_schema_enforcement, open_policy, structured_output_for
    from planner.config import load_config
    from planner.core.errors import PolicyError

    config = load_config(args.config).llm
    settings = config.resolved()
    server = None
    if args.base_url:
        base_url, api_key, model = args.base_url, args.api_key, args.model or "default"
        configured = structured_output_for(False, config.structured_output)
    elif settings.provider == "embedded":
        try:
            _, server = open_policy(settings)
        except PolicyError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        base_url, api_key, model = server.base_url, "", settings.model
        configured = settings.structured_output
    elif settings.provider == "openai":
        base_url, api_key, model = settings.base_url, settings.api_key, args.model or settings.model
        configured = settings.structured_output
    else:
        print("error: the configured LLM is scripted; give --base-url", file=sys.stderr)
        return 2
    print(f"checking {base_url} (model {model}): one schema-bound request per structured-output form ...",
          flush=True)
    try:
        checks = check_schema_enforcement(base_url, api_key, model, args.timeout)
    finally:
        if server is not None:
            server.stop()
    for check in checks:
        verdict = "enforced" if check.enforced else "NOT enforced"
        print(f"  {check.mode:<19} {verdict:<13} reply: {check.reply[:100]!r}")
    enforced = [check.mode for check in checks if check.enforced]
    if configured in enforced:
        print(f"ok: {configured}, which the config picks for this server, is enforced.")
        return 0
    if enforced:
        print(f"set llm.structured_output: {enforced[0]} for this server ({configured}, which the config picks "
              "for it, is not enforced).")
    else:
        print("this server enforces none of the forms: the planner's replies are then only validated and "
              "repaired after the fact. Use a server that enforces a schema (llama.cpp, vLLM, Ollama 0.5 or "
              "later, OpenAI).")
    return 1


def add_commands(sub) -> None:
    p = sub.add_parser("llm", help="check an LLM server")
    llm_sub = p.add_subparsers(dest="llm_command", required=True)
    check = llm_sub.add_parser("check", help="which structured-output forms a server enforces, and what to set")
    check.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: the configured LLM; the "
                                          "embedded server is started for the check)")
    check.add_argument("--api-key", default="", help="the server's API key, if it needs one")
    check.add_argument("--model", help="model name on that server")
    check.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    check.add_argument("--config", help="stack config (default: the installed one)")
    check.set_defaults(run=llm_check)
