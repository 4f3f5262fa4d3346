"""What a person can ask closebot outside a close's thread — in a DM, the assistant pane, or
at any time in a thread: "close October", "what's waiting on me?", "what's open?", "who
decided X?" — and what the App Home shows. Front-end neutral: plain data and mrkdwn-free
text; bot/slack/presenter/__init__.py draws it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.close import data as close_data
from bot.close.controls import APPROVAL_HEADERS, header_of
from bot.close.ledger import Ledger
from bot.core.answers import may_steer
from bot.core.decision_log import decision_rows
from bot.store import QuestionRecord, Run, Store

MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
PROMPTS = (
    ("Close last month", "Close last month"),
    ("What's waiting on me?", "What's waiting on me?"),
    ("Open items", "What's open?"),
)
LIVE = ("running", "waiting")


@dataclass(frozen=True)
class Waiting:
    """A form that waits on a person who may answer it."""

    run: Run
    question: QuestionRecord

    @property
    def header(self) -> str:
        return header_of(self.question) or "a decision"


@dataclass(frozen=True)
class Intent:
    """What a message asks: close (with a period or None when unclear), waiting, open,
    decided (with what), status, or help."""

    kind: str
    arg: str | None = None


def intent(text: str) -> Intent:
    t = " ".join(text.lower().replace("’", "'").split())
    if m := re.search(r"\bwho decided\b(.*)|\bwhy did\b(.*)|\bexplain\b(.*)", t):
        what = next((g for g in m.groups() if g is not None), "").strip(" ?.")
        return Intent("decided", what or None)
    if re.search(r"waiting on me|waits on me|my turn|for me to", t):
        return Intent("waiting")
    if re.search(r"\bopen items?\b|what'?s open|\bopen\?", t):
        return Intent("open")
    if re.fullmatch(r"status\??|where are we\??|how far\??", t):
        return Intent("status")
    if re.search(r"\bclose\b", t):
        return Intent("close", _period_in(t))
    return Intent("help")


def _period_in(t: str) -> str | None:
    if m := re.search(r"\b(20\d\d)-(0[1-9]|1[0-2])\b", t):
        return f"{m.group(1)}-{m.group(2)}"
    if "last month" in t:
        return "last"
    for word in re.findall(r"[a-z]+", t):
        if word in MONTHS:
            year = re.search(r"\b(20\d\d)\b", t)
            return f"{year.group(1) if year else '*'}-{MONTHS[word]:02d}"
    return None


# how an answer was given, as people read it: a person's answer says nothing more; a default
# says it was one (the stored source words stay in the decision log)
DEFAULTS = {
    "auto_default": "the recommendation, applied by default",
    "timeout_default": "the recommendation, applied when nobody answered in time",
}


def how_answered(source: str | None) -> str:
    """'' for a person's answer (Slack, the console), else how it was applied."""
    return DEFAULTS.get(str(source or ""), "")


class Desk:
    """Answers about every close in the store, for one person at a time."""

    def __init__(self, store: Store, approvers: frozenset[str], data_dir: Path | None) -> None:
        self.store = store
        self.approvers = approvers
        self.data_dir = data_dir

    def closes(self, limit: int = 200) -> list[Run]:
        """The latest run of each period, newest period first (Slack runs and console runs)."""
        latest: dict[str, Run] = {}
        for run in self.store.runs.recent(limit=limit):
            if run.period not in latest:
                latest[run.period] = run
        return [latest[p] for p in sorted(latest, reverse=True)]

    def may_answer(self, run: Run, record: QuestionRecord, user: str) -> bool:
        """Whether `user` is an eligible answerer of the form (an approval needs an approver
        other than the starter when approvers are configured)."""
        if header_of(record) in APPROVAL_HEADERS and self.approvers:
            return user in self.approvers and user != run.started_by
        return may_steer(run, user, self.approvers)

    def waiting_on(self, user: str) -> list[Waiting]:
        found = []
        for run in self.store.runs.with_status("waiting"):
            record = self.store.questions.pending(run.id)
            if record is not None and self.may_answer(run, record, user):
                found.append(Waiting(run, record))
            if record is None:  # forms put off: Decide on the close's message brings each back
                found += [
                    Waiting(run, q)
                    for q in self.store.questions.deferred(run.id)
                    if self.may_answer(run, q, user)
                ]
        return found

    def open_items(self) -> list[dict[str, Any]]:
        """Open items of each period's latest finished close: text, owner, due, amount."""
        ledger = Ledger(self.store)
        items = []
        for run in self.closes():
            for item in ledger.open_items(run.id):
                if item.get("status") == "open":
                    items.append({**item, "period": run.period})
        return items

    def items_of(self, user: str) -> list[dict[str, Any]]:
        """The open items `user` owns (given at sign-off or escalated to them), soonest due
        first: what waits on them besides forms."""
        return sorted(
            (i for i in self.open_items() if i.get("owner") == user),
            key=lambda i: (str(i.get("due") or "9999"), str(i["id"])),
        )

    def decided(self, what: str | None, limit: int = 5) -> list[dict[str, Any]]:
        """Decision-log rows about `what` (header, question, answer or subject), newest first."""
        words = [w for w in re.findall(r"[a-z0-9-]+", (what or "").lower()) if len(w) > 2]
        rows = []
        for run in self.closes():
            for row in decision_rows(self.store, run.id):
                if row.get("status") != "answered":
                    continue
                hay = " ".join(
                    str(row.get(k) or "") for k in ("header", "question", "answer", "context")
                ).lower()
                if all(w in hay for w in words):
                    rows.append({**row, "period": run.period})
        rows.sort(key=lambda r: str(r.get("answered_at") or ""), reverse=True)
        return rows[:limit]

    def period_for(self, arg: str | None) -> tuple[str | None, list[str]]:
        """(the period a request names, or None when unclear; the periods with data)."""
        periods = close_data.available_periods(self.data_dir)
        if not arg:
            return None, periods
        if arg == "last":
            done = {r.period for r in self.closes() if r.status == "done"}
            todo = [p for p in periods if p not in done]
            return (todo[0] if len(todo) == 1 else None), periods
        if arg.startswith("*-"):
            matches = [p for p in periods if p.endswith(arg[1:])]
            return (matches[-1] if len(matches) == 1 else None), periods
        return (arg if arg in periods else None), periods
