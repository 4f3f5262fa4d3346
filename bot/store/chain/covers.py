"""The rows an audit event covers: the registry of covered tables (`cover`), each row's
keyed digest, journal lines' own digests and the one digest over a batch's lines."""

import hashlib
import hmac
import json
import operator
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.store.chain.algorithms import CANONICAL, mac

LINES = "journal_lines"  # covered per batch; each line carries its own digest (`mac`)
Query = Callable[[str, tuple[Any, ...]], list[dict[str, Any]]]
Execute = Callable[[str, tuple[Any, ...]], Any]
Target = tuple[str, str, Any]  # (table, column, value): the rows of table where column = value


# -- covered rows --------------------------------------------------------------------------


@dataclass(frozen=True)
class Covered:
    """A table whose rows make the books or the record: its material columns, how a row is
    named, and how a run's rows are found."""

    table: str
    key: tuple[str, ...]
    fields: tuple[str, ...]
    what: str  # what a row holds, for the person reading a verification failure
    # select * … the rows that belong to run ? (one parameter); "" for a table whose rows
    # belong to no run (people's names): the register's events cover them (`of_register`)
    of_run: str
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


def run_targets(query: Query, run_id: str) -> list[Target]:
    """Every covered row of a run, as an event's `covers` names them (a batch's lines as one)."""
    out: list[Target] = []
    for table, c in COVERED.items():
        if not c.of_run:
            continue
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


def of_register() -> list[Covered]:
    """The covered tables whose rows belong to no run: the register checks them."""
    return [c for c in COVERED.values() if not c.of_run]


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
# A person's name as Slack gave it (users.info): the decision log, the DM and the Home tab
# show it beside what they decided, so an edit of it is an edit of the record (issue 31). The
# row belongs to no run; each change of a name is a register event (bot/store/people.py).
cover(
    "people",
    key=("id",),
    fields=("id", "real_name", "display_name", "handle"),
    what="the name Slack gave a person, shown beside what they decided",
    of_run="",
)
