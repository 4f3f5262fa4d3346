"""How a run's audit events are chained, by named, versioned algorithms.

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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

EVENT_FIELDS = ("run_id", "at", "kind", "actor", "detail")


def sha256_v1(prev: str, event: dict[str, Any]) -> str:
    """SHA-256 over the previous event's hash and this event's fields (releases 4db486f on)."""
    canonical = json.dumps([prev, event], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# name -> (prev_hash, event fields) -> hash. Append a new algorithm; never change one.
ALGORITHMS: dict[str, Callable[[str, dict[str, Any]], str]] = {"sha256-v1": sha256_v1}
CURRENT = "sha256-v1"  # what new events are written with
BEFORE_NAMES = "sha256-v1"  # what a hash with no hash_alg was made with (before versioning)


def seal(prev: str, event: dict[str, Any]) -> tuple[str, str]:
    """(hash, algorithm name) of a new event chained to `prev`."""
    return ALGORITHMS[CURRENT](prev, event), CURRENT


@dataclass(frozen=True)
class Verdict:
    """What verifying one run's events found."""

    checked: int  # events read
    broken: dict[str, Any] | None  # the first event whose link or hash is wrong
    why: str
    unchained: int = 0  # events from before the chain existed: present, but not checkable


def verify(rows: Sequence[dict[str, Any]], *, unchained_through: int = 0) -> Verdict:
    """Check a run's events (rows of audit_events in id order), each with its own algorithm.

    `unchained_through`: the highest event id the upgrade found without a hash; an event
    without one after it, or after a chained event, is broken.
    """
    prev = ""
    unchained = 0
    rank = -1
    order = list(ALGORITHMS)
    for n, r in enumerate(rows, start=1):
        alg = r.get("hash_alg") or (BEFORE_NAMES if r["hash"] else None)
        bad = None
        if alg is None:
            if prev or rank >= 0 or r["prev_hash"] or int(r["id"]) > unchained_through:
                bad = "it has no hash (its chain was removed)"
            else:
                unchained += 1
                continue
        elif alg not in ALGORITHMS:
            bad = f"its hash is of an algorithm this closebot does not know ({alg})"
        elif order.index(alg) < rank:
            bad = f"it is hashed with {alg}, older than the event before it (a downgrade)"
        elif (r["prev_hash"] or "") != prev:
            bad = "its link to the event before it is broken (an event was removed or reordered)"
        elif r["hash"] != ALGORITHMS[alg](prev, {k: r[k] for k in EVENT_FIELDS}):
            bad = "its content does not match its hash (it was edited)"
        if bad:
            return Verdict(n, r, bad, unchained)
        assert alg is not None
        rank = order.index(alg)
        prev = r["hash"]
    return Verdict(len(rows), None, "", unchained)
