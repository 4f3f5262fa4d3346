"""The shape of the close: an exception found by a check (`Finding`), and one run's view of a
period (`Close`: the data, the DOI in force, the decisions so far).

The steps are registered objects (`bot/close/registry.py`), one module per step in
`bot/close/steps/`, each with its checks. Adding a check: a function there that yields
Findings of a new kind, registered with its step (`@INTAKE.check`), and the kind (its
options, what each books and leaves open) in kinds.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cached_property
from itertools import compress
from typing import Any, Generic, TypeVar

from bot.close.data import (
    PRODUCTS,
    ZERO,
    CloseData,
    DoiRow,
    JibLine,
    RevenueLine,
    cents,
    months_between,
)
from bot.close.doi_master import (
    ACCRUAL_WINDOW,
    Master,
)
from bot.close.rates import RatesTable, Well, shipped
from bot.close.records import DecisionView, JournalLine

REVENUE_ACCOUNTS = {"oil": "4010", "gas": "4020", "ngl": "4030"}
COST_ACCOUNTS = {
    "LOE": "6210",
    "Workover": "6220",
    "Overhead": "6250",
    "IDC": "1610",
    "ICC": "1615",
    "TDC": "1620",
    "TCC": "1620",
    "LWE": "1620",
}


def revenue_account(product: str, sale_month: str, period: str) -> str:
    """A sale month older than the accrual window goes to 4090 Prior-Period Revenue Adjustment."""
    if months_between(sale_month, period) > ACCRUAL_WINDOW:
        return "4090"
    return REVENUE_ACCOUNTS[product]


def cost_account(line: JibLine) -> str:
    if line.cost_category == "Overhead" and line.afe_no:
        return "1610"  # drilling overhead under an AFE is capitalised with the IDC
    return COST_ACCOUNTS[line.cost_category]


@dataclass
class Finding:
    """An exception a person decides: what, the numbers, and what the data recommends."""

    kind: str
    key: str
    step: str
    subject: str
    summary: str
    question: str
    recommended: str
    reasoning: str
    facts: dict[str, Any] = field(default_factory=dict)
    options: list[str] | None = None  # option codes offered (default: all of the kind's)
    well_id: str | None = None
    amount: Decimal = ZERO

    @property
    def id(self) -> str:
        """kind:key, safe to quote as [ref …] in a question."""
        return f"{self.kind}:" + re.sub(r"[^A-Za-z0-9_.:\-]", "-", self.key)


A = TypeVar("A")
B = TypeVar("B")


class Pairs(Generic[A, B]):
    """Lines paired with what a check resolved for each (a well, the DOI row in force), kept
    as two lists rather than a tuple per line (at 300,000 lines the tuples alone are tens of
    megabytes); iterated as (line, resolved) pairs, as often as wanted."""

    __slots__ = ("firsts", "seconds")

    def __init__(self, firsts: list[A], seconds: list[B]) -> None:
        self.firsts, self.seconds = firsts, seconds

    def __iter__(self) -> Iterator[tuple[A, B]]:
        return zip(self.firsts, self.seconds, strict=True)

    def __len__(self) -> int:
        return len(self.firsts)


@dataclass
class Close:
    """One run's view of a period: the data, the DOI in force, and the decisions so far."""

    data: CloseData
    master: Master
    decisions: dict[str, DecisionView] = field(default_factory=dict)  # finding id → decision
    # last month's revenue accruals (reversed this month): closebot's posted ones, else accruals.csv
    prior_accruals: list[dict[str, Any]] = field(default_factory=list)
    # what a check derived from the resolved lines and the prior accruals alone (e.g. the
    # history gaps), shared with the next tool call's Close while both are the same
    derived: dict[str, Any] = field(default_factory=dict)
    # severance and withholding by state × product (the shipped table and the team's rows)
    rates: RatesTable = field(default_factory=shipped)

    @property
    def period(self) -> str:
        return self.data.period

    def severance(
        self, row: DoiRow, product: str, month: str, value: Decimal, volume: Decimal
    ) -> Any:
        """What the state levies on a line of this well (8/8ths), or why the table cannot say
        (`rates.NoRate`: a question, never a zero)."""
        well = Well(row.well_id, row.state, row.first_prod_month)
        return self.rates.due(well, product, month, value, volume, self.data.prices)

    def decided(self, finding_id: str) -> DecisionView | None:
        d = self.decisions.get(finding_id)
        return d if d and d.get("status") == "resolved" else None

    def held_lines(self) -> set[str]:
        """Document lines (jib.csv:N, revenue.csv:N) a decision holds in suspense or replaced:
        no later check decides them again."""
        return {
            ref
            for d in self.decisions.values()
            if d.get("status") == "resolved"
            and d.get("holds")
            and not d["option"].startswith("map:")
            for ref in d.get("lines", ())
        }

    # -- documents with their wells resolved -------------------------------

    def _well_of(self, kind: str, line: JibLine | RevenueLine, operator: str) -> str | None:
        decision = self.decided(f"unknown_property:{kind}:{line.line}")
        if decision and decision["option"].startswith("map:"):
            return str(decision["option"][4:])
        if line.well_id and self.master.has(line.well_id):
            return line.well_id
        if not line.well_id and line.property_no:
            return self.master.by_property(operator, line.property_no)
        return None

    # Each is computed once per Close (one tool call's view): the steps share the lists
    # instead of re-resolving every line, and a line is copied only when its well was mapped.

    @cached_property
    def _jib(self) -> Pairs[JibLine, str | None]:
        lines = self.data.jib  # the period's own list: not copied
        return Pairs(lines, [self._well_of("jib", j, j.operator) for j in lines])

    @cached_property
    def _revenue(self) -> Pairs[RevenueLine, str | None]:
        lines = self.data.revenue
        return Pairs(lines, [self._well_of("revenue", r, "") for r in lines])

    @cached_property
    def _known_jib(self) -> Pairs[JibLine, DoiRow]:
        lines: list[JibLine] = []
        rows: list[DoiRow] = []
        for j, well in self._jib:
            row = self.master.in_force(well, j.service_month) if well else None
            if row is not None:
                lines.append(j if j.well_id == row.well_id else replace(j, well_id=row.well_id))
                rows.append(row)
        return Pairs(lines, rows)

    @cached_property
    def _known_revenue(self) -> Pairs[RevenueLine, DoiRow]:
        lines: list[RevenueLine] = []
        rows: list[DoiRow] = []
        for r, well in self._revenue:
            row = self.master.in_force(well, r.sale_month) if well else None
            if row is not None:
                lines.append(r if r.well_id == row.well_id else replace(r, well_id=row.well_id))
                rows.append(row)
        return Pairs(lines, rows)

    def reuse(self, other: Close) -> None:
        """Take the lines `other` resolved (same data, DOI rows and mapping decisions)."""
        for name in ("_jib", "_revenue", "_known_jib", "_known_revenue"):
            if name in other.__dict__:
                self.__dict__[name] = other.__dict__[name]
        if other.prior_accruals is self.prior_accruals:
            self.derived = other.derived

    def jib(self) -> Pairs[JibLine, str | None]:
        return self._jib

    def revenue(self) -> Pairs[RevenueLine, str | None]:
        return self._revenue

    def known_jib(self, *, unheld: bool = False) -> Pairs[JibLine, DoiRow]:
        """JIB lines of wells in the DOI, with the row in force; `unheld` leaves out the lines a
        decision already holds."""
        held = self.held_lines() if unheld else None
        if not held:
            return self._known_jib
        return _unheld(self._known_jib, held)

    def known_revenue(self, *, unheld: bool = False) -> Pairs[RevenueLine, DoiRow]:
        held = self.held_lines() if unheld else None
        if not held:
            return self._known_revenue
        return _unheld(self._known_revenue, held)


