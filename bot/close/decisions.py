"""Recording a person's decision, bound to the question that asked it, and the follow-ups a
decision creates (an effective date, flux explanations, the sign-off)."""

from __future__ import annotations

import re
from dataclasses import fields
from decimal import Decimal
from typing import Any

from bot.close import checks
from bot.close import data as close_data
from bot.close.checks import Close, Finding
from bot.close.data import add_months, cents
from bot.close.kinds import book, describe, option_label
from bot.close.ledger import Ledger
from bot.close.master import dec8, money, with_change
from bot.close.registry import FLUX
from bot.close.steps import flux
from bot.close.steps.flux import _flux_label
from bot.close.toolbase import REF_RE, ToolBase, question_for
from bot.store import QuestionRecord
from bot.tools import ToolContext, ToolError


def catch_up_lines(
    close: Close, name: str, well_id: str, effective: str, wi: Decimal, nri: Decimal
) -> list[dict[str, str]]:
    """What the history files booked at the old decimal since `effective`, caught up to the new:
    cost Dr 6210 (the line's account) / Cr 2110, revenue Dr 1210 / Cr 4090."""
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
    for r in close.data.history.lines("revenue_history.csv", well_id):
        if r.well_id == well_id and r.sale_month >= month and r.owner_decimal != nri:
            out.append(
                {
                    "debit": "1210",
                    "credit": "4090",
                    "amount": str(checks.stub_net(r, nri) - r.owner_net_value),
                    "ref": r.ref,
                    "memo": f"{name} check {r.check_no} {r.product} sales {r.sale_month} catch-up 8/8 net {money(r.gross_value - r.gross_taxes - r.gross_deductions)} × ({dec8(nri)} − {dec8(r.owner_decimal)})",
                }
            )
    return out


FACT_ITEMS = 3  # items of a list shown in exception_details; document_lines pages the rest


def _bounded(facts: dict[str, Any]) -> dict[str, Any]:
    """Facts with each long list cut to its first items and the count of the rest."""
    out: dict[str, Any] = {}
    for key, value in facts.items():
        if isinstance(value, list) and len(value) > FACT_ITEMS:
            out[key] = value[:FACT_ITEMS]
            out[f"{key}_more"] = len(value) - FACT_ITEMS
        else:
            out[key] = value
    return out


