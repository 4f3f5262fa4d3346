"""A file's wells tied to the DOI at import: each value of a mapped well or property column
is a DOI well id, an operator property number, or a well name matched to the DOI's names —
or it is asked (a name that fits several wells, or none exactly) — and the likely wells for
a value that fits none (what the unknown-property question offers)."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from dataclasses import dataclass, field

from bot.close.data import DoiRow

LIKELY = 5  # wells offered for a value that fits none


def key(text: str) -> str:
    """'Smith 14-2H #1' → 'smith142h1': names compared without case, spaces or punctuation."""
    return re.sub(r"[^a-z0-9]", "", text.casefold())


SUFFIXES = re.compile(r"\b(llc|inc|co|corp|corporation|company|lp|ltd|l\.l\.c)\b\.?", re.I)


def _company(name: str) -> str:
    return key(SUFFIXES.sub("", name))


@dataclass
class Tie:
    """What one value names: a well (how), several it may be, or nothing known."""

    well: str | None
    how: str  # "id", "property", "name", "said", "" (not tied)
    candidates: list[str] = field(default_factory=list)  # when it is ambiguous or unknown


@dataclass
class WellIndex:
    """The DOI's wells by id, by operator property number and by name."""

    names: dict[str, str]  # well id → name
    operators: dict[str, str]  # well id → operator
    by_id: dict[str, str]
    by_property: dict[str, str]
    by_name: dict[str, list[str]]

    @classmethod
    def of(cls, doi: list[DoiRow]) -> WellIndex:
        names: dict[str, str] = {}
        operators: dict[str, str] = {}
        by_property: dict[str, str] = {}
        by_name: dict[str, list[str]] = defaultdict(list)
        for row in doi:
            names[row.well_id] = row.well_name
            operators[row.well_id] = row.operator
            if row.operator_property_no:
                by_property[key(row.operator_property_no)] = row.well_id
        for well, name in names.items():
            by_name[key(name)].append(well)
        return cls(
            names=names,
            operators=operators,
            by_id={key(w): w for w in names},
            by_property=by_property,
            by_name=dict(by_name),
        )

    def tie(self, value: str, *, operator: str = "", said: dict[str, str] | None = None) -> Tie:
        """What `value` (a well id, property number or well name) names in the DOI."""
        k = key(value)
        if not k:
            return Tie(None, "")
        if said and value in said and said[value] in self.names:
            return Tie(said[value], "said")
        if k in self.by_id:
            return Tie(self.by_id[k], "id")
        if k in self.by_property:
            well = self.by_property[k]
            known = {_company(o) for o in self.operators.values()}
            theirs = _company(self.operators[well])
            if operator and _company(operator) in known and theirs != _company(operator):
                return Tie(None, "")  # another operator's property: the close asks
            return Tie(well, "property")
        exact = self.by_name.get(k, [])
        if operator and len(exact) > 1:
            exact = [w for w in exact if key(self.operators[w]) == key(operator)] or exact
        if len(exact) == 1:
            return Tie(exact[0], "name")
        return Tie(None, "", exact or self.likely(value, operator=operator))

    def likely(self, value: str, *, operator: str = "") -> list[str]:
        """The wells `value` most likely means: names that contain it or that it contains,
        then names, ids and property numbers that read alike; the operator's first."""
        k = key(value)
        if not k:
            return []
        found: list[str] = []
        for name_key, wells in self.by_name.items():
            if len(k) >= 4 and (name_key.startswith(k) or k.startswith(name_key)):
                found.extend(wells)
        pool = {**{nk: ws for nk, ws in self.by_name.items()}}
        for close in difflib.get_close_matches(k, list(pool), n=LIKELY, cutoff=0.6):
            found.extend(pool[close])
        for close in difflib.get_close_matches(k, list(self.by_property), n=2, cutoff=0.75):
            found.append(self.by_property[close])
        for close in difflib.get_close_matches(k, list(self.by_id), n=2, cutoff=0.75):
            found.append(self.by_id[close])
        unique = list(dict.fromkeys(found))
        if operator:
            unique.sort(key=lambda w: key(self.operators.get(w, "")) != key(operator))
        return unique[:LIKELY]

    def operator_named(self, name: str) -> str:
        """The DOI's spelling of an operator ('Red Fork Resources' → 'Red Fork Resources
        Inc.'), or the name as it is when no DOI operator is it."""
        k = _company(name)
        for operator in dict.fromkeys(self.operators.values()):
            if _company(operator) == k:
                return operator
        return name

    def operator_in(self, text: str) -> str:
        """The DOI operator a title line names ('RED FORK RESOURCES — JIB Statement')."""
        k = key(text)
        for operator in dict.fromkeys(self.operators.values()):
            company = _company(operator)
            if len(company) >= 5 and company in k:
                return operator
        return ""

    @staticmethod
    def shaped_like_id(raw: str) -> bool:
        """A value shaped like an id or a property number (W-TX-099, PRO-40117), not a name."""
        return " " not in raw.strip() and any(ch.isdigit() for ch in raw)

    def label(self, well: str) -> str:
        return f"{self.names.get(well, well)} ({well})"


_last: list[tuple[list[DoiRow], WellIndex]] = []


def wells_of(doi: list[DoiRow]) -> WellIndex:
    """The DOI's index, built once per DOI list (the checks ask it line after line)."""
    if _last and _last[0][0] is doi:
        return _last[0][1]
    index = WellIndex.of(doi)
    _last[:] = [(doi, index)]
    return index
