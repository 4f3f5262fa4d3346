"""The shape of the close: its eight steps, an exception found by a check (`Finding`), and
one run's view of a period (`Close`: the data, the DOI in force, the decisions so far).

The checks themselves live in `bot/close/steps/`, one module per step. Adding a check: a
function there that yields Findings of a new kind, registered in `steps.CHECKS` if it is a
new step's, and the kind's options and what each books in kinds.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cached_property
from typing import Any

from bot.close.data import (
    ZERO,
    CloseData,
    DoiRow,
    JibLine,
    RevenueLine,
    cents,
)
from bot.close.master import (
    Master,
)

STEPS = (
    "Intake",
    "WI/NRI validation",
    "JIB reconciliation & LOE accrual",
    "Revenue accrual",
    "Severance check",
    "Journal entries",
    "Flux review",
    "Sign-off",
)
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


@dataclass
class Close:
    """One run's view of a period: the data, the DOI in force, and the decisions so far."""

    data: CloseData
    master: Master
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)  # finding id → decision

    @property
    def period(self) -> str:
        return self.data.period

    def decided(self, finding_id: str) -> dict[str, Any] | None:
        d = self.decisions.get(finding_id)
        return d if d and d.get("status") == "resolved" else None

    # -- documents with their wells resolved -------------------------------

    def _well_of(self, kind: str, line: JibLine | RevenueLine, operator: str) -> str | None:
        decision = self.decided(f"unknown_property:{kind}:{line.line}")
        if decision and decision["option"].startswith("map:"):
            return str(decision["option"][4:])
        if line.well_id and self.master.latest(line.well_id):
            return line.well_id
        if not line.well_id and line.property_no:
            return self.master.by_property(operator, line.property_no)
        return None

    # Each is computed once per Close (one tool call's view): the steps share the lists
    # instead of re-resolving every line, and a line is copied only when its well was mapped.

    @cached_property
    def _jib(self) -> list[tuple[JibLine, str | None]]:
        return [(j, self._well_of("jib", j, j.operator)) for j in self.data.jib]

    @cached_property
    def _revenue(self) -> list[tuple[RevenueLine, str | None]]:
        return [(r, self._well_of("revenue", r, "")) for r in self.data.revenue]

    @cached_property
    def _known_jib(self) -> list[tuple[JibLine, DoiRow]]:
        out = []
        for j, well in self._jib:
            row = self.master.in_force(well, j.service_month) if well else None
            if row is not None:
                out.append(
                    (j if j.well_id == row.well_id else replace(j, well_id=row.well_id), row)
                )
        return out

    @cached_property
    def _known_revenue(self) -> list[tuple[RevenueLine, DoiRow]]:
        out = []
        for r, well in self._revenue:
            row = self.master.in_force(well, r.sale_month) if well else None
            if row is not None:
                out.append(
                    (r if r.well_id == row.well_id else replace(r, well_id=row.well_id), row)
                )
        return out

    def jib(self) -> list[tuple[JibLine, str | None]]:
        return self._jib

    def revenue(self) -> list[tuple[RevenueLine, str | None]]:
        return self._revenue

    def known_jib(self) -> list[tuple[JibLine, DoiRow]]:
        return self._known_jib

    def known_revenue(self) -> list[tuple[RevenueLine, DoiRow]]:
        return self._known_revenue


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
