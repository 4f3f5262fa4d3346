"""The tamper-evident trail: how a run's audit events are chained, by named, versioned
algorithms; the key that makes the current one a keyed MAC; the rows each event covers; and
each run's seal.

Each event stores the hash of the event before it (`prev_hash`), its own `hash`, and the
name of the algorithm that made that hash (`hash_alg`). An event is always checked with
the algorithm that wrote it: a new algorithm is added under a new name, and history is
never hashed again.

- Events written before the chain existed (release 68fe5b6 and earlier) have no hash. They
  are accepted only at the start of a run's events and only up to the last such event the
  upgrade found (`audit_unchained_through` in the `meta` table): an event whose hash was
  removed afterwards reads as broken, never as old.
- Events written before `hash_alg` existed (releases 4db486f and 0fd23f4) have a hash and
  no name: they are `sha256-v1`, the only algorithm those releases knew.
- Within a chain the algorithms only move forward (ALGORITHMS' order): a later event
  written with an earlier algorithm is a downgrade and reads as broken.
- Since this release events are `hmac-sha256-v2`: HMAC-SHA256 under a key kept outside the
  database (`CLOSEBOT_AUDIT_KEY`, or a key file made beside the database on first start,
  mode 0600), over the previous hash, the event and the rows it covers. Whoever edits the
  file cannot recompute a chain that verifies. The first start with a key records, under the
  key, the last event written before it (`audit_keyed_after`): an unkeyed event after it is
  a rewrite, not history.
- **Rows covered.** A write to a table that makes the books or the record (runs, questions
  and answers, exceptions and resolutions, journal batches and lines, period claims, DOI
  rows) is audited with the keyed digest of each row as written (`covers`); verification
  recomputes every live row's digest and compares it with the latest one the chain recorded.
  A changed, deleted or unrecorded row is named with what it covers. Journal lines carry
  their own digest (`mac`) and the chain records one digest over a batch's lines.
- **Sealed.** Each run's head (last event, its hash, the number of events) is kept under the
  key in `run_seals` and moves with every event, so removing the last events shows; the head
  when the run finishes is printed in its summary and decision log, to compare from outside.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import operator
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.core.errors import ConfigError

EVENT_FIELDS = ("run_id", "at", "kind", "actor", "detail")
KEY_ENV = "CLOSEBOT_AUDIT_KEY"
KEYED_AFTER = "audit_keyed_after"  # meta key: when keyed hashing began, under the key
LINES = "journal_lines"  # covered per batch; each line carries its own digest (`mac`)


# -- the key ----------------------------------------------------------------------------


def key_file_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".auditkey")


def load_key(db_path: Path | None, env: Mapping[str, str] | None = None) -> tuple[bytes, bool]:
    """(the audit key, whether its file was made just now): $CLOSEBOT_AUDIT_KEY, else the key
    file beside the database, made on first start with mode 0600. A database in memory gets a
    key of its own."""
    env = os.environ if env is None else env
    given = (env.get(KEY_ENV) or "").strip()
    if given:
        if len(given) < 16:
            raise ConfigError(f"{KEY_ENV} must be at least 16 characters (64 hex digits is best)")
        return given.encode(), False
    if db_path is None:
        return secrets.token_bytes(32), False
    path = key_file_for(db_path)
    created = False
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as e:
        raise ConfigError(
            f"cannot create the audit key file {path}: {e.strerror or e}; set {KEY_ENV} instead"
        ) from e
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        created = True
    try:
        text = path.read_text().strip()
    except OSError as e:
        raise ConfigError(
            f"cannot read the audit key file {path}: {e.strerror or e}; give this login read "
            f"access to it, or set {KEY_ENV}"
        ) from e
    if not text:
        raise ConfigError(f"the audit key file {path} is empty; restore it from your backup")
    return text.encode(), created


def key_id(key: bytes) -> str:
    """A fingerprint of the key (never the key itself): which key keyed a database."""
    return hmac.new(key, b"closebot audit key id", hashlib.sha256).hexdigest()[:16]


# json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")), made once:
# json.dumps builds a new encoder for every call with options (a journal has 300,000 lines)
CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def mac(key: bytes, value: Any) -> str:
    return hmac.digest(key, CANONICAL.encode(value).encode(), "sha256").hex()


# -- algorithms ----------------------------------------------------------------------------


def sha256_v1(prev: str, event: dict[str, Any]) -> str:
    """SHA-256 over the previous event's hash and this event's fields (releases 4db486f on)."""
    canonical = json.dumps([prev, event], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def hmac_sha256_v2(key: bytes, prev: str, event: dict[str, Any], covers: str) -> str:
    """HMAC-SHA256 under the audit key over the previous hash, the event and what it covers."""
    return mac(key, [prev, event, covers])


@dataclass(frozen=True)
class Algorithm:
    keyed: bool
    digest: Callable[[bytes, str, dict[str, Any], str], str]  # (key, prev, event, covers)


def unkeyed(fn: Callable[[str, dict[str, Any]], str]) -> Algorithm:
    return Algorithm(False, lambda _key, prev, event, _covers: fn(prev, event))


# name -> algorithm, oldest first. Append a new algorithm; never change one.
ALGORITHMS: dict[str, Algorithm] = {
    "sha256-v1": unkeyed(sha256_v1),
    "hmac-sha256-v2": Algorithm(True, hmac_sha256_v2),
}
CURRENT = "hmac-sha256-v2"  # what new events are written with
BEFORE_NAMES = "sha256-v1"  # what a hash with no hash_alg was made with (before versioning)


def seal(key: bytes, prev: str, event: dict[str, Any], covers: str = "") -> tuple[str, str]:
    """(hash, algorithm name) of a new event chained to `prev`."""
    return ALGORITHMS[CURRENT].digest(key, prev, event, covers), CURRENT


# -- covered rows --------------------------------------------------------------------------


@dataclass(frozen=True)
class Covered:
    """A table whose rows make the books or the record: its material columns, how a row is
    named, and how a run's rows are found."""

    table: str
    key: tuple[str, ...]
    fields: tuple[str, ...]
    what: str  # what a row holds, for the person reading a verification failure
    of_run: str  # select * … the rows that belong to run ? (one parameter)
    # rows another run (or an import outside any run) may change later: the digest a run's
    # rows are checked against is the latest any authentic event recorded
    shared: bool = False
    digests: tuple[str, ...] = ()  # fields whose SHA-256 is covered instead of their bytes
    # covered since the release that sealed the unkeyed boundary: a run begun before it may
    # hold rows the chain never recorded
    newer: bool = False


