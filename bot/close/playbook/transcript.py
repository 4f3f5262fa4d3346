"""The playbook's reading of a transcript: the tool calls made, their results, the questions
asked and how they were answered (never hidden state), and the replies it writes."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from bot.close.controls import APPROVAL_HEADER as POSTING_HEADER
from bot.close.kinds import kind_of_ref
from bot.close.posting import REVIEW_KINDS
from bot.close.toolbase import REF_RE
from bot.close.toolset_approval import header_of_ref
from bot.core.models import Reply
from bot.core.questions import HUMAN_SOURCES, TOOL_NAME, late_answer_of


@dataclass
class Call:
    id: str
    name: str
    input: dict[str, Any]
    result: Any = None
    is_error: bool = False
    done: bool = False


@dataclass
class State:
    period: str
    calls: list[Call] = field(default_factory=list)
    last_user_text: str | None = None
    changes: set[str] = field(default_factory=set)  # questions that change a decision

    def position(self, call_id: str) -> int:
        return next(i for i, c in enumerate(self.calls) if c.id == call_id)

    def latest(self, name: str) -> Call | None:
        done = [c for c in self.calls if c.name == name and c.done]
        return done[-1] if done else None

    def asks(self) -> list[Call]:
        return [c for c in self.calls if c.name == TOOL_NAME and c.done and not c.is_error]

    def asked(self) -> dict[str, tuple[Call, int]]:
        """ref → (the ask that named it, its 1-based question number)."""
        out: dict[str, tuple[Call, int]] = {}
        for call in self.asks():
            for n, q in enumerate(call.input.get("questions", []), start=1):
                if set(q) == {"ref"}:  # asked by reference: closebot rendered it in its place
                    out[str(q["ref"])] = (call, n)
                    continue
                for ref in REF_RE.findall(q.get("question", "")):
                    out[ref] = (call, n)
        return out

    def resolved(self) -> set[str]:
        """Refs a resolve_exception call has settled (decided, or kept open with a typed answer)."""
        return set(self.resolved_by())

    def resolved_by(self) -> dict[str, Call]:
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

    def summary_of(self, ref: str) -> str:
        """An exception's summary as the step results listed it (its ref, else the ref)."""
        for c in reversed(self.calls):
            if c.done and isinstance(c.result, dict):
                for e in c.result.get("exceptions") or []:
                    if isinstance(e, dict) and e.get("ref") == ref:
                        return str(e.get("summary") or e.get("subject") or ref)
        return ref

    def details(self) -> dict[str, dict[str, Any]]:
        out = {}
        for c in self.calls:
            if c.name == "exception_details" and c.done and not c.is_error:
                out[c.input["exception_id"]] = c.result
        return out


def asked_first(ref: str) -> bool:
    """The exception is asked before any other (an open item carried from last month)."""
    kind = kind_of_ref(ref)
    return kind is not None and kind.asked_first


def entry_described(ref: str) -> bool:
    """The exception is an adjusting entry a person describes (booked in a redraft)."""
    kind = kind_of_ref(ref)
    return kind is not None and kind.entry_described


