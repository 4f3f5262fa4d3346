"""The audit chain: every decision is an event chained by a keyed hash to the run's previous
one, recording the rows it wrote; each run's head is sealed (bot/store/chain/ says how)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from bot.core.errors import ConfigError
from bot.store import chain
from bot.store.core import StoreCore, dumps, known


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
    covers: str | None = None


# The seal of the events of no run: the register of every run started and every period
# posted ("run_registered", "period_posted"), and refusals outside a run (issue 31).
REGISTER = ""


class AuditChain:
    """`store.audit`: the run's events, appended and chained; seals; verification."""

    def __init__(self, core: StoreCore) -> None:
        self.core = core
        self._audit_key = b""
        self._open_trail()

    def _open_trail(self) -> None:
        """Load the audit key and, on the first start with one, record when keyed hashing
        began (and seal every run's head as it stands), sealing the boundary after which no
        earlier release may write. A key other than the one that keyed this database is
        refused: events written with it would never verify."""
        if self.core.key_path is None and self.core.url and not os.environ.get(chain.KEY_ENV):
            raise ConfigError(
                f"{chain.KEY_ENV} is not set: on PostgreSQL every replica signs the audit trail "
                "with the same key, given in the environment (64 hex digits is best)"
            )
        key, created = chain.load_key(self.core.key_path)
        self._audit_key = key
        meta = self.core.query("select value from meta where key = ?", (chain.KEYED_AFTER,))
        if meta:
            epoch = chain.read_epoch(key, meta[0]["value"])
            if epoch is not None and epoch.key_id != chain.key_id(key):
                if created and self.core.key_path:
                    chain.key_file_for(self.core.key_path).unlink(missing_ok=True)
                raise ConfigError(
                    f"{self.core.path}'s audit trail is keyed with another key (id {epoch.key_id}; this "
                    f"key is {chain.key_id(key)}): restore {chain.key_file_for(self.core.path)} or set "
                    f"{chain.KEY_ENV} to the key it was made with"
                )
            if epoch is not None and epoch.valid:
                self._seal_boundary(epoch)
            return
        with self.core.write() as db:
            # Only a database that never had a key starts an epoch: one whose record was
            # removed while keyed events or seals remain is left for verify to name.
            keyed = [name for name, alg in chain.ALGORITHMS.items() if alg.keyed]
            marks = ",".join("?" for _ in keyed)
            if self.core.query(
                f"select 1 from audit_events where hash_alg in ({marks}) limit 1", tuple(keyed)
            ) or self.core.query("select 1 from run_seals limit 1"):
                return
            after = self.core.query("select coalesce(max(id), 0) as n from audit_events")[0]["n"]
            db.execute(
                "insert or ignore into meta (key, value) values (?, ?)",
                (chain.KEYED_AFTER, chain.epoch_value(key, int(after), int(after))),
            )
            db.execute(chain.GUARD_SQL)
            heads = self.core.query(
                "select run_id, max(id) as head_id, count(*) as events from audit_events "
                "where run_id is not null group by run_id"
            )
            for h in heads:
                head_hash = self.core.query(
                    "select hash from audit_events where id = ?", (h["head_id"],)
                )[0]["hash"]
                self._put_seal(
                    db, chain.Seal(h["run_id"], h["head_id"], head_hash or "", h["events"])
                )

    def _seal_boundary(self, epoch: chain.Epoch) -> None:
        """A database keyed by the release before this one, on this one's first start: an
        earlier release still running during that upgrade (0fd23f4 and before do not step
        aside) may have written unkeyed events since keyed hashing began. Seal the boundary
        under the key at the last event now, so those are history and any later one is a
        forgery; adopt each run those events extended with a keyed event recording its rows as
        they stand (the key holder vouches for them once, at the boundary); and from now on let
        the database refuse an event that names no algorithm. Idempotent."""
        guarded = self.core.query(
            "select 1 from sqlite_master where type = 'trigger' and name = ?", (chain.GUARD,)
        )
        if epoch.through is not None and guarded:
            return  # sealed before: nothing to write (a read-only file opens as before)
        with self.core.write() as db:
            if epoch.through is None:
                through = int(
                    self.core.query("select coalesce(max(id), 0) as n from audit_events")[0]["n"]
                )
                unkeyed = [n for n, alg in chain.ALGORITHMS.items() if not alg.keyed]
                marks = ",".join("?" for _ in unkeyed)
                extended = self.core.query(
                    "select run_id, count(*) as n, min(id) as first, max(id) as last "
                    "from audit_events where id > ? and run_id is not null and hash is not null "
                    f"and (hash_alg is null or hash_alg in ({marks})) group by run_id",
                    (epoch.after, *unkeyed),
                )
                db.execute(
                    "update meta set value = ? where key = ?",
                    (chain.epoch_value(self._audit_key, epoch.after, through), chain.KEYED_AFTER),
                )
                for r in extended:
                    self.append(
                        db,
                        run_id=r["run_id"],
                        kind="trail_adopted",
                        actor=None,
                        detail={
                            "events": r["n"],
                            "first": r["first"],
                            "last": r["last"],
                            "algorithm": chain.BEFORE_NAMES,
                            "why": "written by an earlier closebot during the upgrade, before "
                            "the boundary was sealed",
                        },
                        covers=chain.run_targets(self.core.query, r["run_id"]),
                    )
            db.execute(chain.GUARD_SQL)

    def _put_seal(self, db: Database, s: chain.Seal) -> None:
        db.execute(
            "insert into run_seals (run_id, head_id, head_hash, events, at, mac) "
            "values (?, ?, ?, ?, ?, ?) on conflict(run_id) do update set head_id = excluded.head_id, "
            "head_hash = excluded.head_hash, events = excluded.events, at = excluded.at, "
            "mac = excluded.mac",
            (
                s.run_id,
                s.head_id,
                s.head_hash,
                s.events,
                self.core.now(),
                chain.seal_mac(self._audit_key, s),
            ),
        )

    def append(
        self,
        db: Database,
        *,
        run_id: str | None,
        kind: str,
        actor: str | None,
        detail: Any,
        first: bool = False,
        covers: Iterable[chain.Target] = (),
    ) -> None:
        """Append an audit event chained to the run's previous one (call inside write()),
        recording the digests of the rows it `covers` as they stand; move the run's seal.
        `first` for a run's first event, which has none before it."""
        last = (
            []
            if first
            else self.core.query(
                "select id, hash from audit_events where run_id is ? order by id desc limit 1",
                (run_id,),
            )
        )
        prev = (last[0]["hash"] if last else None) or ""
        event = {
            "run_id": run_id,
            "at": self.core.now(),
            "kind": kind,
            "actor": actor,
            "detail": dumps(detail),
        }
        covered = chain.covers_of(self.core.query, db.execute, self._audit_key, covers)
        digest, alg = chain.seal(self._audit_key, prev, event, covered)
        cursor = db.execute(
            "insert into audit_events (run_id, at, kind, actor, detail, prev_hash, hash, hash_alg, "
            "covers) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*event.values(), prev, digest, alg, covered or None),
        )
        sealed_as = REGISTER if run_id is None else run_id  # events of no run: the register
        sealed = self.core.query(
            "select head_id, events from run_seals where run_id = ?", (sealed_as,)
        )
        if sealed and last and sealed[0]["head_id"] == last[0]["id"]:
            events = int(sealed[0]["events"]) + 1
        else:
            events = int(
                self.core.query(
                    "select count(*) as n from audit_events where run_id is ?", (run_id,)
                )[0]["n"]
            )
        self._put_seal(db, chain.Seal(sealed_as, int(cursor.lastrowid or 0), digest, events))

    def line_digest(self, line: dict[str, Any]) -> str:
        """A journal line's own digest under the audit key, as its `mac` column keeps it."""
        return chain.line_mac(self._audit_key, line)

    def line_digests(self, lines: Iterable[Sequence[Any]]) -> list[str]:
        """`line_digest` of many lines, each as its values in `chain.LINE_FIELDS` order."""
        return chain.line_macs(self._audit_key, lines)

    def lines_digest(self, batch_id: str) -> chain.WrittenLines:
        """A digest over a batch's lines for its writer to feed as it writes them, for the
        event that covers them (`chain.WrittenLines`)."""
        return chain.WrittenLines(batch_id, chain.LinesDigest(self._audit_key, batch_id))

    def seal(self, run_id: str) -> chain.Seal | None:
        """The run's sealed head: what its summary prints and verify compares."""
        rows = self.core.query("select * from run_seals where run_id = ?", (run_id,))
        if not rows:
            return None
        r = rows[0]
        return chain.Seal(run_id, int(r["head_id"]), str(r["head_hash"]), int(r["events"]))

    def _verify_chain(self, rows: list[Any]) -> tuple[chain.Verdict, chain.Epoch | None]:
        """`rows` (one run's events, or the register's) checked as a chain, with the record of
        when keyed hashing began; the verdict and that epoch (None when it was removed)."""
        meta = {
            r["key"]: r["value"]
            for r in self.core.query(
                "select key, value from meta where key in ('audit_unchained_through', ?)",
                (chain.KEYED_AFTER,),
            )
        }
        epoch = chain.read_epoch(self._audit_key, meta.get(chain.KEYED_AFTER))
        verdict = chain.verify(
            rows,
            unchained_through=int(meta.get("audit_unchained_through") or 0),
            key=self._audit_key,
            epoch=epoch,
        )
        return verdict, epoch

    def verdict(self, run_id: str, *, rows_too: bool = True) -> chain.Verdict:
        """The run's trail checked: each event with the algorithm that wrote it, the seal on
        its head, and (`rows_too`) every covered row against what the chain recorded."""
        rows = self.core.query("select * from audit_events where run_id = ? order by id", (run_id,))
        verdict, epoch = self._verify_chain(rows)
        if verdict.broken is not None:
            return verdict
        if epoch is None or not epoch.valid:
            verdict.problem = (
                "the record of when keyed hashing began (meta audit_keyed_after) was "
                + ("removed" if epoch is None else "edited")
            )
            return verdict
        seal = self.core.query("select * from run_seals where run_id = ?", (run_id,))
        chain.check_seal(verdict, self._audit_key, run_id, rows, seal[0] if seal else None)
        if verdict.problem or not rows_too:
            return verdict
        strict = bool(rows) and int(rows[0]["id"]) > epoch.after
        chain.check_rows(
            verdict,
            self.core.query,
            self._audit_key,
            run_id,
            rows,
            strict=strict,
            strict_newer=bool(rows) and int(rows[0]["id"]) > epoch.boundary,
        )
        return verdict

    def register_problems(self) -> list[str]:
        """What is wrong with the whole record rather than one run: the chain of the events
        of no run (the register) broken or cut short, a row of no run it covers (a person's
        name) changed, deleted or added outside closebot, and a run it registered that is
        gone from the database (deleted, with its events, seal and rows)."""
        rows = self.core.query("select * from audit_events where run_id is null order by id")
        problems = []
        verdict, _ = self._verify_chain(rows)
        registered = [r for r in rows if r["kind"] == "run_registered"]
        if verdict.broken is not None:
            b = verdict.broken
            problems.append(
                f"the register of runs is BROKEN at event {b['id']} ({b['kind']}, {b['at']}): "
                f"{verdict.why}"
            )
        else:
            seal = self.core.query("select * from run_seals where run_id = ?", (REGISTER,))
            if seal or registered:
                chain.check_seal(
                    verdict, self._audit_key, REGISTER, rows, seal[0] if seal else None
                )
            if verdict.problem:
                problems.append(
                    "the register of runs: " + verdict.problem.replace("the run's", "its")
                )
        # the rows of no run it covers: people's names, shown beside what they decided
        problems += chain.check_register_rows(self.core.query, self._audit_key)
        present = {r["id"] for r in self.core.query("select id from runs")}
        for r in registered:
            detail = json.loads(r["detail"] or "{}")
            if detail.get("run_id") not in present:
                problems.append(
                    f"run {detail.get('run_id')} ({detail.get('period')}), started {r['at']}, "
                    "is missing from the database: its records were deleted"
                )
        return problems

    def verify(self, run_id: str) -> tuple[int, AuditEvent | None, str]:
        """(events checked, the first event whose link is broken or None, why)."""
        verdict = self.verdict(run_id, rows_too=False)
        if verdict.broken is None:
            return verdict.checked, None, verdict.problem
        r = verdict.broken
        found = AuditEvent(**{k: r[k] for k in ("id", "run_id", "at", "kind", "actor")}, detail={})
        return verdict.checked, found, verdict.why

    def record(
        self,
        *,
        run_id: str | None,
        kind: str,
        actor: str | None,
        detail: Any = None,
        covers: Iterable[chain.Target] = (),
    ) -> None:
        """Append an audit event (joining this thread's transaction when one is open);
        `covers` names the rows just written that it records: (table, column, value)."""
        with self.core.write() as db:
            self.append(
                db, run_id=run_id, kind=kind, actor=actor, detail=detail or {}, covers=covers
            )

    def events(self, run_id: str, *, kind: str | None = None) -> list[AuditEvent]:
        sql = "select * from audit_events where run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if kind:
            sql += " and kind = ?"
            params += (kind,)
        rows = self.core.query(sql + " order by id", params)
        return [
            AuditEvent(**known(AuditEvent, {**r, "detail": json.loads(r["detail"] or "{}")}))
            for r in rows
        ]
