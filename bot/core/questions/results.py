"""What the model reads once a question ends: the tool result (answered, cancelled,
deferred, expired) and the message that brings it a late answer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from bot.core.questions.declaration import Ask

REF_RE = re.compile(r"\[ref ([A-Za-z0-9_:.\-]+)\]")  # a prepared question names its ref


def _ref_of(question: str) -> str | None:
    found = REF_RE.findall(question)
    return found[-1] if found else None


def _answers(ask: Ask, answers: dict[str, Any] | None) -> dict[str, Any] | None:
    """Per 1-based question, the answer without the question's text (the model has it: it
    asked it), with the question's ref when it names one."""
    if answers is None:
        return None
    out: dict[str, Any] = {}
    for key, entry in answers.items():
        item = (
            {k: v for k, v in entry.items() if k != "question"}
            if isinstance(entry, dict)
            else entry
        )
        n = int(key) if str(key).isdigit() else 0
        ref = _ref_of(ask.questions[n - 1].question) if 0 < n <= len(ask.questions) else None
        out[key] = {"ref": ref, **item} if ref and isinstance(item, dict) else item
    return out


@dataclass(frozen=True)
class Outcome:
    """How a question ended, as the model will read it."""

    status: str
    source: str | None
    by: str | None
    at: str | None
    answers: dict[str, Any] | None = field(default=None)
    rationale: str | None = None


def tool_result_content(
    ask: Ask, outcome: Outcome, recorded: list[dict[str, Any]] | None = None
) -> str:
    """The JSON the model reads: status, who and how, and per question what was chosen (and,
    for the questions asked by reference, what closebot recorded of each answer)."""
    body: dict[str, Any] = {"status": outcome.status}
    if outcome.status == "answered":
        body.update(
            source=outcome.source,
            answered_by=outcome.by,
            answered_at=outcome.at,
            answers=_answers(ask, outcome.answers),
        )
        if outcome.rationale:
            body["rationale"] = outcome.rationale
        if recorded:
            body["recorded"] = recorded
        if outcome.source in ("auto_default", "timeout_default"):
            body["note"] = "No person chose this: the recommended answer was applied " + (
                "because the run is in auto mode."
                if outcome.source == "auto_default"
                else "when the question timed out."
            )
    elif outcome.status == "cancelled" and outcome.source == "change":
        body.update(
            source=outcome.source,
            withdrawn_by=outcome.by,
            message="Withdrawn: the person is changing an earlier decision. Do not post this "
            "batch. When the changed decision comes with this result, record it, draft the "
            "batch again and ask for a new approval; when none comes, the change was dropped: "
            "ask for this approval again.",
        )
    elif outcome.status == "cancelled":
        body.update(
            source=outcome.source,
            cancelled_by=outcome.by,
            cancelled_at=outcome.at,
            message="The user cancelled these questions without answering. Do not assume an answer; "
            "leave the matter open and say so.",
        )
    elif outcome.status == "deferred":
        body.update(
            source=outcome.source,
            deferred_by=outcome.by,
            deferred_at=outcome.at,
            message="The user put these questions off ('not now') without answering. Do not assume "
            "an answer: their exceptions stay open and undecided. Go on with the steps that do not "
            "depend on them; do not draft, approve or post journal entries, or sign off, while "
            "any is undecided — end your turn saying what waits. closebot brings the question "
            "back when the person presses Decide, and tells you the answer.",
        )
    elif outcome.status == "expired":
        body.update(
            expired_at=outcome.at,
            message="Nobody answered before the question expired and it had no recommended answer. "
            "Do not assume an answer; leave the matter open and say so.",
        )
    else:
        raise ValueError(f"a question in status {outcome.status!r} has no result yet")
    refs = [_ref_of(q.question) for q in ask.questions]
    if outcome.status != "answered" and any(refs):
        body["refs"] = refs  # which prepared questions were not answered, in order
    return json.dumps(body, ensure_ascii=False)


LATE_ANSWER = "(closebot) A question answered now, after your turn moved on"


def late_answer_text(
    ask: Ask, outcome: Outcome, *, question_id: str, changes: str | None = None
) -> str:
    """How a late answer reaches the agent (a message, its tool call long settled): a
    question put off and brought back with Decide, or a decision changed before posting.
    The last line is the JSON the playbook reads (late_answer_of)."""
    body = json.loads(tool_result_content(ask, outcome))
    body["question_id"] = question_id
    body["refs"] = [_ref_of(q.question) for q in ask.questions]  # its call is long settled
    if changes:
        body["changes"] = changes
        what = (
            f"{outcome.by} changed the decision asked in {changes}: record the new answer with "
            f"resolve_exception (question_id {question_id}) for each exception it names, then "
            "draft the journal entries again (build_journal_entries) — an approval of the earlier "
            "batch is void — and ask for approval of the new draft."
        )
    else:
        what = (
            f"{outcome.by} answered the question you asked as {question_id}, which was put off: "
            f"record each decision with resolve_exception (question_id {question_id}) and go on "
            "with the close from where it waits."
        )
    return f"{LATE_ANSWER}. {what}\n{json.dumps(body, ensure_ascii=False)}"


def late_answer_of(text: str) -> dict[str, Any] | None:
    """The answer in a late_answer_text message, or None for any other text."""
    if not text.startswith(LATE_ANSWER):
        return None
    try:
        body = json.loads(text.rsplit("\n", 1)[-1])
    except json.JSONDecodeError:
        return None
    return body if isinstance(body, dict) and "question_id" in body else None
