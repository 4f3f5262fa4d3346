"""The flux review step: this month's draft against last month, with revenue split into volume
and price; each flagged item is asked (explain, adjust, escalate)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from bot.close.checks import Close, Finding
from bot.close.data import (
    ZERO,
    add_months,
    cents,
    months_between,
    parse_amount,
)
from bot.close.doi_master import (
    ACCOUNT_NAMES,
    ACCRUAL_WINDOW,
    FLUX_AMOUNT,
    FLUX_PERCENT,
    TOLERANCE,
    dec8,
    money,
)
from bot.close.registry import MAX_LIST, Step, StepTools
from bot.close.steps.flux_parts import Reconciled, account_movement, well_movement
from bot.core.tools import ToolContext, ToolError

FLUX = Step(
    "flux",
    "Flux review",
    "this month's draft vs last month (closebot's own posted month when it closed it), before "
    "the posting approval; every flagged item is asked: explain, adjust (an entry booked in a "
    "redraft) or escalate.",
    "Comparing this month's activity with last month's.",
    after="journal",
    loading=lambda f: [
        "Comparing P&L activity with last month…",
        "Splitting revenue into volume and price…",
    ],
)

PNL_ACCOUNTS = ("4010", "4020", "4030", "4090", "6110", "6130", "6210", "6220", "6250")


def activity(lines: Iterable[Mapping[str, Any]]) -> dict[str, Decimal]:
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
    close: Close, lines: Iterable[Mapping[str, Any]], prior: dict[str, Decimal] | None = None
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
        if months_between(month, close.period) > ACCRUAL_WINDOW or (
            (well_id, product, month) in close.data.history.checked
        ):
            # a prior-period true-up (4090, or a month a check already paid) is not a month's
            # sales: against the month before it, it would be a false alarm
            continue
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


def basis_finding(
    period: str, prior_month: str, batch_id: str, diffs: list[tuple[str, Decimal, Decimal]]
) -> Finding:
    listing = "; ".join(
        f"{a} {ACCOUNT_NAMES.get(a, '')}: closebot posted {money(p)}, tb_activity.csv {money(t)}"
        for a, p, t in diffs
    )
    return Finding(
        kind="flux_basis",
        key=prior_month,
        step=FLUX.name,
        subject=f"tb_activity.csv {prior_month}",
        summary=f"tb_activity.csv disagrees with closebot's posted {prior_month} on {len(diffs)} account(s)",
        question=f"Flux compares {period} with closebot's own posted {prior_month} (batch {batch_id}). "
        f"tb_activity.csv says otherwise for {prior_month}: {listing}. The export may be stale or include entries "
        "closebot did not post.",
        recommended="investigate",
        reasoning="closebot's posted batch is the books it keeps; an export that disagrees with them should be reconciled, not compared with.",
        facts={
            "month": prior_month,
            "batch_id": batch_id,
            "differences": [[a, str(p), str(t)] for a, p, t in diffs],
        },
        amount=sum((abs(p - t) for _, p, t in diffs), ZERO),
    )


def flux_item(close: Any, i: dict[str, Any], movement: Reconciled, people: list[str]) -> Finding:
    """One flagged flux item, asked on its own: explain (the draft that reconciles the movement:
    this close's entries, last month's one-offs, volume and price), adjust, escalate. A draft
    that leaves a part beyond the thresholds unexplained is shown, never recommended."""
    code = i.get("account") or f"{i['well_id']}:{i['product']}"
    draft = movement.draft()
    label = _flux_label(i)
    rest = movement.unexplained
    if not draft:
        found = "Nothing in the documents or this close's entries explains it. "
    elif movement.reconciles:
        found = f"Where it comes from: {draft}. "
    else:
        found = (
            f"Where it comes from: {draft}. {money(rest)} of it is unexplained, beyond ±10 % and "
            "±$5,000: the draft does not explain it. "
        )
    recommend = bool(draft) and movement.reconciles
    return Finding(
        kind="flux_item",
        key=code,
        step=FLUX.name,
        subject=label,
        summary=f"explain {label}",
        question=f"{_flux_line(i)}: beyond ±10 % and ±$5,000. "
        + found
        + "Explain (the draft, or type your own under Other), adjust with an entry you describe, or escalate?",
        recommended="explain" if recommend else "escalate",
        reasoning=f"The movement reconciles: {draft}."
        if recommend
        else (
            f"{money(rest)} of the movement is unexplained (beyond ±10 % and ±$5,000); someone "
            "who knows it should explain it."
            if draft
            else "No document or entry explains the movement; someone who knows it should."
        ),
        facts={
            "item": {k: str(v) for k, v in i.items()},
            "draft": draft,
            "people": people,
            **movement.facts(),
        },
        options=["explain", "adjust", "escalate"],
        amount=abs(Decimal(str(i["change"]))),
    )


def movements(
    ledger: Any,
    period: str,
    batch_id: str,
    posted: Mapping[str, Any] | None,
    items: list[dict[str, Any]],
    split: list[dict[str, Any]],
) -> list[tuple[dict[str, Any], Reconciled]]:
    """Each flagged item with its movement in parts (the batches' lines on its account read
    once, only the flagged accounts')."""
    accounts = [i["account"] for i in items if i["flagged"]]
    current = ledger.account_lines(batch_id, accounts)
    prior = ledger.account_lines(posted["id"], accounts) if posted is not None else None
    prior_month = add_months(period, -1)
    out = [
        (
            i,
            account_movement(
                i["account"],
                period,
                prior_month,
                [x for x in current if x["account"] == i["account"]],
                [x for x in prior if x["account"] == i["account"]] if prior is not None else None,
                Decimal(str(i["prior"])),
                split,
            ),
        )
        for i in items
        if i["flagged"]
    ]
    return out + [(s, well_movement(s)) for s in split if s["flagged"]]


@FLUX.tool
def review_flux(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """Flux review: this month's P&L activity by account (the current batch) vs the prior month's, flagged beyond ±10 % and ±$5,000; revenue split into volume and price per well and product. Flagged items become a "which need an explanation?" question.

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    close, ledger = tools._close(ctx, period)
    batch = ledger.current_batch(ctx.run_id)
    if batch is None:
        raise ToolError("no journal batch yet: run build_journal_entries first")
    from bot.close.kinds import KINDS  # here: the flux kinds import this step's module

    skip = any(
        KINDS[e["kind"]].skips_flux(e["resolution"] or "") for e in ledger.exceptions(ctx.run_id)
    )
    prior_month = add_months(period, -1)
    posted = ledger.posted_batch(prior_month)
    findings: list[Finding] = []
    tb = tb_prior(close)
    if posted is not None:
        prior = activity(ledger.account_totals(posted["id"]))
        basis = f"closebot's posted {prior_month} (batch {posted['id']})"
        diffs = basis_differences(prior, tb) if tb is not None else []
        if diffs:
            findings.append(basis_finding(period, prior_month, posted["id"], diffs))
    elif skip or tb is None:
        prior, basis = None, "nothing (no trial balance to compare with)"
    else:
        prior, basis = tb, f"tb_activity.csv {prior_month}"
    items = flux(close, ledger.account_totals(batch["id"]), prior) if prior is not None else []
    split = revenue_split(close)
    people = sorted(tools.approvers) or [
        ctx.store.runs.get(ctx.run_id).started_by or "the controller"
    ]
    findings += [
        flux_item(close, i, movement, people)
        for i, movement in movements(ledger, period, batch["id"], posted, items, split)
    ]
    tools._record(ctx, ledger, findings)
    return tools._step_result(
        ctx,
        ledger,
        FLUX.name,
        compared_with=basis,
        accounts=[_flux_line(i) + (" FLAGGED" if i["flagged"] else "") for i in items][:MAX_LIST],
        revenue_split=[_flux_line(s) for s in sorted(split, key=lambda s: -abs(s["change"]))[:6]],
    )
