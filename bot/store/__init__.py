"""The one owner of SQLite: a transaction core (core.py, locks.py) and one repository per
concern, composed into `Store` as attributes — `store.runs`, `store.transcript`,
`store.questions`, `store.leases`, `store.inbox`, `store.replay` (Slack requests handled
once), `store.people` and `store.audit` (the audit chain) — each given the core, and the
other repositories it needs, explicitly."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from sqlite_utils.migrations import Migrations

from bot.store.audit import AuditChain, AuditEvent
from bot.store.core import StoreCore, utc_now
from bot.store.inbox import Inbox
from bot.store.leases import Leases
from bot.store.locks import QUICK_BUSY_MS, QUICK_LOCK_MS
from bot.store.people import People
from bot.store.questions import QuestionRecord, Questions
from bot.store.replay import Sighting, SlackReplay
from bot.store.runs import RUN_STATUSES, Run, RunPrompt, Runs
from bot.store.settings import WorkspaceSettings
from bot.store.transcript import USAGE_FIELDS, Message, ToolResult, Transcript

__all__ = [
    "QUICK_BUSY_MS",
    "QUICK_LOCK_MS",
    "RUN_STATUSES",
    "USAGE_FIELDS",
    "AuditEvent",
    "Message",
    "QuestionRecord",
    "Run",
    "RunPrompt",
    "Sighting",
    "Store",
    "ToolResult",
    "utc_now",
]


class Store(StoreCore):
    """SQLite with WAL and a busy timeout (the core: write(), query(), now(), quick()), and
    its repositories; every method is small and named.

    `migrations`: the domains' migration sets (the close's tables), applied after the
    platform's, in order; `migrate()` adds one later."""

    def __init__(
        self,
        path: str | Path,
        *,
        migrations: Sequence[Migrations] = (),
        clock: Callable[[], datetime] = utc_now,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        super().__init__(path, clock=clock, busy_timeout_ms=busy_timeout_ms)
        self.audit = AuditChain(self)
        self.runs = Runs(self, self.audit)
        self.transcript = Transcript(self)
        self.questions = Questions(self, self.audit)
        self.leases = Leases(self)
        self.inbox = Inbox(self)
        self.replay = SlackReplay(self)
        self.people = People(self, self.audit)
        self.settings = WorkspaceSettings(self, self.audit)  # set in Slack (issue 32)
        for domain in migrations:
            self.migrate(domain)
