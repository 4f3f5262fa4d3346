"""Step 7: flux against last month, with revenue split into volume and price."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from bot.close.checks import (
    Close,
)
from bot.close.data import (
    ZERO,
    add_months,
    cents,
    parse_amount,
)
from bot.close.doi_master import (
    ACCOUNT_NAMES,
    FLUX_AMOUNT,
    FLUX_PERCENT,
    TOLERANCE,
    dec8,
    money,
)

# -- step 7: flux ------------------------------------------------------------------

PNL_ACCOUNTS = ("4010", "4020", "4030", "4090", "6110", "6130", "6210", "6220", "6250")


def activity(lines: Iterable[dict[str, Any]]) -> dict[str, Decimal]:
    """Debits less credits per account."""
    out: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for line in lines:
        out[line["account"]] += line["debit"] - line["credit"]
    return out


def tb_prior(close: Close) -> dict[str, Decimal] | None:
    """The prior month's activity per account in tb_activity.csv, or None if it has none."""
    prior_month = add_months(close.period, -1)
    rows = [t for t in close.data.tb_activity if t.month == prior_month]
    if not rows:
        return None
    out: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for t in rows:
        out[t.account] += t.debit - t.credit
    return out


def basis_differences(
    posted: dict[str, Decimal], tb: dict[str, Decimal]
) -> list[tuple[str, Decimal, Decimal]]:
    """P&L accounts where tb_activity.csv disagrees with closebot's posted prior month:
    (account, posted, tb) with revenue shown as credits."""
    out = []
    for account in sorted(set(PNL_ACCOUNTS) & (set(posted) | set(tb))):
        a, b = posted.get(account, ZERO), tb.get(account, ZERO)
        if a != b:
            sign = -1 if account.startswith("4") else 1
            out.append((account, a * sign, b * sign))
    return out


def flux(
    close: Close, lines: Iterable[dict[str, Any]], prior: dict[str, Decimal] | None = None
) -> list[dict[str, Any]]:
    """P&L activity by account this month vs the prior month's (closebot's posted month when
    given, else tb_activity.csv), flagged by the ±10 % and ±$5,000 rule."""
    if prior is None:
        prior = tb_prior(close) or defaultdict(lambda: ZERO)
    prior = defaultdict(lambda: ZERO, prior)
    now: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for line in lines:
        now[line["account"]] += line["debit"] - line["credit"]
    out = []
    for account in sorted(set(PNL_ACCOUNTS) & (set(prior) | set(now))):
        sign = -1 if account.startswith("4") else 1
        a, b = prior[account] * sign, now[account] * sign
        change = b - a
        pct = change / abs(a) if a else None
        flagged = abs(change) > FLUX_AMOUNT and (pct is None or abs(pct) > FLUX_PERCENT)
        out.append(
            {
                "account": account,
                "name": ACCOUNT_NAMES[account],
                "prior": a,
                "current": b,
                "change": change,
                "percent": pct,
                "flagged": flagged,
            }
        )
    return out


