"""Recording a person's decision, bound to the question that asked it, and the follow-ups a
decision creates (an effective date, flux explanations, the sign-off)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import fields
from decimal import Decimal
from typing import Any

from bot.close import checks, groups
from bot.close import data as close_data
from bot.close.checks import Close, Finding
from bot.close.controls import APPROVAL_HEADERS, header_of
from bot.close.data import add_months, cents
from bot.close.doi_master import ACCOUNT_NAMES, dec8, money, with_change
from bot.close.kinds import (
    KINDS,
    SETTLED,
    adjustment_code,
    book,
    describe,
    line_refs,
    option_label,
)
from bot.close.ledger import Ledger
from bot.close.registry import FLUX, SIGNOFF
from bot.close.steps import flux
from bot.close.steps.flux import _flux_label, parse_adjustment
from bot.close.toolbase import (
    MAX_LIST,
    REF_RE,
    ToolBase,
    assignment_questions,
    question_for,
    question_for_group,
)
from bot.core.errors import CloseBotError, NotFoundError
from bot.core.names import Names
from bot.core.tools import ToolContext, ToolError
from bot.store import QuestionRecord, Store


def _pair_lines(debit: str, credit: str, amount: Decimal) -> list[dict[str, Any]]:
    zero = Decimal("0.00")
    return [
        {"account": debit, "debit": amount, "credit": zero},
        {"account": credit, "debit": zero, "credit": amount},
    ]


def catch_up_lines(
    close: Close, name: str, well_id: str, effective: str, wi: Decimal, nri: Decimal | None = None
) -> list[dict[str, str]]:
    """What jib_history booked at the old WI since `effective`, caught up to the new: cost Dr 6210
    (the line's account) / Cr 2110. The revenue side is one question with this month's checks
    (`_shortfall_at_new_nri`)."""
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


FACT_ITEMS = 3  # items of a list shown in exception_details; document_lines pages the rest

# Kinds whose decision does more than book (asks a follow-up, writes a DOI row, signs off,
# opens flux items): such a decision is not changed in place; a follow-up is its own question.
UNCHANGEABLE = frozenset(
    {
        "doi_effective",
        "flux_select",
        "flux_item",
        "flux_adjust",
        "flux_escalate",
        "signoff",
        "carried_item",
    }
)
FOLLOWED_UP = {("wi_nri", "accept"), ("doi_sanity", "correct")}


def change_refusal(
    ledger: Ledger, exc: dict[str, Any], settlers: set[str] | None = None
) -> str | None:
    """Why the decision on `exc` cannot be changed before posting, or None when it can.
    `settlers`: the refs whose decision settled other exceptions (read once by a caller)."""
    if exc["resolution"] is None:
        return "nothing was decided yet"
    if any(b["status"] == "posted" for b in ledger.batches(exc["run_id"])):
        return "the batch is posted; a posted decision is changed by a reversing entry"
    if exc["kind"] in UNCHANGEABLE or (exc["kind"], exc["resolution"]) in FOLLOWED_UP:
        return "this decision set off follow-ups (a DOI change, further questions); it is not changed in place"
    if exc["extra"].get("settled_by"):
        return f"it was settled by the decision on {exc['extra']['settled_by']}"
    if settlers is None:
        settlers = _settlers(ledger.exceptions(exc["run_id"]))
    if exc["details"]["ref"] in settlers:
        return "it settled other exceptions on the same document line"
    return None


def _settlers(exceptions: list[dict[str, Any]]) -> set[str]:
    return {str(e["extra"]["settled_by"]) for e in exceptions if e["extra"].get("settled_by")}


def changeable_decisions(store: Store, run_id: str) -> list[tuple[str, str]]:
    """The decisions of a run that can still be changed (nothing posted), as ('QUESTION:N',
    'subject: what was decided'): N is the question's number on its form."""
    ledger = Ledger(store)
    if any(b["status"] == "posted" for b in ledger.batches(run_id)):
        return []
    exceptions = ledger.exceptions(run_id)
    settlers = _settlers(exceptions)
    out = []
    for e in exceptions:
        if not e["question_id"] or change_refusal(ledger, e, settlers):
            continue
        try:
            q = store.question(e["question_id"])
        except NotFoundError:
            continue
        ref = e["details"]["ref"]
        number = next(
            (n for n, item in enumerate(q.questions, 1) if ref in REF_RE.findall(item["question"])),
            None,
        )
        if number is None or q.status != "answered":
            continue
        d = e["details"]
        decided = (
            "left open"
            if e["resolution"] == "other"
            else option_label(e["kind"], e["resolution"], d["facts"])
        )
        out.append((f"{q.id}:{number}", f"{d['subject']}: {decided}"))
    return out


def _keywords(exc: dict[str, Any], code: str) -> list[str]:
    """The words that name an option in a typed answer: its code's words and its label."""
    words = [w for w in re.split(r"[_\W]+", code.casefold()) if len(w) >= 4]
    return [*words, option_label(exc["kind"], code, exc["details"]["facts"]).casefold()]


def _matched_words(exc: dict[str, Any], code: str, typed: str) -> str:
    text = typed.casefold()
    found = [w for w in _keywords(exc, code) if re.search(rf"\b{re.escape(w)}", text)]
    return ", ".join(f"\u201c{w}\u201d" for w in found)


def match_option(exc: dict[str, Any], typed: str) -> str | None:
    """The one option a typed answer clearly names (a word of its code, or its label), or None
    when it names none or more than one. Deterministic: the playbook's follow-up asks to confirm."""
    if exc["kind"] in UNCHANGEABLE or not typed.strip():
        return None
    hits = [c for c in exc["details"]["options"] if _matched_words(exc, c, typed)]
    return hits[0] if len(hits) == 1 else None


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
        if groups.is_group(exception_id):
            return self._group_details(ctx, exception_id)
        exc = self._exception(ctx, exception_id)
        d = exc["details"]
        return {
            "exception_id": exc["id"],
            "kind": exc["kind"],
            "status": exc["status"],
            "decision": exc["resolution"],
            "summary": d["summary"],
            "question": question_for(exc),
            **(
                {
                    "also_ask": assignment_questions(exc),
                    "also_ask_note": "Ask these owner and due-date questions in the same "
                    "ask_user_question call, right after the question above.",
                }
                if exc["kind"] == "signoff"
                else {}
            ),
            "facts": _bounded({k: v for k, v in d["facts"].items() if k not in ("stub_lines",)}),
        }

    def resolve_exception(
        self, ctx: ToolContext, exception_id: str, option: str, question_id: str, note: str = ""
    ) -> dict[str, Any]:
        """Record a person's decision on an exception, exactly as they answered it through ask_user_question.

        The question must name the exception ([ref …]) and the option must be the one the person
        chose there. A typed "Other" answer books nothing: pass option "other" with the text in
        note, and the exception stays open with it. A group of alike exceptions (ref alike:…)
        is recorded with its ref: the decision applies to each of its exceptions; "Decide line
        by line" returns them to be asked one by one.

        Args:
          exception_id: the exception_id (or its ref) from a step's result
          option: the option code or label chosen (comma-separated for a multiple-choice answer; "other" for a typed answer; "text" for a free-text answer)
          question_id: the id of the ask_user_question call whose answer decided this
          note: the typed text of an "Other" or free-text answer
        """
        result = self._resolve(ctx, exception_id, option, question_id, note)
        return {**result, **self._still_open(ctx, exception_id)}

    def _still_open(self, ctx: ToolContext, exception_id: str) -> dict[str, Any]:
        """The step's exceptions still open past the ones its result listed (a step lists at
        most MAX_LIST): named here as each is decided, so none is left unasked."""
        ledger = Ledger(ctx.store)
        if groups.is_group(exception_id):
            steps = [
                e["details"]["step"]
                for e in ledger.exceptions(ctx.run_id)
                if groups.group_of(e) == exception_id
            ]
            if not steps:
                return {}
            step = steps[0]
        else:
            try:
                step = self._exception(ctx, exception_id)["details"]["step"]
            except ToolError:
                return {}
        listed = self._step_result(ctx, ledger, step)
        if not listed.get("more_exceptions"):
            return {}
        still = [
            {"ref": e["ref"], "step": step, "subject": e["subject"]}
            for e in listed["exceptions"]
            if e["status"] == "open"
        ]
        return {"still_open": still} if still else {}

    def _resolve(
        self, ctx: ToolContext, exception_id: str, option: str, question_id: str, note: str
    ) -> dict[str, Any]:
        if groups.is_group(exception_id):
            return self._resolve_group(ctx, exception_id, option, question_id, note)
        exc = self._exception(ctx, exception_id)
        change = self._change_of(ctx, exc, question_id)
        if exc["status"] == "resolved" and change is None:
            settled_by = exc["extra"].get("settled_by")
            return {
                "exception_id": exc["id"],
                "status": "resolved",
                "decision": f"settled by {settled_by}" if settled_by else exc["resolution"],
                "note": f"the decision on {settled_by} already settled this document line; nothing is booked twice"
                if settled_by
                else "already decided; nothing changed",
            }
        q = self._answered(ctx, question_id)
        chosen, typed = self._bound_answer(q, exc)
        codes = self._codes(exc, option)
        d = exc["details"]
        ledger = Ledger(ctx.store)
        if change is not None:
            return self._change(ctx, ledger, exc, q, chosen, typed, option, note)
        if exc["kind"] in ("flux_adjust", "flux_escalate") or (
            exc["kind"] == "flux_item" and (typed is not None or not chosen)
        ):
            return self._flux_answer(ctx, ledger, exc, q, chosen, typed)
        if typed is not None and not chosen:
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
                extra={"other": typed, "owner": q.answered_by},
                question_id=q.id,
                decided_by=q.answered_by,
                source=q.source,
            )
            result: dict[str, Any] = {
                "exception_id": exc["id"],
                "subject": d["subject"],
                "status": "open",
                "other": typed,
                "owner": q.answered_by,
                "note": "A typed answer books nothing: the item stays open, owned by who answered. "
                "Ask a short follow-up that maps it onto one of the options (maps_to, when the words "
                "name one), or leave it open.",
            }
            if (code := match_option(exc, typed)) is not None:
                lines = book(exc["kind"], code, d["facts"], {})
                result["maps_to"] = {
                    "option": code,
                    "label": option_label(exc["kind"], code, d["facts"]),
                    "matched": _matched_words(exc, code, typed),
                    "books": describe(lines) if lines else "books nothing",
                }
            return result
        if codes != chosen:
            raise ToolError(
                f"{q.answered_by} chose {', '.join(option_label(exc['kind'], c, d['facts']) for c in chosen) or 'nothing'} "
                f"for {d['subject']}, not {option!r}; record what they chose"
            )
        if exc["kind"] == "flux_select":
            return self._decide(ctx, ledger, exc, ",".join(codes), q, {"selected": codes})
        if exc["kind"] == "flux_item":
            return self._flux_answer(ctx, ledger, exc, q, codes, None)
        if not codes:
            raise ToolError(
                f"{q.answered_by} chose no option of {d['ref']} on question {q.id}; nothing recorded"
            )
        chosen_option = KINDS[exc["kind"]].option(codes[0], d["facts"])
        if chosen_option.override and not (q.rationale or "").strip() and not note.strip():
            raise ToolError(
                f"{chosen_option.label!r} on {d['ref']} overrides what the data supports: it needs the person's reason "
                "(the form's 'Why'). Ask again and ask for the reason; the exception stays open."
            )
        return self._decide(
            ctx,
            ledger,
            exc,
            codes[0],
            q,
            {"reason": q.rationale or note} if chosen_option.override else {},
        )

    @staticmethod
    def _change_of(ctx: ToolContext, exc: dict[str, Any], question_id: str) -> str | None:
        """The question whose decision on `exc` question `question_id` changes, if it does."""
        try:
            q = ctx.store.question(question_id)
        except NotFoundError:
            return None
        if q.changes and q.run_id == ctx.run_id and q.changes == exc.get("question_id"):
            return q.changes
        return None

    def _change(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: dict[str, Any],
        q: QuestionRecord,
        chosen: list[str],
        typed: str | None,
        option: str,
        note: str,
    ) -> dict[str, Any]:
        """A decision changed before posting: the new answer is recorded over the old one (the
        audit trail keeps both); the batch must be drafted again and approved anew."""
        refusal = change_refusal(ledger, exc)
        if refusal:
            raise ToolError(f"{exc['details']['ref']}: {refusal}")
        d = exc["details"]
        codes = self._codes(exc, option)
        if typed is not None and not chosen:
            code, status, extra = "other", "open", {"other": typed, "owner": q.answered_by}
        elif codes != chosen or not codes:
            raise ToolError(
                f"{q.answered_by} chose {', '.join(option_label(exc['kind'], c, d['facts']) for c in chosen) or 'nothing'} "
                f"for {d['subject']}, not {option!r}; record what they chose"
            )
        else:
            code, status = codes[0], "resolved"
            chosen_option = KINDS[exc["kind"]].option(code, d["facts"])
            why = q.rationale or note
            if chosen_option.override and not why.strip():
                raise ToolError(
                    f"{chosen_option.label!r} on {d['ref']} overrides what the data supports: it needs the person's reason"
                )
            extra = {"reason": why} if chosen_option.override else {}
        ledger.change_decision(
            exc["id"],
            option=code,
            status=status,
            extra=extra,
            question_id=q.id,
            decided_by=q.answered_by,
            source=q.source,
        )
        return {
            "exception_id": exc["id"],
            "status": status,
            "decision": option_label(exc["kind"], code, d["facts"]) if code != "other" else "open",
            "changed_from": exc["resolution"],
            "decided_by": q.answered_by,
            "next": "The batch drafted before this change is void: draft it again with "
            "build_journal_entries and ask for a new approval.",
        }

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
        if exc["kind"] == "doi_sanity" and code == "correct":
            extra = {**extra, **self._correct_doi(ctx, ledger, exc, q)}
        if exc["kind"] == "doi_effective":
            extra = self._accept_doi(ctx, ledger, exc, code, q)
            spawned += self._shortfall_at_new_nri(ctx, exc, code, Decimal(extra["nri"]))
        if exc["kind"] == "flux_select":
            spawned += self._flux_items(ctx, exc, extra["selected"])
        if exc["kind"] == "flux_item" and code in ("adjust", "escalate"):
            spawned.append(self._flux_follow_up(ctx, exc, code))
        if exc["kind"] == "signoff":
            extra = {**extra, **self._sign(ctx, ledger, exc, code, q)}
        if exc["kind"] == "carried_item" and code in ("settled", "write_off"):
            ledger.set_open_item_status(
                d["facts"]["item_id"],
                "settled" if code == "settled" else "written_off",
                by_run=ctx.run_id,
            )
        record = ledger.decide(
            exc["id"],
            option=code,
            status="resolved",
            extra=extra,
            question_id=q.id,
            decided_by=q.answered_by,
            source=q.source,
        )
        settled = (
            self._settle_others(ctx, ledger, exc, q)
            if KINDS[exc["kind"]].holds(code, d["facts"])
            else []
        )
        if (
            exc["kind"] == "carried_item"
            and d["step"] == SIGNOFF.name  # asked at sign-off (a run an earlier release began)
            and not any(
                e["kind"] == "carried_item" and e["status"] != "resolved" and e["id"] != exc["id"]
                for e in ledger.exceptions(ctx.run_id)
            )
        ):
            spawned += self._signoff_finding(ctx, ledger, ctx.store.run(ctx.run_id).period)
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
        if settled:
            result["settles"] = settled
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

    def typed_preview(self, ctx: ToolContext, question: str, typed: str) -> str | None:
        """What a typed answer to `question` would book, for the person to check before it is
        recorded: a typed effective date its catch-up entry, a typed adjusting entry the entry
        as read. None when the typed text books nothing (it is kept open as a note)."""
        refs = REF_RE.findall(question)
        if not refs or groups.is_group(refs[0]):
            return None
        try:
            exc = self._exception(ctx, refs[0])
        except ToolError:
            return None
        if exc["status"] == "resolved":
            return None
        facts = exc["details"]["facts"]
        if exc["kind"] == "flux_adjust":
            try:
                entry = parse_adjustment(typed.strip())
            except ValueError:
                return None
            lines = _pair_lines(entry["debit"], entry["credit"], Decimal(entry["amount"]))
            memo = f" — {entry['memo']}" if entry["memo"] else ""
            return (
                f"The adjusting entry for {exc['details']['subject']} as read: "
                f"{describe(lines, names=ACCOUNT_NAMES)}{memo}."
            )
        if exc["kind"] != "doi_effective":
            return None
        found = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", typed)
        if not found or not close_data.DATE_RE.match(found.group(1)):
            return None
        date = found.group(1)
        run = ctx.store.run(ctx.run_id)
        close, _ = self._close(ctx, run.period)
        wi, nri = Decimal(facts["wi"]), Decimal(facts["nri"])
        catch_up = catch_up_lines(close, facts["well_name"], facts["well_id"], date, wi, nri)
        lines = book("doi_effective", date, facts, {"catch_up": catch_up})
        months = sorted(
            {m.group(1) for c in catch_up if (m := re.search(r"service (\d{4}-\d{2})", c["memo"]))}
        )
        what = (
            f"books the JIB catch-up of {len(catch_up)} line(s) billed at the old decimal "
            f"(service {', '.join(months)}): {describe(lines, names=ACCOUNT_NAMES)}"
            if lines
            else "books no JIB catch-up: no month since then was billed at the old decimal"
        )
        short = self._shortfall_at_new_nri(ctx, exc, date, nri)
        checks_then = (
            f"Checks paid at the old NRI since then are {money(short[0].amount)} short "
            f"({short[0].summary}): the next question asks to book it as a catch-up receivable, "
            "claim it, or accept the checks as paid."
            if short
            else "No check since then paid less than the new NRI gives."
        )
        return (
            f"Effective {date} for {facts['well_name']} (WI {facts['wi']} / NRI {facts['nri']}) "
            f"{what}. {checks_then}"
        )

    def _group(self, ctx: ToolContext, ref: str) -> list[dict[str, Any]]:
        found = groups.members(Ledger(ctx.store).exceptions(ctx.run_id), ref)
        if not found:
            raise ToolError(f"no group {ref!r} in this run; the step results list its groups")
        return found

    def _group_details(self, ctx: ToolContext, ref: str) -> dict[str, Any]:
        group = self._group(ctx, ref)
        return {
            "exception_id": ref,
            "kind": group[0]["kind"],
            "status": groups.status(group),
            "summary": groups.summary(group),
            "exceptions": len(group),
            "question": question_for_group(group),
            "first": [e["details"]["ref"] for e in group[:FACT_ITEMS]],
            "note": f"One question for all {len(group)}: record the answer with resolve_exception "
            "and this group's ref; the detail of every line is attached to the form.",
        }

    def _resolve_group(
        self, ctx: ToolContext, ref: str, option: str, question_id: str, note: str
    ) -> dict[str, Any]:
        """The group's answer for each of its exceptions, each recorded as on its own (bound to
        the question that named the group); "Decide line by line" leaves each open to be asked."""
        group = self._group(ctx, ref)
        q = self._answered(ctx, question_id)
        labels = self._group_answer(q, ref)
        if groups.LINE_BY_LINE in labels:
            if option.strip() not in (groups.LINE_BY_LINE, groups.LINE_BY_LINE_CODE):
                raise ToolError(
                    f"{q.answered_by} chose {groups.LINE_BY_LINE!r} for {ref}, not {option!r}; record what they chose"
                )
            ledger = Ledger(ctx.store)
            split = [e for e in group if e["status"] != "resolved"]
            for e in split:
                ledger.decide(
                    e["id"],
                    option=groups.LINE_BY_LINE_CODE,
                    status="open",
                    extra={groups.LINE_BY_LINE_CODE: ref},
                    question_id=q.id,
                    decided_by=q.answered_by,
                    source=q.source,
                )
            return {
                "group": ref,
                "status": "line by line",
                "exceptions": len(split),
                "follow_up_exceptions": [
                    {"ref": e["details"]["ref"], "step": e["details"]["step"]} for e in split
                ],
                "next": "Ask about each of these with ask_user_question (exception_details gives each "
                "one's question), then record each with resolve_exception.",
            }
        for e in group:  # every exception takes this answer, or none is recorded
            if e["status"] != "resolved":
                chosen, typed = self._bound_answer(q, e)
                codes = self._codes(e, option)
                if typed is None and codes != chosen:
                    raise ToolError(
                        f"{q.answered_by} chose {', '.join(labels) or 'nothing'} for {ref}, not "
                        f"{option!r}; record what they chose"
                    )
        results = [self.resolve_exception(ctx, e["id"], option, question_id, note) for e in group]
        decided = [
            self._exception(ctx, e["id"]) for e in group
        ]  # as recorded: their own codes and extras
        lines = [
            line
            for e in decided
            if e["status"] == "resolved" and e["resolution"] in e["details"]["options"]
            for line in book(e["kind"], e["resolution"], e["details"]["facts"], e["extra"])
        ]
        return {
            "group": ref,
            "status": groups.status(decided),
            "exceptions": len(group),
            "decision": results[0].get("decision") or results[0].get("status"),
            "decided_by": q.answered_by,
            "source": q.source,
            "books": describe(lines),
        }

    @staticmethod
    def _group_answer(q: QuestionRecord, ref: str) -> list[str]:
        for number, item in enumerate(q.questions, start=1):
            if ref in REF_RE.findall(item["question"]):
                return list(((q.answer or {}).get(str(number)) or {}).get("labels") or [])
        raise ToolError(
            f"question {q.id} did not ask about {ref}; ask the question that names it ([ref {ref}])"
        )

    @staticmethod
    def _bound_answer(q: QuestionRecord, exc: dict[str, Any]) -> tuple[list[str], str | None]:
        """The option codes the person chose on the question naming this exception (or the
        group it was asked in), and any typed text."""
        refs = {exc["details"]["ref"], exc["details"].get("group") or exc["details"]["ref"]}
        ref = exc["details"]["ref"]
        for number, item in enumerate(q.questions, start=1):
            if refs & set(REF_RE.findall(item["question"])):
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

    def _settle_others(
        self, ctx: ToolContext, ledger: Ledger, exc: dict[str, Any], q: QuestionRecord
    ) -> list[str]:
        """A decision that holds, maps or replaces document lines settles every other open
        exception about only those lines: they are recorded as settled by it, booking nothing."""
        lines = line_refs(exc["details"]["facts"])
        out = []
        for other in ledger.exceptions(ctx.run_id) if lines else []:
            theirs = line_refs(other["details"]["facts"])
            if other["id"] == exc["id"] or other["status"] == "resolved" or not theirs:
                continue
            if theirs <= lines:
                ledger.decide(
                    other["id"],
                    option=SETTLED.code,
                    status="resolved",
                    extra={"settled_by": exc["details"]["ref"]},
                    question_id=q.id,
                    decided_by=q.answered_by,
                    source=q.source,
                )
                out.append(other["details"]["ref"])
        return out

    def _correct_doi(
        self, ctx: ToolContext, ledger: Ledger, exc: dict[str, Any], q: QuestionRecord
    ) -> dict[str, Any]:
        """DOI sanity, corrected: a closebot row from the broken row's date with the computed NRI,
        in force once the batch is approved and posted (as every DOI change)."""
        facts = exc["details"]["facts"]
        close, _ = self._close(ctx, ctx.store.run(ctx.run_id).period)
        base = next(
            (
                r
                for r in close.data.doi
                if r.well_id == facts["well_id"] and r.effective_from == facts["effective_from"]
            ),
            None,
        )
        if base is None:
            raise ToolError(f"{facts['well_id']} has no DOI row from {facts['effective_from']}")
        nri = Decimal(facts["computed_nri"])
        new = with_change(base, wi=base.wi, nri=nri, effective_from=base.effective_from)
        row = {
            k: (str(v) if isinstance(v, Decimal) else v)
            for k, v in ((f.name, getattr(new, f.name)) for f in fields(new))
            if k not in ("line", "source")
        }
        ledger.propose_doi(
            ctx.run_id,
            well_id=base.well_id,
            row=row,
            effective_from=base.effective_from,
            question_id=q.id,
            decided_by=q.answered_by,
        )
        return {"effective_from": base.effective_from, "wi": str(base.wi), "nri": str(nri)}

    def _flux_answer(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: dict[str, Any],
        q: QuestionRecord,
        chosen: list[str],
        typed: str | None,
    ) -> dict[str, Any]:
        """A flux item is cleared only by an explanation or an adjustment, never by a skip;
        escalating asks to whom, adjusting asks for the entry."""
        kind, d = exc["kind"], exc["details"]
        text = (typed or "").strip()
        if kind == "flux_adjust":
            if not text:
                return self._keep_open(ledger, exc, q, "no adjustment described")
            try:
                entry = parse_adjustment(text)
            except ValueError as e:
                raise ToolError(
                    f"{e}; ask again for the entry as 'Dr ACCOUNT / Cr ACCOUNT AMOUNT'"
                ) from None
            result = self._decide(
                ctx, ledger, exc, adjustment_code(entry), q, {"adjustment": entry}
            )
            result["next"] = (
                "Redraft the batch with build_journal_entries: the adjustment is booked in it. "
                "The posting approval is asked on the new draft, after the flux review."
            )
            return result
        if kind == "flux_escalate":
            to = text or next((c[3:] for c in chosen if c.startswith("to:")), "")
            if not to:
                return self._keep_open(ledger, exc, q, "escalated to no one")
            return self._decide(ctx, ledger, exc, "escalate", q, {"to": to})
        if text:
            return self._decide(ctx, ledger, exc, "explain", q, {"explanation": text})
        if not chosen:
            return self._keep_open(ledger, exc, q, "skipped: an explanation is required")
        code = chosen[0]
        if code == "explain":
            draft = d["facts"].get("draft") or ""
            if not draft:
                return self._keep_open(
                    ledger,
                    exc,
                    q,
                    "Explain chosen with nothing to explain it: type the explanation",
                )
            return self._decide(ctx, ledger, exc, "explain", q, {"explanation": draft})
        return self._decide(ctx, ledger, exc, code, q, {})

    @staticmethod
    def _keep_open(
        ledger: Ledger, exc: dict[str, Any], q: QuestionRecord, why: str
    ) -> dict[str, Any]:
        ledger.decide(
            exc["id"],
            option="open",
            status="open",
            extra={"note": why},
            question_id=q.id,
            decided_by=q.answered_by,
            source=q.source,
        )
        return {"exception_id": exc["id"], "status": "open", "note": f"{why}; the item stays open"}

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
                f"(DOI today {facts['doi_wi']} / {facts['doi_nri']})? JIB months booked at the old decimal since then are "
                "caught up from jib_history (Dr 6210 / Cr 2110); checks paid at the old NRI since then are one question next "
                "(book, claim or accept). The new DOI row takes "
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
        """Every check since the effective date that paid at the old NRI — the history months and
        this month's alike — is one question: book the catch-up receivable, claim it, or accept."""
        run = ctx.store.run(ctx.run_id)
        close, _ = self._close(ctx, run.period)
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
        short = [(r, where, checks.stub_net(r, nri)) for r, where in history + current]
        short = [(r, where, due) for r, where, due in short if due > r.owner_net_value]
        total = sum((due - r.owner_net_value for r, _, due in short), Decimal("0.00"))
        if total <= 0:
            return []
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
                kind="stub_underpaid",
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

    def _flux_follow_up(self, ctx: ToolContext, exc: dict[str, Any], code: str) -> Finding:
        d = exc["details"]
        key = d["ref"].split(":", 1)[1]
        if code == "adjust":
            return Finding(
                kind="flux_adjust",
                key=key,
                step=FLUX.name,
                subject=d["subject"],
                summary=f"the adjustment for {d['subject']}",
                question=f"Describe the adjusting entry for {d['subject']} as 'Dr ACCOUNT / Cr ACCOUNT AMOUNT — memo' "
                "(for example Dr 6220 / Cr 2115 1,500.00 — Carter workover not yet billed): two accounts of the chart "
                "and an amount to the cent. It is booked in this month's batch, which is drafted again, and the "
                "posting approval covers it; an accrual (to 2115, or Dr 1210 / Cr 4010–4030) is reversed next month. It clears the item.",
                recommended="adjust",
                reasoning="An adjustment clears a flux item only with its accounts and amount.",
                facts={"item": d["facts"].get("item")},
                options=["adjust", "accrue"],
            )
        people = list(dict.fromkeys([*(d["facts"].get("people") or []), "the controller"]))
        shown = {p: Names(ctx.store).cached(p) for p in people}  # names, never user ids
        return Finding(
            kind="flux_escalate",
            key=key,
            step=FLUX.name,
            subject=d["subject"],
            summary=f"escalate {d['subject']}",
            question=f"Escalate the flux of {d['subject']} to whom? They own it until it is explained (type another name under Other).",
            recommended=f"to:{people[0]}",
            reasoning=f"{shown[people[0]]} is the first approver of this close."
            if len(people) > 1
            else f"{shown[people[0]]} owns this close.",
            facts={"item": d["facts"].get("item"), "names": shown},
            options=[f"to:{p}" for p in people],
        )

    def _sign(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: dict[str, Any],
        code: str,
        q: QuestionRecord,
    ) -> dict[str, Any]:
        """The open items stored with the owner and due date chosen on the form (per item, or
        per group of items); the recommended ones where a row was left empty. Carried forward
        or with the lock blocked, the items are the owners' work and the next close asks about
        each one still open."""
        run = ctx.store.run(ctx.run_id)
        items = self._open_items(ctx, ledger)
        facts = exc["details"]["facts"]
        groups = facts.get("groups") or []
        chosen = _assignments(q)
        default_owner = facts.get("owner") or run.started_by
        default_due = facts.get("due") or f"{add_months(run.period, 1)}-15"
        stored = []
        for item in items:
            n = next((k for k, g in enumerate(groups, start=1) if item["text"] in g["items"]), 0)
            group = groups[n - 1] if n else {}
            owner = chosen.get(("owner", n)) or group.get("owner") or item.get("owner")
            due = chosen.get(("due", n)) or group.get("due") or default_due
            stored.append({**item, "owner": owner or default_owner, "due": due})
        ledger.carry_forward(ctx.run_id, period=run.period, items=stored)
        for item in stored:  # carried again: this sign-off's row is the item from now on
            if item.get("carried_id"):
                ledger.set_open_item_status(item["carried_id"], "carried", by_run=ctx.run_id)
        ctx.store.audit(
            run_id=ctx.run_id,
            kind="period_lock",
            actor=None,
            detail={
                "decision": code,
                "open_items": len(items),
                "owners": dict(Counter(str(i["owner"]) for i in stored)),
            },
        )
        return {
            "assigned": [
                {"text": i["text"], "owner": i["owner"], "due": i["due"]} for i in stored[:MAX_LIST]
            ]
        }


