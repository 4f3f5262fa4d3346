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
  Rows that belong to no run (a person's name as Slack gave it, shown beside what they
  decided) are covered by the events of no run, the register, and checked with it.
- **Sealed.** Each run's head (last event, its hash, the number of events) is kept under the
  key in `run_seals` and moves with every event, so removing the last events shows; the head
  when the run finishes is printed in its summary and decision log, to compare from outside.

The package, by concern: `algorithms` (the key and the hashing algorithms), `covers` (the
covered tables and the rows' digests), `seals` (run seals, the epoch and the upgrade
boundary), `verify` (checking a run's trail). Import the names from here.
"""

from __future__ import annotations

from bot.store.chain.algorithms import (
    ALGORITHMS,
    BEFORE_NAMES,
    CANONICAL,
    CURRENT,
    EVENT_FIELDS,
    KEY_ENV,
    Algorithm,
    hmac_sha256_v2,
    key_file_for,
    key_id,
    load_key,
    mac,
    seal,
    sha256_v1,
    unkeyed,
)
from bot.store.chain.covers import (
    COVERED,
    LINE_FIELDS,
    LINES,
    PAGE,
    Covered,
    Execute,
    LinesDigest,
    Query,
    Target,
    WrittenLines,
    cover,
    covers_of,
    line_mac,
    line_macs,
    lines_ref,
    of_register,
    pages,
    ref_of,
    row_mac,
    run_targets,
)
from bot.store.chain.seals import (
    GUARD,
    GUARD_SQL,
    KEYED_AFTER,
    Epoch,
    Seal,
    epoch_value,
    read_epoch,
    seal_mac,
)
from bot.store.chain.verify import (
    Verdict,
    check_register_rows,
    check_rows,
    check_seal,
    latest_recorded,
    verify,
)

__all__ = [
    "ALGORITHMS",
    "BEFORE_NAMES",
    "CANONICAL",
    "COVERED",
    "CURRENT",
    "EVENT_FIELDS",
    "GUARD",
    "GUARD_SQL",
    "KEYED_AFTER",
    "KEY_ENV",
    "LINES",
    "LINE_FIELDS",
    "PAGE",
    "Algorithm",
    "Covered",
    "Epoch",
    "Execute",
    "LinesDigest",
    "Query",
    "Seal",
    "Target",
    "Verdict",
    "WrittenLines",
    "check_register_rows",
    "check_rows",
    "check_seal",
    "cover",
    "covers_of",
    "epoch_value",
    "hmac_sha256_v2",
    "key_file_for",
    "key_id",
    "latest_recorded",
    "line_mac",
    "line_macs",
    "lines_ref",
    "load_key",
    "mac",
    "of_register",
    "pages",
    "read_epoch",
    "ref_of",
    "row_mac",
    "run_targets",
    "seal",
    "seal_mac",
    "sha256_v1",
    "unkeyed",
    "verify",
]