def parse(messages: list[dict[str, Any]]) -> State:
    first = messages[0]["content"]
    first_text = (
        first
        if isinstance(first, str)
        else " ".join(b.get("text", "") for b in first if b.get("type") == "text")
    )
    m = re.search(r"\b(\d{4}-\d{2})\b", first_text)
    state = State(period=m.group(1) if m else "")
    by_id: dict[str, Call] = {}
    recorded: dict[str, list[Call]] = {}  # an ask's id → the answers closebot recorded itself
    for msg in messages:
        content = msg["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if msg["role"] == "assistant":
            for b in content:
                if b.get("type") == "tool_use":
                    call = Call(id=b["id"], name=b["name"], input=b.get("input") or {})
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
                call = Call(
                    id=qid,
                    name=TOOL_NAME,
                    input={"questions": _late_questions(body)},
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
                    call.result = raw if call.is_error else _decoded(raw)
                    if call.name == TOOL_NAME and isinstance(call.result, dict):
                        recorded[call.id] = _recorded_by_closebot(call)
    if recorded:  # each right after its ask (one pass, not a search of the list per ask)
        state.calls = [x for c in state.calls for x in (c, *recorded.get(c.id, ()))]
    return state


def _late_questions(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The questions a late answer was asked with: by their refs, or (a message written by
    an earlier release) by their texts."""
    if "refs" in body:
        return [{"ref": r} if r else {} for r in body["refs"] or []]
    return [{"question": q} for q in body.get("questions") or []]


# A tool result's text → what it decodes to: the playbook reads the whole transcript at every
# turn, and decoding each result again made a close's time grow with the square of its
# exceptions (issue 31). Results are read, never changed; the cache is bounded.
_DECODED: dict[str, Any] = {}
_DECODED_CHARS = [0]  # the texts kept, in characters
_DECODED_MAX_CHARS = 32_000_000


def _decoded(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    found = _DECODED.get(raw, _DECODED)
    if found is not _DECODED:
        return found
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        value = raw
    if _DECODED_CHARS[0] + len(raw) > _DECODED_MAX_CHARS:
        _DECODED.clear()
        _DECODED_CHARS[0] = 0
    _DECODED[raw] = value
    _DECODED_CHARS[0] += len(raw)
    return value


def _recorded_by_closebot(ask: Call) -> list[Call]:
    """The answers closebot recorded itself (questions asked by reference), read as the
    resolve_exception calls they stand for (they go right after the ask)."""
    calls = []
    for n, entry in enumerate(ask.result.get("recorded") or []):
        refused = "not_recorded" in entry
        calls.append(
            Call(
                id=f"{ask.id}:recorded:{n}",
                name="resolve_exception",
                input={"exception_id": entry["ref"], "question_id": ask.id},
                result=entry["not_recorded"] if refused else entry,
                is_error=refused,
                done=True,
            ),
        )
    return calls


def use(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_pb_{uuid.uuid4().hex[:20]}",
        "name": name,
        "input": args,
    }


def say(text: str, *uses: dict[str, Any]) -> Reply:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.extend(uses)
    return Reply(content=content, stop_reason="tool_use" if uses else "end_turn")


KEEP_OPEN = "Leave it open"


def leaves_open(asked: tuple[Call, int]) -> bool:
    """The follow-up to a typed answer was answered 'Leave it open': nothing more to record."""
    call, n = asked
    result = call.result if isinstance(call.result, dict) else {}
    labels = ((result.get("answers") or {}).get(str(n)) or {}).get("labels") or []
    return any(str(label).startswith(KEEP_OPEN) for label in labels)


def typed_before(state: State, ref: str, ask: Call) -> str:
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


def books_deferred(state: State) -> list[str]:
    """Refs put off whose decision books (a flux item left unexplained books nothing and does
    not hold the posting back)."""
    return [r for r in state.deferred() if r.split(":", 1)[0] not in REVIEW_KINDS]


def deferred_ask(ask: Call) -> bool:
    return isinstance(ask.result, dict) and ask.result.get("status") == "deferred"


def from_an_earlier_release(tool: str, call: Call) -> bool:
    """A step's result in the shape of an earlier release (a run in flight at the upgrade):
    without its step and exception refs, or a draft without its content hash. The step runs
    again, finding its exceptions again in today's shape (Ledger.record_exception)."""
    if not call.done or call.is_error or not isinstance(call.result, dict):
        return False
    key = "content_hash" if tool == "build_journal_entries" else "step"
    return key not in call.result


def approved_by_a_person(ask: Call) -> bool:
    result = ask.result if isinstance(ask.result, dict) else {}
    return (
        result.get("status") == "answered"
        and result.get("source") in HUMAN_SOURCES
        and any(label.startswith("Approve") for label in result["answers"]["1"].get("labels", []))
    )


def asked_header(ask: Call) -> str | None:
    """The header of an ask's first question: written out, or named by an approval's ref."""
    first = (ask.input.get("questions") or [{}])[0]
    return first.get("header") or header_of_ref(str(first.get("ref") or ""))


def asked_text(ask: Call) -> str:
    """An ask's first question: its text, or the ref it was asked by."""
    first = (ask.input.get("questions") or [{}])[0]
    return str(first.get("question") or first.get("ref") or "")


def defaulted(state: State) -> bool:
    approvals = [a for a in state.asks() if asked_header(a) == POSTING_HEADER]
    return (
        bool(approvals)
        and isinstance(approvals[-1].result, dict)
        and approvals[-1].result.get("source") not in HUMAN_SOURCES
    )


def redraft(state: State, build: Call) -> bool:
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


def approval(state: State, header: str, batch_id: str) -> Call | None:
    """The latest approval asked of the batch (one withdrawn by a change is not counted:
    a change dropped with Cancel asks the same approval again)."""
    asks = [
        a
        for a in state.asks()
        if asked_header(a) == header
        and batch_id in asked_text(a)
        and not (
            isinstance(a.result, dict)
            and a.result.get("status") == "cancelled"
            and a.result.get("source") == "change"
        )
    ]
    return asks[-1] if asks else None
