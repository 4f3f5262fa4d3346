"""The decision tools the agent calls: exception_details and resolve_exception — a person's
answer checked against the question that asked it and recorded (one exception, a group, or a
change) — and the preview of what a typed answer would book."""

from __future__ import annotations

from typing import Any

from bot.close import groups
from bot.close.decisions.answers import (
    bound_answer,
    bounded,
    codes_of,
    match_option,
    matched_words,
)
from bot.close.decisions.grouped import GroupDecisionTools
from bot.close.exception_questions import question_for
from bot.close.kinds import KINDS, book, option_entry, option_label
from bot.close.ledger import Ledger
from bot.close.open_items import assignment_questions
from bot.close.records import ExceptionRow
from bot.close.registry import MAX_LIST
from bot.close.toolbase import REF_RE
from bot.core.names import Names
from bot.core.tools import ToolContext, ToolError


class DecisionTools(GroupDecisionTools):
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
        also = assignment_questions(exc)
        return {
            "exception_id": exc["id"],
            "kind": exc["kind"],
            "status": exc["status"],
            "decision": exc["resolution"],
            "summary": d["summary"],
            "question": question_for(exc),
            **(
                {
                    "also_ask": also,
                    "also_ask_note": "Ask these owner and due-date questions in the same "
                    "ask_user_question call, right after the question above.",
                }
                if KINDS[exc["kind"]].signs_off
                else {}
            ),
            "facts": bounded({k: v for k, v in d["facts"].items() if k not in ("stub_lines",)}),
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
        return still_open(ledger, ctx.run_id, step)

    def _resolve(
        self, ctx: ToolContext, exception_id: str, option: str, question_id: str, note: str
    ) -> dict[str, Any]:
        if groups.is_group(exception_id):
            # each member recorded as on its own, in one pass: what is still open is read once,
            # for the group, not once per member (issue 31)
            return self._resolve_group(ctx, exception_id, option, question_id, note, self._resolve)
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
        chosen, typed = bound_answer(q, exc)
        codes = codes_of(exc, option)
        d = exc["details"]
        kind = KINDS[exc["kind"]]
        ledger = Ledger(ctx.store)
        if change is not None:
            return self._change(ctx, ledger, exc, q, chosen, typed, option, note)
        if kind.takes_answer(chosen, typed):
            return kind.take_answer(self, ctx, ledger, exc, q, chosen, typed)
        if typed is not None and not chosen:
            if option.casefold() not in ("other", "text"):
                raise ToolError(
                    f"the person typed an answer ({typed[:60]!r}), not {option!r}; pass option 'other' with their text"
                )
            typed_code = kind.typed_code(typed)
            if typed_code is not None:
                return self.decide(ctx, ledger, exc, typed_code, q, {})
            return self._typed_other(ledger, exc, q, typed)
        if codes != chosen:
            raise ToolError(
                f"{q.answered_by} chose {', '.join(option_label(exc['kind'], c, d['facts']) for c in chosen) or 'nothing'} "
                f"for {d['subject']}, not {option!r}; record what they chose"
            )
        if kind.question_type == "multiple_choice":
            return self.decide(ctx, ledger, exc, ",".join(codes), q, {"selected": codes})
        if kind.takes_choice(codes):
            return kind.take_answer(self, ctx, ledger, exc, q, codes, None)
        if not codes:
            raise ToolError(
                f"{q.answered_by} chose no option of {d['ref']} on question {q.id}; nothing recorded"
            )
        chosen_option = kind.option(codes[0], d["facts"])
        if chosen_option.override and not (q.rationale or "").strip() and not note.strip():
            raise ToolError(
                f"{chosen_option.label!r} on {d['ref']} overrides what the data supports: it needs the person's reason "
                "(the form's 'Why'). Ask again and ask for the reason; the exception stays open."
            )
        return self.decide(
            ctx,
            ledger,
            exc,
            codes[0],
            q,
            {"reason": q.rationale or note} if chosen_option.override else {},
        )

    def _typed_other(self, ledger: Ledger, exc: ExceptionRow, q: Any, typed: str) -> dict[str, Any]:
        """A typed answer books nothing: the exception stays open, owned by who answered, with
        the option its words name (if one) for a follow-up to confirm."""
        d = exc["details"]
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
            "owner_name": Names(ledger.store).cached(q.answered_by, default="you"),
            "note": "A typed answer books nothing: the item stays open, owned by who answered. "
            "Ask a short follow-up that maps it onto one of the options (maps_to, when the words "
            "name one), or leave it open.",
        }
        if (code := match_option(exc, typed)) is not None:
            lines = book(exc["kind"], code, d["facts"], {})
            result["maps_to"] = {
                "option": code,
                "label": option_label(exc["kind"], code, d["facts"]),
                "matched": matched_words(exc, code, typed),
                "books": option_entry(exc["kind"], code, d["facts"], lines=lines),
            }
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
        return KINDS[exc["kind"]].typed_preview(self, ctx, exc, typed)


def still_open(ledger: Ledger, run_id: str, step: str) -> dict[str, Any]:
    """What `_step_result` would list as still open for the step, when it lists more than
    MAX_LIST: the first MAX_LIST open entries (a group once, open while any member is), in the
    order found — from the kept index of the step's open entries (one decision no longer
    walks the exceptions already decided)."""
    rows, entries = ledger.step_entries(run_id, step)
    if entries.count() <= MAX_LIST:
        return {}
    still: list[dict[str, Any]] = []
    for at, group in entries.first_open(MAX_LIST):
        e = rows[at]
        if group:
            subject = f"{len(entries.groups[group])} × {e['details']['subject']} and alike"
        else:
            subject = e["details"]["subject"]
        still.append({"ref": group or e["details"]["ref"], "step": step, "subject": subject})
    return {"still_open": still} if still else {}
