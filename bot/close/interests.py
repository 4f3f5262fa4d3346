"""Step 2: WI/NRI validation — the operator's decimals against the company's DOI master."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.close.data import CloseData, Well, cents

TOLERANCE = Decimal("0.000001")  # convention, see CLOSE.md

RESOLUTIONS: dict[str, tuple[str, str]] = {
    "accept_operator": (
        "Accept operator's decimal, update DOI",
        "Book as billed and paid; update the DOI with an effective date and book the prior-period catch-up.",
    ),
    "short_pay_dispute": (
        "Book at DOI, short-pay and dispute",
        "Book and pay at our DOI decimal; dispute the difference with the operator.",
    ),
    "suspense": (
        "Book billed amount, hold difference in suspense",
        "Pay what was billed; hold the difference in suspense until the interest is confirmed.",
    ),
    "defer": (
        "Defer and request ownership support",
        "Book at DOI with the difference in suspense; ask the operator for title or assignment support.",
    ),
}
RESOLUTION_CODES = tuple(RESOLUTIONS)


def resolution_label(code: str) -> str:
    return RESOLUTIONS[code][0]


def _decimal_text(d: Decimal) -> str:
    return f"{d:.8f}"


def money(d: Decimal) -> str:
    """$1,234.56, with the sign in front: -$12.00."""
    sign = "-" if d < 0 else ""
    return f"{sign}${abs(d):,.2f}"


def signed_money(d: Decimal) -> str:
    return ("+" if d > 0 else "") + money(d)


@dataclass(frozen=True)
class Mismatch:
    """A well whose JIB and/or revenue decimal differs from the DOI."""

    well: Well
    jib_decimal: Decimal | None
    stub_decimal: Decimal | None
    jib_billed: Decimal
    jib_expected: Decimal
    stub_paid: Decimal
    stub_expected: Decimal

    @property
    def exception_id_suffix(self) -> str:
        return f"wi_nri:{self.well.well_id}"

    @property
    def jib_differs(self) -> bool:
        return self.jib_decimal is not None and abs(self.jib_decimal - self.well.wi) > TOLERANCE

    @property
    def stub_differs(self) -> bool:
        return self.stub_decimal is not None and abs(self.stub_decimal - self.well.nri) > TOLERANCE

    @property
    def pattern(self) -> str:
        if self.jib_differs and self.stub_differs:
            return "both_consistent" if self._consistent() else "both_inconsistent"
        return "jib_only" if self.jib_differs else "stub_only"

    def _consistent(self) -> bool:
        """Does the stub's NRI carry the same royalty burden over the billed WI as the DOI does?"""
        assert self.jib_decimal is not None and self.stub_decimal is not None
        if self.well.wi == 0:
            return False
        implied_nri = self.jib_decimal * self.well.nri / self.well.wi
        return abs(implied_nri - self.stub_decimal) <= TOLERANCE

    @property
    def recommended(self) -> str:
        return {
            "both_consistent": "accept_operator",
            "jib_only": "short_pay_dispute",
            "stub_only": "suspense",
            "both_inconsistent": "defer",
        }[self.pattern]

    @property
    def reasoning(self) -> str:
        w = self.well
        if self.pattern == "both_consistent":
            assert self.jib_decimal is not None and self.stub_decimal is not None
            burden = (1 - w.nri / w.wi) if w.wi else Decimal(0)
            return (
                f"Both operator documents agree: the JIB bills WI {_decimal_text(self.jib_decimal)} and the revenue "
                f"stub pays NRI {_decimal_text(self.stub_decimal)} = {_decimal_text(self.jib_decimal)} × "
                f"{1 - burden:.4f}, the same royalty burden as our DOI. Our DOI ({_decimal_text(w.wi)} / "
                f"{_decimal_text(w.nri)}) is probably stale (an assignment or a non-consent payout reversion)."
            )
        if self.pattern == "jib_only":
            return (
                f"Only the JIB differs: the operator's own revenue deck still pays our DOI NRI "
                f"{_decimal_text(w.nri)}, so WI {_decimal_text(self.jib_decimal or Decimal(0))} on the bill "
                f"is most likely a billing error. Pay {money(self.jib_expected)} and dispute "
                f"{money(self.jib_billed - self.jib_expected)}."
            )
        if self.pattern == "stub_only":
            return (
                f"Only the revenue stub differs: the JIB bills our DOI WI {_decimal_text(w.wi)}, so the NRI "
                f"{_decimal_text(self.stub_decimal or Decimal(0))} may reflect a royalty change we have no "
                "record of. Hold the difference in suspense until the division order is confirmed."
            )
        return (
            "The JIB and the stub disagree with our DOI and with each other, so neither is a safe basis: "
            "book at DOI and ask the operator for ownership support."
        )

    def facts(self) -> dict[str, Any]:
        """The numbers a person needs, as the tools report them to the model."""
        w = self.well
        return {
            "well_id": w.well_id,
            "well_name": w.well_name,
            "state": w.state,
            "operator": w.operator,
            "doi_wi": _decimal_text(w.wi),
            "doi_nri": _decimal_text(w.nri),
            "doi_effective_date": w.effective_date,
            "jib_decimal": _decimal_text(self.jib_decimal)
            if self.jib_decimal is not None
            else None,
            "stub_decimal": _decimal_text(self.stub_decimal)
            if self.stub_decimal is not None
            else None,
            "jib_differs": self.jib_differs,
            "stub_differs": self.stub_differs,
            "jib_billed": str(self.jib_billed),
            "jib_expected_at_doi": str(self.jib_expected),
            "jib_difference": str(self.jib_billed - self.jib_expected),
            "stub_paid": str(self.stub_paid),
            "stub_expected_at_doi": str(self.stub_expected),
            "stub_difference": str(self.stub_paid - self.stub_expected),
            "pattern": self.pattern,
            "recommended": self.recommended,
            "recommended_label": resolution_label(self.recommended),
            "reasoning": self.reasoning,
        }


