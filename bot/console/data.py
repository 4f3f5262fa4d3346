"""`closebot data` (sample, check, import) and `closebot doi`: the close's files and a
well's DOI history."""

from __future__ import annotations

import argparse
from decimal import Decimal
from pathlib import Path
from typing import TextIO

from bot.close import (
    MAP_FILE,
    Ledger,
    check_data,
    check_period,
    latest_data_period,
    load_data,
    read_account_map,
    require_data_period,
    severance_questions,
    unmapped,
    write_sample_data,
)
from bot.console.data_import import cmd_data_import
from bot.console.presenter import EXIT_OK, EXIT_USAGE
from bot.console.session import open_store, settings_of
from bot.core.errors import CloseBotError, ConfigError


def cmd_data(args: argparse.Namespace, out: TextIO) -> int:
    if args.data_command == "import":
        return cmd_data_import(args, out)
    target = Path(args.dir).expanduser()
    if args.data_command == "sample":
        written = write_sample_data(target)
        print(f"Wrote the sample periods {', '.join(written)} to {target}.", file=out)
        print(f"Check them with: closebot data check {target}", file=out)
        return EXIT_OK
    if not target.is_dir():
        raise ConfigError(f"{target} is not a directory")
    if args.period:
        check_period(args.period)
    if not args.period and not has_period_folders(target) and (target / MAP_FILE).is_file():
        # imported months live in the database, checked as each file is imported: a folder
        # that holds only the account map (`closebot entries` names it) has that to check
        print(
            f"{target}: no period folders (YYYY-MM); imported months are checked as they are "
            f"imported, so only {MAP_FILE} is checked here",
            file=out,
        )
        results = {}
    else:
        results = check_data(target, args.period)
    bad = 0
    for period, problems in results.items():
        if not problems:
            try:
                asks = severance_questions(period, target)
            except CloseBotError as e:
                asks = [str(e)]
            if not asks:
                print(f"{period}: ok (11 files)", file=out)
                continue
            bad += 1
            print(
                f"{period}: 11 files read; {len(asks)} severance question(s) the close will ask:",
                file=out,
            )
            for a in asks:
                print(f"  - {a}", file=out)
            continue
        bad += 1
        print(f"{period}: {len(problems)} problem(s); nothing would be imported:", file=out)
        for p in problems:
            print(f"  - {p}", file=out)
    if (target / MAP_FILE).is_file():
        try:
            missing = unmapped(read_account_map(target / MAP_FILE))
        except CloseBotError as e:
            print(f"{MAP_FILE}: {e}", file=out)
            return EXIT_USAGE
        if missing:
            bad += 1
            print(
                f"{MAP_FILE}: {len(missing)} closebot account(s) with no GL account: "
                + ", ".join(missing),
                file=out,
            )
        else:
            print(f"{MAP_FILE}: ok (every closebot account is mapped)", file=out)
    else:  # the closes run; only the ledger's import files wait for the team's map
        print(
            f"{MAP_FILE}: none — closebot writes no ledger import file without your account "
            f"map (columns account,gl_account,gl_name[,tax_rate]; `closebot data sample` writes "
            "the sample's to edit)",
            file=out,
        )
    return EXIT_USAGE if bad else EXIT_OK


def has_period_folders(target: Path) -> bool:
    try:
        latest_data_period(target)
    except CloseBotError:
        return False
    return True


def cmd_doi(args: argparse.Namespace, out: TextIO) -> int:
    settings = settings_of(args)
    store = open_store(settings)
    ledger = Ledger(store)
    period = latest_data_period(settings.data_dir)
    folder = require_data_period(period, settings.data_dir)
    csv_rows = [r for r in load_data(period, settings.data_dir).doi if r.well_id == args.well_id]
    added = ledger.all_doi_rows(args.well_id)
    if not csv_rows and not added:
        raise ConfigError(
            f"no DOI rows for well {args.well_id!r} in {folder / 'doi.csv'} or the store"
        )
    name = csv_rows[0].well_name if csv_rows else added[0]["row"].get("well_name", args.well_id)
    print(f"{args.well_id} {name} — DOI history", file=out)
    print(f"  {'effective':<11} {'WI':>11} {'NRI':>11}  source", file=out)
    for r in csv_rows:
        print(
            f"  {r.effective_from:<11} {r.wi:>11.8f} {r.nri:>11.8f}  doi.csv line {r.line} ({period})",
            file=out,
        )
    for a in added:
        row = a["row"]
        state = {
            "in_force": "in force",
            "proposed": "proposed, awaiting posting approval",
            "void": "void",
        }.get(a["status"], a["status"])
        print(
            f"  {a['effective_from']:<11} {Decimal(row['wi']):>11.8f} {Decimal(row['nri']):>11.8f}  closebot run {a['run_id']}, "
            f"decided by {a['decided_by'] or '-'} — {state}",
            file=out,
        )
    return EXIT_OK