def _assignments(q: QuestionRecord) -> dict[tuple[str, int], str]:
    """("owner" | "due", row number) → what the person picked on the sign-off form's owner and
    due-date questions (headers "Owner N" / "Due N"); rows left empty are absent."""
    out: dict[tuple[str, int], str] = {}
    for number, item in enumerate(q.questions, start=1):
        m = re.fullmatch(r"(Owner|Due) (\d+)", str(item.get("header") or ""))
        answer = (q.answer or {}).get(str(number)) or {}
        value = answer.get("user") or answer.get("date")
        if m and isinstance(value, str) and value:
            out[(m.group(1).lower(), int(m.group(2)))] = value
    return out


class CannotChange(CloseBotError):
    """A decision that cannot be asked again now; the message says why."""


def ask_change(
    store: Store, run_id: str, value: str, *, by: str
) -> tuple[QuestionRecord, str | None]:
    """'Change a decision' (`value` 'QUESTION:N' from changeable_decisions): that question is
    asked again as a new pending one naming it; a pending posting approval is withdrawn (it
    would approve a batch about to be drafted again). Returns the new question and the id of
    the approval withdrawn, if any. CannotChange (nothing changed) when it may not be now."""
    question_id, _, number = value.partition(":")
    if (value, "") not in {(v, "") for v, _ in changeable_decisions(store, run_id)}:
        raise CannotChange(
            "that decision can no longer be changed here (it is posted, set off follow-ups, or "
            "was changed already)"
        )
    run = store.run(run_id)
    pending = store.pending_question(run_id)
    if run.status != "waiting":
        raise CannotChange("the close is working; change a decision once it waits on you")
    if pending is not None and header_of(pending) not in APPROVAL_HEADERS:
        raise CannotChange("answer the open form first, then change a decision")
    of = store.question(question_id)
    item = of.questions[int(number) - 1]
    ref = REF_RE.findall(item["question"])
    exc = Ledger(store).exception(f"{run_id}:{ref[0]}") if ref else None
    subject = exc["details"]["subject"] if exc else (item.get("header") or "a decision")
    earlier = (
        f" Decided before: {option_label(exc['kind'], exc['resolution'], exc['details']['facts'])}."
        if exc and exc["resolution"] not in (None, "other")
        else ""
    )
    changes = [q for q in store.questions(run_id) if q.changes == of.id]
    with store.write():
        withdrawn = None
        if pending is not None:
            store.cancel_question(pending.id, cancelled_by=by, source="change")
            withdrawn = pending.id
        record = store.ask_again(
            of,
            by=by,
            question_id=f"{of.id}-change{len(changes) + 1}",
            context=f"Changing a decision before posting: {subject}.{earlier} The earlier answer "
            "stays in the record; the batch is drafted again and needs a new approval.",
            questions=[item],
        )
    return record, withdrawn