def stub_net_at(
    line_value: Decimal, taxes: Decimal, deductions: Decimal, decimal: Decimal
) -> Decimal:
    return cents((line_value - taxes - deductions) * decimal)


def find_mismatches(data: CloseData) -> list[Mismatch]:
    """Every well whose billed WI or paid NRI differs from the DOI beyond the tolerance."""
    out: list[Mismatch] = []
    for well in data.wells.values():
        jib = [j for j in data.jib if j.well_id == well.well_id]
        stubs = [r for r in data.revenue if r.well_id == well.well_id]
        jib_decimals = {j.owner_decimal for j in jib}
        stub_decimals = {r.owner_decimal for r in stubs}
        # the decimal furthest from the DOI speaks for the document
        jib_decimal = max(jib_decimals, key=lambda d: abs(d - well.wi)) if jib_decimals else None
        stub_decimal = (
            max(stub_decimals, key=lambda d: abs(d - well.nri)) if stub_decimals else None
        )
        m = Mismatch(
            well=well,
            jib_decimal=jib_decimal,
            stub_decimal=stub_decimal,
            jib_billed=sum((j.owner_net_amount for j in jib), Decimal("0.00")),
            jib_expected=sum((cents(j.gross_amount * well.wi) for j in jib), Decimal("0.00")),
            stub_paid=sum((r.owner_net_value for r in stubs), Decimal("0.00")),
            stub_expected=sum(
                (
                    stub_net_at(r.gross_value, r.gross_taxes, r.gross_deductions, well.nri)
                    for r in stubs
                ),
                Decimal("0.00"),
            ),
        )
        if m.jib_differs or m.stub_differs:
            out.append(m)
    return out


def line_math_errors(data: CloseData) -> list[dict[str, str]]:
    """JIB lines whose gross × decimal is not the billed net to the cent."""
    return [
        {
            "invoice_no": j.invoice_no,
            "well_id": j.well_id,
            "description": j.description,
            "billed": str(j.owner_net_amount),
            "computed": str(cents(j.gross_amount * j.owner_decimal)),
        }
        for j in data.jib
        if cents(j.gross_amount * j.owner_decimal) != j.owner_net_amount
    ]
