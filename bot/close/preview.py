"""A typed date or amount is shown before it is booked: the entry a typed answer would book
(an effective date's catch-up, a described adjusting entry) is put in front of the person,
and the answer is taken only once they have seen it for exactly that text.

In Slack the first Submit with such a typed answer books nothing: closebot answers with the
entry (ephemeral, to the person who submitted) and the form stays as it is; Submit again with
the same text books it. At the console the entry is printed and the person confirms it. Each
preview shown is an audit event (`answer_previewed`), which is how the second Submit knows.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from bot.close.kinds import KINDS, Kind
from bot.close.toolset import CloseTools
from bot.core.tools import ToolContext
from bot.store import QuestionRecord, Store

EVENT = "answer_previewed"
REF_KIND = re.compile(r"\[ref ([A-Za-z0-9_]+):")


def _kind_asked(question: str) -> Kind | None:
    """The kind of the exception a question names, when it is one whose typed answer books
    something (an effective date, an adjusting entry), else None."""
    for name in REF_KIND.findall(question):
        kind = KINDS.get(name)
        if kind is not None and kind.previews_typed:
            return kind
    return None


def _digest(typed: str) -> str:
    return hashlib.sha256(" ".join(typed.split()).encode()).hexdigest()[:16]


def preview(
    store: Store, data_dir: Path | None, record: QuestionRecord, number: int, typed: str
) -> str | None:
    """What the typed answer to question `number` would book, or None (it books nothing)."""
    if not typed.strip() or not 1 <= number <= len(record.questions):
        return None
    question = str(record.questions[number - 1].get("question") or "")
    if _kind_asked(question) is None:
        return None
    tools = CloseTools(data_dir=data_dir)
    return tools.typed_preview(ToolContext(run_id=record.run_id, store=store), question, typed)


def may_need(record: QuestionRecord, number: int, typed: str) -> bool:
    """Cheap (no data read): whether the typed answer books something — a date on an
    effective-date question, an entry on an adjustment's — so it is previewed first."""
    if not typed.strip() or not 1 <= number <= len(record.questions):
        return False
    question = str(record.questions[number - 1].get("question") or "")
    kind = _kind_asked(question)
    return kind is not None and kind.may_preview(typed)


def seen(store: Store, record: QuestionRecord, number: int, typed: str) -> bool:
    """Whether this exact typed answer's preview was shown for this question."""
    digest = _digest(typed)
    return any(
        e.detail.get("question_id") == record.id
        and e.detail.get("number") == number
        and e.detail.get("typed") == digest
        for e in store.audit.events(record.run_id, kind=EVENT)
    )


def record_shown(
    store: Store, record: QuestionRecord, number: int, typed: str, text: str, to: str
) -> None:
    store.audit.record(
        run_id=record.run_id,
        kind=EVENT,
        actor=to,
        detail={
            "question_id": record.id,
            "number": number,
            "typed": _digest(typed),
            "text": typed[:200],
            "preview": text,
        },
    )


def shown_at_console(
    store: Store, data_dir: Path | None, record: QuestionRecord, number: int, typed: str
) -> str | None:
    """The console's preview: worked out, and recorded as shown (the terminal prints it)."""
    text = preview(store, data_dir, record, number, typed)
    if text is not None:
        record_shown(store, record, number, typed, text, "console")
    return text
