"""A turn's copy of a run's transcript (the store stays the source of truth), as it is sent
(thinking blocks a run cannot send back left out), and the messages people wrote in the
thread as the model reads them."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from bot.core.encoded import SentMessages, dumps
from bot.store import Message, RunPrompt, Store


def thread_messages(held: list[dict[str, Any]]) -> str:
    """Messages people wrote in the run's thread, as the model reads them."""
    said = "\n\n".join(f"<@{m['user']}>: {m['text']}" if m["user"] else m["text"] for m in held)
    return (
        "Written in the thread while you were working (read this before your next step):\n\n" + said
    )


THINKING = ("thinking", "redacted_thinking")
OMITTED = "(earlier reasoning omitted)"


def without_thinking(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks without thinking: a thinking block is bound to the system prompt, tools and
    messages that produced it, and a run that kept no copy of those cannot send it back; the
    documented way is to remove the thinking by hand
    (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation).
    A message that held only thinking keeps a line saying so (a message may not be empty)."""
    kept = [b for b in content if b.get("type") not in THINKING]
    return kept or [{"type": "text", "text": OMITTED}]


def kept_prompt(store: Store, run_id: str, system: str, tools: list[dict[str, Any]]) -> RunPrompt:
    """The system prompt and tools the run started with, kept with it and sent unchanged for
    its whole life: a thinking block is bound to them, and the API refuses one sent back with
    a changed copy (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks:
    "build system and tools once per conversation and send that same copy every time"). A run
    from before copies were kept takes these (today's), and its thinking so far is left out of
    what is sent (it was bound to a prompt nobody kept)."""
    kept = store.runs.prompt(run_id)
    if kept is not None:
        return kept
    messages = store.transcript.messages(run_id)
    thought = any(
        b.get("type") in THINKING for m in messages if m.role == "assistant" for b in m.content
    )
    stale = messages[-1].seq + 1 if thought else None
    return store.runs.keep_prompt(run_id, RunPrompt(system, tools, stale))


@dataclass(frozen=True)
class _Sent:
    """A run's messages as a turn began with them (the store's objects), each as sent and its
    JSON: shared, never changed."""

    stale_before: int | None
    messages: list[Message]
    api: list[dict[str, Any]]
    encoded: list[bytes]


_SENT: weakref.WeakKeyDictionary[Store, OrderedDict[str, _Sent]] = weakref.WeakKeyDictionary()
_SENT_LOCK = threading.Lock()
SENT_RUNS = 8  # the runs kept (the most recently begun: those in flight)


def _kept_sent(store: Store, run_id: str) -> _Sent | None:
    with _SENT_LOCK:
        return _SENT.get(store, OrderedDict()).get(run_id)


def _keep_sent(store: Store, run_id: str, sent: _Sent) -> None:
    with _SENT_LOCK:
        runs = _SENT.setdefault(store, OrderedDict())
        runs[run_id] = sent
        runs.move_to_end(run_id)
        while len(runs) > SENT_RUNS:
            runs.popitem(last=False)


class Transcript:
    """A turn's copy of the run's transcript: read once, then appended to as the store is.

    The store stays the source of truth: every message is written there before it joins
    this copy, and a copy that finds the store ahead of it (someone else appended) reads
    the store again.
    """

    def __init__(self, store: Store, run_id: str, *, stale_before: int | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.stale_before = stale_before
        self._messages = store.transcript.messages(run_id)
        self._read_sent()

    def _sent(self, message: Message) -> dict[str, Any]:
        """The message as it is sent: before `stale_before`, without its thinking blocks."""
        if self.stale_before is None or message.seq >= self.stale_before:
            return message.api()
        return {"role": message.role, "content": without_thinking(message.content)}

    @property
    def last(self) -> Message | None:
        return self._messages[-1] if self._messages else None

    @property
    def messages(self) -> list[Message]:
        return self._messages

    def api(self) -> list[dict[str, Any]]:
        """The messages as the Messages API takes them (a new list; the dicts are shared),
        with each one's JSON made when it joined (bot/core/encoded.py)."""
        return SentMessages(self._api, list(self._encoded))

    def _read_sent(self) -> None:
        """Each message as sent and its JSON (bot/core/encoded.py): those of the messages the
        run's last turn began with kept, the rest made now — a turn's start costs what is new
        since the last (issue 31)."""
        kept = _kept_sent(self.store, self.run_id)
        seen = 0
        if (
            kept is not None
            and kept.stale_before == self.stale_before
            and len(kept.messages) <= len(self._messages)
            and self._messages[: len(kept.messages)] == kept.messages  # the same objects
        ):
            seen = len(kept.messages)
        self._api = list(kept.api[:seen]) if kept is not None else []
        self._encoded = list(kept.encoded[:seen]) if kept is not None else []
        for m in self._messages[seen:]:
            self._api.append(self._sent(m))
            self._encoded.append(dumps(self._api[-1]))
        _keep_sent(
            self.store,
            self.run_id,
            _Sent(self.stale_before, list(self._messages), list(self._api), list(self._encoded)),
        )

    def append(self, role: str, content: list[dict[str, Any]]) -> None:
        seq = self.store.transcript.append(self.run_id, role=role, content=content)
        expected = (self._messages[-1].seq if self._messages else 0) + 1
        if seq != expected:  # another writer got in between: take the store's word
            self._messages = self.store.transcript.messages(self.run_id)
            self._read_sent()
            return
        message = Message(seq=seq, role=role, content=content)
        self._messages.append(message)
        self._api.append(self._sent(message))
        self._encoded.append(dumps(self._api[-1]))
