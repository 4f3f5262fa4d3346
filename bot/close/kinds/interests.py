"""The working and net revenue interest kinds: an operator's decimal that differs from the DOI
(`wi_nri`, found by `bot/close/steps/interests.py`), the date a new decimal is effective from
when it is accepted (`doi_effective`: a new DOI row and the catch-up), and the checks paid at
the old NRI since then (`stub_underpaid`)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from bot.close import checks
from bot.close import data as close_data
from bot.close.checks import Close, Finding
from bot.close.data import ZERO, add_months, cents
from bot.close.doi_master import ACCOUNT_NAMES, burden_for, dec8, money, with_change
from bot.close.kinds.base import Deciding, Desk, Kind, Option
from bot.close.kinds.entries import (
    Booker,
    Facts,
    Line,
    Opener,
    describe,
    pair,
    well,
    wi_jib,
    wi_revenue_excess,
)
from bot.close.kinds.intake import propose_doi
from bot.close.records import ExceptionRow
from bot.core.tools import ToolError

if TYPE_CHECKING:
    from bot.core.tools import ToolContext

DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


def _wi_claim(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    out: list[Line] = []
    for s in facts.get("stub_lines", []):
        shortfall = Decimal(s["at_doi"]["net"]) - Decimal(s["paid"]["net"])
        if shortfall > 0:
            memo = f"{facts['well_name']}: check {s['check']} {s['product']} NRI difference underpayment claimed"
            out += pair("1215", "4090", shortfall, memo, s["ref"], well(facts))
    return out


def _wi_defer(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    return wi_jib("1395", "held pending ownership support")(facts, extra) + wi_revenue_excess(
        "held pending ownership support"
    )(facts, extra)


def _wi_text(template: str) -> Opener:
    def leaves(facts: Facts, extra: dict[str, Any], subject: str) -> str:
        return template.format(
            op=facts.get("operator", "the operator"),
            subject=subject,
            cost=money(abs(Decimal(facts.get("jib_difference") or "0"))),
            revenue=money(abs(Decimal(facts.get("stub_difference") or "0"))),
        )

    return leaves


def _catch_up(facts: Facts, extra: dict[str, Any], date: str) -> list[Line]:
    lines = extra.get("catch_up") or facts.get("catch_up_by_date", {}).get(date, [])
    return [
        x
        for c in lines
        for x in pair(
            c["debit"],
            c["credit"],
            Decimal(c["amount"]),
            c["memo"],
            c.get("ref", ""),
            well(facts),
        )
    ]


def _catch_up_open(facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
    payable = sum(
        (Decimal(c["amount"]) for c in extra.get("catch_up") or [] if c["credit"] == "2110"),
        ZERO,
    )
    if not payable:
        return None
    return f"pay the catch-up payable for {subject} ({money(payable)}, 2110) on the operator's next JIB"


def _underpaid(debit: str, what: str, *, with_sales: bool) -> Booker:
    """Every month paid at the old NRI booked once: Dr `debit` / Cr 4090, one pair per line."""

    def book(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        for item in facts.get("lines", []):
            sale = item.get("sale_month") if with_sales else None
            sales = f" sales {sale}" if sale else ""
            out += pair(
                debit,
                "4090",
                Decimal(item["amount"]),
                f"{item['ref']}{sales}: {what}",
                item["ref"],
                well(facts),
            )
        return out

    return book


_underpaid_claim = _underpaid("1215", "underpaid at the new NRI, claimed", with_sales=False)
_underpaid_book = _underpaid("1210", "catch-up at the new NRI", with_sales=True)


def catch_up_lines(
    close: Close, name: str, well_id: str, effective: str, wi: Decimal, nri: Decimal | None = None
) -> list[dict[str, str]]:
    """What jib_history booked at the old WI since `effective`, caught up to the new: cost Dr 6210
    (the line's account) / Cr 2110. The revenue side is one question with this month's checks
    (`shortfall_at_new_nri`)."""
    month = effective[:7]
    out = []
    for h in close.data.history.lines("jib_history.csv", well_id):
        if h.well_id == well_id and h.service_month >= month and h.owner_decimal != wi:
            out.append(
                {
                    "debit": checks.COST_ACCOUNTS.get(h.cost_category, "6210"),
                    "credit": "2110",
                    "amount": str(cents(h.gross_amount * wi) - h.owner_net_amount),
                    "ref": f"jib_history.csv:{h.line}",
                    "memo": f"{name} {h.invoice_no} {h.cost_category} service {h.service_month} catch-up {money(h.gross_amount)} × ({dec8(wi)} − {dec8(h.owner_decimal)})",
                }
            )
    return out


class WiNriKind(Kind):
    """Accepting the operator's decimal asks from what date it is effective."""

    def on_decided(self, d: Deciding) -> None:
        if d.code == "accept":
            d.spawned.append(_effective_date_finding(d))


def _effective_date_finding(d: Deciding) -> Finding:
    facts = d.facts
    period = d.ctx.store.runs.get(d.ctx.run_id).period
    dates = [f"{add_months(period, -k)}-01" for k in (3, 2, 1)]
    wi = facts["jib_decimal"] or facts["doi_wi"]
    nri = facts["stub_decimal"] or dec8(
        Decimal(wi) * (1 - Decimal(facts["royalty"]) - Decimal(facts["orri"]))
    )
    close = d.desk.close_of(d.ctx)
    base = close.master.latest(facts["well_id"])
    burden = burden_for(base, Decimal(wi), Decimal(nri))[1] if base else ""
    by_date = {
        date: catch_up_lines(
            close, facts["well_name"], facts["well_id"], date, Decimal(wi), Decimal(nri)
        )
        for date in dates
    }
    return Finding(
        kind=DOI_EFFECTIVE.name,
        key=facts["well_id"],
        step=d.exc["details"]["step"],
        subject=facts["well_name"],
        summary=f"effective date of WI {wi} / NRI {nri}",
        question=(
            f"From what date does {facts['well_name']}'s new decimal WI {wi} / NRI {nri} apply "
            f"(DOI today {facts['doi_wi']} / {facts['doi_nri']})? JIB months booked at the old decimal since then are "
            "caught up from jib_history (Dr 6210 / Cr 2110); the checks paid at the old NRI since then, "
            "where they paid less or more than the new NRI gives, are one question next (book, claim or "
            "accept). "
            + (
                f"The new DOI row keeps NRI = WI × (1 − royalty − ORRI): {burden}. "
                if burden
                else ""
            )
            + "The new DOI row takes "
            "effect when the batch is approved and posted. Type another date (YYYY-MM-DD) with Other."
        ),
        recommended=dates[0],
        reasoning=(
            f"{dates[0]} is the earliest date this close can still catch up from its history files (the "
            f"{len(dates)}-month accrual window). Nothing in the documents dates the change: use the "
            "assignment's or division order's own effective date if you have it (type it with Other)."
        ),
        facts={
            "well_id": facts["well_id"],
            "well_name": facts["well_name"],
            "wi": wi,
            "nri": nri,
            "catch_up_by_date": by_date,
        },
        options=dates,
        well_id=facts["well_id"],
    )


def _typed_date(typed: str) -> str | None:
    found = DATE.search(typed)
    return found.group(1) if found and close_data.DATE_RE.match(found.group(1)) else None


class EffectiveDateKind(Kind):
    """Its options are dates (YYYY-MM-DD); each books the catch-up since that date. Deciding it
    proposes the new DOI row and asks about the checks paid at the old NRI since then."""

    previews_typed = True
    dynamic = (
        "YYYY-MM-DD",
        "Effective DATE",
        "The catch-up since that date: each history month's cost at the new decimal less as "
        "booked, Dr the line's cost account (6210 …) / Cr 2110; a new DOI row in force with the "
        "posting approval.",
        "each history month's cost at the new WI less as booked: Dr cost / Cr 2110",
    )

    def option(self, code: str, facts: Facts) -> Option:
        return Option(
            code,
            f"Effective {code}",
            "The new decimal applies from this date; months booked at the old one are caught up.",
            books=lambda f, e: _catch_up(f, e, code),
            leaves=_catch_up_open,
        )

    def typed_code(self, typed: str) -> str | None:
        # the question asks for a typed date: it maps onto a date of its own
        return _typed_date(typed)

    def on_decided(self, d: Deciding) -> None:
        d.extra = _accept_doi(d)
        d.spawned += shortfall_at_new_nri(d.desk, d.ctx, d.exc, d.code, Decimal(d.extra["nri"]))

    def may_preview(self, typed: str) -> bool:
        return _typed_date(typed) is not None

    def typed_preview(
        self, desk: Desk, ctx: ToolContext, exc: ExceptionRow, typed: str
    ) -> str | None:
        date = _typed_date(typed)
        if date is None:
            return None
        facts = exc["details"]["facts"]
        close = desk.close_of(ctx)
        wi, nri = Decimal(facts["wi"]), Decimal(facts["nri"])
        catch_up = catch_up_lines(close, facts["well_name"], facts["well_id"], date, wi, nri)
        lines = self.book(date, facts, {"catch_up": catch_up})
        months = sorted(
            {m.group(1) for c in catch_up if (m := re.search(r"service (\d{4}-\d{2})", c["memo"]))}
        )
        what = (
            f"books the JIB catch-up of {len(catch_up)} line(s) billed at the old decimal "
            f"(service {', '.join(months)}): {describe(lines, names=ACCOUNT_NAMES)}"
            if lines
            else "books no JIB catch-up: no month since then was billed at the old decimal"
        )
        follow = shortfall_at_new_nri(desk, ctx, exc, date, nri)
        checks_then = (
            " ".join(
                f"Checks paid at the old NRI since then: {f.summary}; a question next asks what "
                f"to book ({', '.join(KINDS_BY_NAME[f.kind].label(o, f.facts) for o in f.options or [])})."
                for f in follow
            )
            if follow
            else "No check since then paid other than the new NRI gives: no question follows."
        )
        return (
            f"Effective {date} for {facts['well_name']} (WI {facts['wi']} / NRI {facts['nri']}) "
            f"{what}. {checks_then}"
        )


def _accept_doi(d: Deciding) -> dict[str, Any]:
    facts, effective = d.facts, d.code
    if not close_data.DATE_RE.match(effective):
        raise ToolError(f"{effective!r} is not a date as YYYY-MM-DD")
    close = d.desk.close_of(d.ctx)
    well_id = facts["well_id"]
    base = close.master.in_force(well_id, effective)
    if base is None:
        raise ToolError(f"{well_id} has no DOI row to change")
    wi, nri = Decimal(facts["wi"]), Decimal(facts["nri"])
    new = with_change(base, wi=wi, nri=nri, effective_from=effective)
    catch_up = catch_up_lines(close, base.well_name, well_id, effective, wi, nri)
    propose_doi(d.ledger, d.ctx.run_id, well_id, new, effective, d.question)
    _, burden = burden_for(base, wi, nri)
    return {
        "effective_from": effective,
        "catch_up": catch_up,
        "wi": str(wi),
        "nri": str(nri),
        **({"royalty": dec8(new.royalty), "burden": burden} if burden else {}),
    }


def shortfall_at_new_nri(
    desk: Desk, ctx: ToolContext, exc: ExceptionRow, effective: str, nri: Decimal
) -> list[Finding]:
    """Every check since the effective date that paid at the old NRI — the history months and
    this month's alike — is one question: book the catch-up receivable, claim it, or accept."""
    close = desk.close_of(ctx)
    well_id = exc["details"]["facts"]["well_id"]
    month = effective[:7]
    current = [
        (r, "this month")
        for r, _ in close.known_revenue()
        if r.well_id == well_id and r.sale_month >= month and r.owner_decimal != nri
    ]
    history = [
        (r, "revenue_history.csv")
        for r in close.data.history.lines("revenue_history.csv", well_id)
        if r.well_id == well_id and r.sale_month >= month and r.owner_decimal != nri
    ]
    at_new = [(r, where, checks.stub_net(r, nri)) for r, where in history + current]
    short = [(r, where, due) for r, where, due in at_new if due > r.owner_net_value]
    over = [(r, where, due) for r, where, due in at_new if due < r.owner_net_value]
    total = sum((due - r.owner_net_value for r, _, due in short), Decimal("0.00"))
    found = _overpaid(exc, effective, nri, over)
    if total <= 0:
        return found
    name = exc["details"]["facts"]["well_name"]
    months = sorted({r.sale_month for r, _, _ in short})
    detail = "; ".join(
        f"check {r.check_no} {r.product} (sales {r.sale_month}, {where}) paid {money(r.owner_net_value)} at {dec8(r.owner_decimal)}, "
        f"{money(due)} at {dec8(nri)}"
        for r, where, due in short
    )
    still_short = any(where == "this month" for _, where, _ in short)
    return [
        Finding(
            kind=STUB_UNDERPAID.name,
            key=well_id,
            step=exc["details"]["step"],
            subject=name,
            summary=f"checks for {', '.join(months)} paid {money(total)} less than NRI {dec8(nri)}",
            question=f"At the new NRI {dec8(nri)} (from {effective}), {name}'s checks for sale months {', '.join(months)} paid less "
            f"than they should: {detail}. Catch-up {money(total)}, one decision for every month: book it as a catch-up "
            "receivable (Dr 1210 / Cr 4090), claim it from the payor (Dr 1215 / Cr 4090), or accept the checks as paid.",
            recommended="claim" if still_short else "book",
            reasoning=(
                "This month's check still pays the old decimal: the payor's deck is wrong, so claim the shortfall for every month."
                if still_short
                else "The payor already pays the new decimal; the earlier months are a catch-up it owes on its next check."
            ),
            facts={
                "well_id": well_id,
                "total": str(total),
                "ref": short[0][0].ref,
                "lines": [
                    {
                        "ref": r.ref,
                        "amount": str(due - r.owner_net_value),
                        "sale_month": r.sale_month,
                        "check": r.check_no,
                    }
                    for r, _, due in short
                ],
            },
            options=["book", "claim", "as_paid"],
            well_id=well_id,
            amount=total,
        ),
        *found,
    ]


def _overpaid(
    exc: ExceptionRow, effective: str, nri: Decimal, over: list[tuple[Any, str, Decimal]]
) -> list[Finding]:
    """Checks since the effective date that paid more than the new NRI gives (a lower NRI
    accepted): the owner was overpaid and the payor will recoup it — one question."""
    total = sum((r.owner_net_value - due for r, _, due in over), Decimal("0.00"))
    if total <= 0:
        return []
    facts = exc["details"]["facts"]
    well_id, name = facts["well_id"], facts["well_name"]
    months = sorted({r.sale_month for r, _, _ in over})
    detail = "; ".join(
        f"check {r.check_no} {r.product} (sales {r.sale_month}, {where}) paid {money(r.owner_net_value)} at "
        f"{dec8(r.owner_decimal)}, {money(due)} at {dec8(nri)}"
        for r, where, due in over
    )
    return [
        Finding(
            kind=STUB_OVERPAID.name,
            key=well_id,
            step=exc["details"]["step"],
            subject=name,
            summary=f"checks for {', '.join(months)} paid {money(total)} more than NRI {dec8(nri)}",
            question=(
                f"At the new NRI {dec8(nri)} (from {effective}), {name}'s checks for sale months "
                f"{', '.join(months)} paid more than they should: {detail}. Overpaid {money(total)}: "
                "the payor will recoup it. Book it as owed back (Dr 4090 / Cr 2310 until the "
                "recoupment), or accept the checks as paid (logged, the recoupment watched for)?"
            ),
            recommended="book",
            reasoning=(
                "Revenue booked at the old NRI since the effective date is more than the interest "
                "earned; the payor recoups overpayments from later checks, so the amount is owed back."
            ),
            facts={
                "well_id": well_id,
                "total": str(total),
                "ref": over[0][0].ref,
                "lines": [
                    {
                        "ref": r.ref,
                        "amount": str(r.owner_net_value - due),
                        "sale_month": r.sale_month,
                        "check": r.check_no,
                    }
                    for r, _, due in over
                ],
            },
            options=["book", "as_paid"],
            well_id=well_id,
            amount=total,
        )
    ]


WI_NRI = WiNriKind(
    "wi_nri",
    "WI/NRI",
    {
        "accept": Option(
            "accept",
            "Accept operator's decimal, update DOI",
            "Book as billed and paid; a new DOI row from an effective date you give, with the catch-up.",
            sets_off=True,
            accounts="nothing itself: its effective-date question books the catch-up",
        ),
        "protest": Option(
            "protest",
            "Pay under protest (receivable)",
            "AP at billed; the difference Dr 1390; revenue as received.",
            books=wi_jib("1390", "paid under protest"),
            accounts="each JIB line's difference Dr 1390 / Cr cost",
            leaves=_wi_text(
                "dispute {cost} paid under protest with {op} ({subject}); receivable in 1390"
            ),
        ),
        "short_pay": Option(
            "short_pay",
            "Book at DOI, short-pay and dispute",
            "AP and cost at DOI; revenue as received; dispute the difference (JOA late-payment interest may apply).",
            books=wi_jib("2110", "short-paid, disputed"),
            accounts="each JIB line's difference Dr 2110 / Cr cost",
            leaves=_wi_text("dispute {cost} short-paid with {op} ({subject})"),
        ),
        "suspense": Option(
            "suspense",
            "Book billed, difference in suspense",
            "AP at billed, cost at DOI, difference Dr 1395; revenue as received.",
            books=wi_jib("1395", "held in JIB suspense"),
            accounts="each JIB line's difference Dr 1395 / Cr cost",
            leaves=_wi_text(
                "confirm the interest in {subject} with {op}; {cost} in 1395 JIB Suspense"
            ),
        ),
        "defer": Option(
            "defer",
            "Defer, request ownership support",
            "Cost at DOI with the JIB difference to 1395, revenue at DOI with the stub's excess to 2310; the rest of the well as usual.",
            books=_wi_defer,
            accounts="each JIB line's difference Dr 1395 / Cr cost; each stub's excess over the DOI NRI Dr revenue / Cr 6110, 6130, 2310",
            leaves=_wi_text(
                "request ownership support for {subject} from {op}; differences held (cost {cost} in 1395, revenue {revenue} in 2310)"
            ),
        ),
        "hold_revenue": Option(
            "hold_revenue",
            "Hold the revenue excess in suspense",
            "Revenue at DOI; the excess Cr 2310 until the division order is confirmed.",
            books=wi_revenue_excess("held in revenue suspense"),
            accounts="each stub's excess over the DOI NRI Dr revenue / Cr 6110, 6130, 2310",
            leaves=_wi_text(
                "confirm the division order for {subject}; revenue excess {revenue} in 2310"
            ),
        ),
        "claim": Option(
            "claim",
            "Claim the shortfall from the payor",
            "Revenue as received; the shortfall Dr 1215 / Cr 4090.",
            books=_wi_claim,
            accounts="each stub's shortfall under the DOI NRI Dr 1215 / Cr 4090",
            leaves=_wi_text("collect the underpayment claim for {subject} ({revenue})"),
        ),
    },
)
DOI_EFFECTIVE = EffectiveDateKind("doi_effective", "DOI effective date", sets_off=True)
STUB_UNDERPAID = Kind(
    "stub_underpaid",
    "Underpaid",
    {
        "book": Option(
            "book",
            "Book the catch-up receivable",
            "Dr 1210 / Cr 4090 for every month paid at the old NRI; the payor owes it on its next check.",
            books=_underpaid_book,
            accounts="each month's shortfall at the new NRI Dr 1210 / Cr 4090",
            leaves=lambda f, e, s: (
                f"collect the catch-up receivable for {s} ({money(Decimal(f['total']))}, 1210)"
            ),
        ),
        "claim": Option(
            "claim",
            "Claim the shortfall",
            "Revenue as received; the shortfall Dr 1215 / Cr 4090.",
            books=_underpaid_claim,
            accounts="each month's shortfall at the new NRI Dr 1215 / Cr 4090",
            leaves=lambda f, e, s: (
                f"collect the underpayment claim for {s} ({money(Decimal(f['total']))}, 1215)"
            ),
        ),
        "as_paid": Option("as_paid", "Accept as paid", "Book the checks as paid; nothing claimed."),
    },
)


def _overpaid_book(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    out: list[Line] = []
    for item in facts.get("lines", []):
        out += pair(
            "4090",
            "2310",
            Decimal(item["amount"]),
            f"{item['ref']} sales {item['sale_month']}: overpaid at the old NRI, owed back",
            item["ref"],
            well(facts),
        )
    return out


STUB_OVERPAID = Kind(
    "stub_overpaid",
    "Overpaid",
    {
        "book": Option(
            "book",
            "Book the overpayment as owed back",
            "Dr 4090 / Cr 2310 for every month paid at the old NRI; cleared when the payor recoups it.",
            books=_overpaid_book,
            accounts="each month's overpayment at the new NRI Dr 4090 / Cr 2310",
            leaves=lambda f, e, s: (
                f"clear the overpayment owed back for {s} ({money(Decimal(f['total']))}, 2310) "
                "when the payor recoups it"
            ),
        ),
        "as_paid": Option(
            "as_paid",
            "Accept as paid (logged)",
            "Book the checks as paid; nothing owed back is booked.",
            leaves=lambda f, e, s: (
                f"watch for the payor's recoupment of {money(Decimal(f['total']))} for {s}"
            ),
        ),
    },
)

KINDS = (WI_NRI, DOI_EFFECTIVE, STUB_UNDERPAID, STUB_OVERPAID)
KINDS_BY_NAME = {k.name: k for k in KINDS}