COVERED: dict[str, Covered] = {}


def cover(
    table: str,
    *,
    key: tuple[str, ...],
    fields: tuple[str, ...],
    what: str,
    of_run: str,
    shared: bool = False,
    digests: tuple[str, ...] = (),
    newer: bool = False,
) -> None:
    """Register a covered table (each owner registers its own, beside its schema)."""
    COVERED[table] = Covered(table, key, fields, what, of_run, shared, digests, newer)


def ref_of(table: str, row: Mapping[str, Any]) -> str:
    """How a covered row is named in the chain: 'journal_batches:JE-2026-10-…'."""
    return f"{table}:" + "/".join(str(row[k]) for k in COVERED[table].key)


def row_mac(key: bytes, table: str, row: Mapping[str, Any]) -> str:
    c = COVERED[table]
    values = {f: _plain(row.get(f)) for f in c.fields}
    for f in c.digests:  # a file's bytes: their SHA-256, never a copy of them in the digest
        value = row.get(f)
        if value is not None:
            raw = value if isinstance(value, bytes) else str(value).encode()
            values[f] = "sha256:" + hashlib.sha256(raw).hexdigest()
        else:
            values[f] = None
    return mac(key, [ref_of(table, row), values])[:32]


LINE_FIELDS = (
    "batch_id",
    "entry_no",
    "line_no",
    "entry",
    "account",
    "account_name",
    "debit",
    "credit",
    "well_id",
    "memo",
    "source",
    "ref",
)


def line_mac(key: bytes, line: Mapping[str, Any]) -> str:
    """A journal line's own digest (its `mac`): everything it books or explains."""
    return mac(key, [LINES, {f: _plain(line.get(f)) for f in LINE_FIELDS}])[:32]


def line_macs(key: bytes, lines: Iterable[Sequence[Any]]) -> list[str]:
    """`line_mac` of many lines given as values in LINE_FIELDS order (as a batch is written):
    the same digests, each line's canonical JSON written into a template of its sorted keys
    (a batch has 300,000 lines: no dict, sort or encoder call per line)."""
    order = sorted(range(len(LINE_FIELDS)), key=LINE_FIELDS.__getitem__)
    template = f'["{LINES}",{{' + ",".join(f'"{LINE_FIELDS[i]}":%s' for i in order) + "}]"
    pick = operator.itemgetter(*order)
    text = json.encoder.encode_basestring  # a string as the canonical encoder writes it
    # each value as the canonical encoder writes it: a str, a Decimal (its text as a string),
    # an int and None by C calls; anything else by the encoder itself
    fast: dict[type, Callable[[Any], str]] = {
        str: text,
        Decimal: lambda v: text(str(v)),
        int: int.__repr__,
        type(None): lambda _: "null",
    }
    slow = _json
    inner, outer = _hmac_states(key)
    out = []
    for values in lines:
        encoded = tuple([fast.get(type(v), slow)(v) for v in pick(values)])
        # hmac.digest(key, text, "sha256"), from the two keyed states made once
        h = inner.copy()
        h.update((template % encoded).encode())
        o = outer.copy()
        o.update(h.digest())
        out.append(o.hexdigest()[:32])
    return out


