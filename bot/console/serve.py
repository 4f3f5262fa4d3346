"""`closebot serve` and `closebot sandbox`: the Slack app, or the sandbox workspace in a
browser (Slack's libraries load only for these)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TextIO

from bot.close import build_model
from bot.console.session import open_store, settings_of
from bot.core.errors import ConfigError


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    from bot.core import logs
    from bot.slack.serve import serve  # Slack's libraries load only for this command

    # A long-running server logs what it does: INFO, UTC timestamps, unless told otherwise.
    logs.configure(
        os.environ.get("CLOSEBOT_LOG_LEVEL", "INFO").strip().upper() or "INFO",
        json_lines=args.log_json,
    )
    settings = settings_of(args)
    store = open_store(settings)
    try:
        return serve(
            settings,
            store=store,
            model=build_model(settings),
            http=args.http,
            host=args.host,
            port=args.port,
            out=out,
        )
    except OSError as e:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from e


def cmd_sandbox(args: argparse.Namespace, out: TextIO) -> int:
    import tempfile

    from bot.sandbox.run import Sandbox, run_sandbox

    kept = args.db is not None  # a named database keeps the workspace beside it
    if not kept:
        args.db = str(Path(tempfile.mkdtemp(prefix="closebot-sandbox-")) / "sandbox.db")
    settings = settings_of(args)
    workspace = settings.db_path.with_name(settings.db_path.name + ".slack.json") if kept else None
    store = open_store(settings)
    model = build_model(settings)
    driver = (
        f"Claude ({model.name})"
        if settings.uses_claude
        else "the offline playbook (set ANTHROPIC_API_KEY for Claude)"
    )
    try:
        sandbox = Sandbox(store=store, model=model, port=args.port, workspace_file=workspace)
    except ValueError as e:
        raise ConfigError(str(e)) from e
    except OSError as e:
        raise ConfigError(
            f"cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}; try --port 0"
        ) from e
    return run_sandbox(sandbox, driver=driver, db_path=settings.db_path, out=out)
