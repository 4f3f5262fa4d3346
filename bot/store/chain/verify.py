"""Verifying a run's trail: each event with its algorithm, the seal on its head, and every
covered row against the digest the chain recorded."""

import hmac
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.store.chain.algorithms import ALGORITHMS, BEFORE_NAMES, EVENT_FIELDS
from bot.store.chain.covers import (
    COVERED,
    LINES,
    LinesDigest,
    Query,
    line_mac,
    lines_ref,
    of_register,
    pages,
    ref_of,
    row_mac,
)
from bot.store.chain.seals import Epoch, Seal, seal_mac

# -- verification ----------------------------------------------------------------------------


@dataclass
class Verdict:
    """What verifying one run's trail found: the first problem (event or row), or none."""

    checked: int  # events read
    broken: dict[str, Any] | None  # the first event whose link or hash is wrong
    why: str
    unchained: int = 0  # events from before the chain existed: present, but not checkable
    unkeyed: int = 0  # events from before keyed hashing: checked with their own algorithm
    problem: str = ""  # the first thing wrong that is not one event (a row, the seal, the epoch)
    rows: int = 0  # covered rows checked
    seal: Seal | None = None

    @property
    def ok(self) -> bool:
        return self.broken is None and not self.problem


def verify(
    rows: Sequence[dict[str, Any]],
    *,
    unchained_through: int = 0,
    key: bytes = b"",
    epoch: Epoch | None = None,
) -> Verdict:
    """Check a run's events (rows of audit_events in id order), each with its own algorithm.

    `unchained_through`: the highest event id the upgrade found without a hash; an event
    without one after it, or after a chained event, is broken. `epoch`: when keyed hashing
    began; an unkeyed event after it is broken.
    """
    prev = ""
    unchained = unkeyed_events = 0
    rank = -1
    order = list(ALGORITHMS)
    keyed_after = epoch.after if epoch is not None and epoch.valid else None
    boundary = epoch.boundary if epoch is not None and epoch.valid else None
    for n, r in enumerate(rows, start=1):
        alg = r.get("hash_alg") or (BEFORE_NAMES if r["hash"] else None)
        bad = None
        # an earlier release, still running while the upgrade began keyed hashing, wrote
        # unkeyed events until the boundary was sealed: history, checked with their algorithm
        overlap = (
            keyed_after is not None
            and boundary is not None
            and keyed_after < int(r["id"]) <= boundary
        )
        if alg is None:
            if prev or rank >= 0 or r["prev_hash"] or int(r["id"]) > unchained_through:
                bad = "it has no hash (its chain was removed)"
            else:
                unchained += 1
                continue
        elif alg not in ALGORITHMS:
            bad = f"its hash is of an algorithm this closebot does not know ({alg})"
        elif order.index(alg) < rank and not (not ALGORITHMS[alg].keyed and overlap):
            bad = f"it is hashed with {alg}, older than the event before it (a downgrade)"
        elif (r["prev_hash"] or "") != prev:
            bad = "its link to the event before it is broken (an event was removed or reordered)"
        elif not ALGORITHMS[alg].keyed and boundary is not None and int(r["id"]) > boundary:
            bad = (
                f"it is hashed with {alg}, without the key, but was written after keyed hashing "
                "began and the upgrade sealed its boundary (event "
                f"{boundary}): forged, or the chain was recomputed by someone without the audit key"
            )
        elif not hmac.compare_digest(
            str(r["hash"]),
            ALGORITHMS[alg].digest(
                key, prev, {k: r[k] for k in EVENT_FIELDS}, r.get("covers") or ""
            ),
        ):
            bad = "its content does not match its hash (it was edited" + (
                ", or the chain was recomputed without the audit key)"
                if ALGORITHMS[alg].keyed
                else ")"
            )
        if bad:
            return Verdict(n, dict(r), bad, unchained, unkeyed_events)
        assert alg is not None
        if not ALGORITHMS[alg].keyed:
            unkeyed_events += 1
        rank = order.index(alg)
        prev = r["hash"]
    return Verdict(len(rows), None, "", unchained, unkeyed_events)


