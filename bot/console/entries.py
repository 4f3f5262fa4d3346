"""`closebot entries`: a run's journal entries, as text, CSV, a ledger's import file or
every source line behind them."""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal
from pathlib import Path
from typing import TextIO

from bot.close import (
    CloseTools,
    Ledger,
    build_export,
    export_documents,
    export_operators,
    format_named,
    money,
    read_account_map,
    require_map,
)
from bot.console.presenter import EXIT_OK
from bot.console.session import open_store, settings_of
from bot.core.decision_log import ENTRY_COLUMNS, journal_rows, named_lines, to_csv
from bot.core.errors import CloseBotError
from bot.core.names import Names

DETAIL_COLUMNS = ("entry_no", "line_no", "account", "well_id", "debit", "credit", "ref", "memo")


def cmd_entries(args: argparse.Namespace, out: TextIO) -> int:
    store = open_store(settings_of(args))
    store.runs.get(args.run_id)
    ledger = Ledger(store)
    batch = ledger.current_batch(args.run_id)
    if batch is None:
        print(f"Run {args.run_id} drafted no journal entries.", file=out)
        return EXIT_OK
    if args.detail:
        from bot.core.tools import ToolContext, ToolError

        settings = settings_of(args)
        tools = CloseTools(data_dir=settings.data_dir)
        try:
            rows = tools.journal_detail(ToolContext(run_id=args.run_id, store=store))
        except ToolError as e:
            raise CloseBotError(str(e)) from e
        out.write(to_csv(rows, DETAIL_COLUMNS))
        return EXIT_OK
    lines = named_lines(ledger.lines(batch["id"]), Names(store))  # who decided, by name
    if args.format:
        settings = settings_of(args)
        path = Path(args.map).expanduser() if args.map else require_map(settings.data_dir)
        export = build_export(
            batch,
            lines,
            period=store.runs.get(args.run_id).period,
            documents=export_documents(store, args.run_id),
            account_map=read_account_map(path),
            operators=export_operators(store, args.run_id, settings.data_dir),
        )
        if not args.out:
            out.write(export.render(args.format))  # refused when the ledger needs it split
            return EXIT_OK
        folder = Path(args.out).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        files = export.files(args.format)
        for name, content in files:
            (folder / name).write_text(content, encoding="utf-8", newline="")
            print(folder / name, file=out)
        fmt = format_named(args.format)
        if len(files) > 1:
            print(
                f"closebot: {len(lines)} lines in {len(files)} files ({fmt.title} imports at most "
                f"{fmt.max_lines} a file), each balanced, split between entries (a longer one at its wells)",
                file=sys.stderr,
            )
        return EXIT_OK
    if args.csv:
        out.write(to_csv(journal_rows(batch, lines), ENTRY_COLUMNS))
        return EXIT_OK
    print(
        f"Batch {batch['id']} ({batch['status']}) · debits {money(Decimal(batch['total_debit']))} = credits {money(Decimal(batch['total_credit']))}",
        file=out,
    )
    current = None
    for line in lines:
        if line["entry_no"] != current:
            current = line["entry_no"]
            print(f"\n{line['entry_no']}. {line['entry']}", file=out)
        dr = f"{line['debit']:>14,.2f}" if line["debit"] else " " * 14
        cr = f"{line['credit']:>14,.2f}" if line["credit"] else " " * 14
        print(
            f"   {line['account']} {line['account_name'][:28]:<28} {dr} {cr}  {line['memo'][:40]}",
            file=out,
        )
    return EXIT_OK
