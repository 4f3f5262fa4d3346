"""QuickBooks Online's journal import (Settings → Import data → Journal entries): Journal No.,
Journal Date, Account Name, Debits, Credits, Description, Name; lines with the same Journal
No. are one entry; dates MM/DD/YYYY; accounts by name ("Parent:Sub" for a sub-account).

Its help page ("Import journal entries", quickbooks.intuit.com/learn-support/en-au/help-article/
import-export-files/import-journal-entries-quickbooks-online/L4tQBwbs7_AU_en_AU): "Depending
on the Account Name selection (Accounts Payable (A/P) or Accounts Receivable (A/R)), the
system will request the Name column to have a supplier selected" — so every line on a payable
or receivable carries its operator (a JIB's, or the well's in the DOI) or its payor (a
check's), and a file with such a line and no name is refused, never written."""

from __future__ import annotations

from bot.close.exports import Format
from bot.close.exports.batch import Export, amount, entry_date, line_text, write


def write_qbo(export: Export) -> str:
    y, m, d = entry_date(export.period)
    date = f"{m:02d}/{d:02d}/{y:04d}"
    rows = []
    for li, name in zip(export.lines, export.names("QuickBooks Online"), strict=True):
        rows.append(
            [
                export.batch["id"],
                date,
                export.gl(li["account"]).name or export.gl(li["account"]).number,
                amount(li["debit"]),
                amount(li["credit"]),
                line_text(li)[:4000],
                name,
            ]
        )
    rows[0][5] = f"{export.memo} | {rows[0][5]}"[:4000]
    columns = [
        "Journal No.",
        "Journal Date",
        "Account Name",
        "Debits",
        "Credits",
        "Description",
        "Name",
    ]
    return write(columns, rows)


QBO = Format("qbo", "QuickBooks Online", write_qbo, after=None)