def check_seal(
    verdict: Verdict,
    key: bytes,
    run_id: str,
    rows: Sequence[dict[str, Any]],
    seal_row: dict[str, Any] | None,
) -> None:
    """The run's seal matches its chain's head: no event was removed from the end."""
    if seal_row is None:
        if rows:
            verdict.problem = (
                "the run's seal is missing (run_seals): it was removed, with the events it sealed"
            )
        return
    s = Seal(run_id, int(seal_row["head_id"]), str(seal_row["head_hash"]), int(seal_row["events"]))
    verdict.seal = s
    if not hmac.compare_digest(str(seal_row["mac"]), seal_mac(key, s)):
        verdict.problem = "the run's seal was edited (its keyed digest does not match)"
        return
    last = rows[-1] if rows else None
    if last is None or (last["id"], last["hash"] or "", len(rows)) != (
        s.head_id,
        s.head_hash,
        s.events,
    ):
        ends = f"ends at event {last['id']} with {len(rows)} events" if last else "has no events"
        verdict.problem = (
            f"the chain {ends}, but it was sealed at event {s.head_id} with {s.events} events: "
            "events were removed from its end (truncated)"
        )


def check_rows(
    verdict: Verdict,
    query: Query,
    key: bytes,
    run_id: str,
    rows: Sequence[dict[str, Any]],
    *,
    strict: bool,
    strict_newer: bool = False,
) -> None:
    """Every covered row of the run against the digest the chain last recorded for it (for a
    shared table, the latest any authentic event recorded). `strict` (a run begun with the
    key): a row the chain never recorded is wrong too; `strict_newer` the same for the tables
    covered since the unkeyed boundary was sealed (a run begun after it)."""
    expected: dict[str, tuple[str, dict[str, Any]]] = {}
    for r in rows:
        for ref, digest in json.loads(r.get("covers") or "{}").items():
            expected[ref] = (digest, r)
    live: dict[str, str] = {}
    what: dict[str, str] = {}
    for table, c in COVERED.items():
        if not c.of_run:
            continue  # rows of no run: the register checks them (`check_register_rows`)
        try:
            found = query(c.of_run, (run_id,))
        except sqlite3.OperationalError:  # a part's tables not made here (a store alone)
            continue
        for row in found:
            ref = ref_of(table, row)
            live[ref], what[ref] = row_mac(key, table, row), c.what
    for ref in list(expected):  # a shared row this run changed, though another run owns it
        table, _, value = ref.partition(":")
        owner = COVERED.get(table)
        if owner is None or not owner.shared or ref in live or len(owner.key) != 1:
            continue
        for row in query(f"select * from {table} where {owner.key[0]} = ?", (value,)):
            live[ref], what[ref] = row_mac(key, table, row), owner.what
    for table, c in COVERED.items():
        if not c.shared:
            continue
        mine = {ref for ref in (*live, *expected) if ref.startswith(f"{table}:")}
        if not mine:
            continue
        for ref, (digest, event) in latest_recorded(query, key, table).items():
            if ref not in mine:
                continue
            if event.get("forged"):
                verdict.problem = (
                    f"event {event['id']} ({event['kind']}), the latest to record {ref} "
                    f"({c.what}), does not match its hash: it was edited"
                )
                return
            if ref not in expected or int(event["id"]) > int(expected[ref][1]["id"]):
                expected[ref] = (digest, event)
    batches = [ref.split(":", 1)[1] for ref in live if ref.startswith("journal_batches:")]
    batches += [ref.split("@", 1)[1] for ref in expected if ref.startswith(LINES + "@")]
    for batch_id in dict.fromkeys(batches):
        if not strict and lines_ref(batch_id) not in expected:
            continue  # lines an earlier release wrote: they carry no digest
        digest = LinesDigest(key, batch_id)
        for line in pages(query, "*", batch_id):
            if line.get("mac") != line_mac(key, line):
                verdict.problem = (
                    f"journal_lines row {line['id']} (batch {batch_id}, entry {line['entry_no']} "
                    f"line {line['line_no']}: account, amounts, well, memo, source and ref) was "
                    "edited after it was drafted"
                )
                return
            digest.add(line["id"], line["mac"])
        if digest.count or lines_ref(batch_id) in expected:
            live[lines_ref(batch_id)] = digest.value()
            what[lines_ref(batch_id)] = f"the lines of batch {batch_id}"
    verdict.rows = len(live)
    for ref, (digest, event) in expected.items():
        by = f"event {event['id']} ({event['kind']})"
        if ref not in live:
            table = ref.split(":", 1)[0].split("@", 1)[0]
            held = COVERED[table].what if table in COVERED else "journal lines"
            verdict.problem = f"{ref} ({held}), recorded by {by}, was deleted"
            return
        if live[ref] != digest:
            if ref.startswith(LINES + "@"):
                now, then = live[ref].split(":")[0], digest.split(":")[0]
                verdict.problem = f"{ref} ({what[ref]}): {now} lines now, {then} when {by} recorded them: lines were added or removed"
            else:
                verdict.problem = f"{ref} ({what[ref]}) is not what {by} recorded: it was changed after it was written"
            return
    for ref in live:
        table = ref.split(":", 1)[0].split("@", 1)[0]
        newer = table in COVERED and COVERED[table].newer
        if ref not in expected and (strict_newer if newer else strict):
            verdict.problem = (
                f"{ref} ({what[ref]}) is not in the audit trail: it was added outside closebot"
            )
            return


