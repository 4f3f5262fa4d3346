"""A run's transcript (append-only Messages-API messages), its model usage and tool results.

A run's messages are decoded once and kept (issue 31): a read decodes only the rows appended
since the last one, so reading the transcript at every step of a close no longer decodes it
whole each time. History is never rewritten; the kept copy still checks, at each read, that
its last message is in the store as it was read (a rolled-back append, a database replaced
under it): if not, the run is read again whole.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from bot.store.core import StoreCore, dumps, insert_row

USAGE_FIELDS = (  # as the Messages API names them
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
# Parts of those totals, kept for pricing: cache writes to the 1-hour cache (billed at 2 ×
# input, not 1.25 ×) and thinking tokens (billed as output, counted in output_tokens).
USAGE_DETAIL_FIELDS = ("cache_write_1h_input_tokens", "thinking_tokens")


@dataclass(frozen=True)
class Message:
    seq: int
    role: str
    content: list[dict[str, Any]]

    def api(self) -> dict[str, Any]:
        """This message as the Messages API takes it (one dict per message, shared: read-only,
        so a reader can tell a message it has seen by its identity)."""
        return self._api

    @cached_property
    def _api(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content}


def decoded(row: dict[str, Any]) -> Message:
    """One stored row as a Message (the one place a message is decoded)."""
    return Message(seq=row["seq"], role=row["role"], content=json.loads(row["content"]))


@dataclass(frozen=True)
class _Kept:
    """A run's messages as last read: shared and never changed (a read makes a new one)."""

    messages: tuple[Message, ...]
    last_raw: str  # the stored text of the last one, to check it is still there


KEPT_RUNS = 8  # the runs whose messages are kept (the most recently read: those in flight)


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    name: str
    input: dict[str, Any]
    content: str
    is_error: bool


