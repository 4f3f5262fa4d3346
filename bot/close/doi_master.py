"""Master data: the DOI as effective-dated rows (the CSV plus rows closebot added), wells
by property number, JOA overhead rates and prices (the severance rates are data:
bot/close/rates/)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal

from bot.close.data import CloseData, DoiRow, JoaRow, add_months

TOLERANCE = Decimal("0.000001")  # convention, see CLOSE.md
SEVERANCE_TOLERANCE = Decimal("0.0025")  # 0.25 percentage points, convention
ACCRUAL_WINDOW = 3  # months
MATERIALITY = Decimal("2500.00")
FLUX_PERCENT = Decimal("0.10")
FLUX_AMOUNT = Decimal("5000.00")
APPROVAL_LIMIT = Decimal("250000.00")
STALE_MONTHS = 24

# The chart of accounts (placeholder numbers, CLOSE.md).
ACCOUNT_NAMES: dict[str, str] = {
    "1050": "Cash / Purchaser Clearing",
    "1210": "Accrued Revenue Receivable",
    "1215": "Revenue Underpayment Claim",
    "1220": "Severance Refund Receivable",
    "1390": "JIB Receivable - Disputed",
    "1395": "JIB Suspense",
    "1610": "Intangible Drilling Costs (IDC)",
    "1615": "Intangible Completion Costs (ICC)",
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


def money(d: Decimal) -> str:
    """$1,234.56, with the sign in front: -$12.00."""
    sign = "-" if d < 0 else ""
    return f"{sign}${abs(d):,.2f}"


def signed_money(d: Decimal) -> str:
    return ("+" if d > 0 else "") + money(d)


def dec8(d: Decimal) -> str:
    return f"{d:.8f}"


@dataclass(frozen=True)
class Master:
    """The DOI in force for any well and month, wells by property number, JOA rates.

    Indexed once by well, property number and operator, so each lookup reads one well's
    rows, never the whole DOI.
    """

    rows: tuple[DoiRow, ...]
    joa: tuple[JoaRow, ...]
    _by_well: dict[str, list[DoiRow]] = field(init=False, repr=False, compare=False)
    _by_property: dict[str, list[DoiRow]] = field(init=False, repr=False, compare=False)
    _by_operator: dict[str, list[str]] = field(init=False, repr=False, compare=False)
    _joa: dict[str, list[JoaRow]] = field(init=False, repr=False, compare=False)
    _names: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_well: dict[str, list[DoiRow]] = {}
        by_property: dict[str, list[DoiRow]] = {}
        operators: dict[str, dict[str, None]] = {}
        for r in self.rows:
            by_well.setdefault(r.well_id, []).append(r)
            if r.operator_property_no:
                by_property.setdefault(r.operator_property_no, []).append(r)
            operators.setdefault(r.operator, {})[r.well_id] = None
        joa: dict[str, list[JoaRow]] = {}
        for j in self.joa:
            joa.setdefault(j.well_id, []).append(j)
        object.__setattr__(self, "_by_well", by_well)
        object.__setattr__(self, "_by_property", by_property)
        object.__setattr__(self, "_by_operator", {o: sorted(w) for o, w in operators.items()})
        object.__setattr__(self, "_joa", joa)
        object.__setattr__(self, "_names", {})

    @classmethod
    def of(cls, data: CloseData, added: list[DoiRow] = ()) -> Master:  # type: ignore[assignment]
        return cls(rows=tuple(data.doi) + tuple(added), joa=tuple(data.joa))

    def well_ids(self) -> list[str]:
        return sorted(self._by_well)

    def in_force(self, well_id: str, month: str) -> DoiRow | None:
        """The row with the latest effective_from on or before the first of `month`."""
        rows = self._by_well.get(well_id)
        if not rows:
            return None
        if len(rows) == 1:
            return rows[0]  # the earliest row also stands for months before it
        day = f"{month}-01" if len(month) == 7 else month
        candidates = [r for r in rows if r.effective_from <= day]
        if not candidates:
            # a well booked before its first DOI row still needs a decimal: use the earliest
            return rows[0]
        return max(candidates, key=lambda r: (r.effective_from, r.source != "doi.csv", r.line))

    def has(self, well_id: str) -> bool:
        """Is the well in the DOI?"""
        return well_id in self._by_well

    def latest(self, well_id: str) -> DoiRow | None:
        rows = self._by_well.get(well_id)
        return max(rows, key=lambda r: (r.effective_from, r.source != "doi.csv")) if rows else None

    def name(self, well_id: str) -> str:
        name = self._names.get(well_id)
        if name is None:
            row = self.latest(well_id)
            name = self._names[well_id] = row.well_name if row else well_id
        return name

    def by_property(self, operator: str, property_no: str) -> str | None:
        for r in self._by_property.get(property_no, ()):
            if not operator or r.operator == operator:
                return r.well_id
        return None

    def operator_wells(self, operator: str) -> list[str]:
        return self._by_operator.get(operator, [])

    def overhead_rate(self, well_id: str, month: str, *, drilling: bool) -> Decimal | None:
        day = f"{month}-01"
        rows = [j for j in self._joa.get(well_id, ()) if j.effective_from <= day]
        if not rows:
            return None
        row = max(rows, key=lambda j: j.effective_from)
        return row.overhead_drilling if drilling else row.overhead_producing


def burden_for(row: DoiRow, wi: Decimal, nri: Decimal) -> tuple[Decimal, str]:
    """The royalty a new row with `wi` / `nri` needs so NRI = WI × (1 − royalty − ORRI) holds
    (ORRI kept), and why it changed ("" when the row's own royalty already fits)."""
    if abs(wi * (1 - row.royalty - row.orri) - nri) <= TOLERANCE or not wi:
        return row.royalty, ""
    royalty = (1 - row.orri - nri / wi).quantize(Decimal("0.00000001"))
    return royalty, (
        f"royalty {dec8(row.royalty)} → {dec8(royalty)}: the burden NRI {dec8(nri)} implies at WI "
        f"{dec8(wi)} (ORRI {dec8(row.orri)} kept), so NRI = WI × (1 − royalty − ORRI) still holds"
    )


def with_change(row: DoiRow, *, wi: Decimal, nri: Decimal, effective_from: str) -> DoiRow:
    """A new DOI row from `effective_from`, same well and ORRI; its royalty the burden the new
    decimals imply (`burden_for`), so the row keeps NRI = WI × (1 − royalty − ORRI)."""
    royalty, _ = burden_for(row, wi, nri)
    return replace(
        row,
        wi=wi,
        nri=nri,
        royalty=royalty,
        effective_from=effective_from,
        line=0,
        source="closebot",
    )


def trailing_months(period: str, n: int = 3) -> list[str]:
    """The n service months before `period`, oldest first: 2026-10 → Jul, Aug, Sep."""
    return [add_months(period, -k) for k in range(n, 0, -1)]
