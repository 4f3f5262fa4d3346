"""NetSuite's journal entry import (Import Assistant → Transactions → Journal Entry): External
ID, Date, Memo (header fields) and Account, Debit, Credit, Line Memo, Name (line fields); one
External ID per entry; "number name" accounts when account numbers are on.

Its rules ("Journal Entry and Intercompany Journal Entry Line-Level Fields Table",
docs.oracle.com/en/cloud/saas/netsuite/ns-online-help/section_1534492737.html): "Each
imported journal entry must include at least two lines, and have balancing debits and
credits"; Debit and Credit are "a number with a maximum of 10 digits before the decimal and 2
digits after the decimal"; with account numbers on, Account is "11000 Accounts Payable" (number
and name) or the number alone. Each is checked here before a file is written.

Name is the line's entity: NetSuite's A/P aging and Pay Bills work by vendor and its A/R aging
and Accept Payment by customer, so a journal line on an A/P account without a vendor (or an A/R
line without a customer) lands in "No Vendor"/"No Customer" and cannot be applied
(optimaldataconsulting.com/resources/how-to-fix-the-no-customer-vendor-line-on-netsuite-aging-report;
techfino.com/blog/netsuite-tip-how-to-close-ap-journals-mistakenly-posted-to-a-customer). So
every A/P and A/R line carries its operator or payor, the same party QuickBooks' Name gets
(bot/close/exports/batch.py `Export.names`), and a file with such a line unnamed is refused."""

from __future__ import annotations

from decimal import Decimal

from bot.close.exports import Format
from bot.close.exports.batch import ZERO, Export, amount, entry_date, line_text, write
from bot.core.errors import DataError

LARGEST = Decimal("9999999999.99")  # 10 digits before the decimal, 2 after


def check_netsuite(export: Export) -> None:
    """The documented rules for one External ID (the batch): two lines or more, balanced, and
    amounts NetSuite's Debit and Credit fields hold."""
    lines = export.lines
    if len(lines) < 2:
        raise DataError("NetSuite imports a journal entry of at least two lines")
    debit = sum((li["debit"] for li in lines), ZERO)
    credit = sum((li["credit"] for li in lines), ZERO)
    if debit != credit:
        raise DataError(f"NetSuite imports balanced journal entries: {debit} ≠ {credit}")
    for li in lines:
        for value in (li["debit"], li["credit"]):
            if abs(value) > LARGEST or value != value.quantize(Decimal("0.01")):
                raise DataError(
                    f"NetSuite's Debit and Credit hold 10 digits and 2 decimals: {value} "
                    f"({line_text(li)})"
                )


def write_netsuite(export: Export) -> str:
    check_netsuite(export)
    y, m, d = entry_date(export.period)
    date = f"{m}/{d}/{y:04d}"
    rows = []
    for li, name in zip(export.lines, export.names("NetSuite"), strict=True):
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
                name,
            ]
        )
    columns = ["External ID", "Date", "Memo", "Account", "Debit", "Credit", "Line Memo", "Name"]
    return write(columns, rows)


NETSUITE = Format("netsuite", "NetSuite", write_netsuite, after="xero")
