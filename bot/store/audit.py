"""The audit chain: every decision is an event chained by hash to the run's previous one."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from bot.store.core import StoreCore, dumps, insert_row


def event_hash(prev: str, event: dict[str, Any]) -> str:
    """SHA-256 over the previous event's hash and this event's fields."""
    canonical = json.dumps([prev, event], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class AuditEvent:
    id: int
    run_id: str | None
    at: str
    kind: str
    actor: str | None
    detail: dict[str, Any]
    prev_hash: str | None = None
    hash: str | None = None


class AuditChain(StoreCore):
    def _audit(
        self,
        db: Database,
        *,
        run_id: str | None,
        kind: str,
        actor: str | None,
        detail: Any,
        first: bool = False,
    ) -> None:
        """Append an audit event chained to the run's previous one (call inside write());
        `first` for a run's first event, which has none before it."""
        last = (
            []
            if first
            else self.query(
                "select hash from audit_events where run_id is ? order by id desc limit 1",
                (run_id,),
            )
        )
        prev = (last[0]["hash"] if last else None) or ""
        event = {
            "run_id": run_id,
            "at": self.now(),
            "kind": kind,
            "actor": actor,
            "detail": dumps(detail),
        }
        insert_row(
            db, "audit_events", {**event, "prev_hash": prev, "hash": event_hash(prev, event)}
        )

    def verify_audit(self, run_id: str) -> tuple[int, AuditEvent | None, str]:
        """(events checked, the first event whose link is broken or None, why)."""
        rows = self.query("select * from audit_events where run_id = ? order by id", (run_id,))
        prev = ""
        for n, r in enumerate(rows, start=1):
            event = {k: r[k] for k in ("run_id", "at", "kind", "actor", "detail")}
            bad = None
            if (r["prev_hash"] or "") != prev:
                bad = (
                    "its link to the event before it is broken (an event was removed or reordered)"
                )
            elif r["hash"] != event_hash(prev, event):
                bad = "its content does not match its hash (it was edited)"
            if bad:
                found = AuditEvent(
                    **{k: r[k] for k in ("id", "run_id", "at", "kind", "actor")}, detail={}
                )
                return n, found, bad
            prev = r["hash"]
        return len(rows), None, ""

    def audit(
        self, *, run_id: str | None, kind: str, actor: str | None, detail: Any = None
    ) -> None:
        with self.write() as db:
            self._audit(db, run_id=run_id, kind=kind, actor=actor, detail=detail or {})

    def audit_events(self, run_id: str, *, kind: str | None = None) -> list[AuditEvent]:
        sql = "select * from audit_events where run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if kind:
            sql += " and kind = ?"
            params += (kind,)
        rows = self.query(sql + " order by id", params)
        return [AuditEvent(**{**r, "detail": json.loads(r["detail"] or "{}")}) for r in rows]
