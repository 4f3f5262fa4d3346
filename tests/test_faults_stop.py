"""A stopped close decides nothing (CLOSE.md v2.2, issue 31): none of its decisions take effect —
no open item settled, written off or carried by it, no DOI row — and the next close of that
period starts from the state before it."""

from __future__ import annotations

from pathlib import Path

from bot.close.ledger import Ledger
from bot.core.questions import Ask, Question, Response
from bot.store import Store
from tests.close_helpers import close_run, recommended


def test_a_write_off_decided_in_a_stopped_close_leaves_the_item_in_the_register(
    tmp_path: Path,
) -> None:
    db = tmp_path / "closebot.db"
    store = Store(db)
    october = close_run(None, db, store=store)
    assert october.batch()["status"] == "posted"
    items = Ledger(store).carried_into("2026-10")
    (dispute,) = [i for i in items if "28.13" in i["text"]]  # Caprock's overhead over the JOA
    before = {i["id"]: i["status"] for i in items}

    def write_off(q: Question) -> Response | None:
        if q.header == "Open item" and dispute["text"][:60] in q.question:
            labels = [o.label for o in q.options]
            return Response(selected=(labels.index("Write off (logged)") + 1,))
        return recommended(q)

    def after_write_off(ask: Ask) -> bool:
        return any(dispute["text"][:60] in q.question for q in ask.questions)

    stopped = close_run(
        None, db, period="2026-11", store=store, choose=write_off, stop_when=after_write_off
    )
    assert store.runs.get(stopped.run_id).status == "cancelled"
    (decided,) = [
        e
        for e in stopped.exceptions()
        if e["kind"] == "carried_item" and e["details"]["facts"]["item_id"] == dispute["id"]
    ]
    assert decided["resolution"] == "write_off"  # it was decided, then the close was stopped

    # the register is as before the stopped close: every item still open, the dispute too
    again = Ledger(store).carried_into("2026-10")
    assert {i["id"]: i["status"] for i in again} == before
    assert len(again) == len(items)
    # and the next close of November asks about every one of them, the dispute included
    november = close_run(None, db, period="2026-11", store=store)
    carried = [q for a in november.asks for q in a.questions if q.header == "Open item"]
    assert len(carried) == len(items)
    assert any(dispute["text"][:60] in q.question for q in carried)
