"""Changing a decision before posting: which decisions may still change (nothing posted, nothing
set off, nothing settled by them), asking the question again ('Change a decision'), and
recording the new answer over the old one (the audit trail keeps both)."""

from __future__ import annotations

from typing import Any, cast

from bot.close import groups
from bot.close.controls import APPROVAL_HEADERS, BATCH_NAMED, approves, header_of
from bot.close.decisions.answers import codes_of
from bot.close.decisions.recording import RecordingTools
from bot.close.kinds import KINDS, option_label
from bot.close.ledger import Ledger
from bot.close.records import ExceptionRow
from bot.close.toolbase import REF_RE
from bot.core.errors import CloseBotError, NotFoundError
from bot.core.identity import mention
from bot.core.tools import ToolContext, ToolError
from bot.store import QuestionRecord, Store


def change_refusal(
    ledger: Ledger, exc: ExceptionRow, settlers: set[str] | None = None
) -> str | None:
    """Why the decision on `exc` cannot be changed before posting, or None when it can.
    `settlers`: the refs whose decision settled other exceptions (read once by a caller)."""
    if exc["resolution"] is None:
        return "nothing was decided yet"
    if any(b["status"] == "posted" for b in ledger.batches(exc["run_id"])):
        return "the batch is posted; a posted decision is changed by a reversing entry"
    if not KINDS[exc["kind"]].changeable(exc["resolution"], exc["details"]["facts"]):
        return "this decision set off follow-ups (a DOI change, further questions); it is not changed in place"
    if exc["extra"].get("settled_by"):
        return f"it was settled by the decision on {exc['extra']['settled_by']}"
    if settlers is None:
        settlers = _settlers(ledger.exceptions(exc["run_id"]))
    if exc["details"]["ref"] in settlers:
        return "it settled other exceptions on the same document line"
    return None


def _settlers(exceptions: list[ExceptionRow]) -> set[str]:
    return {str(e["extra"]["settled_by"]) for e in exceptions if e["extra"].get("settled_by")}


def changeable_decisions(store: Store, run_id: str) -> list[tuple[str, str]]:
    """The decisions of a run that can still be changed (nothing posted), as ('QUESTION:N',
    'subject: what was decided'): N is the question's number on its form. A group decided as
    one (groups.py) is offered once, as the group (issue 31)."""
    ledger = Ledger(store)
    if any(b["status"] == "posted" for b in ledger.batches(run_id)):
        return []
    exceptions = ledger.exceptions(run_id)
    settlers = _settlers(exceptions)
    out = []
    seen: set[str] = set()
    for e in exceptions:
        group = groups.group_of(e)
        if group in seen:
            continue
        members = [e]
        if group:
            seen.add(group)
            members = groups.members(exceptions, group)
        if not e["question_id"] or any(
            m["question_id"] != e["question_id"] or change_refusal(ledger, m, settlers)
            for m in members
        ):
            continue
        try:
            q = store.questions.get(e["question_id"])
        except NotFoundError:
            continue
        ref = group or e["details"]["ref"]
        number = next(
            (n for n, item in enumerate(q.questions, 1) if ref in REF_RE.findall(item["question"])),
            None,
        )
        if number is None or q.status != "answered":
            continue
        out.append((f"{q.id}:{number}", f"{_subject(members)}: {_decided(e)}"))
    return out


def _subject(members: list[ExceptionRow]) -> str:
    """What a decision was about: an exception's subject, or a group's count and total."""
    return groups.summary(members) if len(members) > 1 else members[0]["details"]["subject"]


def _decided(e: ExceptionRow) -> str:
    if e["resolution"] == "other":
        return "left open"
    return option_label(e["kind"], cast(str, e["resolution"]), e["details"]["facts"])


class CannotChange(CloseBotError):
    """A decision that cannot be asked again now; the message says why."""


def _acting_on(store: Store, run_id: str) -> QuestionRecord | None:
    """An answer the close has not read yet (answered, its result not in the transcript, or a
    late answer not told): the close is about to act on it, though the run still reads
    'waiting' until its turn starts. The latest such answer, or None."""
    untold = {q.id for q in store.questions.untold_answers(run_id)}
    unread = [
        q
        for q in store.questions.of_run(run_id)
        if q.status == "answered"
        and (q.id in untold or (not q.late and store.transcript.tool_result(q.id) is None))
    ]
    return unread[-1] if unread else None


