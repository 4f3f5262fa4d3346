"""The eleven files: each one's columns and the parser of each cell (FILES, SPECS), and
each parser's plain form, which the fast path matches whole rows against (PLAIN)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from bot.close.data.rows import (
    AccrualRow,
    AfeRow,
    DoiRow,
    JibHistoryLine,
    JibLine,
    JoaRow,
    PriceRow,
    ProductionRow,
    RevenueLine,
    TbRow,
)
from bot.close.data.values import (
    ACCRUAL_KINDS,
    CATEGORIES,
    DATE_RE,
    PERIOD_RE,
    PRODUCTS,
    cents,
    parse_amount,
)

Parser = Callable[[str], Any]


def _text(raw: str) -> str:
    return sys.intern(raw)  # names, wells and invoices repeat: one string each


def _required(raw: str) -> str:
    if not raw:
        raise ValueError("a value")
    return sys.intern(raw)


@lru_cache(maxsize=4096)
def _month(raw: str) -> str:
    if not PERIOD_RE.match(raw):
        raise ValueError("a month as YYYY-MM")
    return raw


def _optional_month(raw: str) -> str:
    return _month(raw) if raw else ""


def _date(raw: str) -> str:
    if not DATE_RE.match(raw):
        raise ValueError("a date as YYYY-MM-DD")
    return raw


PLAIN_MONEY = re.compile(r"-?[0-9]+\.[0-9][0-9]")
PLAIN_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def _money(raw: str) -> Decimal:
    if PLAIN_MONEY.fullmatch(raw):  # what most exports write: no separators, two places
        return Decimal(raw)
    try:
        value = parse_amount(raw)
    except (ValueError, InvalidOperation):
        raise ValueError("an amount such as 1510.00, $1,510.00 or (4,200.00)") from None
    if value != cents(value):
        raise ValueError("an amount in whole cents")
    return value


@lru_cache(maxsize=1 << 14)
def _number(raw: str) -> Decimal:
    if PLAIN_NUMBER.fullmatch(raw):
        return Decimal(raw)
    try:
        return parse_amount(raw)
    except (ValueError, InvalidOperation):
        raise ValueError("a number") from None


@lru_cache(maxsize=1 << 14)
def _decimal_share(raw: str) -> Decimal:
    value = _number(raw)
    if value.as_tuple().exponent < -8:  # type: ignore[operator]
        raise ValueError("a decimal with at most 8 places")
    return value


@lru_cache(maxsize=1 << 14)
def _product(raw: str) -> str:
    try:
        return PRODUCTS[raw.strip().casefold()]
    except KeyError:
        raise ValueError("a product: oil, gas, ngl (or condensate)") from None


@lru_cache(maxsize=1 << 14)
def _category(raw: str) -> str:
    try:
        return CATEGORIES[raw.strip().casefold()]
    except KeyError:
        raise ValueError(
            "a cost category: LOE, Workover, Overhead, IDC, ICC, TDC, TCC or LWE"
        ) from None


def _accrual_kind(raw: str) -> str:
    value = raw.strip().casefold()
    if value not in ACCRUAL_KINDS:
        raise ValueError("revenue or loe")
    return value


def _account(raw: str) -> str:
    if not raw.isdigit():
        raise ValueError("an account number")
    return raw


@dataclass(frozen=True, slots=True)
class FileSpec:
    name: str
    row_type: type
    columns: dict[str, Parser]
    attr: str = ""  # CloseData's attribute for the rows
    extra: tuple[Any, ...] = ()  # after the line number, e.g. the file of a RevenueLine


_REVENUE_COLUMNS: dict[str, Parser] = {
    "check_no": _required,
    "payor": _required,
    "property_no": _text,
    "well_id": _text,  # blank: mapped through the DOI's operator_property_no
    "sale_month": _month,
    "product": _product,
    "gross_volume": _number,
    "price": _number,
    "gross_value": _money,
    "gross_taxes": _money,
    "gross_deductions": _money,
    "owner_decimal": _decimal_share,
    "owner_net_value": _money,
}

FILES: tuple[FileSpec, ...] = (
    FileSpec(
        "doi.csv",
        DoiRow,
        {
            "well_id": _required,
            "well_name": _required,
            "state": _required,
            "operator": _required,
            "operator_property_no": _text,
            "wi": _decimal_share,
            "nri": _decimal_share,
            "royalty": _decimal_share,
            "orri": _decimal_share,
            "effective_from": _date,
            "first_prod_month": _optional_month,
        },
        attr="doi",
    ),
    FileSpec(
        "jib.csv",
        JibLine,
        {
            "operator": _required,
            "invoice_no": _required,
            "service_month": _month,
            "property_no": _text,
            "well_id": _text,
            "afe_no": _text,
            "cost_category": _category,
            "description": _text,
            "gross_amount": _money,
            "owner_decimal": _decimal_share,
            "owner_net_amount": _money,
        },
        attr="jib",
    ),
    FileSpec("revenue.csv", RevenueLine, _REVENUE_COLUMNS, attr="revenue"),
    FileSpec(
        "jib_history.csv",
        JibHistoryLine,
        {
            "operator": _required,
            "invoice_no": _required,
            "service_month": _month,
            "well_id": _required,
            "cost_category": _category,
            "gross_amount": _money,
            "owner_decimal": _decimal_share,
            "owner_net_amount": _money,
        },
    ),
    FileSpec(
        "revenue_history.csv",
        RevenueLine,
        _REVENUE_COLUMNS,
        extra=("revenue_history.csv",),
    ),
    FileSpec(
        "production.csv",
        ProductionRow,
        {"well_id": _required, "month": _month, "product": _product, "volume": _number},
        attr="production",
    ),
    FileSpec(
        "prices.csv",
        PriceRow,
        {
            "month": _month,
            "product": _product,
            "benchmark_price": _number,
            "differential": _number,
        },
        attr="prices",
    ),
    FileSpec(
        "afe.csv",
        AfeRow,
        {
            "afe_no": _required,
            "well_id": _required,
            "description": _text,
            "approved_gross": _money,
            "billed_to_date_gross": _money,
        },
        attr="afe",
    ),
    FileSpec(
        "joa.csv",
        JoaRow,
        {
            "operator": _required,
            "well_id": _required,
            "overhead_producing": _money,
            "overhead_drilling": _money,
            "effective_from": _date,
        },
        attr="joa",
    ),
    FileSpec(
        "accruals.csv",
        AccrualRow,
        {
            "kind": _accrual_kind,
            "well_id": _required,
            "product_or_category": _required,
            "month": _month,
            "amount": _money,
        },
        attr="accruals",
    ),
    FileSpec(
        "tb_activity.csv",
        TbRow,
        {
            "month": _month,
            "account": _account,
            "account_name": _text,
            "debit": _money,
            "credit": _money,
        },
        attr="tb_activity",
    ),
)

SPECS = {spec.name: spec for spec in FILES}

_TEXT = r"(?:[^\s\x1f](?:[^\x1f]*[^\s\x1f])?)?"
_MONTH = r"[0-9]{4}-(?:0[1-9]|1[0-2])"
# each parser's plain form (no spaces around, no separators, canonical names) and what turns
# such a cell into the parser's value without the parser's checks (the pattern made them)
PLAIN: dict[Parser, tuple[str, Callable[[str], Any]]] = {
    _text: (_TEXT, sys.intern),
    _required: (r"[^\s\x1f](?:[^\x1f]*[^\s\x1f])?", sys.intern),
    _month: (_MONTH, sys.intern),
    _optional_month: (f"(?:{_MONTH})?", sys.intern),
    _date: (_MONTH + r"-(?:0[1-9]|[12][0-9]|3[01])", sys.intern),
    _money: (r"-?[0-9]+\.[0-9][0-9]", Decimal),
    _number: (r"-?[0-9]+(?:\.[0-9]+)?", _number),
    _decimal_share: (r"-?[0-9]+(?:\.[0-9]{1,8})?", _decimal_share),
    _product: (r"oil|gas|ngl", sys.intern),
    _category: (r"LOE|Workover|Overhead|IDC|ICC|TDC|TCC|LWE", sys.intern),
    _accrual_kind: (r"revenue|loe", sys.intern),
    _account: (r"[0-9]+", sys.intern),
}
HISTORY_FILES = ("jib_history.csv", "revenue_history.csv")
