"""Step 6: balanced journal entries for the period's JIB bills and revenue checks."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.close.data import CloseData, JibLine, RevenueLine, cents
from bot.close.interests import TOLERANCE, money

ZERO = Decimal("0.00")

ACCOUNTS: dict[str, str] = {
    "1050": "Cash / Purchaser Clearing",
    "1210": "Accrued Revenue Receivable",
    "1395": "JIB Suspense",
    "1610": "Intangible Drilling Costs",
    "1620": "Lease & Well Equipment",
    "2110": "AP - JIB",
    "2115": "Accrued LOE",
    "2310": "Revenue Suspense",
    "4010": "Oil Revenue",
    "4020": "Gas Revenue",
    "4030": "NGL Revenue",
    "4090": "Prior-Period Revenue Adjustment",
    "6110": "Severance Tax Expense",
    "6130": "Gathering & Transportation",
    "6210": "Lease Operating Expense",
    "6220": "Workover Expense",
    "6250": "Operator Overhead",
}
COST_ACCOUNTS = {
    "LOE": "6210",
    "Workover": "6220",
    "Overhead": "6250",
    "IDC": "1610",
    "ICC": "1620",
}
REVENUE_ACCOUNTS = {"oil": "4010", "gas": "4020", "ngl": "4030"}
# Resolutions under which the operator's decimal is taken as right.
BOOK_AS_BILLED = {"accept_operator"}


class JournalError(ValueError):
    """Entries could not be built (unmapped category, or they would not balance)."""


@dataclass
class Entry:
    number: int
    description: str
    lines: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        account: str,
        *,
        debit: Decimal = ZERO,
        credit: Decimal = ZERO,
        well_id: str = "",
        memo: str = "",
    ) -> None:
        if debit < 0 or credit < 0:  # a negative amount belongs on the other side
            debit, credit = -credit, -debit
        if debit == ZERO and credit == ZERO:
            return
        self.lines.append(
            {
                "entry_no": self.number,
                "line_no": len(self.lines) + 1,
                "entry": self.description,
                "account": account,
                "account_name": ACCOUNTS[account],
                "debit": debit,
                "credit": credit,
                "well_id": well_id,
                "memo": memo,
            }
        )

    def check_balanced(self) -> None:
        debit = sum((line["debit"] for line in self.lines), ZERO)
        credit = sum((line["credit"] for line in self.lines), ZERO)
        if debit != credit:
            raise JournalError(
                f"entry {self.number} ({self.description}) does not balance: {money(debit)} ≠ {money(credit)}"
            )


def _cost_account(line: JibLine) -> str:
    if line.cost_category == "Overhead" and line.afe_no:
        return "1610"  # drilling overhead under an AFE is capitalised with the IDC
    try:
        return COST_ACCOUNTS[line.cost_category]
    except KeyError:
        raise JournalError(
            f"cost category {line.cost_category!r} on {line.invoice_no} has no account; "
            f"known: {', '.join(COST_ACCOUNTS)}"
        ) from None


def _jib_entry(
    number: int, invoice: str, lines: list[JibLine], data: CloseData, resolutions: dict[str, str]
) -> Entry:
    entry = Entry(number, f"JIB {invoice} · {lines[0].operator} · service {lines[0].service_month}")
    payable = ZERO
    for j in lines:
        well = data.wells[j.well_id]
        account = _cost_account(j)
        expected = cents(j.gross_amount * well.wi)
        differs = abs(j.owner_decimal - well.wi) > TOLERANCE
        resolution = resolutions.get(j.well_id) if differs else None
        memo = f"{well.well_name}: {j.description}"
        if not differs or resolution in BOOK_AS_BILLED:
            entry.add(account, debit=j.owner_net_amount, well_id=j.well_id, memo=memo)
            payable += j.owner_net_amount
        elif resolution == "short_pay_dispute":
            entry.add(
                account,
                debit=expected,
                well_id=j.well_id,
                memo=f"{memo} (at DOI WI; {money(j.owner_net_amount - expected)} disputed)",
            )
            payable += expected
        else:  # suspense, defer, or not decided: book at DOI, hold the rest
            entry.add(account, debit=expected, well_id=j.well_id, memo=f"{memo} (at DOI WI)")
            entry.add(
                "1395",
                debit=j.owner_net_amount - expected,
                well_id=j.well_id,
                memo=f"{well.well_name}: WI difference held",
            )
            payable += j.owner_net_amount
    entry.add("2110", credit=payable, memo=f"{lines[0].operator} invoice {invoice}")
    return entry


def _revenue_entry(
    number: int, check: str, lines: list[RevenueLine], data: CloseData, resolutions: dict[str, str]
) -> Entry:
    entry = Entry(number, f"Revenue check {check} · {lines[0].payor} · sales {lines[0].sale_month}")
    cash = ZERO
    for r in lines:
        well = data.wells[r.well_id]
        differs = abs(r.owner_decimal - well.nri) > TOLERANCE
        resolution = resolutions.get(r.well_id) if differs else None
        book_decimal = (
            r.owner_decimal if (not differs or resolution in BOOK_AS_BILLED) else well.nri
        )
        taxes = cents(r.gross_taxes * book_decimal)
        deductions = cents(r.gross_deductions * book_decimal)
        net = (
            r.owner_net_value
            if book_decimal == r.owner_decimal
            else cents((r.gross_value - r.gross_taxes - r.gross_deductions) * book_decimal)
        )
        memo = f"{well.well_name}: {r.product} {r.gross_volume} @ {r.price}"
        entry.add(
            REVENUE_ACCOUNTS[r.product],
            credit=net + taxes + deductions,
            well_id=r.well_id,
            memo=memo,
        )
        entry.add(
            "6110",
            debit=taxes,
            well_id=r.well_id,
            memo=f"{well.well_name}: severance on {r.product}",
        )
        entry.add(
            "6130",
            debit=deductions,
            well_id=r.well_id,
            memo=f"{well.well_name}: deductions on {r.product}",
        )
        if net != r.owner_net_value:
            entry.add(
                "2310",
                credit=r.owner_net_value - net,
                well_id=r.well_id,
                memo=f"{well.well_name}: NRI difference held",
            )
        cash += r.owner_net_value
    entry.add("1050", debit=cash, memo=f"check {check} from {lines[0].payor}")
    return entry


def build_entries(data: CloseData, resolutions: dict[str, str]) -> list[Entry]:
    """Entries for every JIB invoice and revenue check; `resolutions` maps well_id → decision."""
    entries: list[Entry] = []
    by_invoice: dict[str, list[JibLine]] = defaultdict(list)
    for j in data.jib:
        by_invoice[j.invoice_no].append(j)
    for invoice, lines in by_invoice.items():
        entries.append(_jib_entry(len(entries) + 1, invoice, lines, data, resolutions))
    by_check: dict[str, list[RevenueLine]] = defaultdict(list)
    for r in data.revenue:
        by_check[r.check_no].append(r)
    for check, rlines in by_check.items():
        entries.append(_revenue_entry(len(entries) + 1, check, rlines, data, resolutions))
    for e in entries:
        e.check_balanced()
    return entries


def totals_by_account(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Debits and credits per account, in account order."""
    acc: dict[str, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for line in lines:
        acc[line["account"]][0] += line["debit"]
        acc[line["account"]][1] += line["credit"]
    return [
        {"account": a, "account_name": ACCOUNTS.get(a, a), "debit": d, "credit": c}
        for a, (d, c) in sorted(acc.items())
    ]
