"""Questions asked by reference: an ask_user_question item `{"ref": "…"}` names a question the
domain has prepared (an exception's, a group's, a sign-off's with its owners and due dates);
closebot renders it, so the model never re-types figures and never mis-copies one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.core.questions.tool import AskInvalid

Render = Callable[[str], list[dict[str, Any]]]  # a ref → its questions; ValueError if unknown


def by_reference(item: Any) -> str | None:
    """The ref an item names, when it is a question asked by reference."""
    if isinstance(item, dict) and set(item) == {"ref"} and isinstance(item["ref"], str):
        return item["ref"].strip()
    return None


def asks_by_reference(raw: Any) -> bool:
    return isinstance(raw, dict) and any(
        by_reference(q) is not None for q in raw.get("questions") or []
    )


def expand(raw: Any, render: Render | None) -> Any:
    """The tool input with every question asked by reference rendered in its place (what
    else a ref asks — a sign-off's owners and due dates — after all of them, so the n-th
    question is still the n-th item asked); AskInvalid naming each ref with no prepared
    question."""
    if not asks_by_reference(raw):
        return raw
    questions: list[Any] = []
    after: list[Any] = []
    problems: list[str] = []
    for n, item in enumerate(raw["questions"], start=1):
        ref = by_reference(item)
        if ref is None:
            questions.append(item)
            continue
        if render is None:
            problems.append(f"questions[{n}]: nothing is prepared to ask by reference here")
            continue
        try:
            first, *more = render(ref)
        except ValueError as e:
            problems.append(f"questions[{n}]: {e}")
            continue
        questions.append(first)
        after += more
    if problems:
        raise AskInvalid(problems)
    return {**raw, "questions": [*questions, *after]}
