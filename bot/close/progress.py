"""What a close is doing, in words: the loading messages while a step works ("Reconciling 214
JIB lines…") and each step's one-line result ("3 exceptions: 2 decided, 1 open").

Front-end neutral (no Slack here): the Slack presenter shows these as the thread's status
(assistant.threads.setStatus) and as the plan's task lines.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from bot.close.doi_master import money
from bot.close.ledger import Ledger
from bot.close.steps import names, registry
from bot.close.steps.journal import JOURNAL
from bot.store import Run, Store

THINKING = "Working out the next step…"


def intake_figures(store: Store, run_id: str) -> dict[str, Any]:
    """The counts the intake step reported (JIB lines, revenue lines, wells), or {} before it ran."""
    for message in store.transcript.messages(run_id):
        if message.role != "assistant":
            continue
        for block in message.content:
            if block.get("type") == "tool_use" and block.get("name") == "load_period":
                result = store.transcript.tool_result(str(block.get("id")))
                if result is None or result.is_error:
                    continue
                try:
                    figures = json.loads(result.content)
                except ValueError:
                    continue
                if isinstance(figures, dict):
                    return figures
    return {}


def loading_messages(step: str | None, period: str, figures: dict[str, Any]) -> list[str]:
    """What Slack shows while `step` works (at most 10, rotated); a model call when no step runs."""
    for s in registry():
        if s.name == step:
            return s.messages(period, figures)
    return [THINKING]


def step_lines(store: Store, run_id: str) -> dict[str, str]:
    """Each step's one-line result so far: its exceptions, and the batch for the journal."""
    ledger = Ledger(store)
    lines: dict[str, str] = {}
    by_step: dict[str, list[str]] = {}
    for e in ledger.exceptions(run_id):
        by_step.setdefault(str(e["details"].get("step")), []).append(str(e["status"]))
    for step, statuses in by_step.items():
        open_ = sum(1 for s in statuses if s == "open")
        n = len(statuses)
        noun = "exception" if n == 1 else "exceptions"
        lines[step] = (
            f"{n} {noun}, all decided"
            if not open_
            else f"{n} {noun}: {n - open_} decided, {open_} open"
        )
    batch = ledger.current_batch(run_id)
    if batch is not None:
        entries = ledger.entry_count(batch["id"])
        lines[JOURNAL.name] = (
            f"{entries} entries, {money(Decimal(batch['total_debit']))} ({batch['status']})"
        )
    return lines


def steps_done(run: Run) -> int:
    """How many of the close's steps ran to the end."""
    return sum(run.steps.get(step) == "done" for step in names())


def every_step_ran(run: Run) -> bool:
    """A close is finished only when each of its steps ran; a run that ended earlier (a
    cancelled question, a stop) is stopped, whatever its status says."""
    return all(run.steps.get(step) == "done" for step in names())
