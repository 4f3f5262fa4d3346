"""Which of the eleven kinds a table is, for which period, and how its columns map onto
closebot's, from the headers' names and the cells' content."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from bot.close.data import CATEGORIES, FILES, MONTHS, FileSpec, parse_amount
from bot.close.imports.mapping import FILE_LEVEL, fixed
from bot.close.imports.sheet import Sheet
from bot.close.imports.wells import WellIndex

FILE_KINDS: dict[str, FileSpec] = {spec.name: spec for spec in FILES}

# What operators, purchasers and accounting exports call closebot's columns.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "operator": ("operator name", "operated by", "company", "operator company"),
    "invoice_no": (
        "invoice",
        "invoice number",
        "inv no",
        "inv",
        "invoice num",
        "jib no",
        "jib number",
        "billing no",
    ),
    "service_month": (
        "svc month",
        "service period",
        "service date",
        "activity month",
        "acctg month",
        "accounting month",
    ),
    "property_no": (
        "property",
        "property number",
        "prop no",
        "property id",
        "op property",
        "operator property",
        "lease no",
        "cost center",
        "property code",
        "prop",
        "prop id",
    ),
    "well_id": (
        "well",
        "well code",
        "well no",
        "well name",
        "well id",
        "lease",
        "lease name",
        "well lease",
        "property name",
        "well property",
    ),
    "afe_no": ("afe", "afe number"),
    "cost_category": (
        "category",
        "cost type",
        "expense type",
        "type",
        "cost code",
        "major",
        "acct code",
        "account code",
        "acct",
        "jib code",
        "cost category",
        "expense category",
        "category code",
        "billing category",
        "code",
    ),
    "description": ("desc", "memo", "line description", "detail", "item"),
    "gross_amount": (
        "gross",
        "gross amt",
        "8 8 amount",
        "gross cost",
        "total gross",
        "100 amount",
        "gross invoice",
    ),
    "owner_decimal": (
        "decimal",
        "your decimal",
        "interest",
        "owner interest",
        "your interest",
        "wi",
        "working interest",
        "nri",
        "net revenue interest",
        "int",
        "owner dec",
        "decimal interest",
        "owner",
        "owner pct",
        "owner percent",
        "wi pct",
        "nri pct",
        "interest pct",
        "owner decimal interest",
    ),
    "owner_net_amount": (
        "net",
        "net amt",
        "owner net",
        "your share",
        "owner amount",
        "net amount",
        "your net",
        "share",
        "owner share",
        "your amount",
        "net due",
        "amount due",
    ),
    "check_no": ("check", "check number", "chk no", "payment no", "check num"),
    "payor": ("payer", "purchaser", "remitter", "payor name", "purchaser name"),
    "sale_month": ("sales month", "production month", "prod month", "prod date", "sale date"),
    "product": ("commodity", "product code", "prod"),
    "gross_volume": ("volume", "gross vol", "qty", "quantity", "8 8 volume"),
    "price": ("unit price", "avg price", "price per unit"),
    "gross_value": ("value", "gross revenue", "8 8 value", "gross val"),
    "gross_taxes": ("taxes", "severance", "sev tax", "production taxes", "gross tax"),
    "gross_deductions": ("deductions", "deducts", "gathering", "transportation", "gross deducts"),
    "owner_net_value": (
        "net value",
        "owner net",
        "your share",
        "net revenue",
        "owner net revenue",
        "net amt",
        "net",
    ),
    "well_name": ("name", "well name"),
    "wi": ("working interest",),
    "nri": ("net revenue interest", "revenue interest"),
    "royalty": ("royalty burden", "lessor royalty"),
    "orri": ("overriding royalty",),
    "effective_from": ("effective", "effective date", "eff date"),
    "first_prod_month": ("first production", "first prod"),
    "volume": ("gross volume", "qty", "quantity"),
    "benchmark_price": ("benchmark", "index price"),
    "differential": ("diff", "basis"),
    "approved_gross": ("approved", "afe amount", "approved amount"),
    "billed_to_date_gross": ("billed to date", "billed"),
    "overhead_producing": ("producing overhead", "ovhd producing"),
    "overhead_drilling": ("drilling overhead", "ovhd drilling"),
    "account_name": ("name", "account description"),
    "debit": ("debits", "dr"),
    "credit": ("credits", "cr"),
    "month": ("period", "production month"),
}
# Where a kind names the operator or payor a file comes from (its "source").
SOURCE_COLUMN = {
    "jib.csv": "operator",
    "jib_history.csv": "operator",
    "revenue.csv": "payor",
    "revenue_history.csv": "payor",
    "joa.csv": "operator",
}
MIN_SHARE = 0.6  # of a kind's columns that must be found to say the file is of that kind


def norm(header: str) -> str:
    """'Owner Net ($)' → 'owner net'; 'Invoice #' → 'invoice'; 'owner_net_amount' → 'owner net amount'."""
    text = re.sub(r"[^a-z0-9]+", " ", header.casefold().replace("no.", "no"))
    text = re.sub(r"\b(number|num|no|nbr)\b$", "no", text.strip()) if text.strip() else ""
    return re.sub(r"\s+", " ", text).strip()


def layout_key(header: list[str]) -> str:
    """The header layout, as a short hash: the same export next month has the same one."""
    return hashlib.sha256("\x1f".join(norm(h) for h in header).encode()).hexdigest()[:16]


@dataclass
class Proposal:
    kind: str
    mapping: dict[str, str]  # closebot column → the file's header ("" when none)
    exact: bool  # every column found under closebot's own name
    matched: int
    missing_required: list[str]

    @property
    def share(self) -> float:
        return self.matched / len(FILE_KINDS[self.kind].columns)


def optional(kind: str, column: str) -> bool:
    """A column closebot can do without (text that may be blank)."""
    parse = FILE_KINDS[kind].columns[column]
    return parse.__name__ == "_text"


def _names(column: str) -> list[str]:
    return [norm(column), *(norm(s) for s in SYNONYMS.get(column, ()))]


def _column(sheet: Sheet, header: str) -> list[str]:
    i = sheet.header.index(header)
    return [cells[i] for _, cells in sheet.rows[:50] if i < len(cells)]


def _numbers(values: list[str]) -> list[Decimal]:
    out = []
    for v in values:
        try:
            out.append(parse_amount(v))
        except (ValueError, InvalidOperation):
            continue
    return out


SHARES = ("owner_decimal", "wi", "nri", "royalty", "orri")


def _name_fits(column: str, values: list[str]) -> bool:
    """A column found by what others call it holds what `column` holds: a decimal interest
    ('Owner', 'Owner %') holds shares (0.275 or 27.5%), not the owner's name."""
    if column not in SHARES:
        return True
    filled = [v.strip().rstrip("%") for v in values if v.strip()]
    return len(_numbers(filled)) == len(filled)


