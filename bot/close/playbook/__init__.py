"""The offline playbook: a deterministic Model that runs the close without an API key.

It reads the transcript — never hidden state — so it resumes from the store like Claude
would. It is a table of steps: for each, call the step's tool, ask about its open
exceptions (up to five per form, with the ready-made questions the tools give), record
each answer with resolve_exception, and move on. Posting asks for approval first.

The transcript is read in transcript.py; the forms it asks are forms.py; what it says at
the end or while it waits is summary.py.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.close.controls import APPROVAL_HEADER as POSTING_HEADER
from bot.close.controls import SECOND_APPROVAL_HEADER
from bot.close.decisions.answers import option_of
from bot.close.doi_master import money
from bot.close.playbook.forms import approval_ask, follow_up_ask
from bot.close.playbook.summary import summary_text, waiting
from bot.close.playbook.transcript import (
    Call,
    State,
    approval,
    approved_by_a_person,
    books_deferred,
    defaulted,
    deferred_ask,
    entry_described,
    from_an_earlier_release,
    reading,
    redraft,
    say,
    typed_before,
    use,
)
from bot.close.steps import registry
from bot.close.steps.flux import FLUX
from bot.close.steps.journal import JOURNAL
from bot.close.steps.signoff import SIGNOFF
from bot.close.toolset_approval import approval_ref
from bot.core.models import Reply
from bot.core.questions import MAX_QUESTIONS, TOOL_NAME


class PlaybookModel:
    """A Model whose every reply is computed from the transcript."""

    name = "offline-playbook"

    def __init__(self, *, by_reference: bool = False) -> None:
        # by_reference: ask the prepared questions by their refs (as Claude is told to),
        # without fetching each one's details first; off, the offline default asks them
        # written out, as exception_details gives them
        self.by_reference = by_reference

    def respond(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
    ) -> Reply:
        reply = self._respond(messages)
        if (
            self.by_reference
            and reply.content
            and all(
                b.get("name") == "resolve_exception"
                for b in reply.content
                if b.get("type") == "tool_use"
            )
        ):
            reply = self._and_next_step(messages, reply)
        return reply

    def _and_next_step(self, messages: list[dict[str, Any]], reply: Reply) -> Reply:
        """The answers recorded and, in the same message, the next step's tool when that is
        what comes once they are (as Claude is told: no round trip only to record)."""
        uses = [b for b in reply.content if b.get("type") == "tool_use"]
        if not uses:
            return reply
        supposed = [
            *messages,
            {"role": "assistant", "content": reply.content},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": u["id"],
                        "content": '{"status": "resolved"}',
                    }
                    for u in uses
                ],
            },
        ]
        after = self._respond(supposed, keep=False)  # supposed, never the run's own state
        nexts = [b for b in after.content if b.get("type") == "tool_use"]
        batchable = {s.tool_name for s in registry() if s not in (JOURNAL, SIGNOFF)}
        if len(nexts) == 1 and nexts[0]["name"] in batchable:
            return Reply(content=[*reply.content, *nexts], stop_reason="tool_use")
        return reply

    def _respond(self, messages: list[dict[str, Any]], *, keep: bool = True) -> Reply:
        with reading(messages, keep=keep) as state:
            return self._reply(state, messages)

    def _reply(self, state: State, messages: list[dict[str, Any]]) -> Reply:
        if state.last_user_text is not None and len(messages) > 1:
            return self._chat(state)
        if not state.period:
            return say(
                "I need an accounting period to close, written as YYYY-MM (for example 2026-10)."
            )
        p = state.period
        for s in registry():
            step, tool, opening = s.name, s.tool_name, s.opening
            call = state.latest(tool)
            # nothing is drafted while a decision is put off, nor signed off
            if state.deferred() and ((s is JOURNAL and call is None) or s is SIGNOFF):
                return waiting(state, step)
            if call is None or (s is JOURNAL and redraft(state, call)):
                return say(opening, use(tool, {"period": p}))
            if from_an_earlier_release(tool, call):
                return say(
                    f"{opening} (again: this run was started by an earlier version of closebot)",
                    use(tool, {"period": p}),
                )
            if call.is_error:
                return say(f"The step '{step}' failed: {call.result}")
            if tool == "build_journal_entries":
                reply = self._flux_then_posting(state, call)
            else:
                reply = self._decide_step(state, step)
            if reply is not None:
                return reply
        summary = state.latest("close_summary")
        if summary is None:
            return say("", use("close_summary", {"period": p}))
        return say(
            summary_text(
                summary.result,
                state.latest("post_journal_entries"),
                defaulted_approval=defaulted(state),
            )
        )

    def _decide_step(self, state: State, step: str) -> Reply | None:
        """The step's next move: answers to record, typed answers to confirm, or the next
        exceptions to ask — read from the index, each exception where it stands (a turn's
        work does not grow with the exceptions already decided)."""
        index = state.index()
        refs = index.steps.get(step)
        if refs is None:
            return None
        # 1. answers waiting to be recorded: asked, not recorded from that ask (a ref asked
        # again after it was recorded — a change, a follow-up to a typed answer — is recorded
        # again from the later answer; an answer the tool refused is asked again)
        uses = []
        for ref in refs.refs(refs.waiting):
            ask, n = index.asked[ref]
            result = ask.result if isinstance(ask.result, dict) else {}
            if result.get("status") == "deferred":
                continue  # not now: the close goes on without it, and waits for it at the end
            if result.get("status") != "answered":
                return self._stopped(state, result.get("status") or "unanswered")
            option, note = option_of(result["answers"][str(n)])
            typed = typed_before(state, ref, ask)
            if typed and option != "other":  # a follow-up to a typed answer: its words are the why
                note = typed
            uses.append(
                use(
                    "resolve_exception",
                    {"exception_id": ref, "option": option, "question_id": ask.id, "note": note},
                )
            )
        if uses:
            return say("Recording the decisions.", *uses)
        # 2. a typed answer that matches an option: confirm it with a short follow-up
        follow = [
            (ref, index.resolved_by[ref].result) for ref in index.to_confirm(step)[:MAX_QUESTIONS]
        ]
        if follow:
            return say(
                "A typed answer matches an option: confirming it.",
                use(TOOL_NAME, follow_up_ask(step, follow)),
            )
        # 3. open exceptions not asked yet: fetch their questions, then ask up to five at once;
        # the open items carried from last month first, on a form of their own
        carried = refs.refs(refs.pending_first)
        todo = (carried or refs.refs(refs.pending_rest[:MAX_QUESTIONS]))[:MAX_QUESTIONS]
        if not todo:
            return None
        details = {} if self.by_reference else state.details()
        missing = [r for r in todo if r not in details]
        if missing and not self.by_reference:
            return say("", *(use("exception_details", {"exception_id": r}) for r in missing))
        if self.by_reference:
            questions = [{"ref": r} for r in todo]
        else:
            questions = [details[r]["question"] for r in todo]
            questions += [q for r in todo for q in details[r].get("also_ask") or []]
        n = refs.undecided()
        context = f"{step}: {n} item{'s' if n != 1 else ''} need{'s' if n == 1 else ''} your decision before I book anything."
        if carried:
            since = (details.get(todo[0], {}).get("facts") or {}).get("from") or "last month"
            context = (
                f"Open items carried from {since}: {len(carried)} to settle before this close "
                "starts — settled, still open (carried again), or written off."
            )
        # an answer the tool refused is asked again with the reason, so the person can fix it
        refused = [index.refusal[r] for r in todo if r in index.refusal]
        if refused:
            last = max(refused, key=lambda c: c.order)
            context += " Asked again — the last answer was refused: " + str(last.result)[:300]
        intro = f"{step}: " + "; ".join(
            details[r]["summary"] if r in details else state.summary_of(r) for r in todo
        )
        return say(intro[:600], use(TOOL_NAME, {"context": context, "questions": questions}))

    def _flux_then_posting(self, state: State, build: Call) -> Reply | None:
        """Flux reviews the draft before anyone approves it: each flagged item is asked, an
        adjustment drafts the batch again (flux then reviews the new draft), and the posting
        approval is asked on the draft that holds every adjustment."""
        p = state.period
        review = state.latest(FLUX.tool_name)
        if review is None or review.order < build.order:
            return say(
                f"{FLUX.opening} (the draft, before its approval)",
                use(FLUX.tool_name, {"period": p}),
            )
        if review.is_error:
            return say(f"The step '{FLUX.name}' failed: {review.result}")
        reply = self._decide_step(state, FLUX.name)
        if reply is not None:
            return reply
        if any(
            c.name == "resolve_exception"
            and c.done
            and not c.is_error
            and entry_described(str(c.input.get("exception_id", "")))
            and isinstance(c.result, dict)
            and c.result.get("status") == "resolved"
            for c in state.after(build)
        ):
            return say(
                "Drafting the batch again with the flux adjustment(s).",
                use(build.name, {"period": p}),
            )
        if books_deferred(state) and state.latest("post_journal_entries") is None:
            return waiting(state, "Posting")  # a decision that books was put off
        return self._posting(state, build)

    def _posting(self, state: State, build: Call) -> Reply | None:
        """Ask for approval; over the limit, for a second one; post only on a person's approvals."""
        b = build.result
        first = approval(state, POSTING_HEADER, b["batch_id"])
        if first is not None and deferred_ask(first):
            return waiting(state, "Posting")
        if first is None:
            return say(
                f"Drafted batch {b['batch_id']}: {b['entries']} entries, {money(Decimal(b['total_debit']))} debits = credits. Posting needs your approval.",
                use(TOOL_NAME, self._approval(b)),
            )
        if not approved_by_a_person(first):
            return None  # kept as a draft, rejected, or a default (which never approves posting)
        uses = {"batch_id": b["batch_id"], "approval_question_id": first.id}
        if b.get("entries_over_limit"):
            second = approval(state, SECOND_APPROVAL_HEADER, b["batch_id"])
            if second is None:
                return say(
                    "An entry is over the approval limit: a second, different approver is needed.",
                    use(
                        TOOL_NAME,
                        self._approval(b, second_to=first.result.get("answered_by")),
                    ),
                )
            if deferred_ask(second):
                return waiting(state, "Posting")
            if not approved_by_a_person(second):
                return None
            uses["second_approval_question_id"] = second.id
        if state.latest("post_journal_entries") is None:
            return say(f"Posting batch {b['batch_id']}.", use("post_journal_entries", uses))
        return None

    def _approval(self, b: dict[str, Any], *, second_to: str | None = None) -> dict[str, Any]:
        """The approval form: by the batch's approval ref (closebot renders it), or written out."""
        if not self.by_reference:
            return approval_ask(b, second_to=second_to)
        ref = approval_ref(b["batch_id"], second=second_to is not None)
        return {"context": f"Approval of batch {b['batch_id']}.", "questions": [{"ref": ref}]}

    def _stopped(self, state: State, status: str) -> Reply:
        summary = state.latest("close_summary")
        if summary is None:
            return say(
                f"The question was {status}, so I stopped here and booked nothing more.",
                use("close_summary", {"period": state.period}),
            )
        return say(
            summary_text(
                summary.result,
                state.latest("post_journal_entries"),
                stopped=f"a question was {status}",
            )
        )

    def _chat(self, state: State) -> Reply:
        text = (state.last_user_text or "").strip().lower()
        summary = state.latest("close_summary")
        if "status" in text and summary is not None:
            return say(summary_text(summary.result, state.latest("post_journal_entries")))
        return say(
            "I'm running offline (no ANTHROPIC_API_KEY), so I follow the close playbook and can't hold a "
            "free conversation. Say *status* for this run's summary, or start a new close with `/close YYYY-MM`."
        )


__all__ = ["PlaybookModel", "approval_ask", "summary_text"]
