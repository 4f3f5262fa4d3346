"""The offline playbook: a deterministic Model that runs the close without an API key.

It reads the transcript — never hidden state — so it resumes from the store like Claude
would. It is a table of steps: for each, call the step's tool, ask about its open
exceptions (up to five per form, with the ready-made questions the tools give), record
each answer with resolve_exception, and move on. Posting asks for approval first.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.close.controls import APPROVAL_HEADER as POSTING_HEADER
from bot.close.controls import SECOND_APPROVAL_HEADER
from bot.close.data import period_label
from bot.close.doi_master import money
from bot.close.journal import ACCOUNTS
from bot.close.kinds import kind_of_ref
from bot.close.posting import REVIEW_KINDS
from bot.close.steps import registry
from bot.close.steps.flux import FLUX
from bot.close.steps.journal import JOURNAL
from bot.close.steps.signoff import SIGNOFF
from bot.close.toolbase import REF_RE
from bot.core.models import Reply
from bot.core.questions import HUMAN_SOURCES, MAX_QUESTIONS, TOOL_NAME, late_answer_of


@dataclass
class _Call:
    id: str
    name: str
    input: dict[str, Any]
    result: Any = None
    is_error: bool = False
    done: bool = False


@dataclass
class _State:
    period: str
    calls: list[_Call] = field(default_factory=list)
    last_user_text: str | None = None
    changes: set[str] = field(default_factory=set)  # questions that change a decision

    def position(self, call_id: str) -> int:
        return next(i for i, c in enumerate(self.calls) if c.id == call_id)

    def latest(self, name: str) -> _Call | None:
        done = [c for c in self.calls if c.name == name and c.done]
        return done[-1] if done else None

    def asks(self) -> list[_Call]:
        return [c for c in self.calls if c.name == TOOL_NAME and c.done and not c.is_error]

    def asked(self) -> dict[str, tuple[_Call, int]]:
        """ref → (the ask that named it, its 1-based question number)."""
        out: dict[str, tuple[_Call, int]] = {}
        for call in self.asks():
            for n, q in enumerate(call.input.get("questions", []), start=1):
                for ref in REF_RE.findall(q.get("question", "")):
                    out[ref] = (call, n)
        return out

    def resolved(self) -> set[str]:
        """Refs a resolve_exception call has settled (decided, or kept open with a typed answer)."""
        return set(self.resolved_by())

    def resolved_by(self) -> dict[str, _Call]:
        """ref → the latest resolve_exception call that recorded it."""
        return {
            c.input["exception_id"]: c
            for c in self.calls
            if c.name == "resolve_exception" and c.done and not c.is_error
        }

    def deferred(self) -> list[str]:
        """Refs whose latest question was put off (Cancel: "not now") and not decided since."""
        return [
            ref
            for ref, (call, _) in self.asked().items()
            if isinstance(call.result, dict) and call.result.get("status") == "deferred"
        ]

    def details(self) -> dict[str, dict[str, Any]]:
        out = {}
        for c in self.calls:
            if c.name == "exception_details" and c.done and not c.is_error:
                out[c.input["exception_id"]] = c.result
        return out


def _asked_first(ref: str) -> bool:
    """The exception is asked before any other (an open item carried from last month)."""
    kind = kind_of_ref(ref)
    return kind is not None and kind.asked_first


def _entry_described(ref: str) -> bool:
    """The exception is an adjusting entry a person describes (booked in a redraft)."""
    kind = kind_of_ref(ref)
    return kind is not None and kind.entry_described


def _parse(messages: list[dict[str, Any]]) -> _State:
    first = messages[0]["content"]
    first_text = (
        first
        if isinstance(first, str)
        else " ".join(b.get("text", "") for b in first if b.get("type") == "text")
    )
    m = re.search(r"\b(\d{4}-\d{2})\b", first_text)
    state = _State(period=m.group(1) if m else "")
    by_id: dict[str, _Call] = {}
    for msg in messages:
        content = msg["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if msg["role"] == "assistant":
            for b in content:
                if b.get("type") == "tool_use":
                    call = _Call(id=b["id"], name=b["name"], input=b.get("input") or {})
                    by_id[call.id] = call
                    state.calls.append(call)
            state.last_user_text = None
        else:
            late = [
                found
                for b in content
                if b.get("type") == "text" and (found := late_answer_of(b.get("text", "")))
            ]
            for body in late:  # a question answered after the turn moved on (Decide, a change)
                qid = str(body["question_id"])
                if qid in by_id:  # put off, brought back, answered now
                    by_id[qid].result = body
                    continue
                call = _Call(
                    id=qid,
                    name=TOOL_NAME,
                    input={"questions": [{"question": q} for q in body.get("questions", [])]},
                    result=body,
                    done=True,
                )
                by_id[qid] = call
                state.calls.append(call)
                if body.get("changes"):
                    state.changes.add(qid)
            content = [
                b
                for b in content
                if not (b.get("type") == "text" and late_answer_of(b.get("text", "")))
            ]
            if late and not content:
                state.last_user_text = None
                continue
            texts = [b["text"] for b in content if b.get("type") == "text"]
            # Text beside tool results is what people wrote in the thread mid-turn (read with
            # the results): the playbook can't act on it and goes on; a message of its own is
            # a conversation.
            mid_turn = any(b.get("type") == "tool_result" for b in content)
            state.last_user_text = "\n".join(texts) if texts and not mid_turn else None
            for b in content:
                if b.get("type") == "tool_result" and b["tool_use_id"] in by_id:
                    call = by_id[b["tool_use_id"]]
                    raw = b.get("content")
                    if isinstance(raw, list):
                        raw = "".join(x.get("text", "") for x in raw)
                    call.is_error = bool(b.get("is_error"))
                    call.done = True
                    try:
                        call.result = json.loads(raw) if not call.is_error else raw
                    except (TypeError, json.JSONDecodeError):
                        call.result = raw
    return state


def _use(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_pb_{uuid.uuid4().hex[:20]}",
        "name": name,
        "input": args,
    }


def _reply(text: str, *uses: dict[str, Any]) -> Reply:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.extend(uses)
    return Reply(content=content, stop_reason="tool_use" if uses else "end_turn")


class PlaybookModel:
    """A Model whose every reply is computed from the transcript."""

    name = "offline-playbook"

    def respond(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
    ) -> Reply:
        state = _parse(messages)
        if state.last_user_text is not None and len(messages) > 1:
            return self._chat(state)
        if not state.period:
            return _reply(
                "I need an accounting period to close, written as YYYY-MM (for example 2026-10)."
            )
        p = state.period
        for s in registry():
            step, tool, opening = s.name, s.tool_name, s.opening
            call = state.latest(tool)
            # nothing is drafted while a decision is put off, nor signed off
            if state.deferred() and ((s is JOURNAL and call is None) or s is SIGNOFF):
                return _waiting(state, step)
            if call is None or (s is JOURNAL and self._redraft(state, call)):
                return _reply(opening, _use(tool, {"period": p}))
            if _from_an_earlier_release(tool, call):
                return _reply(
                    f"{opening} (again: this run was started by an earlier version of closebot)",
                    _use(tool, {"period": p}),
                )
            if call.is_error:
                return _reply(f"The step '{step}' failed: {call.result}")
            if tool == "build_journal_entries":
                reply = self._flux_then_posting(state, call)
            else:
                reply = self._decide_step(state, step)
            if reply is not None:
                return reply
        summary = state.latest("close_summary")
        if summary is None:
            return _reply("", _use("close_summary", {"period": p}))
        return _reply(
            summary_text(
                summary.result,
                state.latest("post_journal_entries"),
                defaulted_approval=self._defaulted(state),
            )
        )

    @staticmethod
    def _defaulted(state: _State) -> bool:
        approvals = [
            a for a in state.asks() if a.input["questions"][0].get("header") == POSTING_HEADER
        ]
        return (
            bool(approvals)
            and isinstance(approvals[-1].result, dict)
            and approvals[-1].result.get("source") not in HUMAN_SOURCES
        )

    @staticmethod
    def _redraft(state: _State, build: _Call) -> bool:
        """A decision changed after the batch was drafted, and nothing is posted: draft again."""
        if state.latest("post_journal_entries") is not None:
            return False
        after = state.calls[state.position(build.id) + 1 :]
        return any(
            c.name == "resolve_exception"
            and c.done
            and not c.is_error
            and c.input.get("question_id") in state.changes
            for c in after
        )

    def _open_refs(self, state: _State, step: str) -> list[str]:
        """This step's exceptions still open, in the order found (follow-ups after their parent)."""
        refs: list[str] = []
        for c in state.calls:
            if not c.done or c.is_error or not isinstance(c.result, dict):
                continue
            if c.result.get("step") == step:
                refs += [e["ref"] for e in c.result.get("exceptions", []) if e["status"] == "open"]
            if c.name == "resolve_exception":
                refs += [
                    e["ref"] for e in c.result.get("follow_up_exceptions", []) if e["step"] == step
                ]
                # past the ones the step listed: the rest still open, named as each is decided
                refs += [e["ref"] for e in c.result.get("still_open", []) if e["step"] == step]
        seen: list[str] = []
        for r in refs:
            if r not in seen:
                seen.append(r)
        return seen

    def _decide_step(self, state: _State, step: str) -> Reply | None:
        refs = self._open_refs(state, step)
        asked = state.asked()
        recorded = state.resolved_by()
        # a ref asked again after it was recorded (a change, a follow-up to a typed answer) is
        # recorded again from the later answer
        resolved = {
            ref
            for ref, call in recorded.items()
            if ref not in asked
            or asked[ref][0].id == call.input.get("question_id")
            or state.position(asked[ref][0].id) < state.position(call.id)
            or _leaves_open(asked[ref])
        }
        # an answer the tool refused to record (an override without its reason, say) is asked again
        refused = {
            (c.input.get("exception_id"), c.input.get("question_id"))
            for c in state.calls
            if c.name == "resolve_exception" and c.done and c.is_error
        }
        asked = {r: a for r, a in asked.items() if (r, a[0].id) not in refused}
        # 1. answers waiting to be recorded
        uses = []
        for ref in refs:
            if ref in resolved or ref not in asked:
                continue
            ask, n = asked[ref]
            result = ask.result if isinstance(ask.result, dict) else {}
            if result.get("status") == "deferred":
                continue  # not now: the close goes on without it, and waits for it at the end
            if result.get("status") != "answered":
                return self._stopped(state, result.get("status") or "unanswered")
            answer = result["answers"][str(n)]
            if answer.get("skipped"):
                option, note = "text", ""
            elif "text" in answer:
                option, note = "text", answer["text"]
            elif answer.get("labels"):
                option, note = ",".join(answer["labels"]), ""
            else:
                option, note = "other", answer.get("other", "")
            typed = _typed_before(state, ref, ask)
            if typed and option != "other":  # a follow-up to a typed answer: its words are the why
                note = typed
            uses.append(
                _use(
                    "resolve_exception",
                    {"exception_id": ref, "option": option, "question_id": ask.id, "note": note},
                )
            )
        if uses:
            return _reply("Recording the decisions.", *uses)
        # 2. a typed answer that matches an option: confirm it with a short follow-up
        follow = [
            (ref, call.result)
            for ref, call in recorded.items()
            if ref in refs
            and isinstance(call.result, dict)
            and call.result.get("maps_to")
            and asked.get(ref, (None, 0))[0] is not None
            and asked[ref][0].id == call.input.get("question_id")
        ][:MAX_QUESTIONS]
        if follow:
            return _reply(
                "A typed answer matches an option: confirming it.",
                _use(TOOL_NAME, follow_up_ask(step, follow)),
            )
        # 3. open exceptions not asked yet: fetch their questions, then ask up to five at once;
        # the open items carried from last month first, on a form of their own
        pending = [r for r in refs if r not in asked and r not in resolved]
        carried = [r for r in pending if _asked_first(r)]
        todo = (carried or [r for r in pending if not _asked_first(r)])[:MAX_QUESTIONS]
        if not todo:
            return None
        details = state.details()
        missing = [r for r in todo if r not in details]
        if missing:
            return _reply("", *(_use("exception_details", {"exception_id": r}) for r in missing))
        questions = [details[r]["question"] for r in todo]
        questions += [q for r in todo for q in details[r].get("also_ask") or []]
        n = len(refs) - len([r for r in refs if r in resolved])
        context = f"{step}: {n} item{'s' if n != 1 else ''} need{'s' if n == 1 else ''} your decision before I book anything."
        if carried:
            since = (details[todo[0]].get("facts") or {}).get("from") or "last month"
            context = (
                f"Open items carried from {since}: {len(carried)} to settle before this close "
                "starts — settled, still open (carried again), or written off."
            )
        # an answer the tool refused is asked again with the reason, so the person can fix it
        why = [
            f"{str(c.result)[:300]}"
            for c in state.calls
            if c.name == "resolve_exception"
            and c.done
            and c.is_error
            and c.input.get("exception_id") in todo
        ]
        if why:
            context += " Asked again — the last answer was refused: " + why[-1]
        intro = f"{step}: " + "; ".join(details[r]["summary"] for r in todo)
        return _reply(intro[:600], _use(TOOL_NAME, {"context": context, "questions": questions}))

    def _flux_then_posting(self, state: _State, build: _Call) -> Reply | None:
        """Flux reviews the draft before anyone approves it: each flagged item is asked, an
        adjustment drafts the batch again (flux then reviews the new draft), and the posting
        approval is asked on the draft that holds every adjustment."""
        p = state.period
        review = state.latest(FLUX.tool_name)
        if review is None or state.calls.index(review) < state.calls.index(build):
            return _reply(
                f"{FLUX.opening} (the draft, before its approval)",
                _use(FLUX.tool_name, {"period": p}),
            )
        if review.is_error:
            return _reply(f"The step '{FLUX.name}' failed: {review.result}")
        reply = self._decide_step(state, FLUX.name)
        if reply is not None:
            return reply
        after = state.calls[state.calls.index(build) + 1 :]
        if any(
            c.name == "resolve_exception"
            and c.done
            and not c.is_error
            and _entry_described(str(c.input.get("exception_id", "")))
            and isinstance(c.result, dict)
            and c.result.get("status") == "resolved"
            for c in after
        ):
            return _reply(
                "Drafting the batch again with the flux adjustment(s).",
                _use(build.name, {"period": p}),
            )
        if _books_deferred(state) and state.latest("post_journal_entries") is None:
            return _waiting(state, "Posting")  # a decision that books was put off
        return self._posting(state, build)

    def _posting(self, state: _State, build: _Call) -> Reply | None:
        """Ask for approval; over the limit, for a second one; post only on a person's approvals."""
        b = build.result
        first = self._approval(state, POSTING_HEADER, b["batch_id"])
        if first is not None and _deferred(first):
            return _waiting(state, "Posting")
        if first is None:
            return _reply(
                f"Drafted batch {b['batch_id']}: {b['entries']} entries, {money(Decimal(b['total_debit']))} debits = credits. Posting needs your approval.",
                _use(TOOL_NAME, approval_ask(b)),
            )
        if not _approved_by_a_person(first):
            return None  # kept as a draft, rejected, or a default (which never approves posting)
        uses = {"batch_id": b["batch_id"], "approval_question_id": first.id}
        if b.get("entries_over_limit"):
            second = self._approval(state, SECOND_APPROVAL_HEADER, b["batch_id"])
            if second is None:
                return _reply(
                    "An entry is over the approval limit: a second, different approver is needed.",
                    _use(TOOL_NAME, approval_ask(b, second_to=first.result.get("answered_by"))),
                )
            if _deferred(second):
                return _waiting(state, "Posting")
            if not _approved_by_a_person(second):
                return None
            uses["second_approval_question_id"] = second.id
        if state.latest("post_journal_entries") is None:
            return _reply(f"Posting batch {b['batch_id']}.", _use("post_journal_entries", uses))
        return None

    @staticmethod
    def _approval(state: _State, header: str, batch_id: str) -> _Call | None:
        """The latest approval asked of the batch (one withdrawn by a change is not counted:
        a change dropped with Cancel asks the same approval again)."""
        asks = [
            a
            for a in state.asks()
            if a.input["questions"][0].get("header") == header
            and batch_id in a.input["questions"][0]["question"]
            and not (
                isinstance(a.result, dict)
                and a.result.get("status") == "cancelled"
                and a.result.get("source") == "change"
            )
        ]
        return asks[-1] if asks else None

    def _stopped(self, state: _State, status: str) -> Reply:
        summary = state.latest("close_summary")
        if summary is None:
            return _reply(
                f"The question was {status}, so I stopped here and booked nothing more.",
                _use("close_summary", {"period": state.period}),
            )
        return _reply(
            summary_text(
                summary.result,
                state.latest("post_journal_entries"),
                stopped=f"a question was {status}",
            )
        )

    def _chat(self, state: _State) -> Reply:
        text = (state.last_user_text or "").strip().lower()
        summary = state.latest("close_summary")
        if "status" in text and summary is not None:
            return _reply(summary_text(summary.result, state.latest("post_journal_entries")))
        return _reply(
            "I'm running offline (no ANTHROPIC_API_KEY), so I follow the close playbook and can't hold a "
            "free conversation. Say *status* for this run's summary, or start a new close with `/close YYYY-MM`."
        )


