"""Xero's manual journal import (Manual Journals → Import): Narration, Date, Description,
AccountCode, TaxRate, Amount (a debit positive, a credit negative); rows with the same
Narration and Date are one journal; dates dd/mm/yyyy; at most 300 lines a file.

Its help page ("Enter multiple manual journals using an import template",
help.xero.com/nz/ManualJournalsImport): "You can import up to 300 lines in one template
file"; Narration, Date, AccountCode, TaxRate and Amount are mandatory; "Use the same narration
and date for each group of rows you want to import as lines in the same journal". So a batch
over 300 lines is written as several files, split between entries (bot/close/exports/batch.py
`split_by_entry`) and an entry over 300 lines between its wells (`by_well`: an accrual or its
reversal balances well by well), each balanced, each narration naming its file ("file 1 of 2")."""

from __future__ import annotations

from bot.close.exports import Format
from bot.close.exports.batch import Export, entry_date, line_text, write


def write_xero(export: Export) -> str:
    y, m, d = entry_date(export.period)
    date = f"{d:02d}/{m:02d}/{y:04d}"
    narration = export.memo
    rows = [
        [
            narration,
            date,
            line_text(li),
            export.gl(li["account"]).number or export.gl(li["account"]).name,
            export.gl(li["account"]).tax_rate,
            f"{(li['debit'] - li['credit']):.2f}",
        ]
        for li in export.lines
    ]
    columns = ["Narration", "Date", "Description", "AccountCode", "TaxRate", "Amount"]
    return write(columns, rows)


XERO = Format("xero", "Xero", write_xero, after="qbo", max_lines=300)
