"""Starting a close in Slack: the one function every entry calls — `/close`, its
which-period form, "close October" in the DM (and the assistant pane's suggested prompt),
a thread whose files are all in.

One close per period: a period whose close is under way gets a link to that close's
thread, and a posted period is not closed again (and says why closebot does not reopen
it). Starting is the close's `start_close` (the store's claim on the period, the run
leased in the same transaction): of two starts at the same instant one makes a run,
the other is pointed to it. Web API calls run after the ack.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bot import blocks
from bot.close import Imports, Ledger, period_label, periods_with_data, start_close
from bot.core.config import CHANNEL_ID
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
BUSY = "The database is busy right now, so nothing was changed — please try again in a moment."
DB_DOWN = "I can't write to my database right now, so nothing was changed; please tell whoever runs closebot."
CANT_SAVE = "closebot can't save right now, nothing was changed. Please try again in a few minutes; if it keeps happening, tell whoever runs closebot."
DAMAGED = "closebot's database is damaged, so nothing was changed; please tell whoever runs closebot (`closebot doctor`)."

# Tells the person something privately (mrkdwn built of escaped parts, links and mentions).
Say = Callable[[str], None]
# The answer at once (the ack, where there is one): a text, or None for nothing to say.
Now = Callable[[str | None], None]


def storage_text(e: StorageError) -> str:
    """What the person is told when the database could not take their request."""
    if isinstance(e, BusyError):
        return BUSY
    if isinstance(e, StorageFullError):
        return CANT_SAVE
    if isinstance(e, CorruptDatabaseError):
        return DAMAGED
    return DB_DOWN


def open_periods(store: Store, data_dir: Path | None) -> list[OpenPeriod]:
    """Periods with data and no posted batch, earliest first, each with its live close."""
    ledger = Ledger(store)  # (the store's close tables are migrated when the app is built)
    out = []
    for period in periods_with_data(store, data_dir):
        if ledger.posted_batch(period) is None:
            live = store.runs.live(period)
            out.append(OpenPeriod(period, live.status if live else None))
    return sorted(out, key=lambda p: p.period)


def responder(response_url: str | None, *, replace: bool = False) -> Say:
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


NO_CLOSE_CHANNEL = (
    "A close runs in a channel, so its approvers can see it and approve it (they cannot see "
    "our DM). Start it in your finance channel with `/close {period}` (invite me there first "
    "with `/invite @closebot`); after that, *close* here starts closes in that channel. "
    "Whoever runs closebot can also name the channel with CLOSEBOT_CLOSE_CHANNEL."
)


def opening_in(run: Run, user: str | None) -> str:
    """Where a close whose thread is not open yet will show, as mrkdwn: its channel (the
    bot's own `<#C…>` link, from the store), or the starter's DM with closebot."""
    if run.channel and CHANNEL_ID.match(run.channel):
        return f"in <#{run.channel}>"
    if user is not None and user == run.started_by:
        return "in your DM with closebot"
    return "where it was started"


def visible_to(run: Run, user: str) -> bool:
    """Whether `user` can open the run's thread: a close in a DM is its starter's alone (a
    DM is visible to its two members; SLACK.md "Who can see what"); a channel's thread,
    anyone in it. Links are shown only where they open."""
    return not (run.channel or "").startswith("D") or run.started_by == user


class CloseStarter:
    """Starts a period's close, or says where it is (the one way a close starts in Slack)."""

    def __init__(
        self,
        *,
        store: Store,
        work: SlackWork,
        data_dir: Path | None,
        close_channel: str | None = None,
    ) -> None:
        self.store = store
        self.work = work
        self.data_dir = data_dir
        self.close_channel = close_channel  # CLOSEBOT_CLOSE_CHANNEL
        self.ledger = Ledger(store)  # migrates the close's tables now, not on an ack

    def team_channel(self) -> str | None:
        """Where a close started from the DM runs: the configured close channel, else the
        channel the team's last close ran in (closes of a team run in one channel month
        after month); None when neither is known. Never a DM: approvers cannot see it."""
        if self.close_channel:
            return self.close_channel
        for run in self.store.runs.recent(limit=50):
            if run.channel and run.channel[:1] in ("C", "G"):
                return run.channel
        return None

    def start(
        self,
        period: str,
        *,
        user: str,
        channel: str,
        now: Now,
        later: Say,
        in_thread: str | None = None,
        response_url: str | None = None,
        announce: bool = True,
        quick: bool = True,
        elsewhere: bool = False,
        team: str | None = None,
    ) -> Run | None:
        """Start `period`'s close for `user` in `channel`: claim the period with a new run
        (leased in the same transaction) and open its thread; the run, or None.

        A period whose close is live, or which is posted, is not started: the person is
        pointed to it (`later`, after the ack). `now` answers at once, exactly once: that the
        close is starting (when `announce`), that the database refused, or None. `in_thread`:
        the thread the close runs in already (one that waited for its files). `quick`: on an
        ack path (a busy database says so at once; a background job waits for it).
        `elsewhere`: started from another conversation (the DM), so the start names the
        channel it runs in. `team`: the starter's team, from the payload (their stream's
        recipient_team_id)."""
        run = None
        if self.work.paused_by:  # a dead token: a close could not show, so none is started
            now(
                f"I can't start the {period_label(period)} close now: Slack took closebot's "
                f"token back ({self.work.paused_by}). Nothing was started; once a workspace "
                "admin reinstalls closebot, run `/close` again."
            )
            return None
        try:
            with self.store.quick() if quick else contextlib.nullcontext():
                if self.is_taken(period):
                    now(None)
                    self.tell_taken(period, later, user)
                    return None
                with self.store.write():  # one transaction: claim, run, lease
                    run = start_close(  # the close's one start: one close per period
                        self.store,
                        period,
                        mode="slack",
                        started_by=user,
                        model=self.work.loop.model.name,
                        channel=channel,
                        thread_ts=in_thread,
                    )
                    if team:
                        self.store.runs.set_team(run.id, team)
                    if in_thread:
                        Imports(self.store).set_thread_run(
                            channel=channel, thread_ts=in_thread, run_id=run.id
                        )
                    self.work.hold(run.id)  # leased from its first instruction to its last
        except PeriodTakenError:  # another start claimed it a moment before
            now(None)
            self.tell_taken(period, later, user)
            return None
        except StorageError as e:
            if run is not None:  # nothing was written: neither is its lease
                self.work.let_go(run.id, written=False)
            now(storage_text(e))
            return None
        where = f" in <#{channel}>" if elsewhere else ""
        now(
            f"Starting the {period_label(period)} close{where} (run `{run.id}`); its thread "
            f"opens {'there ' if elsewhere else ''}in a moment."
            if announce
            else None
        )
        self.work.start_close(run.id, response_url=response_url, held=True)
        return run

    def in_files_thread(self, channel: str, thread_ts: str, period: str, user: str) -> None:
        """A thread that waited for its files has them all: its close starts there."""

        def say(text: str | None) -> None:
            if text:
                self.work.presenter.reply(channel=channel, thread_ts=thread_ts, text=text)

        self.start(
            period,
            user=user,
            channel=channel,
            now=say,
            later=say,
            in_thread=thread_ts,
            announce=False,
            quick=False,
        )

    # -- a period that may not be closed now --------------------------------------

    def is_taken(self, period: str) -> bool:
        """A live close or a posted batch: no new close of `period` (reads only)."""
        return (
            self.store.runs.live(period) is not None or self.ledger.posted_batch(period) is not None
        )

    def tell_taken(self, period: str, say: Say, user: str | None = None) -> None:
        """After the ack: where the period's close is, or why it is not closed again."""

        def job() -> None:
            told = self.taken_text(period, user)
            if told is not None:
                say(told)

        self.work.runner.side(job)

    def taken_text(self, period: str, user: str | None = None) -> str | None:
        """What to say when `period` may not be closed now (its close is live, or it is
        posted), with the thread's link where `user` can open it; None when it may. Makes
        Web API calls."""
        live = self.store.runs.live(period)
        if live is not None:
            return period_blocks.live_text(
                period,
                run_id=live.id,
                status=live.status,
                started_by=live.started_by,
                url=self.permalink(live, user),
                opening_in=None if live.thread_ts else opening_in(live, user),
            )
        batch = self.ledger.posted_batch(period)
        if batch is not None:
            run = self._run(str(batch["run_id"]))
            url = self.permalink(run, user) if run else None
            approvers = self.ledger.approvers(batch)
            return period_blocks.posted_text(period, batch=batch, approvers=approvers, url=url)
        return None

    def permalink(self, run: Run, user: str | None = None) -> str | None:
        """The run's thread as a link; None where `user` could not open it (a DM not theirs)."""
        if not (run.channel and run.thread_ts):
            return None
        if user is not None and not visible_to(run, user):
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

    def _run(self, run_id: str) -> Run | None:
        try:
            return self.store.runs.get(run_id)
        except CloseBotError:
            return None


def ack_now(ack: Callable[..., Any]) -> Now:
    """`now` for a slash command: its ack, ephemeral when it says something."""

    def now(text: str | None) -> None:
        if text:
            ack(response_type="ephemeral", text=text)
        else:
            ack()

    return now
