"""`closebot data import`: operators' files into the database, as a drop in Slack does —
the DOI first (every other file's wells are tied to it), then each file: used, refused with
every problem, or asked about. At a terminal (or with --ask) each question is asked there:
the kind, the period, each column (a header, its number, `-` for none, `=value` for the whole
file), the header row, a well name the DOI has several wells for. Without one, a --map file
says it beforehand; a file that still needs a person is listed with the --map section that
would read it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from bot.close import (
    FILE_KINDS,
    MAP_FILE,
    FileMap,
    Imports,
    Received,
    check_period,
    column_label,
    describe_mapping,
    file_preview,
    fixed_value,
    kind_label,
    map_for,
    map_template,
    read_map_file,
    whole_file_value,
)
from bot.close import optional_file as optional
from bot.console.presenter import EXIT_OK, EXIT_USAGE
from bot.console.session import open_store, settings_of
from bot.core.errors import CloseBotError, ConfigError
from bot.core.identity import os_login

READABLE = (".csv", ".xlsx", ".xlsm")


def _files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix.lower() in READABLE))
        elif path.is_file():
            files.append(path)
        else:
            raise ConfigError(f"{path}: no such file or directory")
    files = [f for f in files if f.name != MAP_FILE]
    if not files:
        raise ConfigError("no CSV or XLSX files to import")
    return files


def cmd_data_import(args: argparse.Namespace, out: TextIO) -> int:
    if args.period:
        check_period(args.period)
    maps = read_map_file(Path(args.map).expanduser()) if args.map else []
    files = _files(args.paths)
    settings = settings_of(args)
    imports = Imports(open_store(settings), data_dir=settings.data_dir)
    asking = Asker(out) if (args.ask or sys.stdin.isatty()) else None
    # the DOI first: every other file's wells are tied to it
    files.sort(key=lambda p: not imports.is_doi(p.name, p.read_bytes()))
    who = os_login()  # the console's identity: the OS login running the command
    failed = 0
    for path in files:
        said = map_for(maps, path.name)
        got = imports.receive(
            filename=path.name,
            raw=path.read_bytes(),
            dropped_by=who,
            origin="cli",
            period=(said.period if said else None) or args.period,
            kind=(said.kind if said else None) or args.kind,
            mapping=said.mapping if said else None,
        )
        got = _settle(imports, got, who, asking=asking, yes=args.yes, out=out)
        for each in [got, *got.followups]:
            failed += 0 if _report(each, out, said=said) else 1
    return EXIT_USAGE if failed else EXIT_OK


def _settle(
    imports: Imports, got: Received, who: str, *, asking: Asker | None, yes: bool, out: TextIO
) -> Received:
    """Answer what a file asks: at the terminal, or the proposal as it is with --yes."""
    while got.status == "pending" and got.ask is not None:
        ask = got.ask
        if asking is None:
            if yes and ask.needs == ["mapping"]:
                print(f"{got.filename}: {_proposal_line(got)}", file=out)
                got = imports.confirm(got.id, by=who)
                continue
            return got
        answer = asking.ask(imports, got)
        if answer is None:
            imports.cancel(got.id, by=who)
            print(f"{got.filename}: cancelled; nothing of it was used", file=out)
            got.status = "cancelled"
            return got
        got = imports.confirm(got.id, by=who, **answer)
    return got


def _proposal_line(got: Received) -> str:
    assert got.ask is not None
    return f"{kind_label(got.ask.kind)}, mapping: {describe_mapping(got.ask.mapping)}"


def _report(got: Received, out: TextIO, *, said: FileMap | None) -> bool:
    """What became of a file, in a line or a few; True when it is in use (or already was)."""
    if got.status == "active":
        assert got.converted
        notes = [
            f"{got.filename}: {kind_label(got.kind)} for {got.period} — {got.converted.summary()}"
        ]
        if got.skipped_titles:
            notes.append(
                f"  header on row {got.header_row}; above it: {'; '.join(got.skipped_titles)[:160]}"
            )
        if got.mapped != "closebot's own column names":
            notes.append(f"  columns: {got.mapped}")
        for old in got.replaced:
            notes.append(f"  replaces {old['filename']} (file {old['id']}): the same documents")
        for old, documents in got.partly:
            notes.append(
                f"  replaces {', '.join(documents)} of {old['filename']} (file {old['id']}), "
                "whose other documents are still read"
            )
        print("\n".join(notes), file=out)
        return True
    if got.status == "duplicate":
        print(f"{got.filename}: already imported for {got.period}; nothing changed", file=out)
        return True
    if got.status == "cancelled":
        return False
    if got.status == "waiting":
        print(
            f"{got.filename}: {kind_label(got.kind)} for {got.period}, waiting for the period's "
            "DOI (doi.csv) to tie its wells to; import the DOI and it is read",
            file=out,
        )
        return False
    if got.status == "pending":
        assert got.ask
        ask = got.ask
        print(f"{got.filename}: not imported yet — {_needs_text(got)}", file=out)
        if ask.kind:
            print(
                "  add this to a --map file (edit what is wrong), or give --yes to use it as "
                "proposed, or run it at a terminal to be asked:",
                file=out,
            )
            text = map_template(got.filename, ask.kind, ask.period, ask.mapping, ask.header_row)
            print("\n".join("    " + line for line in text.splitlines()), file=out)
        return False
    print(f"{got.filename}: {len(got.problems)} problem(s); nothing of it was imported:", file=out)
    for p in got.problems:
        print(f"  - {p}", file=out)
    return False


def _needs_text(got: Received) -> str:
    assert got.ask
    words = {
        "kind": "which of the eleven files it is (--kind)",
        "period": "which period it is for (--period)",
        "mapping": "its columns are not named as closebot names them: confirm the mapping",
        "wells": "which wells these names are: "
        + "; ".join(
            f"{name!r} may be {', '.join(w for w, _ in options) or 'no DOI well'}"
            for name, options in got.ask.wells.items()
        ),
    }
    return "; ".join(words[n] for n in got.ask.needs)


class Asker:
    """The questions about one file, asked at the terminal; None: the person cancelled."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def _input(self, prompt: str) -> str:
        print(prompt, end="", file=self.out, flush=True)
        line = sys.stdin.readline()
        if not line:
            raise ConfigError("no answer (end of input); nothing more was imported")
        return line.strip()

    def ask(self, imports: Imports, got: Received) -> dict[str, Any] | None:
        ask = got.ask
        assert ask is not None
        say = self.out
        print(f"\n{got.filename}: {_needs_text(got)}", file=say)
        answer: dict[str, Any] = {}
        if "kind" in ask.needs:
            kinds = ask.kinds or list(FILE_KINDS)
            for i, k in enumerate(kinds, start=1):
                print(f"  {i}. {kind_label(k)}", file=say)
            picked = self._pick("Which is it? number (c to cancel): ", len(kinds))
            if picked is None:
                return None
            answer["kind"] = kinds[picked]
            if "period" not in ask.needs:
                return answer
        if "period" in ask.needs:
            typed = self._input("For which period (YYYY-MM)? ")
            check_period(typed)
            answer["period"] = typed
            return answer
        if "wells" in ask.needs:
            chosen: dict[str, str] = {}
            for name, options in ask.wells.items():
                print(f"  {name!r} is which well?", file=say)
                for i, (_, label) in enumerate(options, start=1):
                    print(f"    {i}. {label}", file=say)
                picked = self._pick("  number (c to cancel): ", len(options))
                if picked is None:
                    return None
                chosen[name] = options[picked][0]
            answer["wells"] = chosen
            return answer
        return self._mapping(imports, got)

    def _pick(self, prompt: str, n: int) -> int | None:
        while True:
            typed = self._input(prompt).lower()
            if typed in ("c", "cancel"):
                return None
            if typed.isdigit() and 1 <= int(typed) <= n:
                return int(typed) - 1
            print(f"  a number from 1 to {n}, or c", file=self.out)

    def _mapping(self, imports: Imports, got: Received) -> dict[str, Any] | None:
        ask = got.ask
        assert ask is not None
        mapping = dict(ask.mapping)
        columns = list(FILE_KINDS[ask.kind].columns)
        sheet = imports.sheet_of(got.id)
        while True:
            self._show(ask.headers, columns, mapping, ask.kind, ask.header_row)
            rows = file_preview(sheet, ask.kind, mapping)
            print("  as read (first rows):", file=self.out)
            for r in rows:
                cells = (f"{column_label(c)}: {v}" for c, v in r.items() if v)
                print("    " + " · ".join(cells), file=self.out)
            typed = self._input(
                "Enter to use this; a number to change that column; h to choose the header "
                "row; c to cancel: "
            ).lower()
            if typed == "":
                return {"mapping": mapping}
            if typed in ("c", "cancel"):
                return None
            if typed == "h":
                for n, text in ask.top:
                    print(f"    row {n}: {text[:100]}", file=self.out)
                row = self._input("  the header is row: ")
                if row.isdigit():
                    return {"header_row": int(row)}
                continue
            if typed.isdigit() and 1 <= int(typed) <= len(columns):
                column = columns[int(typed) - 1]
                mapping[column] = self._column(column, ask.headers)
            else:
                print("  Enter, a column's number, h or c", file=self.out)

    def _show(
        self, headers: list[str], columns: list[str], mapping: dict[str, str], kind: str, row: int
    ) -> None:
        print(f"  the file's columns (header on row {row}):", file=self.out)
        print(
            "    " + ", ".join(f"{i}. {h}" for i, h in enumerate(headers, start=1)), file=self.out
        )
        print(f"  {kind_label(kind)} — closebot reads:", file=self.out)
        for i, column in enumerate(columns, start=1):
            mapped = mapping.get(column, "")
            value = fixed_value(mapped)
            shown = (
                f"{value!r} for the whole file"
                if value is not None
                else (repr(mapped) if mapped else ("—" if optional(kind, column) else "— (needed)"))
            )
            print(f"    {i:>2}. {column_label(column):<38} ← {shown}", file=self.out)

    def _column(self, column: str, headers: list[str]) -> str:
        while True:
            typed = self._input(
                f"  {column_label(column)}: the file's column (its name or number), "
                "- for none, =VALUE for the whole file: "
            )
            if typed == "-":
                return ""
            if typed.startswith("="):
                return whole_file_value(typed[1:])
            if typed.isdigit() and 1 <= int(typed) <= len(headers):
                return headers[int(typed) - 1]
            match = [h for h in headers if h.casefold() == typed.casefold()]
            if match:
                return match[0]
            print(f"  {typed!r} is not one of the file's columns", file=self.out)


__all__ = ["CloseBotError", "cmd_data_import"]
