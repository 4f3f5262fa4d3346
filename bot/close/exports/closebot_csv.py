"""closebot's own CSV: the GL account and closebot's, the well, the source and the document
line of every journal line, for any ledger or a spreadsheet."""

from __future__ import annotations

from bot.close.exports import Format
from bot.close.exports.batch import Export, amount, entry_date, line_text, write


def write_csv(export: Export) -> str:
    y, m, d = entry_date(export.period)
    rows = [
        [
            export.batch["id"],
            f"{y:04d}-{m:02d}-{d:02d}",
            export.gl(li["account"]).number,
            export.gl(li["account"]).name,
            amount(li["debit"]),
            amount(li["credit"]),
            line_text(li),
            li["account"],
            li["well_id"] or "",
            li["source"] or "",
            li["ref"] or "",
        ]
        for li in export.lines
    ]
    columns = [
        "journal_no",
        "date",
        "gl_account",
        "gl_name",
        "debit",
        "credit",
        "description",
        "closebot_account",
        "well_id",
        "source",
        "ref",
    ]
    rows[0][6] = f"{export.memo} | {rows[0][6]}"
    return write(columns, rows)


# Slack attaches closebot's journal CSV to the thread already: not this one too
PLAIN_CSV = Format("csv", "plain CSV", write_csv, after="netsuite", attached=False)
