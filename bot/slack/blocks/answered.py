"""A settled form, read-only: who chose what, how and when."""

from __future__ import annotations

from typing import Any

from bot.close import for_people
from bot.core.questions import Ask, Outcome, answer_text
from bot.slack.blocks.cards import lead
from bot.slack.blocks.forms import fit
from bot.slack.blocks.text import (
    context,
    cut,
    escape,
    person,
    section,
    split_text,
    when_text,
)


def whole_lines(text: str, limit: int) -> str:
    """A settled question's text in at most `limit` characters, whole lines only (an
    approval's by-account lines are never cut inside an entry or an amount); one long line is
    cut between words."""
    lines = text.splitlines()
    kept: list[str] = []
    for line in lines:
        if sum(len(x) + 1 for x in kept) + len(line) > limit:
            break
        kept.append(line)
    if not kept:
        return fit(text, limit)
    more = len(lines) - len(kept)
    return "\n".join(kept) + (f"\n… and {more} more lines" if more else "")


def settled_text(question: str) -> str:
    """What a settled card says was asked: its first line's lead (the whole question stays in
    the record and the decision log), then any entries it listed ('• 2110 AP - JIB: Dr …',
    what a withdrawn approval changed), whole lines only."""
    first, *more = for_people(question).splitlines() or [""]
    listed = [line for line in more if line.startswith("• ")]
    return whole_lines("\n".join([lead(first, 16), *listed]), 600)


def answered_form(ask: Ask, outcome: Outcome, *, who: str | None = None) -> list[dict[str, Any]]:
    """The form after it was settled: read-only, no input elements left; `who` is the
    answerer's name (mrkdwn made safe), else a mention of their id."""
    status, answers, by, source, at = (
        outcome.status,
        outcome.answers,
        outcome.by,
        outcome.source,
        outcome.at,
    )
    blocks: list[dict[str, Any]] = [section(f"*Decision* · {escape(lead(ask.context, 20))}")]
    assigned: list[str] = []  # owners and due dates: one line each, in one section
    for number, q in enumerate(ask.questions, start=1):
        entry = (answers or {}).get(str(number), {})
        shown = escape(answer_text(entry)) if status == "answered" and entry else "—"
        if q.kind.assigns:
            kept = escape(q.initial or "—") if entry.get("skipped") else shown
            assigned.append(f"{escape(fit(q.question, 150))} → *{kept}*")
            continue
        # what was asked is one line (the card's lead); the whole question stays in the record
        title = escape(q.header) if q.header else f"Question {number}"
        blocks.append(section(f"*{title}*: {escape(settled_text(q.question))}\n→ *{shown}*"))
    blocks.extend(section(t) for t in split_text("\n".join(assigned))[:20] if assigned)
    when = when_text(at)
    who = who or person(by)
    if status == "answered":
        chose = "the answers above"
        first = (answers or {}).get("1")
        if len(ask.questions) == 1 and first:
            chose = f"*{escape(answer_text(first))}*"
        # how it was answered in words; the stored source word stays in the decision log
        line = {
            "timeout_default": f"⌛ Timed out: the recommended answers were applied · {when}",
            "auto_default": f"🤖 Auto mode applied the recommended answers · {when}",
        }.get(source or "", f"✅ {who} chose {chose} · {when}")
    elif status == "cancelled" and source == "change":  # a decision changed before posting
        line = f"Withdrawn: a decision was changed ({who}) · {when}"
    elif status == "cancelled":
        line = f"🚫 Cancelled by {who} · {when}"
    elif status == "deferred":
        line = (
            f"⏸ Put off by {who} (not now) · {when} · the close goes on without it; "
            "*Decide* on the close's message brings it back"
        )
    else:
        line = f"⌛ Expired unanswered · {when}"
    if outcome.rationale:
        blocks.append(section(f"*Why*: {cut(escape(outcome.rationale), 2000)}"))
    blocks.append(context(line))
    return blocks
