"""A run's journal batch ready for your general ledger's import, through your account map:
the map, the checks before anything is written (every account mapped, the batch balanced),
the memo and the CSV writing every format shares. The formats themselves are one module
each beside this one (bot/close/exports/__init__.py lists how they register).

One entry number per batch (its id), dated the last day of the period, its memo naming
the documents the close read (their file names and SHA-256).
"""

from __future__ import annotations

import calendar
import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.close.data import SAMPLE_DIR, ZERO, period_label
from bot.close.doi_master import ACCOUNT_NAMES
from bot.close.exports import format_named
from bot.core.errors import DataError
from bot.store import Store

MAP_FILE = "account_map.csv"
MAP_COLUMNS = ("account", "gl_account", "gl_name")
DEFAULT_TAX_RATE = "Tax Exempt"


@dataclass(frozen=True)
class GlAccount:
    number: str
    name: str
    tax_rate: str = DEFAULT_TAX_RATE  # Xero wants one per line


def map_path(data_dir: Path | None) -> Path | None:
    """The team's account map beside its data folders; the sample's only for the sample (no
    data folder); None when the team's folder has none (`require_map` says how to make one)."""
    if data_dir is None:
        return SAMPLE_DIR / MAP_FILE
    return data_dir / MAP_FILE if (data_dir / MAP_FILE).is_file() else None


def require_map(data_dir: Path | None) -> Path:
    """The account map to export with; DataError saying how to make one when there is none
    (never the sample company's accounts for a team's books)."""
    path = map_path(data_dir)
    if path is None:
        assert data_dir is not None  # the sample always has its map
        raise DataError(
            f"no account map in {data_dir}: closebot writes your ledger's import files only "
            f"through your own chart of accounts. Write {data_dir / MAP_FILE} with the columns "
            f"{','.join(MAP_COLUMNS)}[,tax_rate], one line per closebot account (the sample's "
            f"{SAMPLE_DIR / MAP_FILE} shows the layout; `closebot data check {data_dir}` names "
            "any account left out), or give --map"
        )
    return path


def read_account_map(path: Path) -> dict[str, GlAccount]:
    """closebot account → your GL account; DataError listing every bad line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read the account map {path}: {e}") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in MAP_COLUMNS if c not in header]
    if missing:
        raise DataError(f"{path} line 1: expected the columns {', '.join(missing)}")
    out: dict[str, GlAccount] = {}
    problems = []
    for line, row in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
        if not any(row.values()):
            continue
        if row["account"] not in ACCOUNT_NAMES:
            problems.append(
                f"line {line}, column account: {row['account']!r}: expected one of closebot's accounts"
            )
            continue
        if not row["gl_account"] and not row["gl_name"]:
            problems.append(f"line {line}: expected your GL account number or name (or both)")
            continue
        if row["account"] in out:
            problems.append(f"line {line}, column account: {row['account']!r} is mapped twice")
            continue
        out[row["account"]] = GlAccount(
            row["gl_account"], row["gl_name"], row.get("tax_rate") or DEFAULT_TAX_RATE
        )
    if problems:
        raise DataError(
            f"{len(problems)} problem(s) in {path}:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def unmapped(account_map: dict[str, GlAccount], accounts: list[str] | None = None) -> list[str]:
    """closebot accounts (those given, or every one closebot may book) without a GL account."""
    return sorted(a for a in (accounts or list(ACCOUNT_NAMES)) if a not in account_map)


def entry_date(period: str) -> tuple[int, int, int]:
    year, month = (int(x) for x in period.split("-"))
    return year, month, calendar.monthrange(year, month)[1]


def amount(value: Decimal) -> str:
    return f"{value:.2f}" if value else ""


def line_text(line: Mapping[str, Any]) -> str:
    memo = f" — {line['memo']}" if line.get("memo") else ""
    return f"{line['entry']}{memo}"


def _safe(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula is quoted out (text from documents);
    amounts (-31000.00) are left as they are."""
    if (
        isinstance(value, str)
        and value[:1] in ("=", "+", "-", "@", "\t", "\r")
        and not re.fullmatch(r"-\d+\.\d\d", value)
    ):
        return "'" + value
    return value