class Transcript:
    """`store.transcript`: the run's messages, its model calls' usage and its tool results."""

    def __init__(self, core: StoreCore) -> None:
        self.core = core
        self._kept: OrderedDict[str, _Kept] = OrderedDict()  # run id → its messages as read
        self._lock = threading.Lock()

    def append(self, run_id: str, *, role: str, content: list[dict[str, Any]]) -> int:
        """Append one Messages-API message; history is never rewritten."""
        if role not in ("user", "assistant"):
            raise ValueError(f"unknown role {role!r}")
        with self.core.write() as db:
            row = self.core.query(
                "select coalesce(max(seq), 0) as seq from messages where run_id = ?", (run_id,)
            )
            seq = int(row[0]["seq"]) + 1
            insert_row(
                db,
                "messages",
                {
                    "run_id": run_id,
                    "seq": seq,
                    "role": role,
                    "content": dumps(content),
                    "created_at": self.core.now(),
                },
            )
            db.execute("update runs set updated_at = ? where id = ?", (self.core.now(), run_id))
        return seq

    def last(self, run_id: str) -> Message | None:
        """The transcript's latest message, without reading the rest."""
        rows = self.core.query(
            "select seq, role, content from messages where run_id = ? order by seq desc limit 1",
            (run_id,),
        )
        if not rows:
            return None
        return decoded(rows[0])

    def messages(self, run_id: str) -> list[Message]:
        """The run's messages in order: the kept ones and those appended since (only those are
        read and decoded). The Message objects are shared: read-only."""
        with self._lock:
            kept = self._kept.get(run_id)
        if kept is not None and kept.messages:
            last = kept.messages[-1]
            rows = self.core.query(
                "select seq, role, content from messages where run_id = ? and seq >= ? "
                "order by seq",
                (run_id, last.seq),
            )
            if rows and rows[0]["seq"] == last.seq and rows[0]["content"] == kept.last_raw:
                if len(rows) == 1:
                    return list(kept.messages)
                return self._keep(run_id, kept.messages, rows[1:])
        rows = self.core.query(
            "select seq, role, content from messages where run_id = ? order by seq", (run_id,)
        )
        return self._keep(run_id, (), rows)

    def _keep(
        self, run_id: str, before: tuple[Message, ...], rows: list[dict[str, Any]]
    ) -> list[Message]:
        messages = (*before, *(decoded(r) for r in rows))
        if rows:
            with self._lock:
                self._kept[run_id] = _Kept(messages, rows[-1]["content"])
                self._kept.move_to_end(run_id)
                while len(self._kept) > KEPT_RUNS:
                    self._kept.popitem(last=False)
        return list(messages)

    # -- model usage ------------------------------------------------------

    def record_model_call(
        self, run_id: str, *, model: str | None, stop_reason: str | None, usage: dict[str, int]
    ) -> None:
        """One model call's token usage."""
        with self.core.write() as db:
            insert_row(
                db,
                "model_calls",
                {
                    "run_id": run_id,
                    "at": self.core.now(),
                    "model": model,
                    "stop_reason": stop_reason,
                    **{f: int(usage.get(f, 0)) for f in (*USAGE_FIELDS, *USAGE_DETAIL_FIELDS)},
                },
            )

    def usage(self, run_id: str) -> tuple[int, dict[str, int]]:
        """(model calls, summed token usage) of a run."""
        calls, by_model = self._usage(run_id, by_model=False)
        return calls, by_model.get(None, self._zero())

    def usage_by_model(self, run_id: str) -> dict[str | None, dict[str, int]]:
        """A run's summed token usage per model it called (each priced at its own rates)."""
        return self._usage(run_id, by_model=True)[1]

    @staticmethod
    def _zero() -> dict[str, int]:
        return dict.fromkeys((*USAGE_FIELDS, *USAGE_DETAIL_FIELDS), 0)

    def _usage(
        self, run_id: str, *, by_model: bool
    ) -> tuple[int, dict[str | None, dict[str, int]]]:
        fields = (*USAGE_FIELDS, *USAGE_DETAIL_FIELDS)
        sums = ", ".join(f"coalesce(sum({f}), 0) as {f}" for f in fields)
        group = ", model" if by_model else ", null as model"
        rows = self.core.query(
            f"select count(*) as calls{group}, {sums} from model_calls where run_id = ?"
            + (" group by model" if by_model else ""),
            (run_id,),
        )
        calls = sum(int(r.pop("calls")) for r in rows)
        out = {r.pop("model"): {k: int(v) for k, v in r.items()} for r in rows}
        return calls, out

    # -- tool calls -------------------------------------------------------

    def record_tool_result(
        self,
        run_id: str,
        *,
        tool_use_id: str,
        name: str,
        input: dict[str, Any],
        content: str,
        is_error: bool,
    ) -> None:
        with self.core.write() as db:
            insert_row(
                db,
                "tool_calls",
                {
                    "tool_use_id": tool_use_id,
                    "run_id": run_id,
                    "name": name,
                    "input": dumps(input),
                    "result": content,
                    "is_error": int(is_error),
                    "created_at": self.core.now(),
                },
                ignore=True,  # a result, once stored, is final
            )

    def last_tool_error(self, run_id: str, names: list[str]) -> str | None:
        """The latest error result of any of these tools in the run."""
        marks = ",".join("?" for _ in names) or "''"
        rows = self.core.query(
            f"select result from tool_calls where run_id = ? and is_error = 1 and name in ({marks}) "
            "order by created_at desc, rowid desc limit 1",
            (run_id, *names),
        )
        return rows[0]["result"] if rows else None

    def tool_result(self, tool_use_id: str) -> ToolResult | None:
        rows = self.core.query("select * from tool_calls where tool_use_id = ?", (tool_use_id,))
        if not rows:
            return None
        r = rows[0]
        return ToolResult(
            tool_use_id=r["tool_use_id"],
            name=r["name"],
            input=json.loads(r["input"]),
            content=r["result"],
            is_error=bool(r["is_error"]),
        )
