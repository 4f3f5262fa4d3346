"""`closebot doctor` and `closebot backup`: is the database sound, and a copy of it made
while closebot serves.

The doctor reads; it changes nothing. It runs SQLite's full `integrity_check` (the start of
every process runs the quicker `quick_check` and refuses a damaged file), then — on a sound
file — checks every run's audit chain, the leases (whose process is gone, which expired)
and the runs nothing advances.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from bot.core.errors import ConfigError
from bot.store import Store
from bot.store.chain import key_file_for
from bot.store.leases import describe_owner, owner_is_gone

STUCK_AFTER = timedelta(minutes=2)  # as the server's watchdog counts it
BACKUP_PAGES = 256  # pages copied per step: a busy server's writers wait at most one step


@dataclass(frozen=True)
class Finding:
    what: str
    problem: bool  # False: worth knowing, nothing wrong


def integrity(path: Path) -> list[str]:
    """SQLite's integrity_check of the file: [] when it is sound, else the first problems."""
    conn = sqlite3.connect(path)
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(20)").fetchall()]
    except sqlite3.DatabaseError as e:
        return [str(e)]
    finally:
        conn.close()
    return [] if rows == ["ok"] else rows


def examine(
    path: Path,
    *,
    stuck_after: timedelta = STUCK_AFTER,
    also: Callable[[Store, str], list[str]] | None = None,
    prepare: Callable[[Store], object] | None = None,
) -> list[Finding]:
    """Everything the doctor finds, problems and notes, in the order it looked: every problem
    `closebot audit RUN --verify` finds, for every run (`also`: the caller's own checks of a
    run, as verify makes them; `prepare`: what the caller registers on the store first, such
    as the close's covered tables), and the register of runs and posted periods."""
    if not path.exists():
        raise ConfigError(f"there is no database at {path}")
    damaged = integrity(path)
    if damaged:
        return [Finding(f"integrity: {line}", True) for line in damaged]
    found = [Finding("integrity: ok", False)]
    store = Store(path)
    try:
        if prepare is not None:
            prepare(store)
        runs = [r["id"] for r in store.query("select id from runs order by created_at, rowid")]
        broken = 0
        for run_id in runs:
            verdict = store.audit.verdict(run_id)
            b = verdict.broken
            problems = (  # worded as `audit RUN --verify` words them
                [
                    f"BROKEN at event {b['id']} ({b['kind']}, {b['at']}), number "
                    f"{verdict.checked} of the run: {verdict.why}"
                ]
                if b is not None
                else [f"BROKEN: {verdict.problem}"]
                if verdict.problem
                else [f"the records disagree with the chain: {m}" for m in also(store, run_id)]
                if also is not None
                else []
            )
            broken += bool(problems)
            found += [Finding(f"audit: run {run_id}: {p}", True) for p in problems]
        register = store.audit.register_problems()
        found += [Finding(f"audit: {p}", True) for p in register]
        if not broken and not register:
            found.append(Finding(f"audit: {len(runs)} run(s), every chain intact", False))
        now = store.now()
        for lease in store.query("select run_id, owner, expires_at from leases order by run_id"):
            who = describe_owner(lease["owner"])
            if owner_is_gone(lease["owner"]):
                found.append(
                    Finding(
                        f"lease: run {lease['run_id']} held by {who}, which is gone "
                        "(the next `closebot serve` on this host takes it back at once)",
                        True,
                    )
                )
            elif lease["expires_at"] <= now:
                found.append(
                    Finding(f"lease: run {lease['run_id']}: expired ({who}); free to take", False)
                )
            else:
                found.append(Finding(f"lease: run {lease['run_id']} held by {who}", False))
        for run in store.runs.stuck(idle_for=stuck_after):
            found.append(
                Finding(
                    f"stuck: run {run.id} ({run.period}) is {run.status} and nothing has "
                    f"advanced it since {run.updated_at} (a serving closebot resumes it)",
                    True,
                )
            )
    finally:
        store.close()
    return found


def backup(source: Path, destination: Path) -> int:
    """Copy the database with SQLite's online backup API (a consistent copy while closebot
    serves); the copy appears under its name only once complete and checked. Its pages."""
    if not source.exists():
        raise ConfigError(f"there is no database at {source}")
    if destination.exists():
        raise ConfigError(f"{destination} exists already; a backup writes a new file")
    if not destination.parent.is_dir():
        raise ConfigError(f"there is no folder {destination.parent} to write the backup in")
    partial = destination.with_name(destination.name + ".partial")
    partial.unlink(missing_ok=True)
    src = sqlite3.connect(source)
    dst = sqlite3.connect(partial)
    try:
        src.backup(dst, pages=BACKUP_PAGES)
        pages = int(dst.execute("PRAGMA page_count").fetchone()[0])
        checked = dst.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as e:
        dst.close()
        partial.unlink(missing_ok=True)
        raise ConfigError(f"the backup of {source} failed, nothing was written: {e}") from e
    finally:
        src.close()
    dst.close()
    if checked != "ok":
        partial.unlink(missing_ok=True)
        raise ConfigError(f"the copy of {source} did not check out ({checked}); nothing written")
    key = key_file_for(source)
    if key.exists():  # the chain's key goes with the copy, or the copy would not verify
        copied = key_file_for(destination)
        try:  # a new file of its own, never through a link planted there (issue 31)
            fd = os.open(copied, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            partial.unlink(missing_ok=True)
            raise ConfigError(
                f"{copied} exists already (or is a link); the backup writes its key to a new "
                f"file, nothing was written ({e.strerror})"
            ) from None
        with os.fdopen(fd, "wb") as out:
            out.write(key.read_bytes())
    partial.rename(destination)
    return pages
