"""`/close` and "close October" in Slack: one close per period.

A period whose close is under way gets a link to that close's thread, a posted period is
not closed again (and says why closebot does not reopen it), and `/close` with no period
when several are open asks which. Starting is the store's claim on the period
(`create_run(one_per_period=True)`): of two starts at the same instant one makes a run, the
other is pointed to it. Listener code: parse, claim, ack; Web API calls run after the ack.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slack_bolt import Ack
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bot import blocks
from bot.blocks import outgoing
from bot.close import data as close_data
from bot.close.imports import intake
from bot.close.ledger import Ledger
from bot.core.errors import (
    BusyError,
    CloseBotError,
    CorruptDatabaseError,
    PeriodTakenError,
    StorageError,
    StorageFullError,
)
from bot.slack.blocks import period as period_blocks
from bot.slack.blocks.period import OpenPeriod
from bot.slack.presenter import slack_error
from bot.slack.work import SlackWork
from bot.store import Run, Store

log = logging.getLogger(__name__)

USAGE = (
    "Usage: `/close [YYYY-MM]` — for example `/close 2026-10`. Without a period I close the "
    "open one, and ask which when several are open."
)
MAX_COMMAND_TEXT = 40  # "/close 2026-10" needs 7; longer text is refused, never echoed
BUSY = "The database is busy right now, so nothing was changed — please try again in a moment."
DB_DOWN = "I can't write to my database right now, so nothing was changed; please tell whoever runs closebot."
CANT_SAVE = "closebot can't save right now, nothing was changed. Please try again in a few minutes; if it keeps happening, tell whoever runs closebot."
DAMAGED = "closebot's database is damaged, so nothing was changed; please tell whoever runs closebot (`closebot doctor`)."

# Tells the person something privately (mrkdwn built of escaped parts, links and mentions).
Say = Callable[[str], None]


def open_periods(store: Store, data_dir: Path | None) -> list[OpenPeriod]:
    """Periods with data and no posted batch, earliest first, each with its live close."""
    ledger = Ledger(store)  # (the store's close tables are migrated when the app is built)
    out = []
    for period in intake.periods_with_data(store, data_dir):
        if ledger.posted_batch(period) is None:
            live = store.live_run(period)
            out.append(OpenPeriod(period, live.status if live else None))
    return sorted(out, key=lambda p: p.period)


class CloseCommand:
    def __init__(self, *, store: Store, work: SlackWork, data_dir: Path | None) -> None:
        self.store = store
        self.work = work
        self.data_dir = data_dir
        self.ledger = Ledger(store)  # migrates the close's tables now, not on an ack

    # -- links and replies, after the ack --------------------------------------------

    def permalink(self, run: Run) -> str | None:
        if not (run.channel and run.thread_ts):
            return None
        try:
            return str(
                self.work.presenter.client.chat_getPermalink(
                    channel=run.channel, message_ts=run.thread_ts
                )["permalink"]
            )
        except SlackApiError as e:
            log.info("run %s: no permalink (%s)", run.id, slack_error(e))
            return None

    def taken_text(self, period: str) -> str | None:
        """What to say when `period` may not be closed now (its close is live, or it is
        posted), with the thread's link; None when it may. Makes Web API calls."""
        live = self.store.live_run(period)
        if live is not None:
            return period_blocks.live_text(
                period,
                run_id=live.id,
                status=live.status,
                started_by=live.started_by,
                url=self.permalink(live),
            )
        batch = self.ledger.posted_batch(period)
        if batch is not None:
            run = self._run(str(batch["run_id"]))
            url = self.permalink(run) if run else None
            approvers = self.ledger.approvers(batch)
            return period_blocks.posted_text(period, batch=batch, approvers=approvers, url=url)
        return None

    def _run(self, run_id: str) -> Run | None:
        try:
            return self.store.run(run_id)
        except CloseBotError:
            return None

    def is_taken(self, period: str) -> bool:
        """A live close or a posted batch: no new close of `period` (reads only)."""
        return (
            self.store.live_run(period) is not None or self.ledger.posted_batch(period) is not None
        )

    def tell_taken(self, period: str, say: Say) -> None:
        """After the ack: where the period's close is, or why it is not closed again."""

        def job() -> None:
            told = self.taken_text(period)
            if told is not None:
                say(told)

        self.work.runner.side(job)

    # -- /close -------------------------------------------------------------------

    def command(self, ack: Ack, command: dict[str, Any], files: Any) -> None:
        """`/close [YYYY-MM]`: check the period, claim it, ack; the thread opens after."""
        text = (command.get("text") or "").strip()
        user, channel = str(command["user_id"]), str(command["channel_id"])
        response_url = command.get("response_url")
        if len(text) > MAX_COMMAND_TEXT:
            ack(response_type="ephemeral", text=f"That is not a period.\n{USAGE}")
            return
        try:
            with self.store.quick():
                if text:
                    period = close_data.check_period(text)
                else:
                    open_ = open_periods(self.store, self.data_dir)
                    if len(open_) > 1:  # which one? the earliest not posted, recommended
                        ack(
                            response_type="ephemeral",
                            text="Which period do you want to close?",
                            blocks=period_blocks.which_period_form(open_),
                        )
                        return
                    period = (
                        open_[0].period
                        if open_
                        else intake.latest_period(self.store, self.data_dir)
                    )
                waiting = not intake.has_data(self.store, period, self.data_dir)
                taken = not waiting and self.is_taken(period)
        except StorageError as e:
            ack(response_type="ephemeral", text=storage_text(e))
            return
        except CloseBotError as e:
            ack(response_type="ephemeral", text=f"{e}\n{USAGE}")
            return
        if waiting and files is not None:
            # no data yet: a thread for the period's files; the close starts when all are in
            ack(
                response_type="ephemeral",
                text=f"I have no data for {close_data.period_label(period)} yet: drop its files into the thread I'm opening.",
            )
            self.work.runner.side(
                lambda: files.open_waiting(channel=channel, period=period, user=user)
            )
            return
        if waiting:
            ack(response_type="ephemeral", text=f"No close data for {period}.\n{USAGE}")
            return
        say = self._responder(response_url)
        if taken:
            ack()  # the answer, with the thread's link, follows through the response_url
            self.tell_taken(period, say)
            return
        self.begin(
            period, user=user, channel=channel, response_url=response_url, reply=ack, say=say
        )

    def begin(
        self,
        period: str,
        *,
        user: str,
        channel: str,
        response_url: str | None,
        reply: Callable[..., object],
        say: Say,
    ) -> None:
        """Claim the period with a new run (leased in the same transaction) and start it;
        `reply(response_type=, text=)` answers the person (the ack, or the response_url)."""
        run = None
        try:
            with self.store.quick(), self.store.write():  # one transaction: claim, run, lease
                run = self.store.create_run(
                    period=period,
                    mode="slack",
                    started_by=user,
                    model=self.work.loop.model.name,
                    channel=channel,
                    one_per_period=True,
                )
                self.work.hold(run.id)  # leased from its first instruction to its last
        except PeriodTakenError:  # another start claimed it a moment before
            reply()
            self.tell_taken(period, say)
            return
        except StorageError as e:
            if run is not None:  # nothing was written: neither is its lease
                self.work.let_go(run.id, written=False)
            reply(response_type="ephemeral", text=storage_text(e))
            return
        reply(
            response_type="ephemeral",
            text=f"Starting the {close_data.period_label(period)} close (run `{run.id}`); its thread opens in a moment.",
        )
        self.work.start_close(run.id, response_url=response_url, held=True)

    def _responder(self, response_url: str | None, *, replace: bool = False) -> Say:
        """Tell the person privately through the interaction's response_url (it works where
        the bot cannot post); `replace`: in place of the message the click came from."""

        def say(text: str) -> None:
            if not response_url:
                return
            safe = blocks.cut(text, blocks.MAX_SECTION_TEXT)  # built of escaped parts
            try:
                WebhookClient(response_url, timeout=10).send(
                    text=safe,
                    response_type="ephemeral",
                    replace_original=replace,
                    blocks=blocks.notice_blocks(safe),
                )
            except Exception as e:  # the person sees nothing more; nothing was started
                log.warning("response_url not reachable: %s", e)

        return say

    # -- the which-period form's Submit ----------------------------------------------

    def period_picked(self, ack: Ack, body: dict[str, Any]) -> None:
        """The which-period form: start the chosen period's close (or point to it)."""
        ack()
        user = str((body.get("user") or {}).get("id") or "")
        container = body.get("container") or {}
        channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
        response_url = body.get("response_url")
        say = self._responder(response_url if isinstance(response_url, str) else None, replace=True)
        period = period_blocks.picked_period((body.get("state") or {}).get("values"))
        if not user or not channel or period is None:
            say("Pick a period, then Submit; nothing was started.")
            return
        try:
            with self.store.quick():
                known = intake.has_data(self.store, period, self.data_dir)
                taken = known and self.is_taken(period)
        except StorageError as e:
            say(outgoing(storage_text(e)))
            return
        if not known:
            say(f"No close data for {blocks.escape(period)}; nothing was started.")
            return
        if taken:
            self.tell_taken(period, say)
            return

        def reply(**answer: Any) -> None:
            if answer.get("text"):
                say(outgoing(str(answer["text"])))

        self.begin(
            period,
            user=user,
            channel=channel,
            response_url=response_url if isinstance(response_url, str) else None,
            reply=reply,
            say=say,
        )


def storage_text(e: StorageError) -> str:
    """What the person is told when the database could not take their request."""
    if isinstance(e, BusyError):
        return BUSY
    if isinstance(e, StorageFullError):
        return CANT_SAVE
    if isinstance(e, CorruptDatabaseError):
        return DAMAGED
    return DB_DOWN
