"""NetSuite's journal entry import (Import Assistant → Transactions → Journal Entry): External
ID, Date, Memo (header fields) and Account, Debit, Credit, Line Memo, Name (line fields); one
External ID per entry; "number name" accounts when account numbers are on."""

from __future__ import annotations

from bot.close.exports import Format
from bot.close.exports.batch import Export, amount, entry_date, line_text, write


def write_netsuite(export: Export) -> str:
    y, m, d = entry_date(export.period)
    date = f"{m}/{d}/{y:04d}"
    rows = []
    for li in export.lines:
        gl = export.gl(li["account"])
        account = f"{gl.number} {gl.name}".strip()
        rows.append(
            [
                export.batch["id"],
                date,
                export.memo,
                account,
                amount(li["debit"]),
                amount(li["credit"]),
                line_text(li)[:4000],
                "",
            ]
        )
    columns = ["External ID", "Date", "Memo", "Account", "Debit", "Credit", "Line Memo", "Name"]
    return write(columns, rows)


NETSUITE = Format("netsuite", "NetSuite", write_netsuite, after="xero")
