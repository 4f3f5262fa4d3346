"""The posting approval's form: the batch by account as a table, addressed to the people
who may approve it (and why the others may not), the draft journal attached before it once
per batch, and a notice at its top of any message written in the thread since it was
posted (an approval is not claimed on a form that did not show it); each approver it waits
on told in their own DM with the bot, with a link to the form, wherever the close runs."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.close import (
    ACCOUNT_NAMES,
    APPROVAL_HEADERS,
    SECOND_APPROVAL_HEADER,
    Ledger,
    approval_notes,
    approval_posts,
    first_approver,
    header_of,
    money,
    period_label,
    who_may_approve,
)
from bot.core.decision_log import ENTRY_COLUMNS, iter_named_lines, journal_rows, to_csv
from bot.core.questions import Ask
from bot.slack.presenter.messages import Clicked, Messages, slack_error
from bot.store import QuestionRecord, Run

log = logging.getLogger(__name__)


def seen_block_id(inbox_id: int) -> str:
    """The block_id of a form's notice of thread messages, up to the inbox message it names."""
    return f"closebot-seen-{inbox_id}"


def entries_by_account(
    lines: Iterable[Mapping[str, Any]],
) -> tuple[list[str], list[list[str]]]:
    """The batch by account ("2115 Accrued LOE", debit, credit) with its totals, as table rows."""
    totals: dict[str, list[Decimal]] = {}
    for line in lines:
        acc = totals.setdefault(str(line["account"]), [Decimal(0), Decimal(0)])
        acc[0] += Decimal(str(line["debit"] or 0))
        acc[1] += Decimal(str(line["credit"] or 0))
    rows = [
        [f"{a} {ACCOUNT_NAMES.get(a, '')}".strip(), money(d) if d else "", money(c) if c else ""]
        for a, (d, c) in sorted(totals.items())
    ]
    debit = sum((d for d, _ in totals.values()), Decimal(0))
    credit = sum((c for _, c in totals.values()), Decimal(0))
    rows.append(["Total", money(debit), money(credit)])
    # three columns (the account's number and name in one, wrapped): the table fits a
    # thread's narrow pane, Credit included
    return ["Account", "Debit", "Credit"], rows


def accounts_file(batch_id: str) -> str:
    """The file with a batch's every account, when its form's table cannot show them all."""
    return f"accounts-{batch_id}-draft.csv"