def check_register_rows(query: Query, key: bytes) -> list[str]:
    """Every row of the tables whose rows belong to no run (people's names) against the digest
    the latest authentic event recorded for it: a row changed, deleted, or never recorded
    (added outside closebot; a database's rows from before they were covered are recorded
    once, on this release's first start: bot/store/people.py)."""
    problems = []
    for c in of_register():
        try:
            rows = query(f"select * from {c.table}", ())
        except sqlite3.OperationalError:  # a table not made here
            continue
        live = {ref_of(c.table, r): row_mac(key, c.table, r) for r in rows}
        recorded = latest_recorded(query, key, c.table)
        for ref, (digest, event) in recorded.items():
            by = f"event {event['id']} ({event['kind']})"
            if event.get("forged"):
                problems.append(
                    f"{by}, the latest to record {ref} ({c.what}), does not match its hash: "
                    "it was edited"
                )
            elif ref not in live:
                problems.append(f"{ref} ({c.what}), recorded by {by}, was deleted")
            elif live[ref] != digest:
                problems.append(
                    f"{ref} ({c.what}) is not what {by} recorded: it was changed after it was "
                    "written"
                )
        problems += [
            f"{ref} ({c.what}) is not in the audit trail: it was added outside closebot"
            for ref in live
            if ref not in recorded
        ]
    return problems


def latest_recorded(query: Query, key: bytes, table: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """ref → (digest, event) of the latest event, in any run's chain or none, that recorded
    each row of `table`; an event whose keyed hash does not match is marked `forged` (its
    own run's verification names it too)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    found = query("select * from audit_events where covers like ? order by id", (f'%"{table}:%',))
    for r in found:
        alg = ALGORITHMS.get(r.get("hash_alg") or "")
        event = dict(r)
        if (
            alg is None
            or not alg.keyed
            or not hmac.compare_digest(
                str(r["hash"]),
                alg.digest(key, r["prev_hash"] or "", {k: r[k] for k in EVENT_FIELDS}, r["covers"]),
            )
        ):
            event["forged"] = True
        for ref, digest in json.loads(r["covers"]).items():
            if ref.startswith(f"{table}:"):
                out[ref] = (digest, event)
    return out
