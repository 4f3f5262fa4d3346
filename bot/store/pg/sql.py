"""The store's SQL, written for SQLite, said the way PostgreSQL reads it.

The repositories write one dialect (SQLite's, the embedded default); this module rewrites
the few constructs PostgreSQL spells differently, at the statement's first use (cached):
`?` placeholders, `insert or ignore`, `json_extract`/`json_each`, `last_insert_rowid()`,
`is ?`, `instr`, `not indexed`, the column `user` (a reserved word there), SQLite's `raise(abort)` trigger, and
the catalogue (`sqlite_master`). Everything else is the SQL both databases share.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

_JSON_EXTRACT = re.compile(r"json_extract\(\s*([\w.]+)\s*,\s*'\$\.(\w+)'\s*\)", re.IGNORECASE)
_JSON_EACH = re.compile(r"json_each\(\s*([\w.]+)\s*\)", re.IGNORECASE)
_INSERT_OR_IGNORE = re.compile(r"^\s*insert\s+or\s+ignore\s+into\b", re.IGNORECASE)
_CATALOGUE = re.compile(
    r"from\s+sqlite_master\s+where\s+type\s*=\s*'(table|trigger|index)'\s+and\s+name\s*=\s*\?",
    re.IGNORECASE,
)
_CATALOGUE_TO = {
    # The tables and indexes of this connection's schema (its search_path's first).
    "table": "from information_schema.tables where table_schema = current_schema() "
    "and table_name = ?",
    "index": "from pg_indexes where schemaname = current_schema() and indexname = ?",
    "trigger": "from information_schema.triggers where trigger_schema = current_schema() "
    "and trigger_name = ?",
}


_TRIGGER = re.compile(
    r"^\s*create\s+trigger\s+if\s+not\s+exists\s+(\w+)\s+before\s+insert\s+on\s+(\w+)\s+"
    r"when\s+(.+?)\s+begin\s+select\s+raise\(\s*abort\s*,\s*'((?:[^']|'')*)'\s*\)\s*;\s*end\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_USER = re.compile(r'(?<!["\w.])user\b(?!\s*\()', re.IGNORECASE)


def _trigger(m: re.Match[str]) -> str:
    """SQLite's `before insert ... when ... raise(abort, ...)`: a PL/pgSQL function and trigger."""
    name, table, when, message = m.groups()
    return (
        f'create or replace function "{name}"() returns trigger language plpgsql as $f$ '
        f"begin if {when} then raise exception '{message}'; end if; return new; end $f$; "
        f'create or replace trigger "{name}" before insert on {table} '
        f'for each row execute function "{name}"()'
    )


@lru_cache(maxsize=4096)
def translate(sql: str, params: bool = True) -> str:
    """`sql` (SQLite's dialect, `?` placeholders) as PostgreSQL runs it through psycopg
    (with `params`: `%s` placeholders, a literal % doubled)."""
    if _TRIGGER.match(sql):
        return _TRIGGER.sub(_trigger, sql)
    out = _outside_literals(sql, lambda part: _USER.sub('"user"', part))
    out = _CATALOGUE.sub(lambda m: _CATALOGUE_TO[m.group(1).lower()], out)
    out = _JSON_EXTRACT.sub(r"(\1::jsonb ->> '\2')", out)
    out = _JSON_EACH.sub(r"jsonb_each_text(\1::jsonb)", out)
    out = re.sub(r"last_insert_rowid\(\)", "lastval()", out, flags=re.IGNORECASE)
    out = re.sub(r"\bis\s+not\s+\?", "is distinct from ?", out, flags=re.IGNORECASE)
    out = re.sub(r"\bis\s+\?", "is not distinct from ?", out, flags=re.IGNORECASE)
    out = re.sub(r"\s+not\s+indexed\b", "", out, flags=re.IGNORECASE)  # a planner hint
    out = re.sub(r"\binstr\(", "strpos(", out, flags=re.IGNORECASE)
    if _INSERT_OR_IGNORE.match(out):
        out = _INSERT_OR_IGNORE.sub("insert into", out, count=1).rstrip().rstrip(";")
        out += " on conflict do nothing"
    return placeholders(out) if params else out


def _outside_literals(sql: str, change: Callable[[str], str]) -> str:
    """`change` applied to the parts of `sql` outside its string literals."""
    parts = sql.split("'")
    return "'".join(change(p) if i % 2 == 0 else p for i, p in enumerate(parts))


def placeholders(sql: str) -> str:
    """`?` → `%s` outside string literals; every literal `%` doubled (psycopg's escape)."""
    out: list[str] = []
    quoted = False
    for ch in sql:
        if ch == "'":
            quoted = not quoted  # '' inside a literal toggles twice: still inside
            out.append(ch)
        elif ch == "%":
            out.append("%%")
        elif ch == "?" and not quoted:
            out.append("%s")
        else:
            out.append(ch)
    return "".join(out)
