"""The month-end close toolset the agent (Claude or the offline playbook) works with: one
tool per step of CLOSE.md, one to record a person's decision, a drill-down, the summary."""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.close import checks
from bot.close import data as close_data
from bot.close.checks import STEPS, Close, Finding
from bot.close.data import ZERO, CloseData, DoiRow, add_months, cents
from bot.close.journal import JournalError, build, totals_by_account
from bot.close.kinds import KINDS, book, describe, follow_up, option_label, option_meaning
from bot.close.ledger import AlreadyPostedError, Ledger
from bot.close.master import Master, dec8, money, with_change
from bot.errors import DataError, NotFoundError
from bot.questions import HUMAN_SOURCES, MAX_DESCRIPTION, MAX_HEADER, TOOL_NAME
from bot.store import QuestionRecord
from bot.tools import ToolContext, ToolError, ToolRegistry

REF_RE = re.compile(r"\[ref ([A-Za-z0-9_:.\-]+)\]")
MAX_LIST = 12  # exceptions listed in a tool result; exception_details has the rest


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def question_for(exc: dict[str, Any]) -> dict[str, Any]:
    """The ask_user_question question for one exception: numbers, options with what each books."""
    d = exc["details"]
    kind, facts = exc["kind"], d["facts"]
    ref = f" [ref {d['ref']}]"
    header = _short(f"{KINDS[kind].header} · {d['subject']}", MAX_HEADER)
    if kind == "flux_item":
        return {
            "header": header,
            "question": _short(d["question"], 1400) + ref,
            "type": "free_text",
            "required": False,
            "reasoning": d["reasoning"],
        }
    options = []
    for code in d["options"]:
        preview = describe(book(kind, code, facts, {}))
        meaning = option_meaning(kind, code)
        text = (
            meaning
            if preview == "books nothing" or kind == "doi_effective"
            else f"{preview}. {meaning}"
        )
        options.append(
            {"label": option_label(kind, code, facts), "description": _short(text, MAX_DESCRIPTION)}
        )
    q: dict[str, Any] = {
        "header": header,
        "question": _short(d["question"], 1400) + ref,
        "type": "multiple_choice" if kind == "flux_select" else "single_choice",
        "options": options,
        "recommended": d["options"].index(d["recommended"]) + 1
        if d["recommended"] in d["options"]
        else None,
        "reasoning": d["reasoning"],
        "allow_other": kind not in ("flux_select", "signoff"),
    }
    return {k: v for k, v in q.items() if v is not None}


