"""The `closebot` command: the argparse wiring and `main`; each command group is its own
module beside this one (run, approvals, audit, entries, data, database, serve)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from bot import __version__
from bot.close import format_names, formats
from bot.console.approvals import cmd_approve, cmd_change
from bot.console.audit import cmd_audit
from bot.console.data import cmd_data, cmd_doi
from bot.console.database import cmd_backup, cmd_doctor, cmd_runs
from bot.console.doctor_slack import cmd_doctor_slack
from bot.console.entries import cmd_entries
from bot.console.eval_cmd import evaluate
from bot.console.presenter import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from bot.console.run import cmd_resume, cmd_run
from bot.console.serve import cmd_sandbox, cmd_serve
from bot.core.errors import CloseBotError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"closebot: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="closebot",
        description="Run a month-end close with an agent that asks you when a decision is yours.",
    )
    parser.add_argument("--version", action="version", version=f"closebot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    db = _Parser(add_help=False)
    db.add_argument("--db", help="SQLite file (default: $CLOSEBOT_DB or ./closebot.db)")
    data = _Parser(add_help=False)
    data.add_argument(
        "--data",
        help="folder of close data, one YYYY-MM folder per period (default: the shipped sample)",
    )

    run = sub.add_parser("run", parents=[db, data], help="run a close in this terminal")
    run.add_argument(
        "period", nargs="?", help="accounting period YYYY-MM (default: the latest with data)"
    )
    run.add_argument(
        "--auto",
        action="store_true",
        help="answer every question with its recommendation (benchmark mode)",
    )

    resume = sub.add_parser(
        "resume", parents=[db, data], help="continue a paused or interrupted run"
    )
    resume.add_argument("run_id")
    resume.add_argument(
        "--auto", action="store_true", help="answer pending questions with their recommendations"
    )

    change = sub.add_parser(
        "change",
        parents=[db, data],
        help="before posting: list a run's decisions, or ask one again (the batch is redrafted)",
    )
    change.add_argument("run_id")
    change.add_argument(
        "decision", nargs="?", help="the decision's number in the list (without it: the list)"
    )

    audit = sub.add_parser(
        "audit", parents=[db], help="print a run's decision log: question, answer, who, when, how"
    )
    audit.add_argument("run_id")
    audit.add_argument("--csv", action="store_true", help="as CSV, every evidence column")
    audit.add_argument(
        "--verify", action="store_true", help="check the hash chain; report the first broken link"
    )

    approve = sub.add_parser(
        "approve",
        parents=[db, data],
        help="give a run's pending posting approval under your own OS login, then continue the run",
    )
    approve.add_argument("run_id")

    entries = sub.add_parser("entries", parents=[db, data], help="print a run's journal entries")
    entries.add_argument("run_id")
    entries.add_argument("--csv", action="store_true", help="as CSV, closebot's own columns")
    entries.add_argument(
        "--format",
        choices=format_names(),
        help="a journal import file for your ledger: "
        + " or ".join((", ".join(f.title for f in formats()[:-1]), formats()[-1].title)),
    )
    entries.add_argument(
        "--map",
        help="account map CSV (account,gl_account,gl_name[,tax_rate]); "
        "default: account_map.csv in $CLOSEBOT_DATA (required there), the sample's for the sample",
    )
    entries.add_argument(
        "--out",
        help="with --format: write the import file(s) into this folder (a ledger with a line "
        "limit, such as Xero's 300, gets several balanced files)",
    )
    entries.add_argument(
        "--detail",
        action="store_true",
        help="as CSV, every source line behind each entry line (rebuilt from the files)",
    )

    serve = sub.add_parser(
        "serve",
        parents=[db, data],
        help="run the Slack app (HTTP, or Socket Mode when SLACK_APP_TOKEN is set)",
    )
    serve.add_argument(
        "--http", action="store_true", help="serve HTTP even when SLACK_APP_TOKEN is set"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)",
    )
    serve.add_argument(
        "--port", type=int, default=3000, help="port (default 3000; 0 picks a free one)"
    )
    serve.add_argument(
        "--log-json",
        action="store_true",
        help="log one JSON object per line (default: plain lines)",
    )

    sandbox = sub.add_parser(
        "sandbox",
        parents=[data],
        help="a Slack channel in your browser with closebot in it: no Slack account needed",
    )
    sandbox.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port on 127.0.0.1 (default 8000; 0 picks a free one)",
    )
    sandbox.add_argument(
        "--db",
        help="SQLite file; the channels are kept beside it (PATH.slack.json) so a later start "
        "continues where this one stopped (default: a new one in a temporary folder)",
    )

    sub.add_parser("runs", parents=[db], help="list recent runs")

    ev = sub.add_parser(
        "eval",
        help="score Claude on the scripted scenarios beside the offline playbook (offline: a "
        "scripted model behind a loopback API; --real: the real API)",
    )
    ev.add_argument(
        "--real",
        action="store_true",
        help="run Claude on the real Anthropic API (needs ANTHROPIC_API_KEY; spends money)",
    )
    ev.add_argument(
        "--max-cost", type=float, default=2.0, help="with --real: stop once this many US$ are spent"
    )
    ev.add_argument("--only", default="", help="only the scenarios whose name contains this")

    data_cmd = sub.add_parser("data", help="the close data: write the sample, or check a folder")
    data_sub = data_cmd.add_subparsers(dest="data_command", required=True, parser_class=_Parser)
    sample = data_sub.add_parser("sample", help="write the shipped sample periods into DIR")
    sample.add_argument("dir")
    check = data_sub.add_parser(
        "check", help="check every file of every period in DIR (or one PERIOD); imports nothing"
    )
    check.add_argument("dir")
    check.add_argument("period", nargs="?")
    imp = data_sub.add_parser(
        "import",
        parents=[db],
        help="import files (CSV or XLSX, any layout closebot can map) into the database",
    )
    imp.add_argument("paths", nargs="+", metavar="DIR|FILE")
    imp.add_argument("--period", help="the period the files belong to (YYYY-MM)")
    imp.add_argument(
        "--kind", help="which of the eleven files this is (jib.csv, …), when it can't be told"
    )
    imp.add_argument(
        "--yes",
        action="store_true",
        help="use the proposed column mapping of a file in an unfamiliar layout (it is remembered)",
    )
    imp.add_argument(
        "--map",
        metavar="FILE",
        help="a TOML (or JSON) file saying how each file is read, by file-name pattern: kind, "
        "period, header_row, [columns], [whole_file] values, [wells] (no questions asked)",
    )
    imp.add_argument(
        "--ask",
        action="store_true",
        help="ask each question on standard input even when it is not a terminal",
    )

    doi = sub.add_parser(
        "doi",
        parents=[db, data],
        help="a well's DOI history: the CSV rows and those closebot added",
    )
    doi.add_argument("well_id")

    doctor = sub.add_parser(
        "doctor",
        parents=[db],
        help="check the database: integrity, audit chains, leases, stuck runs (changes nothing)",
    )
    doctor.add_argument(
        "--slack",
        action="store_true",
        help="check the installed Slack app instead: the token's scopes against manifest.yml, "
        "the bot in the finance channel, Socket Mode, the app's tabs and events; each problem "
        "with its fix",
    )
    doctor.add_argument(
        "--health",
        action="store_true",
        help="with --slack: only Slack accepting the bot token and the database answering "
        "(the container's healthcheck)",
    )
    backup = sub.add_parser(
        "backup", parents=[db], help="copy the database to PATH while closebot runs (online)"
    )
    backup.add_argument("path")
    return parser


COMMANDS = {
    "data": cmd_data,
    "doi": cmd_doi,
    "run": cmd_run,
    "resume": cmd_resume,
    "change": cmd_change,
    "approve": cmd_approve,
    "audit": cmd_audit,
    "entries": cmd_entries,
    "runs": cmd_runs,
    "eval": lambda args, out: evaluate(out, real=args.real, max_cost=args.max_cost, only=args.only),
    "serve": cmd_serve,
    "sandbox": cmd_sandbox,
    "doctor": lambda args, out: (cmd_doctor_slack if args.slack or args.health else cmd_doctor)(
        args, out
    ),
    "backup": cmd_backup,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """The closebot command; errors are one clear line, never a traceback."""
    out = out or sys.stdout
    level = os.environ.get("CLOSEBOT_LOG_LEVEL", "ERROR").strip().upper()
    if level not in logging.getLevelNamesMapping():
        print(
            f"closebot: error: CLOSEBOT_LOG_LEVEL={level!r} is not a log level (DEBUG, INFO, WARNING, ERROR)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, out)
    except CloseBotError as e:
        print(f"closebot: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(
            "\nclosebot: interrupted; nothing is lost. `closebot runs` lists runs to resume.",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # the edge: a bug gets one line here, the traceback at DEBUG
        logging.getLogger("closebot").debug("unexpected error", exc_info=True)
        print(
            f"closebot: unexpected error: {type(e).__name__}: {e} (CLOSEBOT_LOG_LEVEL=DEBUG shows where)",
            file=sys.stderr,
        )
        return EXIT_FAILED


__all__ = ["main"]
