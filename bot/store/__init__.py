"""The one owner of SQLite: a small transaction core (core.py, locks.py) and one part per
concern — runs, the transcript, questions, leases, the inbox, Slack replay records and the
audit chain — composed into `Store`, the API everything else uses."""

from __future__ import annotations

from bot.store.audit import AuditChain, AuditEvent
from bot.store.core import StoreCore, utc_now
from bot.store.inbox import Inbox
from bot.store.leases import Leases
from bot.store.locks import QUICK_BUSY_MS, QUICK_LOCK_MS
from bot.store.people import People
from bot.store.questions import QuestionRecord, Questions
from bot.store.replay import Sighting, SlackReplay
from bot.store.runs import RUN_STATUSES, Run, Runs
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
    "Sighting",
    "Store",
    "ToolResult",
    "utc_now",
]


class Store(People, Leases, Questions, Transcript, Inbox, SlackReplay, Runs, AuditChain, StoreCore):
    """SQLite with WAL and a busy timeout; every method is small and named."""
