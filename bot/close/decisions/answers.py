"""Reading a person's answer for one exception off the question that asked it: the option codes
they chose (by label), any typed text, the option a typed answer names, and an exception's
facts cut for a tool result."""

from __future__ import annotations

import re
from typing import Any

from bot.close.kinds import KINDS, option_label
from bot.close.records import ExceptionRow
from bot.close.toolbase import REF_RE
from bot.core.tools import ToolError
from bot.store import QuestionRecord

FACT_ITEMS = 3  # items of a list shown in exception_details; document_lines pages the rest


def bound_answer(q: QuestionRecord, exc: ExceptionRow) -> tuple[list[str], str | None]:
    """The option codes the person chose on the question naming this exception (or the group
    it was asked in), and any typed text."""
    refs = {exc["details"]["ref"], exc["details"].get("group") or exc["details"]["ref"]}
    ref = exc["details"]["ref"]
    for number, item in enumerate(q.questions, start=1):
        if refs & set(REF_RE.findall(item["question"])):
            answer = (q.answer or {}).get(str(number), {})
            labels = answer.get("labels") or []
            codes = [
                c
                for c in exc["details"]["options"]
                if option_label(exc["kind"], c, exc["details"]["facts"]) in labels
            ]
            typed = answer.get("other") or answer.get("text")
            return codes, typed
    raise ToolError(
        f"question {q.id} did not ask about {ref}; ask the question that names it ([ref {ref}])"
    )


def option_of(answer: dict[str, Any]) -> tuple[str, str]:
    """One stored answer as resolve_exception's (option, note): the labels chosen, "other"
    with the typed words, or "text" with a free-text answer (empty when skipped)."""
    if answer.get("skipped"):
        return "text", ""
    if "text" in answer:
        return "text", str(answer["text"])
    if answer.get("labels"):
        return ",".join(answer["labels"]), ""
    return "other", str(answer.get("other", ""))


def group_answer(q: QuestionRecord, ref: str) -> list[str]:
    """The labels the person chose on the question naming group `ref`."""
    for number, item in enumerate(q.questions, start=1):
        if ref in REF_RE.findall(item["question"]):
            return list(((q.answer or {}).get(str(number)) or {}).get("labels") or [])
    raise ToolError(
        f"question {q.id} did not ask about {ref}; ask the question that names it ([ref {ref}])"
    )


def codes_of(exc: ExceptionRow, option: str) -> list[str]:
    """The option codes `option` names (a code or a label; several, comma-separated, for a
    multiple-choice question); "other" and "text" name none."""
    d = exc["details"]
    out = []
    parts = (
        [p.strip() for p in option.split(",") if p.strip()]
        if KINDS[exc["kind"]].question_type == "multiple_choice"
        else [option.strip()]
    )
    for part in parts:
        match = [c for c in d["options"] if part in (c, option_label(exc["kind"], c, d["facts"]))]
        if match:
            out.append(match[0])
        elif part.casefold() not in ("other", "text"):
            labels = ", ".join(
                f"{c} ({option_label(exc['kind'], c, d['facts'])})" for c in d["options"]
            )
            raise ToolError(f"{part!r} is not an option of {d['ref']}; the options are {labels}")
    return out


def _keywords(exc: ExceptionRow, code: str) -> list[str]:
    """The words that name an option in a typed answer: its code's words and its label."""
    words = [w for w in re.split(r"[_\W]+", code.casefold()) if len(w) >= 4]
    return [*words, option_label(exc["kind"], code, exc["details"]["facts"]).casefold()]


def matched_words(exc: ExceptionRow, code: str, typed: str) -> str:
    text = typed.casefold()
    found = [w for w in _keywords(exc, code) if re.search(rf"\b{re.escape(w)}", text)]
    return ", ".join(f"\u201c{w}\u201d" for w in found)


def match_option(exc: ExceptionRow, typed: str) -> str | None:
    """The one option a typed answer clearly names (a word of its code, or its label), or None
    when it names none or more than one. Deterministic: the playbook's follow-up asks to confirm."""
    if KINDS[exc["kind"]].sets_off or not typed.strip():
        return None
    hits = [c for c in exc["details"]["options"] if matched_words(exc, c, typed)]
    return hits[0] if len(hits) == 1 else None


def bounded(facts: dict[str, Any]) -> dict[str, Any]:
    """Facts with each long list — at any depth (a sign-off's groups' items) — cut to its
    first items and the count of the rest: a result stays small at any size."""
    out: dict[str, Any] = {}
    for key, value in facts.items():
        if isinstance(value, list):
            out[key] = [bounded(v) if isinstance(v, dict) else v for v in value[:FACT_ITEMS]]
            if len(value) > FACT_ITEMS:
                out[f"{key}_more"] = len(value) - FACT_ITEMS
        elif isinstance(value, dict):
            out[key] = bounded(value)
        else:
            out[key] = value
    return out
