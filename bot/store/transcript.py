"""A run's transcript (append-only Messages-API messages), its model usage and tool results."""

from __future__ import annotations

import json
from dataclasses import dataclass
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
        """This message as the Messages API takes it."""
        return {"role": self.role, "content": self.content}


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
        r = rows[0]
        return Message(seq=r["seq"], role=r["role"], content=json.loads(r["content"]))

    def messages(self, run_id: str) -> list[Message]:
        rows = self.core.query(
            "select seq, role, content from messages where run_id = ? order by seq", (run_id,)
        )
        return [
            Message(seq=r["seq"], role=r["role"], content=json.loads(r["content"])) for r in rows
        ]

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