L = TypeVar("L", JibLine, RevenueLine)


def _unheld(pairs: Pairs[L, DoiRow], held: set[str]) -> Pairs[L, DoiRow]:
    # the few held lines are found by their line number first (an int compared per line, not
    # a ref made per line: at volume the pairs are 200,000 lines), then dropped in one pass
    numbers = {int(n) for _, _, n in (ref.rpartition(":") for ref in held) if n.isdigit()}
    drop = [i for i, line in enumerate(pairs.firsts) if line.line in numbers and line.ref in held]
    if not drop:
        return pairs
    keep = [True] * len(pairs)
    for i in drop:
        keep[i] = False
    return Pairs(list(compress(pairs.firsts, keep)), list(compress(pairs.seconds, keep)))


ACCRUAL_MEMO_RE = re.compile(r"^accrue .+ (oil|gas|ngl) (\d{4}-\d{2})\b")


def prior_revenue_accruals(
    data: CloseData, posted_lines: list[JournalLine] | None
) -> list[dict[str, Any]]:
    """Last month's revenue accruals per well × product × month, with revenue, severance and the
    receivable: from closebot's posted batch when it closed that month, else from accruals.csv."""
    if posted_lines is None:
        return [
            {
                "well_id": a.well_id,
                "product": PRODUCTS.get(a.product_or_category.casefold(), a.product_or_category),
                "month": a.month,
                "revenue": a.amount,
                "severance": ZERO,
                "receivable": a.amount,
                "source": f"accruals.csv:{a.line}",
            }
            for a in data.accruals
            if a.kind == "revenue"
        ]
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for line in posted_lines:
        if line.get("source") != "accrual":
            continue
        ref = str(line.get("ref") or "")
        if ref.startswith("production.csv:") and ref.count(":") == 3:
            _, well_id, product, month = ref.split(":")
        elif m := ACCRUAL_MEMO_RE.match(str(line.get("memo") or "")):
            well_id, product, month = str(line.get("well_id") or ""), m.group(1), m.group(2)
        else:
            continue  # an LOE accrual
        item = out.setdefault(
            (well_id, product, month),
            {
                "well_id": well_id,
                "product": product,
                "month": month,
                "revenue": ZERO,
                "severance": ZERO,
                "receivable": None,
                "source": f"batch {line.get('batch_id')}",
            },
        )
        if line["account"] == "1210":
            item["receivable"] = (item["receivable"] or ZERO) + line["debit"] - line["credit"]
        elif line["account"] == "6110":
            item["severance"] += line["debit"] - line["credit"]
        elif line["account"].startswith("40"):
            item["revenue"] += line["credit"] - line["debit"]
    for item in out.values():
        if item["receivable"] is None:  # a well's receivable line sums its products': each
            item["receivable"] = item["revenue"] - item["severance"]  # product's is this
    return list(out.values())


def stub_net(r: RevenueLine, decimal: Decimal) -> Decimal:
    return cents((r.gross_value - r.gross_taxes - r.gross_deductions) * decimal)


def stub_parts(
    r: RevenueLine, decimal: Decimal, *, net: Decimal | None = None
) -> dict[str, Decimal]:
    """Owner's revenue (credit), severance and deductions (debits) and net cash of a stub line."""
    taxes = cents(r.gross_taxes * decimal)
    deductions = cents(r.gross_deductions * decimal)
    net = stub_net(r, decimal) if net is None else net
    return {
        "revenue": net + taxes + deductions,
        "taxes": taxes,
        "deductions": deductions,
        "net": net,
    }