def _content_fits(
    kind: str, column: str, values: list[str], wells: WellIndex | None = None
) -> bool:
    """Does a column's content look like `column`? Used only when no name matched."""
    filled = [v for v in values if v]
    if not filled:
        return False
    if column in ("well_id", "property_no") and wells is not None:
        ties = [wells.tie(v) for v in filled]
        hows = {t.how for t in ties if t.well}
        if len([t for t in ties if t.well]) * 2 < len(filled):
            return False
        return ("property" in hows) if column == "property_no" else bool(hows - {"property"})
    if column == "cost_category":
        from bot.close.imports.convert import CATEGORY_WORDS  # convert imports this module

        words = {*CATEGORIES, *CATEGORY_WORDS}
        return all(" ".join(v.casefold().split()) in words for v in filled)
    numbers = _numbers(filled)
    if column in ("owner_decimal", "wi", "nri", "royalty", "orri"):
        return len(numbers) == len(filled) and all(Decimal(0) <= n <= 1 for n in numbers)
    if column in ("service_month", "sale_month", "month", "first_prod_month"):
        return all(month_of(v) for v in filled)
    if column == "product":
        return all(v.casefold() in ("oil", "gas", "ngl", "condensate") for v in filled)
    return False


def propose(sheet: Sheet, kind: str, wells: WellIndex | None = None) -> Proposal:
    """The best mapping of `sheet`'s headers onto `kind`'s columns: closebot's own name first,
    then what operators call it, then content (decimals between 0 and 1, months, products,
    cost categories, the DOI's wells and property numbers), then — for a column the file
    lacks — one value for the whole file from its title block ('Operator: Red Butte')."""
    spec = FILE_KINDS[kind]
    by_norm: dict[str, list[str]] = {}
    for h in sheet.header:
        if h:
            by_norm.setdefault(norm(h), []).append(h)
    mapping: dict[str, str] = {}
    used: set[str] = set()
    exact = True
    for column in spec.columns:  # closebot's own names
        found = next((h for h in by_norm.get(norm(column), []) if h not in used), None)
        if found:
            mapping[column] = found
            used.add(found)
    for column in spec.columns:  # what others call them
        if column in mapping:
            continue
        for name in _names(column)[1:]:
            found = next(
                (
                    h
                    for h in by_norm.get(name, [])
                    if h not in used and _name_fits(column, _column(sheet, h))
                ),
                None,
            )
            if found:
                mapping[column], exact = found, False
                used.add(found)
                break
    for column in spec.columns:  # by content
        if column in mapping:
            continue
        for h in sheet.header:
            if h and h not in used and _content_fits(kind, column, _column(sheet, h), wells):
                mapping[column], exact = h, False
                used.add(h)
                break
    matched = len(mapping)
    for column in spec.columns:  # what the title says once for the whole file
        if column not in mapping and column in FILE_LEVEL:
            value = _title_value(sheet, column, wells)
            if value:
                mapping[column], exact = fixed(value), False
    missing = [c for c in spec.columns if c not in mapping and not optional(kind, c)]
    full = {c: mapping.get(c, "") for c in spec.columns}
    if any(not v for v in full.values()):
        exact = exact and all(optional(kind, c) for c, v in full.items() if not v)
    return Proposal(kind=kind, mapping=full, exact=exact, matched=matched, missing_required=missing)