def write(columns: list[str], rows: list[list[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_safe(c) for c in row])
    return out.getvalue()


# closebot's payables and receivables (CLOSE.md's chart): AP - JIB, and the receivables. A
# ledger wants a party on each: QuickBooks a supplier or customer in Name, NetSuite a vendor on
# an A/P line and a customer on an A/R line (`Export.names`).
PAYABLE_OR_RECEIVABLE = frozenset({"2110", "1210", "1215", "1220", "1390"})
OWED_BY_PAYOR = frozenset({"1210", "1215", "1220"})  # revenue receivables (`Export.party`)
PAYOR_OF = "payor of "  # `operators()` keys a well's payor "payor of W-TX-001"

# a document entry's title names its operator or payor (bot/close/journal.py writes them)
DOCUMENT_TITLE = re.compile(r"^(?:JIB|Revenue check) \S+ · (?P<party>.+?) · (?:service|sales) ")


@dataclass
class Export:
    batch: Mapping[str, Any]
    lines: Sequence[Mapping[str, Any]]
    period: str
    documents: str  # "jib.csv Permian-Oct.xlsx sha256 1a2b…; …"
    account_map: dict[str, GlAccount]
    # who a line is with: a document line's operator or payor by its ref (jib.csv:5,
    # revenue.csv:17), a well's operator (DOI) by its id
    operators: Mapping[str, str] = field(default_factory=dict)
    part: tuple[int, int] | None = None  # this file's number of the files the batch needs

    @property
    def memo(self) -> str:
        part = f" · file {self.part[0]} of {self.part[1]}" if self.part else ""
        return (
            f"closebot {self.batch['id']}{part} · {period_label(self.period)} close · documents: "
            f"{self.documents or 'none recorded'}"
        )[:MEMO_LIMIT]

    def gl(self, account: str) -> GlAccount:
        return self.account_map[account]

    def party(self, line: Mapping[str, Any]) -> str:
        """The operator or payor a line is with: its document's (the entry's title, or the
        document line it is about), else its well's operator; "" when none is known."""
        m = DOCUMENT_TITLE.match(str(line.get("entry") or ""))
        if m:
            return m.group("party")
        ref = str(line.get("ref") or "").split(",")[0]
        if ref in self.operators:
            return self.operators[ref]
        well = str(line.get("well_id") or "")
        # Who owes a receivable: revenue is paid by the payor (the purchaser or the operator
        # as remitter, whoever writes the well's checks), so an accrued or claimed revenue
        # receivable (1210, 1215, 1220) is the customer the well's last check came from; a
        # JIB's payable (2110) and a disputed JIB (1390) are with the operator who billed it.
        # A well with no check in the period's documents falls back to its DOI operator.
        if line["account"] in OWED_BY_PAYOR and self.operators.get(PAYOR_OF + well):
            return self.operators[PAYOR_OF + well]
        return self.operators.get(well, "")

    def names(self, ledger: str) -> list[str]:
        """The Name of each line: its party (`party`) on a payable or receivable, "" elsewhere;
        DataError naming the lines when a payable or receivable has none (`ledger` says whose
        import needs it)."""
        out, nameless = [], []
        for li in self.lines:
            on_party = li["account"] in PAYABLE_OR_RECEIVABLE
            name = self.party(li) if on_party else ""
            if on_party and not name:
                nameless.append(f"{li['account']} {line_text(li)}")
            out.append(name)
        if nameless:
            raise DataError(
                f"{ledger} needs a supplier or customer in Name on every A/P and A/R line; "
                f"{len(nameless)} line(s) have no operator or payor: " + "; ".join(nameless[:5])
            )
        return out

    def render(self, fmt: str) -> str:
        """The batch in format `fmt` (its name, as `closebot entries --format` takes it), in
        one file; DataError when the ledger needs it split (`files`)."""
        files = self.files(fmt)
        if len(files) > 1:
            f = format_named(fmt)
            raise DataError(
                f"{f.title} imports at most {f.max_lines} lines a file and this batch has "
                f"{len(self.lines)}: it is written as {len(files)} files, each balanced "
                "(give --out DIR)"
            )
        return files[0][1]

    def files(self, fmt: str) -> list[tuple[str, str]]:
        """The batch as the ledger imports it: (file name, content) per file, split by entry
        into files of at most the format's `max_lines`, each balanced; DataError when one
        entry alone is over the limit and its wells do not balance one by one (`by_well`)."""
        f = format_named(fmt)
        parts = split_by_entry(self.lines, f.max_lines) if f.max_lines else [list(self.lines)]
        out = []
        for n, lines in enumerate(parts, start=1):
            part = replace(self, lines=lines, part=(n, len(parts)) if len(parts) > 1 else None)
            name = file_name(str(self.batch["id"]), fmt)
            if len(parts) > 1:
                name = name.replace(".csv", f"-{n}-of-{len(parts)}.csv")
            out.append((name, f.render(part)))
        return out


def split_by_entry(lines: Sequence[Mapping[str, Any]], limit: int) -> list[list[Mapping[str, Any]]]:
    """Lines in files of at most `limit`, an entry never split across two unless it alone is
    over the limit; each file balanced (every entry is). An entry over the limit is split at
    its wells (`by_well`)."""
    entries: dict[Any, list[Mapping[str, Any]]] = {}
    for li in lines:
        entries.setdefault(li.get("entry_no"), []).append(li)
    parts: list[list[Mapping[str, Any]]] = [[]]
    for number, entry in entries.items():
        for chunk in [entry] if len(entry) <= limit else by_well(number, entry, limit):
            if parts[-1] and len(parts[-1]) + len(chunk) > limit:
                parts.append([])
            parts[-1].extend(chunk)
    for part in parts:
        if _debit_credit(part)[0] != _debit_credit(part)[1]:
            raise DataError(f"a file of the split would not balance: {_debit_credit(part)}")
    return parts


def by_well(
    number: Any, entry: list[Mapping[str, Any]], limit: int
) -> list[list[Mapping[str, Any]]]:
    """An entry over `limit` lines in balanced pieces of at most `limit`, split only between
    wells: an accrual or its reversal books each well's receivable against its revenue, so
    each well's lines balance on their own. DataError when they do not (a JIB's one payable
    line for many wells) or one well alone is over the limit."""
    wells: dict[str, list[Mapping[str, Any]]] = {}
    for li in entry:
        wells.setdefault(str(li.get("well_id") or ""), []).append(li)
    pieces: list[list[Mapping[str, Any]]] = [[]]
    for well_lines in wells.values():
        debit, credit = _debit_credit(well_lines)
        if debit != credit or len(well_lines) > limit:
            raise DataError(
                f"entry {number} ({entry[0].get('entry', '')}) has {len(entry)} lines, more than "
                f"the {limit} one import file takes, and it cannot be split into balanced files "
                "at its wells"
            )
        if pieces[-1] and len(pieces[-1]) + len(well_lines) > limit:
            pieces.append([])
        pieces[-1].extend(well_lines)
    return pieces


def _debit_credit(lines: Sequence[Mapping[str, Any]]) -> tuple[Decimal, Decimal]:
    return sum((li["debit"] for li in lines), ZERO), sum((li["credit"] for li in lines), ZERO)


def build_export(
    batch: Mapping[str, Any],
    lines: Sequence[Mapping[str, Any]],
    *,
    period: str,
    documents: str,
    account_map: dict[str, GlAccount],
    operators: Mapping[str, str] | None = None,
) -> Export:
    """The batch ready to write; DataError when an account is unmapped or it does not balance."""
    missing = unmapped(account_map, sorted({li["account"] for li in lines}))
    if missing:
        raise DataError(
            "these closebot accounts have no GL account in the account map: "
            + ", ".join(f"{a} {ACCOUNT_NAMES.get(a, '')}".strip() for a in missing)
            + f" (add a line for each to {MAP_FILE})"
        )
    debit = sum((li["debit"] for li in lines), ZERO)
    credit = sum((li["credit"] for li in lines), ZERO)
    if debit != credit:
        raise DataError(f"batch {batch['id']} does not balance: debits {debit} ≠ credits {credit}")
    return Export(batch, lines, period, documents, account_map, operators or {})


def file_name(batch_id: str, fmt: str) -> str:
    return f"journal-{batch_id}-{fmt}.csv"


# the room the documents have in the memo: the memo is cut at MEMO_LIMIT (`Export.memo`), and
# its own words before them ("closebot JE-… · file 1 of 2 · October 2026 close · documents: ")
# take under 150 characters
MEMO_LIMIT = 999
DOCUMENTS_ROOM = MEMO_LIMIT - 150


def documents(store: Store, run_id: str) -> str:
    """The documents a run read, for the entry's memo: every JIB and revenue file as dropped
    (its name and SHA-256), or the kind's own file's hash when it came from the data folder.
    When every file does not fit the memo, a count per kind and where each file and its hash
    are (the run's decision log, `closebot audit RUN --csv`, column input_files)."""
    events = store.audit.events(run_id, kind="input_files")
    if not events:
        return ""
    detail = events[-1].detail
    dropped: dict[str, list[dict[str, Any]]] = {}
    for f in detail.get("imported") or []:
        if f["status"] == "active":
            dropped.setdefault(f["kind"], []).append(f)
    hashes = detail.get("files") or {}
    parts, counts = [], []
    for kind in ("jib.csv", "revenue.csv"):
        files = dropped.get(kind, [])
        if files:
            named = ", ".join(f"{f['filename']} sha256 {f['sha256'][:12]}" for f in files)
            parts.append(f"{kind}: {named}")
            counts.append(f"{kind}: {len(files)} file{'s' if len(files) > 1 else ''}")
        elif hashes.get(kind):
            parts.append(f"{kind} sha256 {hashes[kind][:12]}")
            counts.append(parts[-1])
    others = sorted(k for k in hashes if k not in ("jib.csv", "revenue.csv"))
    if others:
        parts.append(f"{len(others)} reference files")
        counts.append(parts[-1])
    text = "; ".join(parts)
    if len(text) <= DOCUMENTS_ROOM:
        return text
    return "; ".join(counts) + f" (each file and its sha256: closebot audit {run_id} --csv)"


def operators(store: Store, run_id: str, data_dir: Path | None) -> dict[str, str]:
    """Who the run's lines are with: each document line's operator or payor by its ref, each
    well's operator in the DOI the run read, and each well's payor (its latest check in the
    period's revenue, keyed `PAYOR_OF` + well id) — the Name of A/P and A/R lines."""
    from bot.close.toolset import CloseTools  # the close's tools import this package
    from bot.core.tools import ToolContext, ToolError

    try:
        close = CloseTools(data_dir=data_dir).close_of(ToolContext(run_id=run_id, store=store))
    except ToolError as e:
        raise DataError(str(e)) from e
    out = {j.ref: j.operator for j, _ in close.jib()}
    latest: dict[str, str] = {}  # well → the sale month of its payor's check line
    for r, well_id in close.revenue():
        out[r.ref] = r.payor
        if well_id and r.payor and r.sale_month > latest.get(well_id, ""):
            latest[well_id] = r.sale_month
            out[PAYOR_OF + well_id] = r.payor  # the well's latest check's payor
    for well_id in close.master.well_ids():
        row = close.master.latest(well_id)
        if row is not None:
            out[well_id] = row.operator
    return out