class CloseTools:
    """Close tools over one data directory (the shipped sample unless told otherwise)."""

    def __init__(
        self, *, data_dir: Path | None = None, approvers: frozenset[str] = frozenset()
    ) -> None:
        self.data_dir = data_dir
        self.approvers = approvers
        self._cache: dict[str, CloseData] = {}

    def registry(self) -> ToolRegistry:
        reg = ToolRegistry(STEPS)
        reg.add(self.load_period, step=STEPS[0])
        reg.add(self.validate_interests, step=STEPS[1])
        reg.add(self.reconcile_jibs, step=STEPS[2])
        reg.add(self.accrue_revenue, step=STEPS[3])
        reg.add(self.check_severance, step=STEPS[4])
        reg.add(self.build_journal_entries, step=STEPS[5])
        reg.add(self.post_journal_entries, step=STEPS[5])
        reg.add(self.review_flux, step=STEPS[6])
        reg.add(self.sign_off, step=STEPS[7])
        reg.add(self.resolve_exception)
        reg.add(self.exception_details)
        reg.add(self.close_summary)
        return reg

    # -- the run's view of the period ------------------------------------------

    def _data(self, ctx: ToolContext, period: str) -> CloseData:
        run = ctx.store.run(ctx.run_id)
        if period != run.period:
            raise ToolError(
                f"this run closes {run.period}, not {period}; use period {run.period!r}"
            )
        if period not in self._cache:
            try:
                self._cache[period] = close_data.load(period, self.data_dir)
            except DataError as e:
                raise ToolError(str(e)) from e
        return self._cache[period]

    def _close(self, ctx: ToolContext, period: str) -> tuple[Close, Ledger]:
        data = self._data(ctx, period)
        ledger = Ledger(ctx.store)
        added = [_doi_row(r["row"]) for r in ledger.doi_rows(run_id=ctx.run_id)]
        decisions = {}
        for e in ledger.exceptions(ctx.run_id):
            decisions[e["details"]["ref"]] = {
                "status": e["status"],
                "option": e["resolution"] or "",
                "extra": e["extra"],
            }
        return Close(data=data, master=Master.of(data, added), decisions=decisions), ledger

    def _record(
        self, ctx: ToolContext, ledger: Ledger, findings: list[Finding]
    ) -> list[dict[str, Any]]:
        out = []
        for f in findings:
            exc = ledger.record_exception(
                ctx.run_id,
                exception_id=f"{ctx.run_id}:{f.id}",
                kind=f.kind,
                well_id=f.well_id,
                details={
                    "ref": f.id,
                    "step": f.step,
                    "subject": f.subject,
                    "summary": f.summary,
                    "question": f.question,
                    "recommended": f.recommended,
                    "reasoning": f.reasoning,
                    "facts": f.facts,
                    "amount": str(f.amount),
                    "options": f.options if f.options is not None else list(KINDS[f.kind].options),
                },
            )
            out.append(exc)
        return out

    def _step_result(
        self, ctx: ToolContext, ledger: Ledger, step: str, **extra: Any
    ) -> dict[str, Any]:
        excs = [e for e in ledger.exceptions(ctx.run_id) if e["details"]["step"] == step]
        listed = [
            {
                "exception_id": e["id"],
                "ref": e["details"]["ref"],
                "kind": e["kind"],
                "subject": e["details"]["subject"],
                "summary": e["details"]["summary"],
                "status": e["status"],
                "recommended": option_label(
                    e["kind"], e["details"]["recommended"], e["details"]["facts"]
                )
                if e["details"]["recommended"] in e["details"]["options"]
                else None,
            }
            for e in excs
        ]
        result = {"step": step, "exceptions": listed[:MAX_LIST], **extra}
        if len(listed) > MAX_LIST:
            result["more_exceptions"] = len(listed) - MAX_LIST
        if any(e["status"] == "open" for e in excs):
            result["next"] = (
                "Ask the accountant about the open exceptions with ask_user_question (up to 5 per call; "
                "exception_details gives each one's ready-made question with its [ref]), then record each "
                "answer with resolve_exception."
            )
        return result

    # -- step 1 ------------------------------------------------------------------

    def load_period(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 1, intake: load and check every file of the period, map property numbers to wells, and record intake exceptions (unknown property or well, DOI sanity, decimals out of range, stub math, missing documents, an unbalanced trial balance).

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        self._record(ctx, ledger, list(checks.intake(close)))
        d = close.data
        by_state = Counter(r.state for r in d.doi)
        return self._step_result(
            ctx,
            ledger,
            STEPS[0],
            period=period,
            period_label=close_data.period_label(period),
            wells=len(close.master.well_ids()),
            wells_by_state=dict(sorted(by_state.items())),
            jib_lines=len(d.jib),
            jib_invoices=len({j.invoice_no for j in d.jib}),
            jib_service_months=sorted({j.service_month for j in d.jib}),
            jib_owner_net_total=sum((j.owner_net_amount for j in d.jib), ZERO),
            revenue_lines=len(d.revenue),
            revenue_checks=len({r.check_no for r in d.revenue}),
            revenue_sale_months=sorted({r.sale_month for r in d.revenue}),
            revenue_owner_net_total=sum((r.owner_net_value for r in d.revenue), ZERO),
            input_files={k: v[:12] for k, v in d.hashes.items()},
        )

    def validate_interests(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 2: compare every JIB owner decimal to the DOI WI and every revenue stub decimal to the DOI NRI in force for its month (tolerance 0.000001); each mismatch becomes an exception with a recommendation.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        self._record(ctx, ledger, list(checks.interests(close)))
        return self._step_result(ctx, ledger, STEPS[1], tolerance="0.000001")

    def reconcile_jibs(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 3: JIB line math, duplicates (within the file and against jib_history), charges over 24 months old, AFE overruns over 10 %, overhead vs the JOA rate; and the LOE accrual (trailing 3-month average × WI).

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        self._record(ctx, ledger, list(checks.jib_recon(close)))
        accrual = checks.loe_accrual(close)
        return self._step_result(
            ctx,
            ledger,
            STEPS[2],
            loe_accrual_total=sum((a["amount"] for a in accrual), ZERO),
            loe_accrual=[
                f"{a['well_name']} {a['category']}: {money(a['amount'])}" for a in accrual
            ][:MAX_LIST],
        )

    def accrue_revenue(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 4: accrue revenue per well × product × production month with volumes but no check (volume × (benchmark − differential) × NRI, less severance); new wells, shut-in wells and accruals under $2,500 are exceptions.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        items, findings = checks.revenue_accrual(close)
        self._record(ctx, ledger, findings)
        return self._step_result(
            ctx,
            ledger,
            STEPS[3],
            revenue_accrual_total=sum((i["revenue"] for i in items), ZERO),
            accruals=[
                f"{i['well_name']} {i['product']} {i['month']}: {money(i['revenue'])}"
                for i in items
            ][:MAX_LIST],
        )

    def check_severance(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 5: effective severance rate per stub line vs the state × product table (OK 5 % in the first 36 months, ND gas per Mcf); off by more than 0.25 pp is an exception.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        self._record(ctx, ledger, list(checks.severance(close)))
        return self._step_result(ctx, ledger, STEPS[4])

    # -- decisions ---------------------------------------------------------------

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
            "facts": {k: v for k, v in d["facts"].items() if k not in ("stub_lines",)},
        }

    def _exception(self, ctx: ToolContext, exception_id: str) -> dict[str, Any]:
        ledger = Ledger(ctx.store)
        full = (
            exception_id
            if exception_id.startswith(f"{ctx.run_id}:")
            else f"{ctx.run_id}:{exception_id}"
        )
        try:
            exc = ledger.exception(full)
        except NotFoundError as e:
            raise ToolError(f"{e}; the step tools list this run's exception ids") from None
        return exc

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

    def _answered(self, ctx: ToolContext, question_id: str) -> QuestionRecord:
        try:
            q = ctx.store.question(question_id)
        except NotFoundError:
            raise ToolError(f"no {TOOL_NAME} call with id {question_id!r} in this run") from None
        if q.run_id != ctx.run_id:
            raise ToolError(f"question {question_id} belongs to another run")
        if q.status != "answered":
            raise ToolError(
                f"question {question_id} was {q.status}, not answered; the decision is still open"
            )
        return q

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
                f"{dates[0]} opens the {len(dates)}-month window this close and its accruals cover; the operator's "
                "documents in that window support the new decimal. Use the assignment's own date if you have it."
            ),
            facts={
                "well_id": facts["well_id"],
                "well_name": facts["well_name"],
                "wi": wi,
                "nri": nri,
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
        month = effective[:7]
        catch_up = []
        for h in close.data.jib_history:
            if h.well_id == well_id and h.service_month >= month and h.owner_decimal != wi:
                amount = cents(h.gross_amount * wi) - h.owner_net_amount
                account = checks.COST_ACCOUNTS.get(h.cost_category, "6210")
                catch_up.append(
                    {
                        "debit": account,
                        "credit": "2110",
                        "amount": str(amount),
                        "ref": f"jib_history.csv:{h.line}",
                        "memo": f"{base.well_name} {h.invoice_no} {h.cost_category} service {h.service_month} catch-up {money(h.gross_amount)} × ({dec8(wi)} − {dec8(h.owner_decimal)})",
                    }
                )
        for r in close.data.revenue_history:
            if r.well_id == well_id and r.sale_month >= month and r.owner_decimal != nri:
                amount = checks.stub_net(r, nri) - r.owner_net_value
                catch_up.append(
                    {
                        "debit": "1210",
                        "credit": "4090",
                        "amount": str(amount),
                        "ref": r.ref,
                        "memo": f"{base.well_name} check {r.check_no} {r.product} sales {r.sale_month} catch-up 8/8 net {money(r.gross_value - r.gross_taxes - r.gross_deductions)} × ({dec8(nri)} − {dec8(r.owner_decimal)})",
                    }
                )
        row = {
            k: (str(v) if isinstance(v, Decimal) else v)
            for k, v in new.__dict__.items()
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

    # -- step 6 ------------------------------------------------------------------

    def build_journal_entries(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 6: draft one balanced batch — last month's accrual reversals, this month's JIBs and checks as received, every decision's adjusting entry, the catch-ups, and this month's LOE and revenue accruals. A redraft gets a new batch id.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        prior = ledger.posted_batch(add_months(period, -1))
        prior_lines = (
            [x for x in ledger.lines(prior["id"]) if x["source"] == "accrual"] if prior else None
        )
        try:
            batch, info = build(close, ledger.exceptions(ctx.run_id), prior_lines)
        except JournalError as e:
            raise ToolError(str(e)) from e
        saved = ledger.save_batch(ctx.run_id, period=period, lines=batch.lines)
        excs = ledger.exceptions(ctx.run_id)
        total_debit, total_credit = Decimal(saved["total_debit"]), Decimal(saved["total_credit"])
        posted = ledger.posted_batch(period)
        return {
            "batch_id": saved["id"],
            "status": saved["status"],
            "entries": len(batch.entries),
            "largest_entries": [
                {"entry_no": e.number, "description": e.description, "amount": e.amount}
                for e in sorted(batch.entries, key=lambda e: -e.amount)[:5]
            ],
            "total_debit": total_debit,
            "total_credit": total_credit,
            "balanced": total_debit == total_credit,
            "by_account": [
                {"account": a["account"], "debit": a["debit"], "credit": a["credit"]}
                for a in totals_by_account(batch.lines)
            ],
            "reversed_from": info["reversal_source"],
            "open_exceptions": [e["details"]["ref"] for e in excs if e["status"] != "resolved"],
            "defaulted_decisions": [
                e["details"]["ref"]
                for e in excs
                if e["decision_source"] not in (None, *HUMAN_SOURCES)
            ],
            "period_already_posted": posted["id"] if posted else None,
        }

    def post_journal_entries(
        self, ctx: ToolContext, batch_id: str, approval_question_id: str
    ) -> dict[str, Any]:
        """Post a drafted batch: the one irreversible step. Idempotent per batch; a period is posted once.

        Refused unless approval_question_id is an ask_user_question call of this run that names
        the batch id, was answered by a person (not an automatic default) who started the run or
        is an approver, choosing an option whose label starts with "Approve". The DOI changes
        decided in the run take effect with it.

        Args:
          batch_id: the batch_id from build_journal_entries
          approval_question_id: the id of the ask_user_question call that asked for approval
        """
        ledger = Ledger(ctx.store)
        try:
            batch = ledger.batch(batch_id)
        except NotFoundError as e:
            raise ToolError(str(e)) from e
        if batch["run_id"] != ctx.run_id:
            raise ToolError(f"batch {batch_id} belongs to another run")
        if batch["status"] == "posted":
            return {
                "batch_id": batch_id,
                "status": "posted",
                "posted_by": batch["posted_by"],
                "note": "already posted; nothing changed",
            }
        if batch["status"] != "draft":
            raise ToolError(
                f"batch {batch_id} is {batch['status']}: a later draft replaced it; post the current draft"
            )
        if batch["total_debit"] != batch["total_credit"]:
            raise ToolError(f"batch {batch_id} does not balance; it cannot be posted")
        q = self._answered(ctx, approval_question_id)
        refusal = None
        if q.source not in HUMAN_SOURCES:
            refusal = f"the approval was an automatic default ({q.source}); posting needs a person's approval"
        elif batch_id not in q.context and not any(
            batch_id in item["question"] for item in q.questions
        ):
            refusal = f"question {approval_question_id} does not ask about batch {batch_id}"
        elif not any(
            label.casefold().startswith("approve")
            for a in (q.answer or {}).values()
            for label in a.get("labels", [])
        ):
            refusal = "the answer did not approve posting"
        else:
            run = ctx.store.run(ctx.run_id)
            if q.answered_by != run.started_by and q.answered_by not in self.approvers:
                refusal = f"{q.answered_by} is neither the run's starter nor an approver"
        if refusal:
            ctx.store.audit(
                run_id=ctx.run_id,
                kind="posting_refused",
                actor=q.answered_by,
                detail={"batch_id": batch_id, "reason": refusal},
            )
            raise ToolError(f"Not posted: {refusal}. Batch {batch_id} stays a draft.")
        try:
            ledger.post(
                batch_id, posted_by=q.answered_by or "", approval_question_id=approval_question_id
            )
        except AlreadyPostedError as e:
            raise ToolError(f"Not posted: {e}. Batch {batch_id} stays a draft.") from e
        doi = ledger.doi_rows(run_id=ctx.run_id)
        return {
            "batch_id": batch_id,
            "status": "posted",
            "posted_by": q.answered_by,
            "total": Decimal(batch["total_debit"]),
            "doi_rows_in_force": [
                f"{r['well_id']} from {r['effective_from']}: WI {r['row']['wi']} / NRI {r['row']['nri']}"
                for r in doi
                if r["status"] == "in_force"
            ],
        }

    # -- step 7 and 8 --------------------------------------------------------------

    def review_flux(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 7: this month's P&L activity by account (the current batch) vs the prior month's, flagged beyond ±10 % and ±$5,000; revenue split into volume and price per well and product. Flagged items become a "which need an explanation?" question.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        batch = ledger.current_batch(ctx.run_id)
        if batch is None:
            raise ToolError("no journal batch yet: run build_journal_entries first")
        skip = any(
            e["kind"] == "tb_unbalanced" and e["resolution"] == "skip_flux"
            for e in ledger.exceptions(ctx.run_id)
        )
        items = [] if skip else checks.flux(close, ledger.lines(batch["id"]))
        split = checks.revenue_split(close)
        flagged = [i for i in items if i["flagged"]] + [s for s in split if s["flagged"]]
        if flagged:
            unflagged = sorted(
                (i for i in items if not i["flagged"]), key=lambda i: -abs(i["change"])
            )
            shown = (flagged + unflagged)[: max(2, min(len(flagged), 10))]
            codes = [i.get("account") or f"{i['well_id']}:{i['product']}" for i in shown]
            text = "; ".join(_flux_line(i) for i in shown)
            self._record(
                ctx,
                ledger,
                [
                    Finding(
                        kind="flux_select",
                        key=period,
                        step=STEPS[6],
                        subject=f"flux {period}",
                        summary=f"{len(flagged)} item(s) beyond ±10 % and ±$5,000",
                        question=f"Flux vs {add_months(period, -1)}: {text}. Which of these need an explanation?",
                        recommended=codes[0],
                        reasoning="Flagged by the rule (beyond ±10 % and ±$5,000): "
                        + ", ".join(_flux_line(i) for i in flagged)[:600],
                        facts={
                            "items": [{k: str(v) for k, v in i.items()} for i in shown],
                            "labels": {
                                c: _flux_label(i) for c, i in zip(codes, shown, strict=True)
                            },
                        },
                        options=codes,
                    )
                ],
            )
        return self._step_result(
            ctx,
            ledger,
            STEPS[6],
            compared_with=add_months(period, -1) if not skip else "nothing (trial balance skipped)",
            accounts=[_flux_line(i) + (" FLAGGED" if i["flagged"] else "") for i in items][
                :MAX_LIST
            ],
            revenue_split=[
                _flux_line(s) for s in sorted(split, key=lambda s: -abs(s["change"]))[:6]
            ],
        )

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
                checks.flux_explanation(close, code)
                if code.isdigit()
                else (
                    f"volume {money(Decimal(i['volume_part']))}, price {money(Decimal(i['price_part']))}"
                )
            )
            out.append(
                Finding(
                    kind="flux_item",
                    key=code,
                    step=STEPS[6],
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

    def sign_off(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 8: every step's status and every open item (undecided exceptions, disputes, suspense, requests, unexplained flux, an unposted batch, steps not run); open items are carried forward with an owner and due date, or the period lock is blocked.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        self._data(ctx, period)
        ledger = Ledger(ctx.store)
        items = self._open_items(ctx, ledger)
        if items and not any(e["kind"] == "signoff" for e in ledger.exceptions(ctx.run_id)):
            run = ctx.store.run(ctx.run_id)
            owner = run.started_by or "the controller"
            due = f"{add_months(period, 1)}-15"
            listing = "; ".join(i["text"] for i in items[:12]) + (
                f"; and {len(items) - 12} more" if len(items) > 12 else ""
            )
            self._record(
                ctx,
                ledger,
                [
                    Finding(
                        kind="signoff",
                        key=period,
                        step=STEPS[7],
                        subject=f"sign-off {period}",
                        summary=f"{len(items)} open item(s)",
                        question=f"Sign-off of {close_data.period_label(period)}: {len(items)} open item(s): {listing}. Carry them forward (owner {owner}, due {due}) and lock the period, or block the lock?",
                        recommended="carry_forward",
                        reasoning="Each open item has an owner and a due date, and none stops the books from being right for the month.",
                        facts={"owner": owner, "due": due, "count": len(items)},
                    )
                ],
            )
        return self._step_result(
            ctx,
            ledger,
            STEPS[7],
            open_items=[i["text"] for i in items][:MAX_LIST],
            open_item_count=len(items),
        )

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

    def _open_items(self, ctx: ToolContext, ledger: Ledger) -> list[dict[str, Any]]:
        run = ctx.store.run(ctx.run_id)
        items: list[dict[str, Any]] = []
        for e in ledger.exceptions(ctx.run_id):
            d = e["details"]
            if e["kind"] == "signoff":
                continue
            if e["status"] != "resolved":
                what = f" (answered: {e['extra'].get('other')})" if e["extra"].get("other") else ""
                items.append(
                    {
                        "kind": "undecided",
                        "text": f"{d['subject']}: {d['summary']} — undecided{what}",
                        "amount": d.get("amount"),
                    }
                )
            elif text := follow_up(
                e["kind"], e["resolution"], d["facts"], e["extra"], d["subject"]
            ):
                items.append({"kind": e["kind"], "text": text, "amount": d.get("amount")})
        batch = ledger.current_batch(ctx.run_id)
        if batch is None:
            items.append({"kind": "journal", "text": "no journal entries were drafted"})
        elif batch["status"] != "posted":
            items.append(
                {
                    "kind": "journal",
                    "text": f"batch {batch['id']} ({money(Decimal(batch['total_debit']))}) is a draft, not posted",
                }
            )
        for step in STEPS[:6]:
            state = run.steps.get(step, "pending")
            if state not in ("done", "running", "waiting"):
                items.append(
                    {
                        "kind": "step",
                        "text": f"step '{step}' {'failed' if state == 'failed' else 'was not performed'}",
                    }
                )
        return items

    def close_summary(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """The run's summary: every step's status, exceptions and how each was decided and by whom, the batch by account, accruals, DOI changes, open items with owners.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        self._data(ctx, period)
        ledger = Ledger(ctx.store)
        run = ctx.store.run(ctx.run_id)
        excs = ledger.exceptions(ctx.run_id)
        batch = ledger.current_batch(ctx.run_id)
        lines = ledger.lines(batch["id"]) if batch else []
        carried = ledger.open_items(ctx.run_id)
        items = [{"text": i["text"], "owner": i["owner"], "due": i["due"]} for i in carried] or [
            {"text": i["text"], "owner": None, "due": None} for i in self._open_items(ctx, ledger)
        ]
        for step in STEPS:
            state = run.steps.get(step, "pending")
            if state in ("pending", "failed") and not any(step in i["text"] for i in items):
                items.append(
                    {
                        "text": f"step '{step}' {'failed' if state == 'failed' else 'was not performed'}",
                        "owner": None,
                        "due": None,
                    }
                )
        lock = [e for e in excs if e["kind"] == "signoff"]
        return {
            "period": period,
            "period_label": close_data.period_label(period),
            "steps": {s: run.steps.get(s, "pending") for s in STEPS},
            "exceptions": [
                {
                    "subject": e["details"]["subject"],
                    "summary": _short(e["details"]["summary"], 70),
                    "status": e["status"],
                    "decision": option_label(e["kind"], e["resolution"], e["details"]["facts"])
                    if e["resolution"] and e["resolution"] in e["details"]["options"]
                    else e["resolution"],
                    "decided_by": e["decided_by"],
                    "source": e["decision_source"],
                }
                for e in excs
                if e["kind"] not in ("signoff",)
            ][:30],
            "batch": {
                "batch_id": batch["id"],
                "status": batch["status"],
                "total_debit": batch["total_debit"],
                "total_credit": batch["total_credit"],
                "posted_by": batch["posted_by"],
                "by_account": [
                    [a["account"], a["debit"], a["credit"]] for a in totals_by_account(lines)
                ],
            }
            if batch
            else None,
            "doi_changes": [
                f"{r['well_id']} from {r['effective_from']}: WI {r['row']['wi']} / NRI {r['row']['nri']} ({r['status']})"
                for r in ledger.doi_rows(run_id=ctx.run_id)
            ],
            "period_lock": (lock[0]["resolution"] or "pending")
            if lock
            else ("locked" if not items else "not signed off"),
            "open_items": items,
        }


def _doi_row(row: dict[str, Any]) -> DoiRow:
    numbers = ("wi", "nri", "royalty", "orri")
    values: dict[str, Any] = {k: Decimal(v) if k in numbers else v for k, v in row.items()}
    return DoiRow(**values, source="closebot")


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
