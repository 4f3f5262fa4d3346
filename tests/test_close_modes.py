"""The eight-step close in every mode: the console and auto mode as subprocesses, Slack through
the real Bolt app and the fake Web API; honest failure; Claude's tool results stay small."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from bot.close import STEPS
from bot.close.data import SAMPLE_DIR
from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests.cli_run import LOGIN, ONE, closebot, run_id_of
from tests.close_helpers import close_run
from tests.slack_harness import Harness


def test_console_october_then_auto_november_reverses_october_and_asks_nothing_of_smith(
    db_path: Path,
) -> None:
    # a person takes each recommendation (Intake, WI/NRI, effective date, AFE, overhead, accrual,
    # severance), explains the flagged flux item of the draft in their own words, approves (no
    # entry over the limit here: one approval posts) and signs off (owners and dates as shown)
    answers = "5\n3\n1\n1\n1\n3\n2\n1\n3\nother: Rod pump on Carter Ranch, cleanout on Olson\nour own words\n1\n1\n\n"
    october = closebot("run", "2026-10", stdin=answers, env=ONE)
    assert october.returncode == 0, october.stdout[-3000:]
    assert f"(posted by {LOGIN})" in october.stdout
    november = closebot("run", "2026-11", "--auto")
    assert november.returncode == 0, november.stdout[-3000:]
    out = november.stdout
    before = out.split("Month-end close · November 2026 —")[0]
    assert "· WI/NRI ·" in october.stdout and "· DOI effective date" in october.stdout
    assert "· WI/NRI ·" not in before and "· DOI effective date" not in before  # Smith's DOI read
    asked = [
        h.strip()
        for h in re.findall(r"Question \d+/\d+ \[(?:required|optional)\] · ([^·\n…]+)", out)
    ]
    # October's open items first, then flux of the draft against closebot's posted October, the
    # approval, and the sign-off
    opened = [h for h in asked if h != "Open item"]
    assert asked[0] == "Open item" and asked[: len(asked) - len(opened)] == ["Open item"] * (
        len(asked) - len(opened)
    )
    assert opened[0].startswith("Flux") and opened[-1] == "Sign-off" and "Posting" in opened
    assert "Second approval" not in out  # a default approval asks for no second one
    assert "last month's accruals reversed from store" in " ".join(out.split())
    run_id = run_id_of(out)
    store = Store(db_path)
    reversal = [
        x
        for x in Ledger(store).lines(Ledger(store).current_batch(run_id)["id"])
        if x["source"] == "reversal"
    ]
    assert reversal and all(x["ref"].startswith("batch JE-2026-10-") for x in reversal)
    assert "draft, not posted" in out  # auto mode never approves posting


def test_auto_october_then_auto_november_asks_about_smith_again(db_path: Path) -> None:
    """Defaults never judge: an auto-mode 'accept' is not approved, so the DOI does not change."""
    assert closebot("run", "2026-10", "--auto").returncode == 0
    november = closebot("run", "2026-11", "--auto")
    assert november.returncode == 0
    assert "WI/NRI · Smith 14-2H" in november.stdout
    assert "last month's accruals reversed from accruals.csv" in " ".join(november.stdout.split())


def test_doi_shows_a_wells_history_with_the_row_closebot_added(db_path: Path) -> None:
    before = closebot("doi", "W-TX-001")
    assert before.returncode == 0 and "0.25000000  0.20000000  doi.csv line 2" in before.stdout
    assert (
        closebot(
            "run", "2026-10", stdin="5\n3\n1\n1\n1\n3\n2\n1\n3\n1\n1\n1\n\n", env=ONE
        ).returncode
        == 0
    )
    after = closebot("doi", "W-TX-001")
    assert (
        "2026-07-01   0.27500000  0.22000000  closebot run" in after.stdout
        and "in force" in after.stdout
    )
    assert f"decided by {LOGIN}" in after.stdout
    unknown = closebot("doi", "W-NOPE")
    assert unknown.returncode == 2 and "no DOI rows for well 'W-NOPE'" in unknown.stderr
    # the shipped CSV is never rewritten
    assert (
        "W-TX-001,Smith 14-2H,TX,Permian Ridge Operating LLC,PRO-40117,0.25000000,0.20000000"
        in (SAMPLE_DIR / "2026-10" / "doi.csv").read_text()
    )


def test_a_step_that_fails_mid_run_exits_1_naming_the_step(tmp_path: Path, db_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    first = closebot("run", "2026-10", "--data", str(data), stdin="")
    assert first.returncode == 3
    run_id = run_id_of(first.stdout)
    (data / "2026-10" / "afe.csv").unlink()  # broken while the run waits on a person
    resumed = closebot("resume", run_id, "--data", str(data), stdin="5\n" + "1\n" * 40)
    assert resumed.returncode == 1, resumed.stdout[-2000:]
    assert "the step 'WI/NRI validation' failed" in resumed.stdout and "afe.csv" in resumed.stdout
    assert "✗ WI/NRI validation: failed" in resumed.stdout
    assert "Traceback" not in resumed.stdout + resumed.stderr
    assert Store(db_path).runs.get(run_id).status == "failed"


def test_a_resumed_run_whose_files_changed_says_the_data_changed(
    tmp_path: Path, db_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    first = closebot("run", "2026-10", "--data", str(data), stdin="")
    assert first.returncode == 3
    run_id = run_id_of(first.stdout)
    jib = data / "2026-10" / "jib.csv"
    jib.write_text(
        jib.read_text().replace("48000.00,0.27500000,13200.00", "48000.00,0.27500000,13200.01")
    )
    resumed = closebot("resume", run_id, "--data", str(data), stdin="5\n" + "1\n" * 40)
    assert resumed.returncode == 1, resumed.stdout[-2000:]
    assert "the data changed: jib.csv of 2026-10" in resumed.stdout
    assert "Traceback" not in resumed.stdout + resumed.stderr
    store = Store(db_path)
    assert store.runs.get(run_id).status == "failed"
    assert Ledger(store).current_batch(run_id) is None  # nothing drafted from the changed files


def test_a_failed_step_shows_as_failed_in_slack(
    fake: FakeSlack, db_path: Path, tmp_path: Path
) -> None:
    data = tmp_path / "broken"
    shutil.copytree(SAMPLE_DIR, data)
    (data / "2026-10" / "prices.csv").write_text(
        "month,product,benchmark_price,differential\n2026-09,oil,lots,1\n"
    )
    bot = Harness(fake, db_path, CLOSEBOT_DATA=str(data))
    try:
        run = bot.start()
        assert bot.store.runs.get(run.id).status == "failed"
        status = bot.status(run)
        assert "Intake — failed" in status and status.count("not run yet") == len(STEPS) - 1
        texts = [m["text"] for m in fake.thread(run.thread_ts or "")]
        assert any("the step 'Intake' failed" in t and "prices.csv line 2" in t for t in texts)
        root = json.dumps(bot.message(run.thread_ts or "")["blocks"], ensure_ascii=False)
        assert "❌ Failed: the step 'Intake' failed" in root and "Finished" not in root
    finally:
        bot.close()


def test_slack_closes_october_then_november_which_asks_nothing_of_the_data(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path, CLOSEBOT_DATA=str(SAMPLE_DIR))
    try:
        october = bot.start("2026-10")
        bot.finish(october.id)
        ledger = Ledger(bot.store)
        assert ledger.current_batch(october.id)["status"] == "posted"
        november = bot.start("2026-11")
        # October's open items open November, before its own steps; then only the flux of the
        # draft before the approval
        first = bot.store.questions.get(bot.pending(november.id))
        assert {q["header"] for q in first.questions} == {"Open item"}
        assert november.steps.get("WI/NRI validation", "pending") == "pending"
        bot.finish(november.id)
        batch = ledger.current_batch(november.id)
        assert batch["status"] == "posted"
        reversal = [x for x in ledger.lines(batch["id"]) if x["source"] == "reversal"]
        assert all(x["ref"] == f"batch {ledger.current_batch(october.id)['id']}" for x in reversal)
        headers = [q.questions[0]["header"] for q in bot.store.questions.of_run(november.id)]
        carried = headers.count("Open item")
        assert carried and headers[:carried] == ["Open item"] * carried
        posting = headers.index("Posting")
        assert posting > carried and all(h.startswith("Flux") for h in headers[carried:posting])
        assert headers[posting + 1] == "Second approval" and headers[-1].startswith("Sign-off")
    finally:
        bot.close()


def test_every_tool_result_of_a_close_stays_under_4_kb(db_path: Path) -> None:
    run = close_run(None, db_path)
    sizes = {
        (r["name"], len(r["result"].encode()))
        for r in run.store.query(
            "select name, result from tool_calls where run_id = ?", (run.run_id,)
        )
    }
    assert sizes and max(size for _, size in sizes) < 4096, sorted(sizes, key=lambda x: -x[1])[:3]
