"""The audit chain: every decision is an event chained by hash to the run's previous one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from bot import chain
from bot.store.core import StoreCore, dumps, insert_row, known


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
    hash_alg: str | None = None


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
        digest, alg = chain.seal(prev, event)
        insert_row(
            db, "audit_events", {**event, "prev_hash": prev, "hash": digest, "hash_alg": alg}
        )

    def audit_verdict(self, run_id: str) -> chain.Verdict:
        """The run's audit chain checked event by event, each with the algorithm that wrote it."""
        rows = self.query("select * from audit_events where run_id = ? order by id", (run_id,))
        meta = self.query("select value from meta where key = 'audit_unchained_through'")
        return chain.verify(rows, unchained_through=int(meta[0]["value"]) if meta else 0)

    def verify_audit(self, run_id: str) -> tuple[int, AuditEvent | None, str]:
        """(events checked, the first event whose link is broken or None, why)."""
        verdict = self.audit_verdict(run_id)
        if verdict.broken is None:
            return verdict.checked, None, ""
        r = verdict.broken
        found = AuditEvent(**{k: r[k] for k in ("id", "run_id", "at", "kind", "actor")}, detail={})
        return verdict.checked, found, verdict.why

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
        return [
            AuditEvent(**known(AuditEvent, {**r, "detail": json.loads(r["detail"] or "{}")}))
            for r in rows
        ]