class DecisionTools(ToolBase):
    """resolve_exception and exception_details, and what a decision sets off."""

    def exception_details(self, ctx: ToolContext, exception_id: str) -> dict[str, Any]:
        """Everything about one exception: the numbers, the documents, the options and what each books, and the ready-made ask_user_question question.

        Args:
          exception_id: an exception_id (or ref) from a step's result
        """
        exc = self._exception(ctx, exception_id)
        d = exc["details"]
        return {
            "exception_id": exc["id"],
            "kind": exc["kind"],
            "status": exc["status"],
            "decision": exc["resolution"],
            "summary": d["summary"],
            "question": question_for(exc),
            "facts": _bounded({k: v for k, v in d["facts"].items() if k not in ("stub_lines",)}),
        }

    def resolve_exception(
        self, ctx: ToolContext, exception_id: str, option: str, question_id: str, note: str = ""
    ) -> dict[str, Any]:
        """Record a person's decision on an exception, exactly as they answered it through ask_user_question.

        The question must name the exception ([ref …]) and the option must be the one the person
        chose there. A typed "Other" answer books nothing: pass option "other" with the text in
        note, and the exception stays open with it.

        Args:
          exception_id: the exception_id (or its ref) from a step's result
          option: the option code or label chosen (comma-separated for a multiple-choice answer; "other" for a typed answer; "text" for a free-text answer)
          question_id: the id of the ask_user_question call whose answer decided this
          note: the typed text of an "Other" or free-text answer
        """
        exc = self._exception(ctx, exception_id)
        if exc["status"] == "resolved":
            return {
                "exception_id": exc["id"],
                "status": "resolved",
                "decision": exc["resolution"],
                "note": "already decided; nothing changed",
            }
        q = self._answered(ctx, question_id)
        chosen, typed = self._bound_answer(q, exc)
        codes = self._codes(exc, option)
        d = exc["details"]
        ledger = Ledger(ctx.store)
        if exc["kind"] == "flux_item":
            return self._decide(ctx, ledger, exc, "explain", q, {"explanation": typed or ""})
        if typed is not None and not chosen:
            if exc["kind"] == "flux_item":
                return self._decide(ctx, ledger, exc, "explain", q, {"explanation": typed})
            if option.casefold() not in ("other", "text"):
                raise ToolError(
                    f"the person typed an answer ({typed[:60]!r}), not {option!r}; pass option 'other' with their text"
                )
            typed_date = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", typed)
            if (
                exc["kind"] == "doi_effective"
                and typed_date
                and close_data.DATE_RE.match(typed_date.group(1))
            ):
                # the question asks for a typed date: it maps onto a date of its own
                return self._decide(ctx, ledger, exc, typed_date.group(1), q, {})
            ledger.decide(
                exc["id"],
                option="other",
                status="open",
                extra={"other": typed},
                question_id=q.id,
                decided_by=q.answered_by,
                source=q.source,
            )
            return {
                "exception_id": exc["id"],
                "status": "open",
                "other": typed,
                "note": "A typed answer books nothing: ask a follow-up that maps it onto one of the options, or leave it open.",
            }
        if exc["kind"] == "flux_item":
            raise ToolError("a flux explanation is free text; pass option 'text'")
        if codes != chosen:
            raise ToolError(
                f"{q.answered_by} chose {', '.join(option_label(exc['kind'], c, d['facts']) for c in chosen) or 'nothing'} "
                f"for {d['subject']}, not {option!r}; record what they chose"
            )
        if exc["kind"] == "flux_select":
            return self._decide(ctx, ledger, exc, ",".join(codes), q, {"selected": codes})
        return self._decide(ctx, ledger, exc, codes[0], q, {})

    def _decide(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: dict[str, Any],
        code: str,
        q: QuestionRecord,
        extra: dict[str, Any],
    ) -> dict[str, Any]:
        d = exc["details"]
        spawned: list[Finding] = []
        if exc["kind"] == "wi_nri" and code == "accept":
            spawned.append(self._effective_date_finding(ctx, exc))
        if exc["kind"] == "doi_effective":
            extra = self._accept_doi(ctx, ledger, exc, code, q)
            spawned += self._shortfall_at_new_nri(ctx, exc, code, Decimal(extra["nri"]))
        if exc["kind"] == "flux_select":
            spawned += self._flux_items(ctx, exc, extra["selected"])
        if exc["kind"] == "signoff":
            self._sign(ctx, ledger, code)
        record = ledger.decide(
            exc["id"],
            option=code,
            status="resolved",
            extra=extra,
            question_id=q.id,
            decided_by=q.answered_by,
            source=q.source,
        )
        new = self._record(ctx, ledger, spawned)
        lines = book(exc["kind"], code, d["facts"], record["extra"])
        result: dict[str, Any] = {
            "exception_id": exc["id"],
            "status": "resolved",
            "decision": option_label(exc["kind"], code, d["facts"]) if "," not in code else code,
            "decided_by": q.answered_by,
            "source": q.source,
            "books": describe(lines),
        }
        if new:
            result["follow_up_exceptions"] = [
                {
                    "exception_id": e["id"],
                    "ref": e["details"]["ref"],
                    "step": e["details"]["step"],
                    "summary": e["details"]["summary"],
                }
                for e in new
            ]
            result["next"] = (
                "Ask the follow-up question(s) with ask_user_question, then record them with resolve_exception."
            )
        if extra.get("catch_up"):
            result["catch_up"] = [
                f"{c['memo']}: Dr {c['debit']} / Cr {c['credit']} {money(Decimal(c['amount']))}"
                for c in extra["catch_up"]
            ]
        return result

    @staticmethod
    def _bound_answer(q: QuestionRecord, exc: dict[str, Any]) -> tuple[list[str], str | None]:
        """The option codes the person chose on the question naming this exception, and any typed text."""
        ref = exc["details"]["ref"]
        for number, item in enumerate(q.questions, start=1):
            if ref in REF_RE.findall(item["question"]):
                answer = (q.answer or {}).get(str(number), {})
                labels = answer.get("labels") or []
                codes = [
                    c
                    for c in exc["details"]["options"]
                    if option_label(exc["kind"], c, exc["details"]["facts"]) in labels
                ]
                typed = answer.get("other") or answer.get("text")
                return codes, typed
        raise ToolError(
            f"question {q.id} did not ask about {ref}; ask the question that names it ([ref {ref}])"
        )

    @staticmethod
    def _codes(exc: dict[str, Any], option: str) -> list[str]:
        d = exc["details"]
        out = []
        for part in (
            [p.strip() for p in option.split(",") if p.strip()]
            if exc["kind"] == "flux_select"
            else [option.strip()]
        ):
            match = [
                c for c in d["options"] if part in (c, option_label(exc["kind"], c, d["facts"]))
            ]
            if match:
                out.append(match[0])
            elif part.casefold() not in ("other", "text"):
                labels = ", ".join(
                    f"{c} ({option_label(exc['kind'], c, d['facts'])})" for c in d["options"]
                )
                raise ToolError(
                    f"{part!r} is not an option of {d['ref']}; the options are {labels}"
                )
        return out

    def _effective_date_finding(self, ctx: ToolContext, exc: dict[str, Any]) -> Finding:
        facts = exc["details"]["facts"]
        period = ctx.store.run(ctx.run_id).period
        dates = [f"{add_months(period, -k)}-01" for k in (3, 2, 1)]
        wi = facts["jib_decimal"] or facts["doi_wi"]
        nri = facts["stub_decimal"] or dec8(
            Decimal(wi) * (1 - Decimal(facts["royalty"]) - Decimal(facts["orri"]))
        )
        close, _ = self._close(ctx, period)
        by_date = {
            date: catch_up_lines(
                close, facts["well_name"], facts["well_id"], date, Decimal(wi), Decimal(nri)
            )
            for date in dates
        }
        return Finding(
            kind="doi_effective",
            key=facts["well_id"],
            step=exc["details"]["step"],
            subject=facts["well_name"],
            summary=f"effective date of WI {wi} / NRI {nri}",
            question=(
                f"From what date does {facts['well_name']}'s new decimal WI {wi} / NRI {nri} apply "
                f"(DOI today {facts['doi_wi']} / {facts['doi_nri']})? Months booked at the old decimal since then are "
                "caught up from the history files (cost Dr 6210 / Cr 2110, revenue Dr 1210 / Cr 4090). The new DOI row takes "
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

    def _accept_doi(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: dict[str, Any],
        effective: str,
        q: QuestionRecord,
    ) -> dict[str, Any]:
        facts = exc["details"]["facts"]
        if not close_data.DATE_RE.match(effective):
            raise ToolError(f"{effective!r} is not a date as YYYY-MM-DD")
        run = ctx.store.run(ctx.run_id)
        close, _ = self._close(ctx, run.period)
        well_id = facts["well_id"]
        base = close.master.in_force(well_id, effective)
        if base is None:
            raise ToolError(f"{well_id} has no DOI row to change")
        wi, nri = Decimal(facts["wi"]), Decimal(facts["nri"])
        new = with_change(base, wi=wi, nri=nri, effective_from=effective)
        catch_up = catch_up_lines(close, base.well_name, well_id, effective, wi, nri)
        row = {
            k: (str(v) if isinstance(v, Decimal) else v)
            for k, v in ((f.name, getattr(new, f.name)) for f in fields(new))
            if k not in ("line", "source")
        }
        ledger.propose_doi(
            ctx.run_id,
            well_id=well_id,
            row=row,
            effective_from=effective,
            question_id=q.id,
            decided_by=q.answered_by,
        )
        return {"effective_from": effective, "catch_up": catch_up, "wi": str(wi), "nri": str(nri)}

    def _shortfall_at_new_nri(
        self, ctx: ToolContext, exc: dict[str, Any], effective: str, nri: Decimal
    ) -> list[Finding]:
        """This month's checks for the well that paid less than the new NRI says they should:
        an underpayment to claim or accept (a WI-only change moves the NRI too)."""
        run = ctx.store.run(ctx.run_id)
        close, _ = self._close(ctx, run.period)
        well_id = exc["details"]["facts"]["well_id"]
        short = [
            (r, checks.stub_net(r, nri))
            for r, _ in close.known_revenue()
            if r.well_id == well_id and r.sale_month >= effective[:7] and r.owner_decimal != nri
        ]
        total = sum((due - r.owner_net_value for r, due in short), Decimal("0.00"))
        if total <= 0:
            return []
        name = exc["details"]["facts"]["well_name"]
        detail = "; ".join(
            f"check {r.check_no} {r.product} (sales {r.sale_month}) paid {money(r.owner_net_value)} at {dec8(r.owner_decimal)}, "
            f"should have paid {money(due)}"
            for r, due in short
        )
        return [
            Finding(
                kind="stub_underpaid",
                key=well_id,
                step=exc["details"]["step"],
                subject=name,
                summary=f"checks paid {money(total)} less than NRI {dec8(nri)}",
                question=f"At the new NRI {dec8(nri)} (from {effective}), {name}'s checks this month paid less than they should: {detail}. Shortfall {money(total)}.",
                recommended="claim",
                reasoning="The operator's own bill now carries the higher interest; its revenue deck should too. Claim the shortfall from the payor.",
                facts={
                    "well_id": well_id,
                    "total": str(total),
                    "ref": short[0][0].ref,
                    "lines": [
                        {"ref": r.ref, "amount": str(due - r.owner_net_value)} for r, due in short
                    ],
                },
                options=["claim", "as_paid"],
                well_id=well_id,
                amount=total,
            )
        ]

    def _flux_items(
        self, ctx: ToolContext, exc: dict[str, Any], selected: list[str]
    ) -> list[Finding]:
        run = ctx.store.run(ctx.run_id)
        close, _ = self._close(ctx, run.period)
        items = {
            i.get("account") or f"{i['well_id']}:{i['product']}": i
            for i in exc["details"]["facts"]["items"]
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
                    kind="flux_item",
                    key=code,
                    step=FLUX.name,
                    subject=_flux_label(i),
                    summary=f"explain {_flux_label(i)}",
                    question=f"Explain the change in {_flux_label(i)}: {money(Decimal(i['prior']))} → {money(Decimal(i['current']))} ({money(Decimal(i['change']))}). "
                    + (f"The documents behind it: {draft}." if draft else ""),
                    recommended="explain",
                    reasoning=f"Drafted from the documents: {draft}"
                    if draft
                    else "Say what drove it.",
                    facts={"item": i},
                    options=["explain"],
                )
            )
        return out

    def _sign(self, ctx: ToolContext, ledger: Ledger, code: str) -> None:
        run = ctx.store.run(ctx.run_id)
        items = self._open_items(ctx, ledger)
        if code == "carry_forward":
            due = f"{add_months(run.period, 1)}-15"
            ledger.carry_forward(
                ctx.run_id,
                period=run.period,
                items=[{**i, "owner": run.started_by, "due": due} for i in items],
            )
        ctx.store.audit(
            run_id=ctx.run_id,
            kind="period_lock",
            actor=None,
            detail={"decision": code, "open_items": len(items)},
        )
