"""Journal import files for QuickBooks Online, Xero and NetSuite: the documented columns,
one entry per batch, balanced — checked here by reading the files back independently."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from bot.close import exports
from bot.close.data import SAMPLE_DIR
from bot.close.exports import batch as exports_batch
from bot.store import Store
from tests.cli_run import closebot, run_id_of

# What each system's import documents (README, "Entries your ledger imports", cites them):
# QuickBooks Online quickbooks.intuit.com/learn-support/en-au/help-article/import-export-files/
# import-journal-entries-quickbooks-online/L4tQBwbs7_AU_en_AU; Xero
# help.xero.com/nz/ManualJournalsImport; NetSuite docs.oracle.com/en/cloud/saas/netsuite/
# ns-online-help/section_1534492479.html (header) and section_1534492737.html (lines).
DOCUMENTED = {
    "qbo": [
        "Journal No.",
        "Journal Date",
        "Account Name",
        "Debits",
        "Credits",
        "Description",
        "Name",
    ],
    "xero": ["Narration", "Date", "Description", "AccountCode", "TaxRate", "Amount"],
    "netsuite": ["External ID", "Date", "Memo", "Account", "Debit", "Credit", "Line Memo", "Name"],
    "csv": [
        "journal_no",
        "date",
        "gl_account",
        "gl_name",
        "debit",
        "credit",
        "description",
        "closebot_account",
        "well_id",
        "source",
        "ref",
    ],
}
DATE_FORMAT = {
    "qbo": r"10/31/2026",
    "xero": r"31/10/2026",
    "netsuite": r"10/31/2026",
    "csv": r"2026-10-31",
}


def _gl_map() -> dict[str, tuple[str, str]]:
    rows = csv.DictReader(io.StringIO((SAMPLE_DIR / "account_map.csv").read_text()))
    return {r["account"]: (r["gl_account"], r["gl_name"]) for r in rows}


@pytest.fixture(scope="module")
def closed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    db = tmp_path_factory.mktemp("gl") / "closebot.db"
    env = {"CLOSEBOT_DB": str(db), "CLOSEBOT_USER": "alice"}
    run = closebot("run", "2026-10", "--auto", env=env)
    assert "Decision log" in run.stdout, run.stdout + run.stderr
    return run_id_of(run.stdout), env


def _money(cell: str) -> Decimal:
    return Decimal(cell) if cell else Decimal(0)


@pytest.mark.parametrize("fmt", ["qbo", "xero", "netsuite", "csv"])
def test_import_file_has_the_documented_columns_and_balances(
    fmt: str, closed_run: tuple[str, dict[str, str]]
) -> None:
    run_id, env = closed_run
    native = closebot("entries", run_id, "--csv", env=env)
    ours = list(csv.DictReader(io.StringIO(native.stdout)))
    got = closebot("entries", run_id, "--format", fmt, env=env)
    assert got.returncode == 0, got.stderr
    rows = list(csv.reader(io.StringIO(got.stdout)))
    assert rows[0] == DOCUMENTED[fmt]
    body = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    assert len(body) == len(ours)
    gl = _gl_map()
    by_gl: dict[str, Decimal] = defaultdict(Decimal)
    expected: dict[str, Decimal] = defaultdict(Decimal)
    for line in ours:
        number, name = gl[line["account"]]
        key = {"qbo": name, "xero": number, "netsuite": f"{number} {name}", "csv": number}[fmt]
        expected[key] += Decimal(line["debit"]) - Decimal(line["credit"])
    for r in body:
        if fmt == "qbo":
            assert r["Journal Date"] == DATE_FORMAT[fmt]
            by_gl[r["Account Name"]] += _money(r["Debits"]) - _money(r["Credits"])
            number = r["Journal No."]
        elif fmt == "xero":
            assert r["Date"] == DATE_FORMAT[fmt] and r["TaxRate"]
            by_gl[r["AccountCode"]] += Decimal(r["Amount"])
            number = r["Narration"]
        elif fmt == "netsuite":
            assert r["Date"] == DATE_FORMAT[fmt]
            by_gl[r["Account"]] += _money(r["Debit"]) - _money(r["Credit"])
            number = r["External ID"]
        else:
            assert r["date"] == DATE_FORMAT[fmt]
            by_gl[r["gl_account"]] += _money(r["debit"]) - _money(r["credit"])
            number = r["journal_no"]
        assert number == (body[0].get("Narration") or number)  # one entry per batch
    numbers = {
        r.get("Journal No.") or r.get("Narration") or r.get("External ID") or r.get("journal_no")
        for r in body
    }
    assert len(numbers) == 1  # one entry number (or narration) for the whole batch
    assert sum(by_gl.values()) == 0  # balanced
    assert {k: v for k, v in by_gl.items() if v} == {k: v for k, v in expected.items() if v}
    every = got.stdout
    assert re.search(r"documents: jib\.csv sha256 [0-9a-f]{12}", every)  # the memo names them


@pytest.mark.parametrize("fmt", exports.names())
def test_every_registered_format_writes_the_whole_batch_with_its_memo(
    fmt: str, closed_run: tuple[str, dict[str, str]]
) -> None:
    """What holds for any format the registry lists (a new one's own test checks its layout)."""
    run_id, env = closed_run
    ours = list(csv.DictReader(io.StringIO(closebot("entries", run_id, "--csv", env=env).stdout)))
    got = closebot("entries", run_id, "--format", fmt, env=env)
    assert got.returncode == 0, got.stderr
    rows = list(csv.reader(io.StringIO(got.stdout)))
    assert len(rows) == len(ours) + 1 and len({len(r) for r in rows}) == 1
    assert re.search(r"documents: jib\.csv sha256 [0-9a-f]{12}", got.stdout)


def test_the_cli_offers_the_registered_formats() -> None:
    got = closebot("entries", "x", "--format", "nope")
    assert got.returncode == 2
    assert "choose from " + ", ".join(f"'{n}'" for n in exports.names()) in got.stderr
    assert {"qbo", "xero", "netsuite"} <= {f.id for f in exports.formats() if f.attached}
    assert not exports.format_named("csv").attached  # Slack attaches closebot's own journal CSV


def test_an_unmapped_account_is_named_and_nothing_is_written(
    closed_run: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    run_id, env = closed_run
    partial = tmp_path / "account_map.csv"
    lines = (SAMPLE_DIR / "account_map.csv").read_text().splitlines()
    partial.write_text("\n".join(x for x in lines if not x.startswith("2110,")) + "\n")
    got = closebot("entries", run_id, "--format", "qbo", "--map", str(partial), env=env)
    assert got.returncode == 2
    assert got.stdout == ""
    assert "2110 AP - JIB" in got.stderr
    folder = tmp_path / "data"
    closebot("data", "sample", str(folder), env=env)
    partial.replace(folder / "account_map.csv")
    check = closebot("data", "check", str(folder), env=env)
    assert check.returncode == 2
    assert "account_map.csv: 1 closebot account(s) with no GL account: 2110" in check.stdout


# -- issue 29: each format's documented limits and required fields, by construction -------------


def _sample_map() -> dict[str, exports_batch.GlAccount]:
    return exports_batch.read_account_map(SAMPLE_DIR / "account_map.csv")


def _big_batch(entries: int, per_entry: int = 3) -> list[dict[str, object]]:
    """`entries` balanced entries of `per_entry` lines (Dr 6210 / Cr 2110 …)."""
    lines: list[dict[str, object]] = []
    for n in range(1, entries + 1):
        amount = Decimal(n) + Decimal("0.25")
        debits = [amount] * (per_entry - 1)
        for k, d in enumerate(debits):
            lines.append(
                {"entry_no": n, "entry": f"JIB INV-{n} · Acme Operating · service 2026-09",
                 "account": "6210", "debit": d, "credit": Decimal(0), "memo": f"line {k}",
                 "well_id": "W-A"}
            )  # fmt: skip
        lines.append(
            {"entry_no": n, "entry": f"JIB INV-{n} · Acme Operating · service 2026-09",
             "account": "2110", "debit": Decimal(0), "credit": sum(debits, Decimal(0)),
             "memo": "AP", "well_id": ""}
        )  # fmt: skip
    return lines


def test_xero_gets_files_of_at_most_300_lines_each_balanced_split_between_entries() -> None:
    """help.xero.com/nz/ManualJournalsImport: "You can import up to 300 lines in one template
    file"; rows with the same Narration and Date are one journal, which must balance."""
    lines = _big_batch(125)  # 375 lines, as the months (369–377)
    export = exports_batch.build_export(
        {"id": "JE-2027-01-x-1"}, lines, period="2027-01", documents="", account_map=_sample_map()
    )
    files = export.files("xero")
    assert len(files) == 2 and len({name for name, _ in files}) == 2
    seen_entries: list[set[str]] = []
    total_rows = 0
    narrations = set()
    for _, content in files:
        rows = list(csv.DictReader(io.StringIO(content)))
        assert list(rows[0]) == DOCUMENTED["xero"]
        assert 0 < len(rows) <= 300
        total_rows += len(rows)
        assert sum(Decimal(r["Amount"]) for r in rows) == 0  # each file balanced
        by_narration: dict[str, Decimal] = defaultdict(Decimal)
        for r in rows:
            by_narration[(r["Narration"], r["Date"])] += Decimal(r["Amount"])  # type: ignore[index]
        assert all(v == 0 for v in by_narration.values())  # each journal in it balanced
        narrations |= {r["Narration"] for r in rows}
        seen_entries.append({r["Description"].split(" — ")[0] for r in rows})
    assert total_rows == len(lines)
    assert not (seen_entries[0] & seen_entries[1])  # no entry split across two files
    assert len(narrations) == 2  # each file its own journal
    with pytest.raises(exports_batch.DataError, match="at most 300 lines"):
        export.render("xero")  # one file cannot hold it: said, never written
    # an entry alone over the limit cannot be split: refused with its number
    one = exports_batch.build_export(
        {"id": "JE-1"}, _big_batch(1, 301), period="2027-01", documents="",
        account_map=_sample_map(),
    )  # fmt: skip
    with pytest.raises(exports_batch.DataError, match=r"entry 1 .* 301 lines"):
        one.files("xero")


@pytest.mark.parametrize("fmt", ["qbo", "netsuite"])
def test_the_ledger_names_the_operator_or_payor_on_every_payable_and_receivable_line(
    fmt: str, closed_run: tuple[str, dict[str, str]]
) -> None:
    """QuickBooks Online's "Import journal entries" help: on an A/P or A/R account line "the
    system will request the Name column to have a supplier selected"; NetSuite ties A/P lines
    to a vendor and A/R lines to a customer (its aging's "No Vendor"/"No Customer" otherwise:
    optimaldataconsulting.com/resources/how-to-fix-the-no-customer-vendor-line-on-netsuite-
    aging-report)."""
    run_id, env = closed_run
    ours = list(csv.DictReader(io.StringIO(closebot("entries", run_id, "--csv", env=env).stdout)))
    got = closebot("entries", run_id, "--format", fmt, env=env)
    assert got.returncode == 0, got.stderr
    rows = list(csv.DictReader(io.StringIO(got.stdout)))
    assert len(rows) == len(ours)
    folder = SAMPLE_DIR / "2026-10"

    def rows_of(name: str) -> list[dict[str, str]]:
        with open(folder / name, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    operator_of = {d["well_id"]: d["operator"] for d in rows_of("doi.csv")}
    invoice_operator = {j["invoice_no"]: j["operator"] for j in rows_of("jib.csv")}
    stubs = dict(enumerate(rows_of("revenue.csv"), start=2))
    check_payor = {r["check_no"]: r["payor"] for r in stubs.values()}
    # each well's payor: the payor of its latest check line (a line without a well id is
    # the DOI's well with that operator property number)
    well_of_property = {d["operator_property_no"]: d["well_id"] for d in rows_of("doi.csv")}
    payor_of: dict[str, str] = {}
    month_of: dict[str, str] = {}
    for stub in stubs.values():
        well = stub["well_id"] or well_of_property.get(stub["property_no"], "")
        if well and stub["sale_month"] > month_of.get(well, ""):
            month_of[well], payor_of[well] = stub["sale_month"], stub["payor"]
    payable_or_receivable = {"2110", "1210", "1215", "1220", "1390"}
    named = 0
    for ours_line, row in zip(ours, rows, strict=True):
        if ours_line["account"] not in payable_or_receivable:
            assert row["Name"] == ""
            continue
        named += 1
        title = ours_line["entry"]
        if title.startswith("JIB "):
            expected = invoice_operator[title.split()[1]]
        elif title.startswith("Revenue check "):
            expected = check_payor[title.split()[2]]
        elif ours_line["ref"].startswith("revenue.csv:"):  # a stub's refund claim: its payor
            expected = stubs[int(ours_line["ref"].split(":")[1].split(",")[0])]["payor"]
        elif ours_line["account"] in ("1210", "1215", "1220") and ours_line["well_id"] in payor_of:
            expected = payor_of[ours_line["well_id"]]  # a revenue receivable: the payor owes it
        else:
            expected = operator_of[ours_line["well_id"]]  # JIB payable or disputed JIB
        assert row["Name"] == expected, (ours_line, row)
    assert named > 10
    # the accruals (1210) of wells with checks are the payors', the disputed JIB the operator's
    names = {(o["account"], r["Name"]) for o, r in zip(ours, rows, strict=True)}
    assert ("1210", "Bakken Prairie Marketing") in names
    assert ("1390", "Anadarko Basin Operating Co.") in names


def test_netsuite_refuses_what_its_fields_cannot_hold() -> None:
    """docs.oracle.com NetSuite "Journal Entry … Line-Level Fields Table": each entry at least
    two lines and balanced; Debit and Credit at most 10 digits before the decimal."""
    huge = Decimal("12345678901.00")
    lines = [
        {"entry_no": 1, "entry": "x", "account": "6210", "debit": huge, "credit": Decimal(0),
         "memo": "", "well_id": ""},
        {"entry_no": 1, "entry": "x", "account": "2110", "debit": Decimal(0), "credit": huge,
         "memo": "", "well_id": ""},
    ]  # fmt: skip
    export = exports_batch.build_export(
        {"id": "JE-1"}, lines, period="2027-01", documents="", account_map=_sample_map()
    )
    with pytest.raises(exports_batch.DataError, match="10 digits"):
        export.render("netsuite")
    small = [{**li, "debit": li["debit"] and Decimal("5.00"), "credit": li["credit"] and Decimal("5.00")}
             for li in lines]  # fmt: skip
    nameless = exports_batch.build_export(
        {"id": "JE-1"}, small, period="2027-01", documents="", account_map=_sample_map()
    )
    with pytest.raises(exports_batch.DataError, match=r"NetSuite needs .* 1 line\(s\) have no"):
        nameless.render("netsuite")  # an A/P line (2110) with no operator: refused
    with pytest.raises(exports_batch.DataError, match="at least two lines"):
        exports_batch.Export({"id": "JE-1"}, lines[:1], "2027-01", "", _sample_map()).render(
            "netsuite"
        )


def test_no_export_without_the_teams_account_map(tmp_path: Path) -> None:
    """A team's data folder without account_map.csv gets no import file in the sample
    company's accounts: a clear message saying how to make one, and nothing written."""
    folder = tmp_path / "data"
    closebot("data", "sample", str(folder))
    (folder / "account_map.csv").unlink()
    env = {"CLOSEBOT_DB": str(tmp_path / "c.db"), "CLOSEBOT_USER": "alice"}
    run = closebot("run", "2026-10", "--auto", "--data", str(folder), env=env)
    run_id = run_id_of(run.stdout)
    for fmt in ("qbo", "xero", "netsuite"):
        got = closebot("entries", run_id, "--format", fmt, "--data", str(folder), env=env)
        assert got.returncode == 2, got.stdout
        assert got.stdout == ""
        assert "no account map" in got.stderr and "account_map.csv" in got.stderr
        assert "account,gl_account,gl_name" in got.stderr  # how to make one
    # with the team's own map given, the file is written
    (tmp_path / "ours.csv").write_text((SAMPLE_DIR / "account_map.csv").read_text())
    ok = closebot(
        "entries", run_id, "--format", "qbo", "--data", str(folder), "--map",
        str(tmp_path / "ours.csv"), env=env,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def test_entries_out_writes_the_ledgers_files_into_a_folder(
    closed_run: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    run_id, env = closed_run
    got = closebot("entries", run_id, "--format", "xero", "--out", str(tmp_path), env=env)
    assert got.returncode == 0, got.stderr
    written = sorted(tmp_path.iterdir())
    assert [p.name for p in written] == [line.rsplit("/", 1)[-1] for line in got.stdout.split()]
    for path in written:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
        assert 0 < len(rows) <= 300 and sum(Decimal(r["Amount"]) for r in rows) == 0


def _dropped(kind: str, n: int) -> dict[str, object]:
    digest = hashlib.sha256(f"{kind}{n}".encode()).hexdigest()
    return {"id": n, "kind": kind, "filename": f"Operator {n} {kind}.xlsx", "sha256": digest,
            "status": "active", "dropped_by": "UALICE", "dropped_at": "2026-11-02T10:00:00Z",
            "mapping": {}, "superseded_by": None}  # fmt: skip


def test_the_memo_names_every_file_of_a_kind_or_counts_them_when_they_do_not_fit(
    store: Store,
) -> None:
    """Issue 29: many JIB files per period; the memo names each as dropped with its hash, and
    when they are more than the memo holds, a count per kind and where each file is listed."""
    run = store.runs.create(period="2026-10", mode="auto", started_by="alice", model="s")
    few = [_dropped("jib.csv", n) for n in (1, 2, 3)] + [_dropped("revenue.csv", 4)]
    few.append({**_dropped("jib.csv", 5), "status": "superseded"})  # replaced: not read
    hashes = {"jib.csv": "ab" * 32, "revenue.csv": "cd" * 32, "doi.csv": "ef" * 32}
    store.audit.record(
        run_id=run.id, kind="input_files", actor="agent",
        detail={"period": "2026-10", "files": hashes, "imported": few},
    )  # fmt: skip
    memo = exports_batch.documents(store, run.id)
    for f in few[:4]:
        assert f"{f['filename']} sha256 {str(f['sha256'])[:12]}" in memo, memo
    assert "Operator 5" not in memo
    many = [_dropped("jib.csv", n) for n in range(1, 41)] + [_dropped("revenue.csv", 99)]
    other = store.runs.create(period="2026-10", mode="auto", started_by="alice", model="s")
    store.audit.record(
        run_id=other.id, kind="input_files", actor="agent",
        detail={"period": "2026-10", "files": hashes, "imported": many},
    )  # fmt: skip
    memo = exports_batch.documents(store, other.id)
    assert "jib.csv: 40 files" in memo and "revenue.csv: 1 file" in memo
    assert f"closebot audit {other.id} --csv" in memo
    export = exports_batch.build_export(
        {"id": "JE-1"}, _big_batch(1), period="2026-10", documents=memo, account_map=_sample_map()
    )
    assert export.memo.endswith("--csv)") and len(export.memo) <= exports_batch.MEMO_LIMIT
