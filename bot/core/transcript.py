"""A turn's copy of a run's transcript (the store stays the source of truth), and the
messages people wrote in the thread as the model reads them."""

from __future__ import annotations

from typing import Any

from bot.store import Message, Store


def thread_messages(held: list[dict[str, Any]]) -> str:
    """Messages people wrote in the run's thread, as the model reads them."""
    said = "\n\n".join(f"<@{m['user']}>: {m['text']}" if m["user"] else m["text"] for m in held)
    return (
        "Written in the thread while you were working (read this before your next step):\n\n" + said
    )


class Transcript:
    """A turn's copy of the run's transcript: read once, then appended to as the store is.

    The store stays the source of truth: every message is written there before it joins
    this copy, and a copy that finds the store ahead of it (someone else appended) reads
    the store again.
    """

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._messages = store.transcript.messages(run_id)
        self._api = [m.api() for m in self._messages]

    @property
    def last(self) -> Message | None:
        return self._messages[-1] if self._messages else None

    @property
    def messages(self) -> list[Message]:
        return self._messages

    def api(self) -> list[dict[str, Any]]:
        """The messages as the Messages API takes them (a new list; the dicts are shared)."""
        return list(self._api)

    def append(self, role: str, content: list[dict[str, Any]]) -> None:
        seq = self.store.transcript.append(self.run_id, role=role, content=content)
        expected = (self._messages[-1].seq if self._messages else 0) + 1
        if seq != expected:  # another writer got in between: take the store's word
            self._messages = self.store.transcript.messages(self.run_id)
            self._api = [m.api() for m in self._messages]
            return
        message = Message(seq=seq, role=role, content=content)
        self._messages.append(message)
        self._api.append(message.api())
