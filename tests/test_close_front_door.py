"""The close behind one front door: `bot.close.DOMAIN` holds its steps, kinds, export formats,
tools, prompt and playbook, and starting a close is one function for every front end (one
close per period: a live close is not started twice, a posted period is not closed again)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bot.close
from bot.close import DOMAIN, STEPS, PeriodPostedError, period_taken, start_close
from bot.close.steps import registry
from bot.core.errors import PeriodTakenError
from bot.store import Store
from tests.close_helpers import close_run

ROOT = Path(__file__).resolve().parents[1]


def test_the_domain_holds_the_registries_in_order() -> None:
    assert DOMAIN.steps == registry() and DOMAIN.step_names == STEPS
    assert DOMAIN.step("journal") is DOMAIN.step("Journal entries")
    assert [f.id for f in DOMAIN.formats][:1] == ["qbo"] and "csv" in {f.id for f in DOMAIN.formats}
    assert "wi_nri" in DOMAIN.kinds
    tools = DOMAIN.tools().registry()
    assert tools.steps == list(DOMAIN.step_names)
    assert f"1. {DOMAIN.steps[0].tool_name}" in DOMAIN.prompt
    assert DOMAIN.playbook().name == "offline-playbook"
    assert DOMAIN.start is start_close and DOMAIN.taken is period_taken


def test_every_name_the_door_lists_is_there() -> None:
    missing = [n for n in bot.close.__all__ if not hasattr(bot.close, n)]
    assert missing == []


def test_front_ends_import_only_the_front_door() -> None:
    """The console, the sandbox and the benches (the Slack edge has its own contract in
    `make lint`): never a submodule of bot.close."""
    past = []
    for folder in ("bot/console", "bot/sandbox", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "bot.close."
                ):
                    past.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}")
    assert past == []


def test_starting_a_close_is_one_close_per_period(store: Store) -> None:
    assert period_taken(store, "2026-10") is None
    run = start_close(store, "2026-10", mode="console", started_by="alice", model="m")
    taken = period_taken(store, "2026-10")
    assert taken is not None and taken.live is not None and taken.live.id == run.id
    with pytest.raises(PeriodTakenError) as live:
        start_close(store, "2026-10", mode="slack", started_by="bob", model="m")
    assert live.value.run_id == run.id and not isinstance(live.value, PeriodPostedError)
    # a files thread's start is claimed by its files, not by the period
    other = start_close(
        store, "2026-10", mode="slack", started_by="bob", model="m", one_per_period=False
    )
    assert other.id != run.id


def test_a_posted_period_is_not_closed_again(db_path: Path) -> None:
    run = close_run(None, db_path)  # the offline close, approved and posted
    assert run.ledger.posted_batch("2026-10") is not None
    taken = period_taken(run.store, "2026-10")
    assert taken is not None and taken.live is None and taken.posted is not None
    with pytest.raises(PeriodPostedError) as posted:
        start_close(run.store, "2026-10", mode="console", started_by="bob", model="m")
    assert posted.value.batch["id"] == taken.posted["id"] and posted.value.run_id == run.run_id
