"""The playbook's reading of a transcript: the tool calls made, their results, the questions
asked and how they were answered (never hidden state), and the replies it writes.

Each message is read once (issue 31): a run's state is kept between turns and fed only the
messages past those it read; a restarted process reads the durable transcript from the
first message and comes to the same state."""

from __future__ import annotations

import json
import re
import threading
import uuid
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bot.close.controls import APPROVAL_HEADER as POSTING_HEADER
from bot.close.kinds import kind_of_ref
from bot.close.playbook.index import KEEP_OPEN, Call, Index, asked_first, leaves_open
from bot.close.posting import REVIEW_KINDS
from bot.close.toolset_approval import header_of_ref
from bot.core.models import Reply
from bot.core.questions import HUMAN_SOURCES, TOOL_NAME, late_answer_of

__all__ = ["KEEP_OPEN", "Call", "State", "asked_first", "leaves_open", "parse"]


class State:
    """The transcript as the playbook reads it: fed each message once, in order (`feed`), its
    settled calls taken into an Index as they settle. Read it right after `parse`."""

    def __init__(self, period: str) -> None:
        self.period = period
        self.calls: list[Call] = []
        self.last_user_text: str | None = None
        self.changes: set[str] = set()  # questions that change a decision
        self.fed: list[dict[str, Any]] = []  # the messages read, as they were given
        self._by_id: dict[str, Call] = {}
        self._next = 0  # the next call's place in the transcript
        self._index = Index()
        self._taken = 0  # calls[:_taken] are in the index: all settled, none changes place
        self._afresh: tuple[int, Index] | None = None  # (messages fed, the index read afresh)

    # -- reading the messages, once each -----------------------------------

    def feed(self, msg: dict[str, Any]) -> None:
        self.fed.append(msg)
        content = msg["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if msg["role"] == "assistant":
            for b in content:
                if b.get("type") == "tool_use":
                    self._call(Call(id=b["id"], name=b["name"], input=b.get("input") or {}))
            self.last_user_text = None
            return
        late = [
            found
            for b in content
            if b.get("type") == "text" and (found := late_answer_of(b.get("text", "")))
        ]
        for body in late:  # a question answered after the turn moved on (Decide, a change)
            qid = str(body["question_id"])
            if qid in self._by_id:  # put off, brought back, answered now
                self._by_id[qid].result = body
                self._index.result_changed(self._by_id[qid])
                continue
            self._call(
                Call(
                    id=qid,
                    name=TOOL_NAME,
                    input={"questions": _late_questions(body)},
                    result=body,
                    done=True,
                )
            )
            if body.get("changes"):
                self.changes.add(qid)
        content = [
            b
            for b in content
            if not (b.get("type") == "text" and late_answer_of(b.get("text", "")))
        ]
        if late and not content:
            self.last_user_text = None
            return
        texts = [b["text"] for b in content if b.get("type") == "text"]
        # Text beside tool results is what people wrote in the thread mid-turn (read with
        # the results): the playbook can't act on it and goes on; a message of its own is
        # a conversation.
        mid_turn = any(b.get("type") == "tool_result" for b in content)
        self.last_user_text = "\n".join(texts) if texts and not mid_turn else None
        for b in content:
            if b.get("type") == "tool_result" and b["tool_use_id"] in self._by_id:
                call = self._by_id[b["tool_use_id"]]
                raw = b.get("content")
                if isinstance(raw, list):
                    raw = "".join(x.get("text", "") for x in raw)
                call.is_error = bool(b.get("is_error"))
                call.done = True
                call.result = raw if call.is_error else _decoded(raw)
                if call.name == TOOL_NAME and isinstance(call.result, dict):
                    self._recorded(call)

    def _call(self, call: Call) -> None:
        call.order = (self._next, 0)
        self._next += 1
        self._by_id[call.id] = call
        self.calls.append(call)

    def _recorded(self, ask: Call) -> None:
        """The answers closebot recorded itself, right after their ask (it is not settled
        till now, so it is past the calls taken into the index)."""
        found = _recorded_by_closebot(ask)
        if not found:
            return
        at = next(i for i in range(len(self.calls) - 1, -1, -1) if self.calls[i] is ask)
        for n, call in enumerate(found, start=1):
            call.order = (ask.order[0], n)
        self.calls[at + 1 : at + 1] = found

    def index(self) -> Index:
        """The index of every settled call: the one kept, taken up to the first call not
        settled yet; if a settled call lies past that one (a transcript cut off mid-turn),
        one read afresh for this reading."""
        while self._taken < len(self.calls) and self.calls[self._taken].done:
            self._index.take(self.calls[self._taken])
            self._taken += 1
        index = self._index
        if any(c.done for c in self.calls[self._taken :]):
            if self._afresh is None or self._afresh[0] != len(self.fed):
                index = Index()
                for c in self.calls:
                    if c.done:
                        index.take(c)
                self._afresh = (len(self.fed), index)
            index = self._afresh[1]
        index.settle()
        return index

    # -- what the playbook asks --------------------------------------------

    def after(self, call: Call) -> list[Call]:
        """The calls after `call`, in transcript order."""
        return self.calls[bisect_right(self.calls, call.order, key=lambda c: c.order) :]

    def latest(self, name: str) -> Call | None:
        return self.index().latest.get(name)

    def asks(self) -> list[Call]:
        return self.index().asks

    def asked(self) -> dict[str, tuple[Call, int]]:
        """ref → (the ask that named it, its 1-based question number)."""
        return self.index().asked

    def resolved(self) -> set[str]:
        """Refs a resolve_exception call has settled (decided, or kept open with a typed answer)."""
        return set(self.resolved_by())

    def resolved_by(self) -> dict[str, Call]:
        """ref → the latest resolve_exception call that recorded it."""
        return self.index().resolved_by

    def deferred(self) -> list[str]:
        """Refs whose latest question was put off (Cancel: "not now") and not decided since."""
        return self.index().deferred()

    def summary_of(self, ref: str) -> str:
        """An exception's summary as the step results listed it (its ref, else the ref)."""
        return self.index().summaries.get(ref, ref)

    def details(self) -> dict[str, dict[str, Any]]:
        return self.index().details


def entry_described(ref: str) -> bool:
    """The exception is an adjusting entry a person describes (booked in a redraft)."""
    kind = kind_of_ref(ref)
    return kind is not None and kind.entry_described


# The states read lately, each of the messages it was fed (one per run in flight): a turn
# feeds only the messages past those (issue 31). A state is matched by its messages being
# the first of the ones given (the same objects: a run's transcript is append-only and its
# messages are shared read-only; an equal copy matches too).
_STATES: list[State] = []
_STATES_KEPT = 8
_STATES_LOCK = threading.Lock()


def parse(messages: list[dict[str, Any]], *, keep: bool = True) -> State:
    """The transcript read: a kept state fed only what is new, else read from the first
    message. `keep=False` for messages that are not the run's (a reply supposed, not sent):
    read afresh and not kept, so the run's own state stays as it is."""
    with reading(messages, keep=keep) as state:
        return state


@contextmanager
def reading(messages: list[dict[str, Any]], *, keep: bool = True) -> Iterator[State]:
    """`parse`, the state lent to one reader at a time: out of the kept ones while it is
    read (another thread given the same first messages meanwhile reads afresh), kept again
    after."""
    state = _taken(messages) if keep else None
    if state is None:
        state = _fresh(messages)
    for msg in messages[len(state.fed) :]:
        state.feed(msg)
    try:
        yield state
    finally:
        if keep:
            with _STATES_LOCK:
                _STATES.append(state)
                del _STATES[:-_STATES_KEPT]


def _taken(messages: list[dict[str, Any]]) -> State | None:
    """A kept state fed the first of these messages, taken out of the kept ones."""
    with _STATES_LOCK:
        for n in range(len(_STATES) - 1, -1, -1):
            state = _STATES[n]
            seen = len(state.fed)
            if seen <= len(messages) and messages[:seen] == state.fed:
                # the given objects from now on: an equal copy (a message this process
                # appended, read back from the store) is compared whole only once
                state.fed = messages[:seen]
                return _STATES.pop(n)
    return None


def _fresh(messages: list[dict[str, Any]]) -> State:
    first = messages[0]["content"]
    first_text = (
        first
        if isinstance(first, str)
        else " ".join(b.get("text", "") for b in first if b.get("type") == "text")
    )
    m = re.search(r"\b(\d{4}-\d{2})\b", first_text)
    return State(period=m.group(1) if m else "")


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


def typed_before(state: State, ref: str, ask: Call) -> str:
    """The typed answer recorded for `ref` before `ask` (the follow-up that confirms it)."""
    before = [c for c in state.index().typed.get(ref, ()) if c.order < ask.order]
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
    after = state.after(build)
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