KEEP_OPEN = "Leave it open"


def _leaves_open(asked: tuple[_Call, int]) -> bool:
    """The follow-up to a typed answer was answered 'Leave it open': nothing more to record."""
    call, n = asked
    result = call.result if isinstance(call.result, dict) else {}
    labels = ((result.get("answers") or {}).get(str(n)) or {}).get("labels") or []
    return any(str(label).startswith(KEEP_OPEN) for label in labels)


def _typed_before(state: _State, ref: str, ask: _Call) -> str:
    """The typed answer recorded for `ref` before `ask` (the follow-up that confirms it)."""
    before = [
        c
        for c in state.calls[: state.position(ask.id)]
        if c.name == "resolve_exception"
        and c.done
        and not c.is_error
        and c.input.get("exception_id") == ref
        and isinstance(c.result, dict)
        and c.result.get("other")
    ]
    return str(before[-1].result["other"]) if before else ""


def follow_up_ask(step: str, typed: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One short question per typed answer that matches an option: book it so, or leave it
    open with the person who answered as its owner."""
    questions = []
    for ref, result in typed:
        label = result["maps_to"]["label"]
        owner = result.get("owner") or "you"
        questions.append(
            {
                "header": "Your answer",
                "question": f"You wrote \u201c{str(result['other'])[:300]}\u201d for {result.get('subject') or ref} "
                f"[ref {ref}] — book it as {label}?",
                "type": "single_choice",
                "options": [
                    {
                        "label": label,
                        "description": str(result["maps_to"].get("books") or "")[:300],
                    },
                    {
                        "label": KEEP_OPEN,
                        "description": f"Nothing is booked; it is an open item owned by {owner}.",
                    },
                ],
                "recommended": 1,
                "reasoning": f"Your words name this option ({result['maps_to'].get('matched') or label}).",
            }
        )
    return {
        "context": f"{step}: {len(questions)} typed answer{'s' if len(questions) != 1 else ''} to confirm before I book anything.",
        "questions": questions,
    }


def _books_deferred(state: _State) -> list[str]:
    """Refs put off whose decision books (a flux item left unexplained books nothing and does
    not hold the posting back)."""
    return [r for r in state.deferred() if r.split(":", 1)[0] not in REVIEW_KINDS]


def _deferred(ask: _Call) -> bool:
    return isinstance(ask.result, dict) and ask.result.get("status") == "deferred"


def _waiting(state: _State, step: str) -> Reply:
    """End the turn: what waits on the questions put off, and how they come back."""
    refs = state.deferred()
    what = f"{len(refs)} decision{'s' if len(refs) != 1 else ''} put off ({', '.join(refs[:5])})"
    if not refs:
        what = "an approval put off"
    return _reply(
        f"*Month-end close · {period_label(state.period)}* — waiting: {step} and the steps after it "
        f"wait on {what}. Nothing is posted. Press *Decide* on the close's message to answer "
        "(at a terminal: `closebot resume`); the close goes on from here."
    )


def _from_an_earlier_release(tool: str, call: _Call) -> bool:
    """A step's result in the shape of an earlier release (a run in flight at the upgrade):
    without its step and exception refs, or a draft without its content hash. The step runs
    again, finding its exceptions again in today's shape (Ledger.record_exception)."""
    if not call.done or call.is_error or not isinstance(call.result, dict):
        return False
    key = "content_hash" if tool == "build_journal_entries" else "step"
    return key not in call.result


def _approved_by_a_person(ask: _Call) -> bool:
    result = ask.result if isinstance(ask.result, dict) else {}
    return (
        result.get("status") == "answered"
        and result.get("source") in HUMAN_SOURCES
        and any(label.startswith("Approve") for label in result["answers"]["1"].get("labels", []))
    )


def approval_ask(b: dict[str, Any], *, second_to: str | None = None) -> dict[str, Any]:
    """The posting approval form: the batch, its accounts and content hash, what is open,
    what was defaulted, the DOI changes that take effect with it, the entries over the limit."""
    total = money(Decimal(b["total_debit"]))
    table = "\n".join(
        f"• {a['account']} {ACCOUNTS.get(a['account'], '')}: "
        + " ".join(
            x
            for x in (
                f"Dr {money(Decimal(a['debit']))}" if Decimal(a["debit"]) else "",
                f"Cr {money(Decimal(a['credit']))}" if Decimal(a["credit"]) else "",
            )
            if x
        )
        for a in b["by_account"]
    )
    open_ones, defaulted, already = (
        b["open_exceptions"],
        b["defaulted_decisions"],
        b.get("period_already_posted"),
    )
    if already:
        recommended, reasoning = (
            2,
            f"Batch {already} already posted this period; posting this one too would book it twice.",
        )
    elif not b["balanced"]:
        recommended, reasoning = 2, "The batch does not balance."
    elif open_ones:
        recommended, reasoning = (
            2,
            f"{b.get('open_exception_count', len(open_ones))} exception(s) are still undecided ({', '.join(open_ones[:5])}); decide them before posting.",
        )
    elif owned := b.get("open_with_owner"):
        recommended, reasoning = (
            1,
            f"The batch balances to the cent ({total} = {total}). Every exception is answered; "
            f"{b.get('open_with_owner_count', len(owned))} left open with an owner "
            f"({', '.join(owned[:5])}) book nothing and are carried as open items.",
        )
    else:
        recommended, reasoning = (
            1,
            f"The batch balances to the cent ({total} = {total}) and every exception has a recorded decision.",
        )
    lines = [
        f"{'Second approval of' if second_to else 'Post'} journal batch {b['batch_id']} (content hash {b['content_hash']}): "
        f"{b['entries']} entries, {total} debits = {money(Decimal(b['total_credit']))} credits; last month's accruals reversed from {b['reversed_from']}.",
        "By account:",
        table,
    ]
    if b.get("doi_changes"):
        lines.append(
            "DOI changes that take effect with this approval: " + "; ".join(b["doi_changes"]) + "."
        )
    if owned := b.get("open_with_owner"):
        more = b.get("open_with_owner_count", len(owned)) - len(owned)
        lines.append(
            f"Left open with an owner (booked as no entry, carried as open items): {', '.join(owned)}"
            + (f" and {more} more" if more > 0 else "")
            + "."
        )
    if b.get("flux_unexplained"):
        lines.append(
            "Flux items not explained (they stay open items; they book nothing): "
            + "; ".join(b["flux_unexplained"])
            + "."
        )
    if b.get("flux_adjustments"):
        lines.append(
            "Flux adjustments booked in this batch: " + "; ".join(b["flux_adjustments"]) + "."
        )
    if defaulted:
        more = b.get("defaulted_count", 0) - len(defaulted)
        lines.append(
            f"Decisions applied by default (not a person's): {', '.join(defaulted)}"
            + (f" and {more} more" if more > 0 else "")
            + "."
        )
    over = b.get("entries_over_limit") or []
    if over:
        lines.append(
            f"Over the {money(Decimal(b['approval_limit']))} approval limit: "
            + "; ".join(
                f"#{e['entry_no']} {e['description']} {money(Decimal(e['amount']))}"
                for e in over[:3]
            )
            + (
                f" and {b.get('over_limit_count', len(over)) - 3} more"
                if b.get("over_limit_count", len(over)) > 3
                else ""
            )
            + (
                f". A different approver than {second_to} must approve."
                if second_to
                else ". A second, different approver must approve too."
            )
        )
    return {
        "context": f"Journal batch {b['batch_id']} is ready. Posting is irreversible and needs "
        + ("a second approval." if second_to else "your approval."),
        "questions": [
            {
                "header": SECOND_APPROVAL_HEADER if second_to else POSTING_HEADER,
                "question": "\n".join(lines)[:2500],
                "type": "single_choice",
                "options": [
                    {
                        "label": "Approve and post",
                        "description": f"Post the {b['entries']} entries ({total}) to the ledger now.",
                    },
                    {
                        "label": "Keep as draft",
                        "description": "Leave the batch for review; nothing is posted.",
                    },
                    {
                        "label": "Reject with a comment",
                        "description": "Nothing is posted; say why in 'Why'.",
                    },
                ],
                "recommended": recommended,
                "reasoning": reasoning,
            }
        ],
    }


def summary_text(
    s: dict[str, Any],
    post: _Call | None,
    stopped: str | None = None,
    *,
    defaulted_approval: bool = False,
) -> str:
    """The final summary, from close_summary's result: steps, decisions, batch, open items."""
    steps = {
        k: ("done" if v == "running" else v) for k, v in s["steps"].items()
    }  # the last step is this one
    not_done = [k for k, v in steps.items() if v != "done"]
    head = f"*Month-end close · {s['period_label']}* — " + (
        f"stopped: {stopped}"
        if stopped
        else ("finished" if not not_done else f"finished with {len(not_done)} step(s) not done")
    )
    lines = [
        head,
        "*Steps*: "
        + "; ".join(f"{k}: {v if v != 'pending' else 'not run'}" for k, v in steps.items()),
    ]
    if s["exceptions"]:
        lines.append(f"*Exceptions ({s.get('exception_count', len(s['exceptions']))})*")
        for e in s["exceptions"]:
            how = (
                f"{e['decision']} — decided by "
                + (e.get("by") or f"{e.get('decided_by')} ({e.get('source')})")
                if e.get("status", "resolved") == "resolved"
                else "open"
            )
            lines.append(f"• {e['subject']}: {e['summary'][:140]} → {how}")
        if (more := s.get("exception_count", 0) - len(s["exceptions"])) > 0:
            lines.append(f"• … and {more} more (exception_details has each)")
    else:
        lines.append("*Exceptions*: none.")
    b = s["batch"]
    if b:
        where = f"posted by {b['posted_by']}" if b["status"] == "posted" else "draft, not posted"
        lines.append(
            f"*Journal batch {b['batch_id']}* ({where}): debits {money(Decimal(b['total_debit']))} = credits {money(Decimal(b['total_credit']))}"
        )
        for account, debit, credit in b["by_account"]:
            dr, cr = Decimal(debit), Decimal(credit)
            side = " ".join(
                x for x in (f"Dr {money(dr)}" if dr else "", f"Cr {money(cr)}" if cr else "") if x
            )
            lines.append(f"• {account} {ACCOUNTS.get(account, '')}: {side}")
    if post is not None and post.is_error:
        lines.append(f"*Posting refused*: {post.result}")
    elif (
        post is not None and isinstance(post.result, dict) and post.result.get("status") == "posted"
    ):
        how = (
            "self-approved (no approvers are set)"
            if post.result.get("self_approved")
            else f"approved by {post.result.get('posted_by')}"
        )
        if post.result.get("second_approver"):
            how += f", second approval by {post.result['second_approver']}"
        lines.append(f"*Posted*: {how}")
    elif b and b["status"] != "posted" and defaulted_approval:
        lines.append(
            "*Not posted*: the approval was applied by default, and a default never approves posting; a person must approve the batch."
        )
    if s.get("doi_changes"):
        more = s.get("doi_change_count", 0) - len(s["doi_changes"])
        lines.append(
            "*DOI changes*: "
            + "; ".join(s["doi_changes"])
            + (f"; and {more} more" if more > 0 else "")
        )
    lock = {
        "carry_forward": "locked; open items carried forward",
        "block_lock": "blocked by the sign-off",
    }
    lines.append(f"*Period lock*: {lock.get(s['period_lock'], s['period_lock'])}")
    if s["open_items"]:
        lines.append(f"*Open items ({s.get('open_item_count', len(s['open_items']))})*")
        for i in s["open_items"]:
            owner = f" — owner {i['owner']}, due {i['due']}" if i.get("owner") else ""
            lines.append(f"• {i['text']}{owner}")
        if (more := s.get("open_item_count", 0) - len(s["open_items"])) > 0:
            lines.append(f"• … and {more} more")
    else:
        lines.append("*Open items*: none")
    return "\n".join(lines)


__all__ = ["PlaybookModel", "approval_ask", "period_label", "summary_text"]