def _title_value(sheet: Sheet, column: str, wells: WellIndex | None) -> str:
    """A value the title block gives for `column`: 'Operator: Red Butte', or a title line
    that names one of the DOI's operators."""
    names = set(_names(column))
    for label, value in sheet.title_values.items():
        if norm(label) in names:
            return value
    if column == "operator" and wells is not None:
        for title in sheet.skipped_titles:
            found = wells.operator_in(title)
            if found:
                return found
    return ""


def recognise(sheet: Sheet, filename: str, wells: WellIndex | None = None) -> list[Proposal]:
    """Every kind the table could be, best first; an empty list when none fits."""
    stem = re.sub(r"\.[a-z0-9]+$", "", filename.casefold())
    history = "hist" in stem
    candidates = []
    for kind in FILE_KINDS:
        p = propose(sheet, kind, wells)
        if p.share < MIN_SHARE:
            continue
        named = stem == kind.removesuffix(".csv")
        hist_fit = ("history" in kind) == history
        candidates.append((named, p.share, p.matched, hist_fit, p))
    candidates.sort(key=lambda c: (c[0], c[1], c[2], c[3]), reverse=True)
    return [c[-1] for c in candidates]


def clear_kind(proposals: list[Proposal], filename: str) -> Proposal | None:
    """The kind, when the file says it plainly; None when a person must say."""
    if not proposals:
        return None
    best = proposals[0]
    if len(proposals) == 1:
        return best
    second = proposals[1]
    stem = re.sub(r"\.[a-z0-9]+$", "", filename.casefold())
    if stem == best.kind.removesuffix(".csv"):
        return best
    if (best.share, best.matched) != (second.share, second.matched):
        return best
    # the same columns (revenue and its history): only the file's name tells them apart
    pair = {best.kind, second.kind}
    if pair == {"revenue.csv", "revenue_history.csv"}:
        if "hist" in stem:
            return next(p for p in proposals[:2] if p.kind == "revenue_history.csv")
        if any(word in stem for word in ("revenue", "stub", "check")):
            return next(p for p in proposals[:2] if p.kind == "revenue.csv")
    return None


MONTH_NAMES = {m[:3].casefold(): i for i, m in enumerate(MONTHS, start=1)}


def month_of(raw: str) -> str | None:
    """YYYY-MM from what exports write for a month: 2026-09, 2026-09-01, 09/2026, 9/1/2026,
    Sep 2026, September-2026, Sep-26, 2026/09."""
    text = raw.strip()
    if m := re.fullmatch(r"(\d{4})[-/](\d{1,2})(?:[-/]\d{1,2})?(?: 00:00:00)?", text):
        year, month = int(m[1]), int(m[2])
    elif m := re.fullmatch(r"(\d{1,2})/(?:\d{1,2}/)?(\d{4})", text):
        year, month = int(m[2]), int(m[1])
    elif m := re.fullmatch(r"([A-Za-z]{3,9})[-\s.,']*(\d{2}|\d{4})", text):
        month = MONTH_NAMES.get(m[1][:3].casefold(), 0)
        year = int(m[2]) + (2000 if len(m[2]) == 2 else 0)
    else:
        return None
    if not 1 <= month <= 12 or not 1900 < year < 2200:
        return None
    return f"{year:04d}-{month:02d}"


def date_of(raw: str) -> str | None:
    """YYYY-MM-DD from 2026-09-01, 2026-09-01 00:00:00 or 9/1/2026 (US order, as US exports)."""
    text = raw.strip()
    if m := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?: 00:00:00)?", text):
        return f"{m[1]}-{m[2]}-{m[3]}"
    if m := re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{4})", text):
        return f"{m[3]}-{int(m[1]):02d}-{int(m[2]):02d}"
    return None
