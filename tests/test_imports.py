"""Files in operators' layouts → the period's rows in the database, checked whole."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

from bot.close import data as close_data
from bot.close.imports.intake import Imports, load_period
from bot.close.imports.sheet import read_sheets
from bot.store import Store
from tests.cli_run import LOGIN, closebot, run_id_of
from tests.import_files import FOREIGN_JIB, jib_xlsx, sample_rows, write_period
from tests.operator_files import OPERATOR_ORDER, well_names


def test_xlsx_title_rows_skipped_header_found_values_as_excel_stores_them() -> None:
    sheets = read_sheets("Permian JIB.xlsx", jib_xlsx())
    sheet = sheets[0]
    assert sheet.name == "JIB Detail"
    assert sheet.header == FOREIGN_JIB
    assert sheet.header_row == 3
    assert sheet.skipped_titles == ["Joint Interest Billing — owner statement"]
    first = sheet.rows[0][1]
    assert first[2] == "2026-09-01"  # a date cell, not its display
    assert first[9] == "0.275"  # the double Excel stores, shortest form
    assert len(sheet.rows) == len(sample_rows("jib.csv"))
    assert [n for n, _ in sheet.totals] == [4 + len(sheet.rows)]


def test_foreign_headers_are_asked_then_confirmed_then_remembered(store: Store) -> None:
    imports = Imports(store)
    got = imports.receive(
        filename="Permian JIB.xlsx",
        raw=jib_xlsx(),
        dropped_by="UALICE",
        origin="test",
        period="2026-10",
    )
    assert got.status == "pending" and got.ask is not None
    assert got.ask.needs == ["mapping"] and got.ask.kind == "jib.csv"
    assert got.ask.mapping["owner_net_amount"] == "Your Share"
    assert got.ask.mapping["owner_decimal"] == "Your Decimal"
    assert got.ask.mapping["gross_amount"] == "Gross Amt"
    assert imports.active("2026-10") == []  # nothing used before the person confirms

    done = imports.confirm(got.id, by="UALICE")
    assert done.status == "active" and done.converted is not None
    # the rows read are the sample's: an independent read of the CSV it was made from
    expected = sample_rows("jib.csv")
    assert done.converted.rows == len(expected)
    by_operator: dict[str, Decimal] = {}
    for r in expected:
        by_operator[r["operator"]] = by_operator.get(r["operator"], Decimal(0)) + Decimal(
            r["owner_net_amount"]
        )
    assert done.converted.totals == by_operator
    loaded = load_period(store, "2026-10", None)
    assert [(j.invoice_no, j.owner_net_amount, j.service_month) for j in loaded.jib] == [
        (r["invoice_no"], Decimal(r["owner_net_amount"]), r["service_month"]) for r in expected
    ]
    assert loaded.hashes["jib.csv"] == imports.active("2026-10")[0]["sha256"]

    # next month's file from the same operators, same layout: maps itself
    november = [{**r, "service_month": "2026-10"} for r in expected]
    nxt = imports.receive(
        filename="Permian JIB Nov.xlsx",
        raw=jib_xlsx(november),
        dropped_by="UBEN",
        origin="test",
        period="2026-11",
    )
    assert nxt.status == "active", nxt
    assert "confirmed by UALICE" in nxt.mapped


def test_a_bad_file_is_reported_whole_and_nothing_is_used(store: Store) -> None:
    rows = sample_rows("jib.csv")
    rows[1] = {**rows[1], "gross_amount": "12,00.00x"}
    rows[4] = {**rows[4], "service_month": "2026-13"}
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    body = text.getvalue() + "Total,,,,,,,,,,1.00\n"
    imports = Imports(store)
    got = imports.receive(
        filename="jib.csv", raw=body.encode(), dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.status == "refused"
    where = {(p.line, p.column) for p in got.problems}
    assert (3, "gross_amount") in where  # line 3 of the file: the second row
    assert (6, "service_month") in where
    total_line = len(rows) + 2
    assert (total_line, "owner_net_amount") in where
    assert all(p.file == "jib.csv" for p in got.problems)
    assert imports.active("2026-10") == []
    # the loader still reads the folder's own jib.csv: the bad file changed nothing
    assert load_period(store, "2026-10", None).jib == close_data.load("2026-10").jib


def test_a_replaced_file_supersedes_the_first_with_an_audit_event(store: Store) -> None:
    imports = Imports(store)
    first = (close_data.SAMPLE_DIR / "2026-10" / "revenue.csv").read_bytes()
    a = imports.receive(
        filename="revenue.csv", raw=first, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert a.status == "active"
    second = first.replace(b"CHK-884120", b"CHK-884121")
    b = imports.receive(
        filename="revenue.csv", raw=second, dropped_by="UBEN", origin="test", period="2026-10"
    )
    assert b.status == "active" and b.superseded and b.superseded["id"] == a.id
    assert imports.file(a.id)["status"] == "superseded"
    assert imports.file(a.id)["superseded_by"] == b.id
    assert [f["id"] for f in imports.active("2026-10")] == [b.id]
    events = store.query("select * from audit_events where kind = 'file_superseded'")
    assert len(events) == 1 and events[0]["actor"] == "UBEN"
    assert str(a.id) in events[0]["detail"] and str(b.id) in events[0]["detail"]
    assert {r.check_no for r in load_period(store, "2026-10", None).revenue} >= {"CHK-884121"}
    # the same file again changes nothing
    again = imports.receive(
        filename="revenue.csv", raw=second, dropped_by="UBEN", origin="test", period="2026-10"
    )
    assert again.status == "duplicate"
    assert [f["id"] for f in imports.active("2026-10")] == [b.id]


def test_kind_and_period_that_cannot_be_told_are_asked(store: Store) -> None:
    raw = (close_data.SAMPLE_DIR / "2026-10" / "revenue.csv").read_bytes()
    got = Imports(store).receive(
        filename="statement.csv", raw=raw, dropped_by="UALICE", origin="test"
    )
    assert got.status == "pending" and got.ask is not None
    assert "kind" in got.ask.needs and "period" in got.ask.needs
    assert set(got.ask.kinds[:2]) == {"revenue.csv", "revenue_history.csv"}
    done = Imports(store).confirm(got.id, by="UALICE", kind="revenue.csv", period="2026-10")
    assert done.status == "active" and done.kind == "revenue.csv"


def test_data_import_at_the_terminal_then_a_close_on_those_files(tmp_path: Path) -> None:
    folder = write_period(tmp_path / "mine")
    (folder / "jib.csv").unlink()
    (folder / "Permian JIB Oct 2026.xlsx").write_bytes(jib_xlsx())
    data = tmp_path / "empty"
    data.mkdir()
    env = {"CLOSEBOT_DATA": str(data)}
    first = closebot("data", "import", str(folder), "--period", "2026-12", env=env)
    assert first.returncode == 2, first.stdout + first.stderr
    assert "Permian JIB Oct 2026.xlsx: not imported yet" in first.stdout
    assert 'owner_net_amount = "Your Share"' in first.stdout  # the proposal, as a --map section
    assert "give --yes" in first.stdout
    second = closebot("data", "import", str(folder), "--period", "2026-12", "--yes", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "(jib.csv) for 2026-12" in second.stdout
    assert f"columns: the mapping confirmed by {LOGIN}" in second.stdout  # who, said as who
    run = closebot("run", "2026-12", "--auto", env=env)
    assert "Decision log: closebot audit" in run.stdout, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    log = closebot("audit", run_id, "--csv", env=env)
    assert f"Permian JIB Oct 2026.xlsx, dropped by {LOGIN}" in log.stdout  # the OS login
    assert "owner_net_amount←Your Share" in log.stdout
    # imported data has no YYYY-MM folders: the export's advice (`closebot data check`) works
    no_map = closebot("entries", run_id, "--format", "qbo", env=env)
    advice = re.search(r"`closebot data check ([^`]+)`", no_map.stderr)
    assert no_map.returncode == 2 and advice, no_map.stderr
    sample_map = (close_data.SAMPLE_DIR / "account_map.csv").read_text().splitlines()
    (data / "account_map.csv").write_text(
        "\n".join(line for line in sample_map if not line.startswith("2110,")) + "\n"
    )
    checked = closebot("data", "check", advice.group(1), env=env)
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert "no period folders" not in checked.stderr
    assert "account_map.csv: 1 closebot account(s) with no GL account: 2110" in checked.stdout


# -- issue 29: every operator's own files, as they come ------------------------------------


def _csv_bytes(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def _jib_of(operator: str) -> list[dict[str, str]]:
    return [r for r in sample_rows("jib.csv") if r["operator"] == operator]


def _canonical(rows: list[dict[str, str]]) -> bytes:
    return _csv_bytes([list(rows[0]), *[list(r.values()) for r in rows]])


def test_each_operators_jib_is_its_own_file_and_the_close_reads_them_all(store: Store) -> None:
    imports = Imports(store)
    read = []
    for operator in OPERATOR_ORDER:
        got = imports.receive(
            filename=f"{operator} JIB.csv",
            raw=_canonical(_jib_of(operator)),
            dropped_by="UALICE",
            origin="test",
            period="2026-10",
        )
        assert got.status == "active" and not got.replaced, got
        read.append(got.id)
    assert [f["id"] for f in imports.active("2026-10") if f["kind"] == "jib.csv"] == read
    loaded = load_period(store, "2026-10", None)
    want = sample_rows("jib.csv")  # the union, line for line, is the sample's one file
    assert [(j.operator, j.invoice_no, j.owner_net_amount) for j in loaded.jib] == [
        (r["operator"], r["invoice_no"], Decimal(r["owner_net_amount"])) for r in want
    ]
    # a newer version of one operator's invoice replaces that file only
    fixed = [{**r, "owner_net_amount": r["owner_net_amount"]} for r in _jib_of(OPERATOR_ORDER[1])]
    fixed[0]["description"] = "corrected"
    again = imports.receive(
        filename="Caprock JIB corrected.csv",
        raw=_canonical(fixed),
        dropped_by="UBEN",
        origin="test",
        period="2026-10",
    )
    assert [f["id"] for f in again.replaced] == [read[1]]
    assert len([f for f in imports.active("2026-10") if f["kind"] == "jib.csv"]) == 6
    descriptions = [j.description for j in load_period(store, "2026-10", None).jib]
    assert descriptions.count("corrected") == 1 and len(descriptions) == len(want)


def test_sent_no_jib_is_asked_only_for_an_operator_with_no_file(store: Store) -> None:
    from bot.close.checks import Close
    from bot.close.doi_master import Master
    from bot.close.steps.intake import intake

    imports = Imports(store)
    for operator in OPERATOR_ORDER[:-1]:  # Williston Crest sends nothing
        imports.receive(
            filename=f"{operator}.csv",
            raw=_canonical(_jib_of(operator)),
            dropped_by="UALICE",
            origin="test",
            period="2026-11",
        )
    data = load_period(store, "2026-11", None)
    missing = [
        f.subject
        for f in intake(Close(data, Master.of(data, [])))
        if f.kind == "missing_document" and f.key.startswith("jib:")
    ]
    assert missing == ["Williston Crest Operating"]


def test_the_header_is_found_below_an_invoice_block_and_may_be_chosen() -> None:
    rows = _jib_of("Red Fork Resources Inc.")
    body = [
        ["Red Fork Resources Inc.", "", "", "", "", ""],
        ["Invoice No:", "RFR-2026-09-311", "Invoice Date:", "2026-10-12", "", ""],
        ["Owner:", "Acme", "Service Month:", "Sep 2026", "", ""],
        ["Property", "Well", "Cost Type", "Gross", "Decimal", "Net"],
        *[
            [r["property_no"], r["well_id"], r["cost_category"], r["gross_amount"],
             r["owner_decimal"], r["owner_net_amount"]]
            for r in rows
        ],
        ["Invoice Total", "", "", "", "", str(sum(Decimal(r["owner_net_amount"]) for r in rows))],
    ]  # fmt: skip
    (sheet,) = read_sheets("RFR.csv", _csv_bytes(body))
    assert sheet.header_row == 4 and sheet.header[0] == "Property"
    assert sheet.title_values["Invoice No"] == "RFR-2026-09-311"
    assert len(sheet.rows) == len(rows)  # the "Invoice Total" row is not data
    assert [n for n, _ in sheet.totals] == [5 + len(rows)]
    (chosen,) = read_sheets("RFR.csv", _csv_bytes(body), header_row=2)
    assert chosen.header_row == 2 and chosen.header[0] == "Invoice No:"


def test_a_single_operator_statement_takes_its_operator_and_invoice_from_its_title(
    store: Store,
) -> None:
    names = well_names()
    rows = _jib_of("Red Fork Resources Inc.")
    body = [
        ["Operator: Red Fork Resources Inc."],
        [f"Invoice #: {rows[0]['invoice_no']}"],
        ["Svc Month", "Property", "Well Name", "Cost Code", "Gross", "Owner %", "Net"],
        *[
            ["Sep 2026", r["property_no"], names[r["well_id"]], r["cost_category"],
             f"${Decimal(r['gross_amount']):,}", f"{Decimal(r['owner_decimal']) * 100:f}%",
             r["owner_net_amount"]]
            for r in rows
        ],
    ]  # fmt: skip
    got = Imports(store).receive(
        filename="RFR.csv", raw=_csv_bytes(body), dropped_by="UALICE", origin="test"
    )
    assert got.ask is not None and got.ask.needs == ["mapping"], got
    assert got.ask.mapping["operator"] == "=Red Fork Resources Inc."
    assert got.ask.mapping["invoice_no"] == f"={rows[0]['invoice_no']}"
    done = Imports(store).confirm(got.id, by="UALICE")
    assert done.status == "active", done.problems
    loaded = load_period(store, "2026-10", None).jib
    # percent strings and currency in CSV read as the decimals and amounts they are; the
    # wells' names read as the DOI's wells
    assert [(j.operator, j.well_id, j.owner_decimal, j.gross_amount) for j in loaded] == [
        (r["operator"], r["well_id"], Decimal(r["owner_decimal"]), Decimal(r["gross_amount"]))
        for r in rows
    ]


def test_a_jib_of_this_closes_service_month_is_a_jib_whatever_its_columns_or_name(
    store: Store,
) -> None:
    rows = sample_rows("jib.csv")
    # a JIB with only the columns JIB history has too, named for another month
    history_columns = list(sample_rows("jib_history.csv")[0])
    body = _csv_bytes([history_columns, *[[r[c] for c in history_columns] for r in rows]])
    got = Imports(store).receive(
        filename="JIB Jan-2027.csv", raw=body, dropped_by="UALICE", origin="test"
    )
    assert (got.kind, got.period) == ("jib.csv", "2026-10"), got
    in_thread = Imports(store).receive(
        filename="JIB history.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert in_thread.kind != "jib_history.csv"  # asked, never filed as history unasked


def test_percent_currency_and_negatives_in_csv_read_as_in_xlsx(store: Store) -> None:
    rows = _jib_of("Caprock Energy Partners")
    rows[-1] = {**rows[-1], "gross_amount": "-1450.00", "owner_net_amount": "-90.63"}  # a credit
    columns = list(rows[0])

    def cell(column: str, value: str) -> str:
        if column == "owner_decimal":
            return f"{(Decimal(value) * 100).normalize():f}%"  # 0.0625 → 6.25%
        if column == "gross_amount":
            amount = Decimal(value)
            return f"(${-amount:,.2f})" if amount < 0 else f"${amount:,.2f}"
        if column == "owner_net_amount":
            amount = Decimal(value)
            return f"{-amount:,.2f}-" if amount < 0 else f"{amount:,.2f}"
        return value

    body = _csv_bytes([columns, *[[cell(c, r[c]) for c in columns] for r in rows]])
    got = Imports(store).receive(
        filename="jib.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.status == "active", got.problems
    loaded = load_period(store, "2026-10", None).jib
    assert [(j.owner_decimal, j.gross_amount, j.owner_net_amount) for j in loaded] == [
        (Decimal(r["owner_decimal"]), Decimal(r["gross_amount"]), Decimal(r["owner_net_amount"]))
        for r in rows
    ]


def test_property_and_acct_code_columns_are_proposed(store: Store) -> None:
    rows = sample_rows("jib.csv")
    header = ["Operator", "Invoice", "Service Month", "Property", "Well", "Acct Code",
              "Gross", "Decimal", "Net"]  # fmt: skip
    body = _csv_bytes(
        [header]
        + [
            [r["operator"], r["invoice_no"], r["service_month"], r["property_no"],
             r["well_id"], r["cost_category"], r["gross_amount"], r["owner_decimal"],
             r["owner_net_amount"]]
            for r in rows
        ]
    )  # fmt: skip
    got = Imports(store).receive(
        filename="jib export.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.ask is not None
    assert got.ask.mapping["property_no"] == "Property"
    assert got.ask.mapping["cost_category"] == "Acct Code"


def test_a_check_detail_that_names_no_well_is_refused_with_its_reason(store: Store) -> None:
    rows = sample_rows("revenue.csv")
    columns = [c for c in rows[0] if c not in ("well_id", "property_no")]
    body = _csv_bytes([columns, *[[r[c] for c in columns] for r in rows]])
    got = Imports(store).receive(
        filename="revenue.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.status == "refused"
    (problem,) = got.problems
    assert "a well or property the DOI knows" in problem.expected
    assert "no column was mapped to a well or property" in problem.expected
    assert Imports(store).active("2026-10") == []


def test_a_register_of_well_names_reads_as_the_doi_wells(store: Store) -> None:
    names = well_names()
    rows = sample_rows("revenue.csv")
    columns = list(rows[0])
    body = _csv_bytes(
        [
            columns,
            *[[names.get(r[c], r[c]) if c == "well_id" else r[c] for c in columns] for r in rows],
        ]
    )
    got = Imports(store).receive(
        filename="revenue.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.status == "active", got.problems
    loaded = load_period(store, "2026-10", None).revenue
    assert [r.well_id for r in loaded] == [r["well_id"] for r in rows]


def test_a_well_name_several_wells_bear_is_asked_and_the_answer_kept(store: Store) -> None:
    doi = sample_rows("doi.csv")
    twin = {**doi[0], "well_id": "W-TX-099", "operator_property_no": "PRO-49999"}
    imports = Imports(store)
    assert imports.receive(
        filename="doi.csv", raw=_canonical([*doi, twin]), dropped_by="UALICE", origin="test",
        period="2026-10",
    ).status == "active"  # fmt: skip
    rows = [r for r in sample_rows("revenue.csv") if r["well_id"] == "W-TX-001"]
    body = _canonical([{**r, "well_id": "Smith 14-2H", "property_no": ""} for r in rows])
    got = imports.receive(
        filename="revenue.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.status == "pending" and got.ask is not None and got.ask.needs == ["wells"]
    assert [w for w, _ in got.ask.wells["Smith 14-2H"]] == ["W-TX-001", "W-TX-099"]
    done = imports.confirm(got.id, by="UALICE", wells={"Smith 14-2H": "W-TX-001"})
    assert done.status == "active"
    assert {r.well_id for r in load_period(store, "2026-10", None).revenue} == {"W-TX-001"}


def test_a_refused_files_mapping_is_not_remembered(store: Store) -> None:
    rows = sample_rows("jib.csv")
    table = [FOREIGN_JIB, *[list(r.values()) for r in rows]]
    bad = [list(row) for row in table]
    bad[1][8] = "oops"  # a gross amount that is not one
    imports = Imports(store)
    got = imports.receive(
        filename="Permian JIB.csv", raw=_csv_bytes(bad), dropped_by="UALICE", origin="test",
        period="2026-10",
    )  # fmt: skip
    assert got.ask is not None and got.ask.needs == ["mapping"]
    done = imports.confirm(got.id, by="UALICE")
    assert done.status == "refused"
    assert store.query("select * from column_maps") == []
    again = imports.receive(
        filename="Permian JIB.csv", raw=_csv_bytes(table), dropped_by="UALICE", origin="test",
        period="2026-10",
    )  # fmt: skip
    assert again.status == "pending"  # asked again: nothing was remembered from the refusal


def test_a_file_waiting_for_the_doi_is_read_when_it_comes(store: Store, tmp_path: Path) -> None:
    imports = Imports(store, data_dir=tmp_path)  # no period folders: nothing but the drops
    jib = imports.receive(
        filename="jib.csv",
        raw=(close_data.SAMPLE_DIR / "2026-10" / "jib.csv").read_bytes(),
        dropped_by="UALICE",
        origin="test",
        period="2026-10",
    )
    assert jib.status == "waiting"
    doi = imports.receive(
        filename="doi.csv",
        raw=(close_data.SAMPLE_DIR / "2026-10" / "doi.csv").read_bytes(),
        dropped_by="UALICE",
        origin="test",
        period="2026-10",
    )
    assert doi.status == "active"
    assert [(f.filename, f.status) for f in doi.followups] == [("jib.csv", "active")]


def test_the_unknown_property_question_offers_the_likely_wells(tmp_path: Path) -> None:
    from bot.close.checks import Close
    from bot.close.doi_master import Master
    from bot.close.steps.intake import intake

    folder = write_period(tmp_path / "2026-10")
    text = (folder / "revenue.csv").read_text().splitlines()
    text[1] = text[1].replace("PRO-40117,W-TX-001", "PRO-4O117,W-TX-01")  # two typos
    (folder / "revenue.csv").write_text("\n".join(text) + "\n")
    data = close_data.load("2026-10", tmp_path)
    (finding,) = [
        f
        for f in intake(Close(data, Master.of(data, [])))
        if f.kind == "unknown_property" and f.key == "revenue:2"
    ]
    assert "map:W-TX-001" in finding.options
    assert finding.facts["candidates"][0] == ["W-TX-001", "Smith 14-2H"]


def test_the_terminal_asks_at_the_prompt_or_reads_a_map_file(tmp_path: Path) -> None:
    rows = _jib_of("Red Fork Resources Inc.")
    header = ["Invoice", "Svc Month", "Property", "Well", "Category", "Gross", "Decimal", "Net"]
    body = [header] + [
        [r["invoice_no"], r["service_month"], r["property_no"], r["well_id"],
         r["cost_category"], r["gross_amount"], r["owner_decimal"], r["owner_net_amount"]]
        for r in rows
    ]  # fmt: skip
    (tmp_path / "redfork.csv").write_bytes(_csv_bytes(body))
    env = {"CLOSEBOT_DB": str(tmp_path / "asked.db")}
    # at the prompt: column 1 (the operator) is one value for the whole file, then Enter
    asked = closebot(
        "data", "import", str(tmp_path / "redfork.csv"), "--period", "2026-10", "--ask",
        stdin="1\n=Red Fork Resources Inc.\n\n", env=env,
    )  # fmt: skip
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert "Operator                               ← —" in asked.stdout  # nothing proposed
    want = sum((Decimal(r["owner_net_amount"]) for r in rows), Decimal(0))
    assert f"Red Fork Resources Inc. ${want:,.2f}" in asked.stdout
    # the same, said beforehand in a --map file: nothing asked
    (tmp_path / "maps.toml").write_text(
        '["redfork*.csv"]\nkind = "jib.csv"\n["redfork*.csv".whole_file]\n'
        'operator = "Red Fork Resources Inc."\n'
    )
    env = {"CLOSEBOT_DB": str(tmp_path / "mapped.db")}
    mapped = closebot(
        "data", "import", str(tmp_path / "redfork.csv"), "--period", "2026-10",
        "--map", str(tmp_path / "maps.toml"), env=env,
    )  # fmt: skip
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr
    assert "columns: the mapping given" in mapped.stdout
    assert f"Red Fork Resources Inc. ${want:,.2f}" in mapped.stdout
    # a map file with a mistake is refused whole, naming it; nothing is imported
    (tmp_path / "bad.toml").write_text('["*.csv"]\nkind = "jib"\n')
    bad = closebot(
        "data", "import", str(tmp_path / "redfork.csv"), "--map", str(tmp_path / "bad.toml"),
        env={"CLOSEBOT_DB": str(tmp_path / "bad.db")},
    )  # fmt: skip
    assert bad.returncode != 0 and "kind 'jib' is not one of" in bad.stderr + bad.stdout


def test_a_header_row_chosen_by_a_person_rereads_the_file(store: Store) -> None:
    rows = sample_rows("revenue.csv")
    columns = list(rows[0])
    # a remittance address as wide as the table: read as its header until a person says
    address = ["Remit to", "PO Box 1", "Tulsa", "OK", "74101", "USA", "Phone", "Fax", "Email",
               "Web", "Terms", "Net", "Thirty"]  # fmt: skip
    body = _csv_bytes([address, columns, *[list(r.values()) for r in rows]])
    imports = Imports(store)
    got = imports.receive(
        filename="check.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.status == "pending" and got.ask is not None
    assert got.ask.header_row == 1 and (2, ",".join(columns).replace(",", " | ")) in got.ask.top
    again = imports.confirm(got.id, by="UALICE", header_row=2)
    assert again.status == "active", again  # closebot's own columns once read from row 2
    assert again.header_row == 2 and again.kind == "revenue.csv"
    assert imports.file(got.id)["status"] == "withdrawn"
    assert len(load_period(store, "2026-10", None).revenue) == len(rows)


def test_an_owner_column_of_names_is_not_read_as_the_decimal(store: Store) -> None:
    rows = sample_rows("revenue.csv")
    columns = [c for c in rows[0] if c != "owner_decimal"]
    header = [*columns, "Owner", "Owner %"]
    body = _csv_bytes(
        [header]
        + [
            [
                *(r[c] for c in columns),
                "Acme Minerals LP",
                f"{Decimal(r['owner_decimal']) * 100:f}%",
            ]
            for r in rows
        ]
    )
    got = Imports(store).receive(
        filename="revenue.csv", raw=body, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.ask is not None and got.ask.mapping["owner_decimal"] == "Owner %"