def _asked_in(store: Store, run_id: str, item: dict[str, Any]) -> list[ExceptionRow]:
    """The exceptions a form's question decided: the one it names, or its group's members."""
    refs = REF_RE.findall(item["question"])
    if not refs:
        return []
    if groups.is_group(refs[0]):
        return groups.members(Ledger(store).exceptions(run_id), refs[0])
    return [Ledger(store).exception(f"{run_id}:{refs[0]}")]


def _refusal_now(store: Store, run_id: str) -> str | None:
    """Why no decision of the run may be asked again at this moment (None: one may). Read
    inside the transaction that asks it: an approval claimed a moment earlier is seen here."""
    acting = _acting_on(store, run_id)
    working = acting is not None or store.runs.get(run_id).status != "waiting"
    if working and acting is None:  # its turn has begun: on the approval last given, if any
        approvals = [q for q in store.questions.of_run(run_id) if header_of(q) in APPROVAL_HEADERS]
        acting = approvals[-1] if approvals and approvals[-1].status == "answered" else None
    if acting is not None and header_of(acting) in APPROVAL_HEADERS and approves(acting.answer):
        named = BATCH_NAMED.findall(
            acting.context + " ".join(str(x.get("question")) for x in acting.questions)
        )
        batch = f"batch {named[-1]}" if named else "the batch"
        return (
            f"{mention(acting.answered_by or '-')} approved {batch} at the same moment and the "
            "close is acting on that approval; once it is posted, a decision is changed by a "
            "reversing entry"
        )
    if working:
        return "the close is working; change a decision once it waits on you"
    pending = store.questions.pending(run_id)
    if pending is not None and header_of(pending) not in APPROVAL_HEADERS:
        return "answer the open form first, then change a decision"
    return None


def ask_change(
    store: Store, run_id: str, value: str, *, by: str
) -> tuple[QuestionRecord, str | None]:
    """'Change a decision' (`value` 'QUESTION:N' from changeable_decisions): that question is
    asked again as a new pending one naming it; a pending posting approval is withdrawn (it
    would approve a batch about to be drafted again). Returns the new question and the id of
    the approval withdrawn, if any. CannotChange (nothing changed) when it may not be now.

    One transaction decides it against an approval given at the same instant (issue 31): the
    approval's claim and this one are serialised by the database, so either the approval was
    claimed first (seen here: refused, the approval stands) or this withdraws it first (the
    approval's claim then finds it cancelled, and its giver is told so)."""
    question_id, _, number = value.partition(":")
    with store.write():
        posted = [b["id"] for b in Ledger(store).batches(run_id) if b["status"] == "posted"]
        if posted:
            raise CannotChange(
                f"batch {posted[-1]} was approved and posted; a posted decision is changed by a "
                "reversing entry"
            )
        if (value, "") not in {(v, "") for v, _ in changeable_decisions(store, run_id)}:
            raise CannotChange(
                "that decision can no longer be changed here (it is posted, set off follow-ups, "
                "or was changed already)"
            )
        refusal = _refusal_now(store, run_id)
        if refusal:
            raise CannotChange(refusal)
        pending = store.questions.pending(run_id)
        of = store.questions.get(question_id)
        item = of.questions[int(number) - 1]
        members = _asked_in(store, run_id, item)
        exc = members[0] if members else None
        subject = _subject(members) if members else (item.get("header") or "a decision")
        earlier = (
            f" Decided before: {_decided(exc)}."
            if exc and exc["resolution"] not in (None, "other")
            else ""
        )
        changes = [q for q in store.questions.of_run(run_id) if q.changes == of.id]
        withdrawn = None
        if pending is not None:
            store.questions.cancel(pending.id, cancelled_by=by, source="change")
            withdrawn = pending.id
        record = store.questions.ask_again(
            of,
            by=by,
            question_id=f"{of.id}-change{len(changes) + 1}",
            context=f"Changing a decision before posting: {subject}.{earlier} The earlier answer "
            "stays in the record; the batch is drafted again and needs a new approval.",
            questions=[item],
        )
    return record, withdrawn


class ChangeTools(RecordingTools):
    """A decision recorded again over the one it changes, before posting."""

    @staticmethod
    def _change_of(ctx: ToolContext, exc: ExceptionRow, question_id: str) -> str | None:
        """The question whose decision on `exc` question `question_id` changes, if it does."""
        try:
            q = ctx.store.questions.get(question_id)
        except NotFoundError:
            return None
        if q.changes and q.run_id == ctx.run_id and q.changes == exc.get("question_id"):
            return q.changes
        return None

    def _change(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: ExceptionRow,
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
        codes = codes_of(exc, option)
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
