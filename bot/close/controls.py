"""Controls an auditor tests: who may approve posting, a second approver over the limit,
approvals bound to the batch's content. One place, used by the Slack handlers (to refuse
at Submit, privately) and by the posting tool (which refuses whatever reaches it)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from bot.core.identity import canonical, mention, one_of, same_person
from bot.core.questions import HUMAN_SOURCES
from bot.store import QuestionRecord, Run, Store

APPROVAL_HEADER = "Posting"
SECOND_APPROVAL_HEADER = "Second approval"
APPROVAL_HEADERS = (APPROVAL_HEADER, SECOND_APPROVAL_HEADER)


def _canonical(line: Mapping[str, Any]) -> list[Any]:
    debit, credit = line["debit"], line["credit"]
    return [
        line["entry_no"],
        line["line_no"],
        line["account"],
        str(debit if type(debit) is Decimal else Decimal(debit)),
        str(credit if type(credit) is Decimal else Decimal(credit)),
        line.get("well_id") or "",
        line.get("memo") or "",
        line.get("ref") or "",
    ]


COMPACT = json.JSONEncoder(separators=(",", ":"))  # json.dumps(…, separators=(",", ":")), once


class ContentHash:
    """`content_hash` fed a line at a time: the same digest without holding the lines."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256(b"[")
        self.first = True

    def add(self, line: Mapping[str, Any]) -> None:
        if not self.first:
            self.sha.update(b",")
        self.first = False
        self.sha.update(COMPACT.encode(_canonical(line)).encode())

    def add_all(self, lines: Iterable[Mapping[str, Any]]) -> None:
        """Many lines at once: one encoder call, the same bytes as adding each."""
        lines = list(lines)
        if not lines:
            return
        text = COMPACT.encode([_canonical(line) for line in lines])
        if not self.first:
            self.sha.update(b",")
        self.first = False
        self.sha.update(text[1:-1].encode())

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        """Lines as tuples in the journal's LINE_ROW order: the same bytes as `add_all`."""
        if not rows:
            return
        text = COMPACT.encode(
            [
                [
                    r[0],
                    r[1],
                    r[3],
                    str(r[5] if type(r[5]) is Decimal else Decimal(r[5])),
                    str(r[6] if type(r[6]) is Decimal else Decimal(r[6])),
                    r[7] or "",
                    r[8] or "",
                    r[10] or "",
                ]
                for r in rows
            ]
        )
        if not self.first:
            self.sha.update(b",")
        self.first = False
        self.sha.update(text[1:-1].encode())

    def hexdigest(self) -> str:
        done = self.sha.copy()
        done.update(b"]")
        return done.hexdigest()


def content_hash(lines: Iterable[Mapping[str, Any]]) -> str:
    """SHA-256 over what a batch books: each line's entry, account, amounts, well, memo, source."""
    digest = ContentHash()
    for line in lines:
        digest.add(line)
    return digest.hexdigest()


def short_hash(full: str) -> str:
    return full[:16]


BATCH_NAMED = re.compile(r"\bJE-\d{4}-\d{2}-\w+-\d+\b")  # a journal batch's id (batch_writer)


def header_of(record: QuestionRecord) -> str | None:
    """The form's header, as far as routing goes: an approval's canonical header whenever the
    form is one — headed so, or asking to approve a named journal batch (an option starting
    "Approve" and a batch id in its words) whatever header the model typed ("Posting
    approval" goes to the approvers too); else the header as typed."""
    typed = record.questions[0].get("header") if record.questions else None
    if typed in APPROVAL_HEADERS:
        return typed
    words = " ".join(
        [
            record.context,
            *(f"{q.get('header', '')} {q.get('question', '')}" for q in record.questions),
        ]
    )
    asks_to_approve = any(
        str(o.get("label", "")).casefold().startswith("approve")
        for q in record.questions
        for o in q.get("options") or []
        if isinstance(o, dict)
    )
    if asks_to_approve and BATCH_NAMED.search(words):
        second = "second approval" in words.casefold()
        return SECOND_APPROVAL_HEADER if second else APPROVAL_HEADER
    return typed


def approves(answer: dict[str, Any] | None) -> bool:
    """Did the answer choose an option whose label starts with 'Approve'?"""
    return any(
        label.casefold().startswith("approve")
        for a in (answer or {}).values()
        if isinstance(a, dict)
        for label in a.get("labels", [])
    )


def over_limit(lines: Iterable[Mapping[str, Any]], limit: Decimal) -> list[int]:
    """The entries whose debits are over the approval limit."""
    amounts: dict[int, Decimal] = {}
    for line in lines:
        amounts[line["entry_no"]] = amounts.get(line["entry_no"], Decimal(0)) + line["debit"]
    return sorted(n for n, amount in amounts.items() if amount > limit)


def approval_posts(
    record: QuestionRecord, lines: Iterable[Mapping[str, Any]], limit: Decimal
) -> bool:
    """Whether Approve on this approval form posts the batch (`lines`): a second approval
    does; a first one only where no entry is over the approval limit — over it, the first
    approval posts nothing and a second, different approver is asked (post_journal_batch)."""
    return header_of(record) == SECOND_APPROVAL_HEADER or not over_limit(lines, limit)


def first_approver(store: Store, run_id: str) -> str | None:
    """Who approved posting first in this run (the latest answered Posting form that approved)."""
    for q in reversed(store.questions.of_run(run_id)):
        if header_of(q) == APPROVAL_HEADER and q.status == "answered" and approves(q.answer):
            return q.answered_by
    return None


def _names(people: frozenset[str]) -> str:
    return ", ".join(mention(a) for a in sorted(people))


# Whether two identities are one person: canonically the same id (same_person), or — given by
# the Slack edge — two ids of one person across an Enterprise Grid org (issue 31)
SamePerson = Callable[[str | None, str | None], bool]


def may_approve(
    user: str | None,
    run: Run,
    approvers: frozenset[str],
    *,
    first: str | None = None,
    same: SamePerson = same_person,
) -> str | None:
    """Why `user` may not give this approval (None: they may); `first` is set for a second
    approval. Identities are compared canonically, so 'ALICE' is alice.

    With approvers set, only an approver who did not start the run approves — the first
    approval and the second alike. Without, the starter approves (self-approved) and a second
    approval comes from a different person. `same` tells one person's two ids apart from two
    people (Slack: the same Enterprise Grid user).
    """
    if not canonical(user):
        return "an approval needs a person's identity"
    if approvers:
        if same(user, run.started_by):
            others = approvers - {a for a in approvers if same_person(a, user)}
            return (
                "segregation of duties: you started this close, so another approver must "
                + ("give the second approval" if first is not None else "post it")
                + (": " + _names(others) if others else "")
            )
        if not one_of(user, approvers):
            return "only an approver may approve posting: " + _names(approvers)
    elif first is None and not same_person(user, run.started_by):
        return (
            f"only {mention(run.started_by or '-')}, who started this close, may approve it "
            "(no approvers are set)"
        )
    if first is not None and same(user, first):
        also = (
            ""
            if same_person(user, first)
            else f": {mention(user or '-')} and {mention(first)} are one person's accounts"
        )
        return (
            f"the second approval must come from a different approver than the first "
            f"({mention(first)}){also}"
        )
    return None


def approval_refusal(
    store: Store,
    record: QuestionRecord,
    run: Run,
    user: str,
    approvers: frozenset[str],
    answer: dict[str, Any] | None = None,
    *,
    console: bool = False,
    same: SamePerson = same_person,
) -> str | None:
    """At Submit: why this person may not approve posting on this form (None for other forms).
    `answer` None asks whether they may approve at all. In Slack only the starter and the
    approvers answer a run's forms, so without approvers nobody can give a second approval;
    at the console a different OS login can (`closebot approve RUN`)."""
    header = header_of(record)
    if header not in APPROVAL_HEADERS or (answer is not None and not approves(answer)):
        return None
    first = first_approver(store, run.id) if header == SECOND_APPROVAL_HEADER else None
    if header == SECOND_APPROVAL_HEADER and not approvers and first is not None and not console:
        return "a second approver is needed and none is set: set CLOSEBOT_APPROVERS (choose 'Keep as draft' meanwhile)"
    reason = may_approve(user, run, approvers, first=first, same=same)
    return reason[0].upper() + reason[1:] if reason else None


def check_approval(
    q: QuestionRecord,
    *,
    batch_id: str,
    digest: str,
    run: Run,
    approvers: frozenset[str],
    first: str | None = None,
) -> str | None:
    """Why this answered question does not approve posting this batch (None: it does).

    The same rules for every front end: at the console the answer is recorded under the OS
    login that gave it, in Slack under the user id, and `may_approve` judges both."""
    text = q.context + " ".join(item["question"] for item in q.questions)
    if q.source not in HUMAN_SOURCES:
        return (
            f"the approval was an automatic default ({q.source}); posting needs a person's approval"
        )
    if batch_id not in text:
        return f"question {q.id} does not ask about batch {batch_id}"
    if short_hash(digest) not in text:
        return f"question {q.id} approved other content than batch {batch_id} holds now (content hash {short_hash(digest)})"
    if not approves(q.answer):
        return "the answer did not approve posting"
    return may_approve(q.answered_by, run, approvers, first=first)


def eligible_approvers(
    run: Run, approvers: frozenset[str], *, first: str | None = None
) -> list[str]:
    """The approvers who may approve this posting: not who started the close, nor who gave
    the first approval (`first`), sorted."""
    return sorted(
        a for a in approvers if not same_person(a, run.started_by) and not same_person(a, first)
    )


def who_may_answer(run: Run, approvers: frozenset[str], *, brief: bool = False) -> str:
    """'<@U1> (started this close) or an approver: <@U2>, <@U3>'; `brief` (a decision card's
    footer): '<@U1> or an approver'."""
    if brief and run.started_by:
        return f"<@{run.started_by}>" + (" or an approver" if approvers else "")
    text = (
        f"<@{run.started_by}> (started this close)"
        if run.started_by
        else "the person who started this close"
    )
    if approvers:
        text += " or an approver: " + ", ".join(mention(a) for a in sorted(approvers))
    return text


def who_may_approve(run: Run, approvers: frozenset[str], *, first: str | None = None) -> str:
    """Who may approve this posting, and why the others may not."""
    if not approvers:
        if first is not None:
            return "A second approval needs a second approver: set CLOSEBOT_APPROVERS."
        return (
            f"Who may approve: <@{run.started_by}> (started this close; no approvers are set, "
            "so this is self-approval)"
        )
    eligible = eligible_approvers(run, approvers, first=first)
    names = ", ".join(mention(a) for a in eligible) or "nobody (every approver is excluded)"
    why = []
    if run.started_by and run.started_by in approvers | {run.started_by}:
        why.append(f"<@{run.started_by}>, who started this close")
    if first:
        why.append(f"<@{first}>, who gave the first approval")
    reason = f" — not {' or '.join(why)}" if why else ""
    return f"Who may approve: {names}{reason}"
