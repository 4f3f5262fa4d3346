"""The flux review kinds (the flux review step, `bot/close/steps/flux.py`): which flagged items need an
explanation (`flux_select`, runs of an earlier release), each flagged item (`flux_item`:
explain, adjust or escalate), the adjusting entry a person describes (`flux_adjust`), to whom
an item is escalated (`flux_escalate`), and a prior month's export that disagrees with
closebot's posted books (`flux_basis`). Flux questions explain the books; only an adjustment
changes them."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from bot.close.checks import REVENUE_ACCOUNTS, Finding
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.close.kinds.base import Deciding, Desk, Kind, Option
from bot.close.kinds.entries import Facts, Line, describe, pair, text
from bot.close.records import ExceptionRow
from bot.close.steps import flux
from bot.close.steps.flux import FLUX, _flux_label, parse_adjustment
from bot.core.names import Names
from bot.core.tools import ToolError

if TYPE_CHECKING:
    from bot.close.ledger import Ledger
    from bot.core.tools import ToolContext
    from bot.store import QuestionRecord


def adjustment_code(entry: dict[str, str]) -> str:
    """'accrue' for an adjustment shaped like closebot's own accruals — anything to 2115 Accrued
    LOE, or Dr 1210 against this month's revenue (4010/4020/4030) — which is booked with this
    month's accruals and reversed next month (CLOSE.md's reversing method); else 'adjust', an
    entry that stands (Dr 1210 / Cr 4090 is a catch-up receivable, not an accrual)."""
    accounts = {entry["debit"], entry["credit"]}
    if "2115" in accounts or (
        entry["debit"] == "1210" and entry["credit"] in REVENUE_ACCOUNTS.values()
    ):
        return "accrue"
    return "adjust"


def _flux_adjustment(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    """The adjusting entry the person described for a flagged flux item: Dr / Cr, balanced."""
    a = extra.get("adjustment")
    if not a:
        return []
    item = facts.get("item") or {}
    key = item.get("account") or f"{item.get('well_id', '')}:{item.get('product', '')}"
    memo = f"flux adjustment of {key}" + (f": {a['memo']}" if a.get("memo") else "")
    return pair(a["debit"], a["credit"], Decimal(a["amount"]), memo, f"flux:{key}")


def _adjust_open(facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
    if not extra.get("adjustment"):
        return f"describe the adjustment for the flux of {subject}"
    return None  # booked in the batch the posting approval covers


def _flux_open(facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
    if extra.get("explanation"):
        return None
    return f"explain the flux of {subject}"


class FluxSelectKind(Kind):
    """Which flagged flux items need an explanation (runs recorded before each item was asked):
    each one chosen is then asked on its own."""

    dynamic = (
        "ACCOUNT",
        "the flagged item",
        "Nothing: each item chosen is asked on its own (runs of an earlier release).",
        "",
    )

    def option(self, code: str, facts: Facts) -> Option:
        return Option(
            code,
            str(facts.get("labels", {}).get(code, code))[:75],
            "Needs a written explanation in the close file.",
        )

    def on_decided(self, d: Deciding) -> None:
        d.spawned += _flux_items(d, d.extra["selected"])


def _flux_items(d: Deciding, selected: list[str]) -> list[Finding]:
    close = d.desk.close_of(d.ctx)
    items = {
        i.get("account") or f"{i['well_id']}:{i['product']}": i
        for i in d.exc["details"]["facts"]["items"]
    }
    out = []
    for code in selected:
        i = items[code]
        draft = (
            flux.flux_explanation(close, code)
            if code.isdigit()
            else (
                f"volume {money(Decimal(i['volume_part']))}, price {money(Decimal(i['price_part']))}"
            )
        )
        out.append(
            Finding(
                kind=FLUX_ITEM.name,
                key=code,
                step=FLUX.name,
                subject=_flux_label(i),
                summary=f"explain {_flux_label(i)}",
                question=f"Explain the change in {_flux_label(i)}: {money(Decimal(i['prior']))} → {money(Decimal(i['current']))} ({money(Decimal(i['change']))}). "
                + (f"The documents behind it: {draft}." if draft else ""),
                recommended="explain",
                reasoning=f"Drafted from the documents: {draft}" if draft else "Say what drove it.",
                facts={"item": i},
                options=["explain"],
            )
        )
    return out


class FluxItemKind(Kind):
    """A flagged item is cleared only by an explanation or an adjustment, never by a skip:
    adjusting asks for the entry, escalating asks to whom."""

    def takes_answer(self, chosen: list[str], typed: str | None) -> bool:
        return typed is not None or not chosen

    def takes_choice(self, codes: list[str]) -> bool:
        return True

    def take_answer(
        self,
        desk: Desk,
        ctx: ToolContext,
        ledger: Ledger,
        exc: ExceptionRow,
        q: QuestionRecord,
        chosen: list[str],
        typed: str | None,
    ) -> dict[str, Any]:
        text = (typed or "").strip()
        if text:
            return desk.decide(ctx, ledger, exc, "explain", q, {"explanation": text})
        if not chosen:
            return desk.keep_open(ledger, exc, q, "skipped: an explanation is required")
        code = chosen[0]
        if code == "explain":
            draft = exc["details"]["facts"].get("draft") or ""
            if not draft:
                return desk.keep_open(
                    ledger,
                    exc,
                    q,
                    "Explain chosen with nothing to explain it: type the explanation",
                )
            return desk.decide(ctx, ledger, exc, "explain", q, {"explanation": draft})
        return desk.decide(ctx, ledger, exc, code, q, {})

    def decided(self, code: str, facts: Facts, extra: dict[str, Any] | None = None) -> str:
        """A typed explanation as typed, never "Explain (as drafted)"."""
        typed = str((extra or {}).get("explanation") or "").strip()
        if code == "explain" and typed and typed != str(facts.get("draft") or "").strip():
            shown = typed if len(typed) <= 200 else typed[:199].rsplit(" ", 1)[0] + "…"
            return f"Explained: \u201c{shown}\u201d"
        return super().decided(code, facts, extra)

    def on_decided(self, d: Deciding) -> None:
        if d.code in ("adjust", "escalate"):
            d.spawned.append(_flux_follow_up(d))


def _flux_follow_up(d: Deciding) -> Finding:
    details = d.exc["details"]
    key = details["ref"].split(":", 1)[1]
    subject = details["subject"]
    if d.code == "adjust":
        return Finding(
            kind=FLUX_ADJUST.name,
            key=key,
            step=FLUX.name,
            subject=subject,
            summary=f"the adjustment for {subject}",
            question=f"Describe the adjusting entry for {subject} as 'Dr ACCOUNT / Cr ACCOUNT AMOUNT — memo' "
            "(for example Dr 6220 / Cr 2115 1,500.00 — Carter workover not yet billed): two accounts of the chart "
            "and an amount to the cent. It is booked in this month's batch, which is drafted again, and the "
            "posting approval covers it; an accrual (to 2115, or Dr 1210 / Cr 4010–4030) is reversed next month. It clears the item.",
            recommended="adjust",
            reasoning="An adjustment clears a flux item only with its accounts and amount.",
            facts={"item": details["facts"].get("item")},
            options=["adjust", "accrue"],
        )
    people = list(dict.fromkeys([*(details["facts"].get("people") or []), "the controller"]))
    shown = {p: Names(d.ctx.store).cached(p) for p in people}  # names, never user ids
    return Finding(
        kind=FLUX_ESCALATE.name,
        key=key,
        step=FLUX.name,
        subject=subject,
        summary=f"escalate {subject}",
        question=f"Escalate the flux of {subject} to whom? They own it until it is explained (type another name under Other).",
        recommended=f"to:{people[0]}",
        reasoning=f"{shown[people[0]]} is the first approver of this close."
        if len(people) > 1
        else f"{shown[people[0]]} owns this close.",
        facts={"item": details["facts"].get("item"), "names": shown},
        options=[f"to:{p}" for p in people],
    )


class FluxAdjustKind(Kind):
    """The entry is typed ('Dr ACCOUNT / Cr ACCOUNT AMOUNT — memo'), shown as read before it is
    taken, and booked in the batch (with the accruals when it is shaped like one)."""

    previews_typed = True

    def takes_answer(self, chosen: list[str], typed: str | None) -> bool:
        return True

    def take_answer(
        self,
        desk: Desk,
        ctx: ToolContext,
        ledger: Ledger,
        exc: ExceptionRow,
        q: QuestionRecord,
        chosen: list[str],
        typed: str | None,
    ) -> dict[str, Any]:
        text = (typed or "").strip()
        if not text:
            return desk.keep_open(ledger, exc, q, "no adjustment described")
        try:
            entry = parse_adjustment(text)
        except ValueError as e:
            raise ToolError(
                f"{e}; ask again for the entry as 'Dr ACCOUNT / Cr ACCOUNT AMOUNT'"
            ) from None
        result = desk.decide(ctx, ledger, exc, adjustment_code(entry), q, {"adjustment": entry})
        result["next"] = (
            "Redraft the batch with build_journal_entries: the adjustment is booked in it. "
            "The posting approval is asked on the new draft, after the flux review."
        )
        return result

    def may_preview(self, typed: str) -> bool:
        try:
            parse_adjustment(typed.strip())
        except ValueError:
            return False
        return True

    def typed_preview(
        self, desk: Desk, ctx: ToolContext, exc: ExceptionRow, typed: str
    ) -> str | None:
        try:
            entry = parse_adjustment(typed.strip())
        except ValueError:
            return None
        amount = Decimal(entry["amount"])
        lines = [
            {"account": entry["debit"], "debit": amount, "credit": Decimal("0.00")},
            {"account": entry["credit"], "debit": Decimal("0.00"), "credit": amount},
        ]
        memo = f" — {entry['memo']}" if entry["memo"] else ""
        return (
            f"The adjusting entry for {exc['details']['subject']} as read: "
            f"{describe(lines, names=ACCOUNT_NAMES)}{memo}."
        )


class EscalateKind(Kind):
    """Its question's options are people ("to:NAME"); the item stays open with its owner."""

    dynamic = (
        "to:PERSON",
        "Escalate to PERSON",
        "Nothing: the item stays open with that person as its owner.",
        "",
    )

    def option(self, code: str, facts: Facts) -> Option:
        if code.startswith("to:"):
            name = (facts.get("names") or {}).get(code[3:], code[3:])  # a name, not a user id
            return Option(
                code, f"Escalate to {name}"[:75], "They own the item until it is explained."
            )
        return super().option(code, facts)

    def takes_answer(self, chosen: list[str], typed: str | None) -> bool:
        return True

    def take_answer(
        self,
        desk: Desk,
        ctx: ToolContext,
        ledger: Ledger,
        exc: ExceptionRow,
        q: QuestionRecord,
        chosen: list[str],
        typed: str | None,
    ) -> dict[str, Any]:
        to = (typed or "").strip() or next((c[3:] for c in chosen if c.startswith("to:")), "")
        if not to:
            return desk.keep_open(ledger, exc, q, "escalated to no one")
        return desk.decide(ctx, ledger, exc, "escalate", q, {"to": to})