class ApprovalForm:
    def __init__(self, messages: Messages) -> None:
        self.messages = messages
        self.store = messages.store

    def form(
        self,
        record: QuestionRecord,
        run: Run,
        ask: Ask,
        *,
        nonce: str,
        attach: bool,
        why: bool = False,
    ) -> list[dict[str, Any]]:
        """The posting approval: the batch by account as a table, addressed to the people who
        may approve it (and why the others may not); Approve / Keep as draft / Reject as
        buttons, only Approve behind a dialog naming what it posts."""
        second = header_of(record) == SECOND_APPROVAL_HEADER
        confirm = self.attach_draft(record, attach=attach and not second)
        ledger = Ledger(self.store)
        batch = ledger.current_batch(run.id)
        facts = None
        # over the approval limit the first approval posts nothing (a second approver is
        # asked): no "Post to the ledger?" dialog on it, only on the Approve that posts
        posts = batch is None or approval_posts(
            record, ledger.iter_lines(batch["id"]), self.messages.approval_limit
        )
        if batch is not None:
            # summed by SQLite: the form does not read the batch's lines
            header, rows = entries_by_account(ledger.account_totals(batch["id"]))
            name = accounts_file(str(batch["id"]))
            facts = blocks.table(
                header,
                rows,
                right=(1, 2),
                more=lambda k: f"… {k} more accounts (in the Total): every account in {name}",
            )
        form = blocks.approval_form(
            ask,
            question_id=record.id,
            who_may_answer=self.messages.safe(
                who_may_approve(
                    run,
                    self.messages.approvers,
                    first=first_approver(self.store, run.id) if second else None,
                ),
                self.messages.waits_on(run, record),
            ),
            nonce=nonce,
            facts=facts,
            confirm=(confirm or "Post to the ledger? This cannot be undone.") if posts else None,
            deadline=blocks.deadline_note(ask, record.expires_at),
            why=why,
        )
        # the approvals given so far and what changed since a batch withdrawn, after the
        # situation: the same card, not another copy of the batch
        notes = approval_notes(self.store, record, lambda who: self.messages.names(who))
        shown = [blocks.section(self.messages.safe(n)) for n in notes]
        return [*form[:1], *shown, *form[1:]]

    def tell_approvers(
        self,
        record: QuestionRecord,
        run: Run,
        *,
        channel: str,
        ts: str,
        text: str,
        form: list[dict[str, Any]],
    ) -> None:
        """Each approver the posting approval waits on, told in their own DM with the bot:
        the close, the amount and a link to the form in the thread (`channel`/`ts`), then the
        form itself (`text`, `form`), which they may answer there — so the approval reaches
        them somewhere they can act whoever started the close and wherever (an approver
        cannot open a form in someone else's DM; SLACK.md "Who can see what"). Each copy is
        recorded (audit `approval_dm`) so it is redrawn and settled with the thread's. A DM
        that fails is logged: the form itself is in the thread."""
        waiting = self.messages.waits_on(run, record)
        if not waiting:
            return
        client = self.messages.client
        try:
            link = str(client.chat_getPermalink(channel=channel, message_ts=ts)["permalink"])
        except SlackApiError as e:
            log.warning("run %s: no link to the approval form: %s", run.id, slack_error(e))
            link = ""
        batch = Ledger(self.store).current_batch(run.id)
        amount = f" ({money(Decimal(batch['total_debit']))})" if batch is not None else ""
        second = header_of(record) == SECOND_APPROVAL_HEADER
        what = "a second approval" if second else "your approval"
        starter = f" <@{run.started_by}> started it." if run.started_by else ""
        for approver in waiting:
            intro = self.messages.safe(
                f"<@{approver}> The {period_label(run.period)} close{amount} waits on "
                f"{what} to post to the ledger.{starter} Answer below, or ",
                [approver],
            ) + (  # the bot's own link, not escaped
                f"<{link}|on the form in the close's thread>." if link else "in its thread."
            )
            try:
                opened = client.conversations_open(users=approver)
                dm = str(opened["channel"]["id"])
                client.chat_postMessage(channel=dm, text=intro, blocks=blocks.notice_blocks(intro))
                copy = client.chat_postMessage(channel=dm, text=text, blocks=form)
            except SlackApiError as e:
                log.warning("run %s: approver %s not told: %s", run.id, approver, slack_error(e))
                continue
            self.store.audit.record(
                run_id=run.id,
                kind="approval_dm",
                actor=None,
                detail={
                    "question_id": record.id,
                    "approver": approver,
                    "channel": dm,
                    "ts": str(copy["ts"]),
                },
            )

    def copies(self, record: QuestionRecord) -> list[tuple[str, str]]:
        """(channel, ts) of each copy of this approval form in an approver's DM."""
        return [
            (str(e.detail["channel"]), str(e.detail["ts"]))
            for e in self.store.audit.events(record.run_id, kind="approval_dm")
            if e.detail.get("question_id") == record.id
        ]

    def redraw_copies(
        self,
        record: QuestionRecord,
        *,
        text: str,
        form: list[dict[str, Any]],
        via: Clicked | None = None,
    ) -> None:
        """The DM copies of an approval form drawn as the thread's now is (a notice of thread
        messages, the deadline, settled): none looks live once it is answered. The copy the
        approver clicked on (`via`) is replaced through the interaction's response_url."""
        for channel, ts in self.copies(record):
            try:
                self.messages.redraw(channel=channel, ts=ts, text=text, blocks=form, via=via)
            except SlackApiError as e:
                log.warning("form %s: DM copy %s not redrawn: %s", record.id, ts, slack_error(e))

    def attach_draft(self, record: QuestionRecord, *, attach: bool = True) -> str | None:
        """Before an approval form: the draft journal CSV in the thread, once per batch (not
        again when a batch is asked about again); the confirm dialog's text."""
        run = self.store.runs.get(record.run_id)
        ledger = Ledger(self.store)
        batch = ledger.current_batch(run.id)
        if batch is None or batch["status"] != "draft":
            return None
        entries = ledger.entry_count(batch["id"])
        try:
            if attach and not self.draft_shown(record, str(batch["id"])):
                header, rows = entries_by_account(ledger.account_totals(batch["id"]))
                # the accounts the form's table has no room for: every one, in a file beside it
                accounts = (
                    []
                    if blocks.table_fits(header, rows)
                    else [
                        {
                            "filename": accounts_file(str(batch["id"])),
                            "title": f"Batch {batch['id']} by account, with its total",
                            "content": to_csv(
                                [dict(zip(header, row, strict=True)) for row in rows], tuple(header)
                            ),
                        }
                    ]
                )
                self.messages.client.files_upload_v2(
                    channel=run.channel,
                    thread_ts=run.thread_ts,
                    file_uploads=[
                        {
                            "filename": f"journal-{batch['id']}-draft.csv",
                            "title": f"Draft journal entries · {batch['id']} · for approval",
                            # the lines a page at a time into the CSV, never all as dicts;
                            # who decided, by name
                            "content": to_csv(
                                journal_rows(
                                    batch,
                                    iter_named_lines(
                                        ledger.iter_lines(batch["id"]), self.messages.names
                                    ),
                                ),
                                ENTRY_COLUMNS,
                            ),
                        },
                        *accounts,
                    ],
                )
        except SlackApiError as e:  # the form still carries the batch by account
            log.warning("run %s: draft CSV not attached: %s", run.id, slack_error(e))
        return (
            f"Post {entries} entries, {money(Decimal(batch['total_debit']))}, batch {batch['id']}? "
            "This cannot be undone."
        )

    def draft_shown(self, record: QuestionRecord, batch_id: str) -> bool:
        """Whether an earlier approval form of this batch was posted (its draft with it)."""
        return any(
            q.id != record.id
            and q.message_ts
            and header_of(q) in APPROVAL_HEADERS
            and batch_id in q.context + " ".join(str(x.get("question")) for x in q.questions)
            for q in self.store.questions.of_run(record.run_id)
        )

    def unseen_messages(
        self, record: QuestionRecord, shown: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Thread messages written after an approval form was posted that the form as the
        approver saw it (`shown`: its blocks) did not show yet; [] for other questions."""
        if header_of(record) not in APPROVAL_HEADERS:
            return []
        since = self.store.inbox.since(record.run_id, record.created_at)
        if not since:
            return []
        mark = seen_block_id(since[-1]["id"])
        if any(isinstance(b, dict) and b.get("block_id") == mark for b in shown):
            return []
        return since

    def notice(self, record: QuestionRecord) -> dict[str, Any] | None:
        """An approval form's notice of the thread messages written after it was posted."""
        since = self.unseen_messages(record, [])
        if not since:
            return None
        writers = list(dict.fromkeys(m["user"] for m in since if m["user"]))
        names = " and ".join(f"<@{u}>" for u in writers) or "Someone"
        quoted = "\n".join(
            "> " + (f"<@{m['user']}>: " if m["user"] else "") + blocks.cut(m["text"], 300)
            for m in since[-5:]
        )
        return {
            **blocks.section(
                self.messages.safe(
                    f"⚠️ {names} wrote to closebot in the thread after this form was posted — read it "
                    f"before you answer:\n{quoted}"
                )
            ),
            "block_id": seen_block_id(since[-1]["id"]),
        }