def _hmac_states(key: bytes) -> tuple[Any, Any]:
    """HMAC-SHA256's inner and outer hash states for `key` (RFC 2104): copied per message,
    they give hmac.digest's digest without keying SHA-256 again for each of many lines."""
    if len(key) > 64:  # SHA-256's block size
        key = hashlib.sha256(key).digest()
    key = key.ljust(64, b"\0")
    return (
        hashlib.sha256(bytes(b ^ 0x36 for b in key)),
        hashlib.sha256(bytes(b ^ 0x5C for b in key)),
    )


def _json(value: Any) -> str:
    return "null" if value is None else CANONICAL.encode(_plain(value))


def _plain(value: Any) -> Any:
    """As stored: text, numbers, None (a Decimal as its text)."""
    return value if value is None or isinstance(value, (str, int, float)) else str(value)


def lines_ref(batch_id: str) -> str:
    return f"{LINES}@{batch_id}"


class LinesDigest:
    """One digest over a batch's lines, fed their own digests a line at a time in id order
    (a batch of 200,000 lines is never held at once), with their count."""

    def __init__(self, key: bytes, batch_id: str) -> None:
        self.h = hmac.new(key, lines_ref(batch_id).encode(), hashlib.sha256)
        self.count = 0

    def add(self, line_id: int, digest: str | None) -> None:
        self.h.update(f";{line_id}:{digest}".encode())
        self.count += 1

    def add_many(self, line_ids: Sequence[int], digests: Sequence[str]) -> None:
        """`add` of each line in turn (one update: the same digest)."""
        self.h.update("".join(map(";{}:{}".format, line_ids, digests)).encode())
        self.count += len(line_ids)

    def value(self) -> str:
        return f"{self.count}:{self.h.hexdigest()[:32]}"


@dataclass
class WrittenLines:
    """A batch's lines digested by whoever wrote them, as they were written (each line's id and
    digest, in id order): the event that covers them takes the digest instead of reading every
    line back, once the batch's count and last id show they are the lines written."""

    batch_id: str
    digest: LinesDigest
    last_id: int = 0


PAGE = 5000


def pages(query: Query, columns: str, batch_id: str) -> Iterable[dict[str, Any]]:
    """A batch's lines (`columns` of them) in id order, a page at a time. The pages walk the
    ids between the batch's first and last line (the table's own order, no sort); ordering
    the batch's index by id would sort all of its lines again for every page."""
    bounds = query(
        f"select min(id) as lo, max(id) as hi from {LINES} where batch_id = ?", (batch_id,)
    )
    if not bounds or bounds[0]["lo"] is None:
        return
    after, last = int(bounds[0]["lo"]) - 1, int(bounds[0]["hi"])
    sql = (
        f"select {columns} from {LINES} not indexed where id > ? and id <= ? and batch_id = ? "
        "order by id limit ?"
    )
    while True:
        rows = query(sql, (after, last, batch_id, PAGE))
        yield from rows
        if len(rows) < PAGE:
            return
        after = int(rows[-1]["id"])


Query = Callable[[str, tuple[Any, ...]], list[dict[str, Any]]]
Execute = Callable[[str, tuple[Any, ...]], Any]
Target = tuple[str, str, Any]  # (table, column, value): the rows of table where column = value


def covers_of(query: Query, execute: Execute, key: bytes, targets: Iterable[Target]) -> str:
    """The digests of the rows an event covers as they stand in its transaction, as the JSON
    the event stores. A batch's lines are one digest; a line without its own digest is given
    it here, so whoever writes lines need not know about digests."""
    out: dict[str, str] = {}
    for table, column, value in targets:
        if table == LINES and isinstance(value, WrittenLines):
            if _still_written(query, value):
                if value.digest.count:
                    out[lines_ref(value.batch_id)] = value.digest.value()
                continue
            value = value.batch_id  # read back, as any batch's lines are
        if table == LINES:  # (LINES, "batch_id", batch id)
            for line in query(
                f"select * from {LINES} where batch_id = ? and mac is null", (value,)
            ):
                execute(
                    f"update {LINES} set mac = ? where id = ?", (line_mac(key, line), line["id"])
                )
            digest = LinesDigest(key, value)  # each line's own digest was given when written
            for line in pages(query, "id, mac", value):
                digest.add(line["id"], line["mac"])
            if digest.count:
                out[lines_ref(value)] = digest.value()
            continue
        for row in query(f"select * from {table} where {column} = ?", (value,)):
            out[ref_of(table, row)] = row_mac(key, table, row)
    return json.dumps(out, sort_keys=True, separators=(",", ":")) if out else ""


