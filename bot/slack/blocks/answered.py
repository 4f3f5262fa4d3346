"""A settled form, read-only: who chose what, how and when."""

from __future__ import annotations

from typing import Any

from bot.close import for_people
from bot.core.questions import Ask, Outcome, Question, QuestionType, answer_text
from bot.slack.blocks.cards import lead, situation
from bot.slack.blocks.forms import fit
from bot.slack.blocks.text import (
    context,
    cut,
    escape,
    folded,
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
    """The card after it was settled, read-only and folded (issue 30: a thread a person can
    scroll): one line says who chose what and when, one what that books or why; what was asked
    and every answer stay in the message, folded (a collapsed container), and whole in the
    decision log. `who` is the answerer's name (mrkdwn made safe), else a mention of their id."""
    status, answers, by, source, at = (
        outcome.status,
        outcome.answers,
        outcome.by,
        outcome.source,
        outcome.at,
    )
    asked: list[dict[str, Any]] = [section(f"*Decision* · {escape(lead(ask.context, 20))}")]
    assigned: list[str] = []  # owners and due dates: one line each, in one section
    chosen: list[str] = []  # each decision and its answer, one line
    deciding = [(n, q) for n, q in enumerate(ask.questions, start=1) if not q.kind.assigns]
    owners = 0
    for number, q in enumerate(ask.questions, start=1):
        entry = (answers or {}).get(str(number), {})
        shown = escape(answer_text(entry)) if status == "answered" and entry else "—"
        if q.kind.assigns:
            kept = escape(q.initial or "—") if entry.get("skipped") else shown
            assigned.append(f"{escape(fit(q.question, 150))} → *{kept}*")
            owners += q.type is QuestionType.USER
            continue
        # what was asked is one line (the card's lead); the whole question stays in the record
        title = escape(q.header) if q.header else f"Question {number}"
        asked.append(section(f"*{title}*: {escape(settled_text(q.question))}\n→ *{shown}*"))
        chosen.append(f"*{fit(title, 60)}* → *{fit(shown, 120)}*")
    asked.extend(section(t) for t in split_text("\n".join(assigned))[:20] if assigned)
    if outcome.rationale:
        asked.append(section(f"*Why*: {cut(escape(outcome.rationale), 2000)}"))
    when = when_text(at)
    who = who or person(by)
    one = len(deciding) == 1
    if status == "answered":
        chose = "the answers above"
        first = (answers or {}).get(str(deciding[0][0])) if one else None
        if first:
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
    head = escape(
        (deciding[0][1].header or lead(ask.context, 8))
        if one
        else situation(ask.context, len(deciding))
    )
    shown_blocks: list[dict[str, Any]] = []
    if status == "answered" and not one and chosen:
        shown_blocks += [section(f"*{head}*\n" + "\n".join(chosen)), context(line)]
    else:
        shown_blocks.append(section(f"*{head}* · {line}"))
    said = [f"*Why*: {escape(fit(outcome.rationale, 160))}"] if outcome.rationale else []
    if status == "answered" and one and not outcome.rationale:
        said += [
            f"Books: {escape(fit(b, 160))}"
            for b in _books(deciding[0][1], (answers or {}).get(str(deciding[0][0])))
        ]
    if owners:
        said.append(
            f"Owners and due dates of {owners} item{'s' if owners != 1 else ''} in *What was asked*"
        )
    if said:
        shown_blocks.append(context(" · ".join(said)))
    return [*shown_blocks, folded("What was asked", asked)]


def _books(q: Question, entry: dict[str, Any] | None) -> list[str]:
    """What the chosen option books, as its card said (its description), if it says."""
    entry = entry or {}
    picked = [n for n in entry.get("selected") or [] if isinstance(n, int)]
    if entry.get("other") or len(picked) != 1 or not 1 <= picked[0] <= len(q.options):
        return []
    description = q.options[picked[0] - 1].description
    return [for_people(description)] if description else []
