"""The ready-made question for an exception (and for many alike): its numbers, each option
with what it books in words, the recommendation; what exception_details gives the model and
the playbook asks as given."""

from __future__ import annotations

import re
from typing import Any

from bot.close import groups
from bot.close.doi_master import money
from bot.close.kinds import KINDS, book, option_entry, option_label, option_meaning
from bot.close.records import ExceptionRow
from bot.core.questions import MAX_DESCRIPTION, MAX_HEADER, MAX_QUESTIONS, MAX_REASONING

# the tag that names an exception in its question's text: the model and the decision log read
# it; people do not
SHOWN_REF = re.compile(r"\s*\[ref [^\]]*\]")
# the approval's binding to the batch's content (controls.check_approval reads it)
SHOWN_HASH = re.compile(r" \(content hash [0-9a-f]+\)")


ACCOUNT_RE = re.compile(r"\b[1-9]\d{3}\b")  # an account number of the chart


def for_people(text: str) -> str:
    """A question's text as people read it: without its [ref …] tag or an approval's content
    hash (the stored text, which the decision log keeps, has both)."""
    return SHOWN_HASH.sub("", SHOWN_REF.sub("", text))


def shortened(text: str, limit: int) -> str:
    """Text no longer than `limit`, cut between words: never inside an amount or a decimal."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;·/:") + "…"


def header_for(step: str, subject: str) -> str:
    """'Intake · Smith 14-2H' when it fits the header's 24 characters, else the step alone
    (the question names the subject): a header is never cut inside a name or a number."""
    for header in (f"{step} · {subject}", step):
        if len(header) <= MAX_HEADER:
            return header
    return step[:MAX_HEADER]


def booking_words(kind: str, code: str, facts: dict[str, Any], lines: list[dict[str, Any]]) -> str:
    """An option's description: its entry as every front end shows it (option_entry: accounts
    by number and name, every amount, the sides that apply) and its meaning when both fit; an
    entry too long for a description keeps every amount and side, and drops the names of its
    smallest accounts first."""
    meaning = option_meaning(kind, code, facts)
    entry = option_entry(kind, code, facts, lines=lines)
    if not lines:
        return _fit(entry, MAX_DESCRIPTION)
    # the meaning only when it adds words, not the entry again ("the difference Dr 1395")
    said = ACCOUNT_RE.search(meaning) is not None
    for text in (entry,) if said else (f"{entry}. {meaning}", entry):
        if len(text) <= MAX_DESCRIPTION:
            return text
    return _fit(
        option_entry(kind, code, facts, lines=lines, limit=MAX_DESCRIPTION), MAX_DESCRIPTION
    )


def _fit(text: str, limit: int) -> str:
    """Cut only between words, so no amount is cut in half."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    return head[: head.rfind(" ")].rstrip(" ,;/") + "…"


def question_for(exc: ExceptionRow) -> dict[str, Any]:
    """The ask_user_question question for one exception: numbers, options with what each books."""
    d = exc["details"]
    kind, facts = exc["kind"], d["facts"]
    shape = KINDS[kind]
    ref = f" [ref {d['ref']}]"
    header = header_for(shape.header, str(d["subject"]))
    if shape.question_type == "free_text":
        return {
            "header": header,
            "question": shortened(d["question"], 1400) + ref,
            "type": "free_text",
            "required": False,
            "reasoning": d["reasoning"],
        }
    options = []
    for code in d["options"]:
        lines = book(kind, code, facts, {})
        options.append(
            {
                "label": option_label(kind, code, facts),
                "description": booking_words(kind, code, facts, lines),
            }
        )
    q: dict[str, Any] = {
        "header": header,
        "question": shortened(d["question"], 1400) + ref,
        "type": shape.question_type,
        "options": options,
        "recommended": d["options"].index(d["recommended"]) + 1
        if d["recommended"] in d["options"]
        else None,
        "reasoning": d["reasoning"],
        "allow_other": shape.allow_other,
        # a flux item may be skipped: it then stays open (an explanation is needed to clear it)
        "required": False if shape.may_skip else None,
    }
    return {k: v for k, v in q.items() if v is not None}


def question_for_group(group: list[ExceptionRow]) -> dict[str, Any]:
    """The one question for many alike exceptions: the count and total, a few lines (every
    line is in the attached detail), each option with what it books for all of them, and
    "Decide line by line"."""
    first = group[0]
    kind, d = first["kind"], first["details"]
    ref = str(d["group"])
    n = len(group)
    noun = groups.noun(kind)
    shown = "; ".join(
        f"{e['details']['subject']}: {shortened(e['details']['summary'], 160)}" for e in group[:3]
    )
    more = f"; and {n - 3} more" if n > 3 else ""
    question = (
        f"The same check found {n} alike {kind.replace('_', ' ')} exceptions of "
        f"{groups.operator(group)}, {money(groups.total(group))} at stake in total: {shown}{more}. "
        f"Every one is in the attached detail. One decision here applies to each of the {n} "
        f"{noun}, booking for each what deciding it on its own would; or choose "
        f"'{groups.LINE_BY_LINE}' to answer each on its own."
    )
    options = [
        {
            "label": option_label(kind, code, d["facts"]),
            "description": booking_words(kind, code, d["facts"], groups.group_lines(group, code)),
        }
        for code in d["options"]
    ]
    forms = -(-n // MAX_QUESTIONS)
    options.append(
        {
            "label": groups.LINE_BY_LINE,
            "description": f"Ask about each of the {n} {noun} on its own "
            f"({forms} form{'s' if forms != 1 else ''} of up to {MAX_QUESTIONS} questions).",
        }
    )
    recommended = (
        option_label(kind, d["recommended"], d["facts"])
        if d["recommended"] in d["options"]
        else None
    )
    q: dict[str, Any] = {
        "header": header_for(KINDS[kind].header, f"{n} {noun}"),
        "question": shortened(question, 1400) + f" [ref {ref}]",
        "type": "single_choice",
        "options": options,
        "recommended": d["options"].index(d["recommended"]) + 1 if recommended else None,
        "reasoning": shortened(
            f"{recommended} is what each of the {n} {noun} recommends on its own; for "
            f"{d['subject']}: {d['reasoning']}",
            MAX_REASONING,
        )
        if recommended
        else None,
        "allow_other": True,
    }
    return {k: v for k, v in q.items() if v is not None}
