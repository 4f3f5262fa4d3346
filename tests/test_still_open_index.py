"""What is still open after each decision (issue 31), from the step's kept entries, equals a
walk of the step's exceptions in the order found — through every kind of write the Ledger
makes (an exception recorded, decided, a group split line by line, a decision reopened)."""

from __future__ import annotations

import random
from typing import Any

from bot.close.decisions.tools import still_open
from bot.close.ledger import Ledger
from bot.close.registry import MAX_LIST
from bot.store import Store

STEP = "WI/NRI"


def _walked(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The first MAX_LIST open entries by walking every exception of the step (a group once,
    at its first member, open while any member is not resolved); {} when the step has no
    more than MAX_LIST entries."""

    def group(e: dict[str, Any]) -> str | None:
        g = e["details"].get("group")
        return None if not g or e["extra"].get("line_by_line") else str(g)

    keys = list(dict.fromkeys(group(e) or e["id"] for e in rows))
    if len(keys) <= MAX_LIST:
        return {}
    out = []
    for key in keys:
        members = [e for e in rows if (group(e) or e["id"]) == key]
        g = group(members[0])
        open_ = (
            any(e["status"] != "resolved" for e in members) if g else members[0]["status"] == "open"
        )
        if open_ and len(out) < MAX_LIST:
            subject = members[0]["details"]["subject"]
            out.append(
                {
                    "ref": g or members[0]["details"]["ref"],
                    "step": STEP,
                    "subject": f"{len(members)} × {subject} and alike" if g else subject,
                }
            )
    return {"still_open": out} if out else {}


def test_still_open_follows_every_write(store: Store) -> None:
    rng = random.Random(31)
    ledger = Ledger(store)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    ids: list[str] = []

    def check() -> None:
        rows = [e for e in ledger.exceptions(run.id) if e["details"]["step"] == STEP]
        assert still_open(ledger, run.id, STEP) == _walked(rows)  # type: ignore[arg-type]

    for n in range(60):
        group = rng.choice([None, None, None, "alike:wi_nri:A:1", "alike:wi_nri:B:2"])
        details: dict[str, Any] = {
            "ref": f"wi_nri:W-{n:03d}",
            "step": STEP if n % 7 else "Intake",
            "subject": f"Well {n}",
            "summary": f"well {n} billed at a wrong WI",
            "question": "?",
            "recommended": "",
            "reasoning": "",
            "facts": {},
            "amount": "1.00",
            "options": ["a", "b"],
        }
        if group:
            details["group"] = group
        ids.append(
            ledger.record_exception(
                run.id,
                exception_id=f"{run.id}:wi_nri:W-{n:03d}",
                kind="wi_nri",
                well_id=None,
                details=details,  # type: ignore[arg-type]
            )["id"]
        )
        check()
    for _ in range(200):
        exception_id = rng.choice(ids)
        status = rng.choice(["resolved", "resolved", "open"])
        extra = {"line_by_line": "alike:wi_nri:A:1"} if rng.random() < 0.1 else {}
        ledger.decide(
            exception_id,
            option="a",
            status=status,
            extra=extra,
            question_id=None,
            decided_by="alice",
            source="console",
        )
        check()
