"""A month as its operators send it (issue 29): six operators' JIBs and three payors' check
details, each in its own layout (title and invoice blocks, no operator or invoice column,
well names, percent and currency strings in CSV, total rows), imported at the terminal and
dropped in Slack, closes to the same draft — the same entries and the same questions — as
the sample's canonical files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from bot.close.data import SAMPLE_DIR
from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack
from tests.cli_run import closebot, run_id_of
from tests.operator_files import operators_month
from tests.slack_harness import Harness
from tests.test_slack_files import Dropper, _submit_file_form


def _close(env: dict[str, str]) -> tuple[str, list[str], list[tuple[str, str, str]]]:
    """An offline close of 2026-10: its run, its entries (without the batch's own id) and its
    questions (kind, the document line it is about, the amount)."""
    run = closebot("run", "2026-10", "--auto", env=env)
    assert "Decision log: closebot audit" in run.stdout, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    entries = closebot("entries", run_id, "--csv", env=env)
    assert entries.returncode == 0, entries.stderr
    lines = [",".join(line.split(",")[2:]) for line in entries.stdout.splitlines()]
    db = sqlite3.connect(env["CLOSEBOT_DB"])
    try:
        rows = db.execute(
            "select kind, json_extract(details, '$.ref'), json_extract(details, '$.amount') "
            "from exceptions where run_id = ? order by id",
            (run_id,),
        ).fetchall()
    finally:
        db.close()
    return run_id, lines, sorted((str(k), str(r), str(a)) for k, r, a in rows)


def canonical_close(tmp_path: Path) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The same month closed on the sample's own eleven files."""
    env = {"CLOSEBOT_DB": str(tmp_path / "canonical.db"), "CLOSEBOT_DATA": str(SAMPLE_DIR)}
    _, lines, questions = _close(env)
    return lines, questions


def test_six_operators_files_imported_at_the_terminal_close_to_the_canonical_draft(
    tmp_path: Path,
) -> None:
    paths = operators_month(tmp_path / "inbox")
    empty = tmp_path / "no-folders"
    empty.mkdir()
    env = {"CLOSEBOT_DB": str(tmp_path / "team.db"), "CLOSEBOT_DATA": str(empty)}
    # first as a new user runs it: nothing asked at a pipe, every layout's proposal shown (in
    # a database of its own: the union reads files in the order they were imported)
    look = {**env, "CLOSEBOT_DB": str(tmp_path / "look.db")}
    first = closebot("data", "import", *map(str, paths), "--period", "2026-10", env=look)
    assert first.returncode == 2, first.stdout + first.stderr
    for name in ("Permian Ridge JIB Nov-2026.xlsx", "RFR_2026-09-311.csv", "WCO JIB Sept.xlsx"):
        assert f"{name}: not imported yet" in first.stdout
    # the operator and invoice said once in a title block are proposed for the whole file
    assert '["Permian Ridge JIB Nov-2026.xlsx".whole_file]' in first.stdout
    assert 'operator = "Permian Ridge Operating LLC"' in first.stdout
    assert 'invoice_no = "RFR-2026-09-311"' in first.stdout
    # then with the proposals as they stand
    second = closebot("data", "import", *map(str, paths), "--period", "2026-10", "--yes", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "replaces" not in second.stdout  # six JIBs of six operators: six files, none replaced
    for name in ("Permian Ridge JIB Nov-2026.xlsx", "CEP JIB 0926-044.csv", "WCO JIB Sept.xlsx"):
        assert f"{name}: JIB (joint interest billing) (jib.csv) for 2026-10" in second.stdout

    _, lines, questions = _close(env)
    want_lines, want_questions = canonical_close(tmp_path)
    assert lines == want_lines  # every entry, line for line, amount for amount
    assert questions == want_questions  # the same questions about the same lines
    assert not any(q[0] == "missing_document" for q in questions)  # every operator sent one


def _slack_draft(h: Any, run_id: str) -> tuple[list[tuple[Any, ...]], list[tuple[str, ...]]]:
    """A Slack close's draft, posted: its lines, and its questions with how each was decided."""
    ledger = Ledger(h.store)
    batch = ledger.current_batch(run_id)
    assert batch is not None
    lines = [
        (li["entry_no"], li["line_no"], li["entry"], li["account"], li["debit"], li["credit"],
         li["well_id"], li["memo"], li["ref"])
        for li in ledger.lines(batch["id"])
    ]  # fmt: skip
    questions = sorted(
        (e["kind"], e["details"]["ref"], e["details"]["amount"], e["status"], e["resolution"] or "")
        for e in ledger.exceptions(run_id)
    )
    return lines, questions


def test_six_operators_files_dropped_in_slack_close_to_the_canonical_draft(
    fake: FakeSlack, db_path: Path
) -> None:
    # the shipped sample itself (the Slack tests' own folder leaves a line out)
    canonical = Harness(fake, db_path.parent / "canonical.db", CLOSEBOT_DATA=str(SAMPLE_DIR))
    try:
        run = canonical.start("2026-10")
        canonical.finish(run.id)
        want = _slack_draft(canonical, run.id)
    finally:
        canonical.close()

    empty = db_path.parent / "no-folders"
    empty.mkdir()
    h = Harness(fake, db_path, CLOSEBOT_DATA=str(empty))
    try:
        assert h.command("2026-10", channel="COPS").status == 200
        h.idle()
        (root,) = [m for m in fake.sorted_messages() if "waiting for files" in m["text"]]
        drops = Dropper(h)
        for path in operators_month(db_path.parent / "inbox"):
            drops.drop(path.name, path.read_bytes(), channel=root["channel"], thread_ts=root["ts"])
        assert h.store.runs.recent() == []  # the forms are not answered yet: the close waits
        forms = [m for m in fake.thread(root["ts"]) if "file_col:" in json.dumps(m["blocks"])]
        assert len(forms) == 8  # every layout but the CDEX export's is asked once
        labels = [b["label"]["text"] for b in forms[0]["blocks"] if b["type"] == "input"]
        assert "Your decimal interest" in labels and "owner_decimal" not in labels
        for form in forms:
            _submit_file_form(h, form)
        (run,) = h.store.runs.recent()
        h.idle()
        h.finish(run.id)
        got = _slack_draft(h, run.id)
    finally:
        h.close()
    print("ONLY WANT", sorted(set(want[1]) - set(got[1])))
    assert got[0] == want[0]  # every line of the draft, as the sample's files make it
    assert got[1] == want[1]  # the same questions, decided alike