def _still_written(query: Query, written: WrittenLines) -> bool:
    """The batch holds exactly the lines its writer digested: their count and last id."""
    stands = query(
        f"select count(*) as n, max(id) as hi from {LINES} where batch_id = ?", (written.batch_id,)
    )
    n, hi = (stands[0]["n"], stands[0]["hi"]) if stands else (0, None)
    return bool(n == written.digest.count and (hi or 0) == written.last_id)


# -- seals and the epoch ---------------------------------------------------------------------


@dataclass(frozen=True)
class Seal:
    run_id: str
    head_id: int
    head_hash: str
    events: int

    def short(self) -> str:
        """As printed in a summary: how many events, the head event, its hash's first digits."""
        return f"{self.events} events, head event {self.head_id}, hash {self.head_hash[:16]}"


def seal_mac(key: bytes, s: Seal) -> str:
    return mac(key, ["seal", s.run_id, s.head_id, s.head_hash, s.events])


def epoch_value(key: bytes, after: int, through: int | None = None) -> str:
    """The keyed record of when keyed hashing began (`after`) and, since the boundary was
    sealed, the last event an earlier release could have written (`through`)."""
    kid = key_id(key)
    if through is None:  # as the release that began keyed hashing wrote it
        return json.dumps({"after": after, "key_id": kid, "mac": mac(key, ["epoch", after, kid])})
    return json.dumps(
        {
            "after": after,
            "through": through,
            "key_id": kid,
            "mac": mac(key, ["epoch", after, kid, through]),
        }
    )


@dataclass(frozen=True)
class Epoch:
    after: int  # events with a higher id were written with the key
    key_id: str
    valid: bool  # its digest matches under this key
    # the sealed boundary: no event of an earlier algorithm after it is history (None: not
    # sealed yet, as a database keyed by the release before this one is until it starts)
    through: int | None = None

    @property
    def boundary(self) -> int:
        return self.after if self.through is None else self.through


def read_epoch(key: bytes, value: str | None) -> Epoch | None:
    if value is None:
        return None
    try:
        data = json.loads(value)
        after, kid = int(data["after"]), str(data["key_id"])
        if "through" in data:
            through = int(data["through"])
            expected = mac(key, ["epoch", after, kid, through])
            return Epoch(after, kid, hmac.compare_digest(str(data["mac"]), expected), through)
        return Epoch(
            after, kid, hmac.compare_digest(str(data["mac"]), mac(key, ["epoch", after, kid]))
        )
    except (ValueError, KeyError, TypeError):
        return Epoch(0, "", False)


# Once the boundary is sealed, the database itself refuses an event that names no algorithm
# (every release before 4db486f's successor: 0fd23f4 and earlier), so an earlier closebot still
# running after an upgrade changes nothing: its write is refused whole. An event of an earlier
# algorithm after the boundary can then only be a forgery, and verify says so.
GUARD = "audit_events_name_their_algorithm"
GUARD_SQL = (
    f"create trigger if not exists {GUARD} before insert on audit_events "
    "when new.hash_alg is null begin select raise(abort, "
    "'closebot: this database was upgraded and its audit trail is keyed; an earlier closebot "
    "may not write to it (stop it: the newer one carries its runs on)'); end"
)


def run_targets(query: Query, run_id: str) -> list[Target]:
    """Every covered row of a run, as an event's `covers` names them (a batch's lines as one)."""
    out: list[Target] = []
    for table, c in COVERED.items():
        try:
            rows = query(c.of_run, (run_id,))
        except sqlite3.OperationalError:  # a part's tables not made here
            continue
        for row in rows:
            if len(c.key) == 1:
                out.append((table, c.key[0], row[c.key[0]]))
            if table == "journal_batches":
                out.append((LINES, "batch_id", row["id"]))
    return out


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


# The store's own covered tables (the close registers its own in bot/close/ledger.py).
cover(
    "runs",
    key=("id",),
    fields=("id", "period", "mode", "started_by", "model", "created_at"),
    what="who started the run, its period, mode and model",
    of_run="select * from runs where id = ?",
)
cover(
    "questions",
    key=("id",),
    fields=(
        "id",
        "run_id",
        "context",
        "questions",
        "status",
        "answer",
        "answered_by",
        "source",
        "answered_at",
        "rationale",
        "overridden",
        "created_at",
    ),
    what="a form: the questions shown, the answer, who gave it, how, when and why",
    of_run="select * from questions where run_id = ?",
)