FLUX_SELECT = FluxSelectKind(
    "flux_select",
    "Flux",
    question_type="multiple_choice",
    allow_other=False,
    sets_off=True,
    review_only=True,
)
FLUX_ITEM = FluxItemKind(
    "flux_item",
    "Flux",
    {
        "explain": Option(
            "explain",
            "Explain (as drafted)",
            "Clears the item with the drafted explanation; type your own under Other.",
            leaves=_flux_open,
        ),
        "adjust": Option(
            "adjust",
            "Adjust (describe the entry)",
            "An adjusting entry you describe next (accounts and amount), booked in the batch before the posting approval.",
        ),
        "escalate": Option(
            "escalate",
            "Escalate (to whom, next)",
            "Someone else explains it; the item stays open with them as its owner.",
        ),
    },
    # a flux item may be skipped: it then stays open (an explanation is needed to clear it)
    may_skip=True,
    sets_off=True,
    review_only=True,
)
FLUX_ADJUST = FluxAdjustKind(
    "flux_adjust",
    "Flux adjustment",
    {
        "adjust": Option(
            "adjust",
            "Adjust",
            "The adjusting entry described, booked in the batch before its posting approval.",
            books=_flux_adjustment,
            accounts="the entry described: Dr ACCOUNT / Cr ACCOUNT, the amount",
            leaves=_adjust_open,
        ),
        "accrue": Option(
            "accrue",
            "Adjust (accrual, reversed next month)",
            "The adjusting entry described, to an accrual account: booked with this month's "
            "accruals before the posting approval, and reversed next month.",
            books=_flux_adjustment,
            accounts="the entry described (to 2115, or Dr 1210 / Cr 4010–4030), with the month's accruals",
            leaves=_adjust_open,
            accrual=True,
        ),
    },
    question_type="free_text",
    sets_off=True,
    entry_described=True,
    accrual_entry="Accrual adjusted at flux",
)
FLUX_ESCALATE = EscalateKind(
    "flux_escalate",
    "Flux escalation",
    {
        "escalate": Option(
            "escalate",
            "Escalate",
            "The item stays open with this person as its owner.",
            leaves=lambda f, e, s: (
                f"explain the flux of {s} (escalated to "
                f"{(f.get('names') or {}).get(e.get('to'), e.get('to')) or 'the controller'})"
            ),
        )
    },
    sets_off=True,
    review_only=True,
)
FLUX_BASIS = Kind(
    "flux_basis",
    "Flux basis",
    {
        "use_posted": Option(
            "use_posted",
            "Trust closebot's posted books",
            "Compare with closebot's posted prior month; the export is taken as stale.",
        ),
        "investigate": Option(
            "investigate",
            "Compare with posted, reconcile the export",
            "Compare with closebot's posted prior month; an open item to reconcile tb_activity.csv with it.",
            leaves=text("reconcile tb_activity.csv with closebot's posted {month} ({subject})"),
        ),
    },
    allow_other=False,
    review_only=True,
)

KINDS = (FLUX_SELECT, FLUX_ITEM, FLUX_ADJUST, FLUX_ESCALATE, FLUX_BASIS)