def revenue_split(close: Close) -> list[dict[str, Any]]:
    """Per well × product: this month's checks for a sale month vs the prior sale month's in
    the history, split volume / price. Stub lines of one well, product and month are summed
    (a check may pay a product on several lines); the price is their volume-weighted mean."""
    current: dict[tuple[str, str, str], list[Any]] = {}
    for r, row in close.known_revenue():
        key = (r.well_id, r.product, r.sale_month)
        sums = current.get(key)
        if sums is None:
            nri = row.nri if abs(r.owner_decimal - row.nri) <= TOLERANCE else r.owner_decimal
            current[key] = [r.gross_volume, r.gross_value, r.price * r.gross_volume, nri, row]
        else:
            sums[0] += r.gross_volume
            sums[1] += r.gross_value
            sums[2] += r.price * r.gross_volume
    history = close.data.history.sales
    out = []
    for (well_id, product, month), (volume, value, pv, nri, row) in current.items():
        prev_month = add_months(month, -1)
        prev = history.get((well_id, product, prev_month))
        if prev is None or not prev[0] or not volume:
            continue
        p_volume, p_value, p_pv = prev
        p_price, price = p_pv / p_volume, pv / volume
        before = cents(p_value * nri)
        after = cents(value * nri)
        volume_part = cents((volume - p_volume) * p_price * nri)
        price_part = cents((price - p_price) * volume * nri)
        change = after - before
        pct = change / before if before else None
        out.append(
            {
                "well_id": well_id,
                "well_name": row.well_name,
                "product": product,
                "prior_month": prev_month,
                "month": month,
                "prior": before,
                "current": after,
                "change": change,
                "percent": pct,
                "volume_part": volume_part,
                "price_part": price_part,
                "nri": dec8(nri),
                "flagged": abs(change) > FLUX_AMOUNT and (pct is None or abs(pct) > FLUX_PERCENT),
            }
        )
    return out


def flux_explanation(close: Close, account: str) -> str:
    """A draft explanation from the documents behind an account's movement."""
    if account in ("6210", "6220", "6250"):
        category = {"6210": "LOE", "6220": "Workover", "6250": "Overhead"}[account]
        lines = sorted(
            (j for j, _ in close.known_jib() if j.cost_category == category),
            key=lambda j: -j.owner_net_amount,
        )[:3]
        return "; ".join(
            f"{close.master.name(j.well_id)}: {j.description} {money(j.owner_net_amount)} ({j.invoice_no})"
            for j in lines
        )
    return ""


ADJUSTMENT_RE = re.compile(
    r"^\s*dr\.?\s*(?P<dr>\d{4})\b[^/]*?/\s*cr\.?\s*(?P<cr>\d{4})\b\s*(?P<amount>\(?-?\$?[\d,]+(?:\.\d+)?\)?)(?![\d.])\s*[-—:,]?\s*(?P<memo>.*)$",
    re.IGNORECASE,
)


def parse_adjustment(text: str) -> dict[str, str]:
    """'Dr 6220 / Cr 2115 1,500.00 — accrue the Carter workover' → the entry; ValueError if not."""
    m = ADJUSTMENT_RE.match(text)
    if not m:
        raise ValueError(f"{text[:80]!r} is not an entry written 'Dr ACCOUNT / Cr ACCOUNT AMOUNT'")
    dr, cr = m.group("dr"), m.group("cr")
    for account in (dr, cr):
        if account not in ACCOUNT_NAMES:
            raise ValueError(f"account {account} is not in the chart of accounts")
    if dr == cr:
        raise ValueError("the debit and the credit are the same account")
    try:
        amount = parse_amount(m.group("amount"))
    except (ValueError, ArithmeticError):
        raise ValueError(f"{m.group('amount')!r} is not an amount") from None
    if amount <= 0:
        raise ValueError("the amount must be more than zero")
    if amount != cents(amount):
        raise ValueError(f"{m.group('amount')} has more than two decimals: give it to the cent")
    return {
        "debit": dr,
        "credit": cr,
        "amount": str(cents(amount)),
        "memo": m.group("memo").strip(),
    }


def _flux_label(i: dict[str, Any]) -> str:
    if i.get("account"):
        return f"{i['account']} {i['name']}"
    return f"{i['well_name']} {i['product']}"


def _flux_line(i: dict[str, Any]) -> str:
    pct = Decimal(str(i["percent"])) if i.get("percent") not in (None, "None") else None
    pct_text = f"{pct * 100:+.2f} %" if pct is not None else "new"
    text = f"{_flux_label(i)} {money(Decimal(str(i['prior'])))} → {money(Decimal(str(i['current'])))} ({money(Decimal(str(i['change'])))}, {pct_text})"
    if "volume_part" in i:
        text += f" = volume {money(Decimal(str(i['volume_part'])))} + price {money(Decimal(str(i['price_part'])))}"
    return text
