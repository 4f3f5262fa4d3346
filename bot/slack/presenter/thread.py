"""A run's thread set up in the channel: the root message, then the plan (or the status
message where Slack refuses the stream). Idempotent: a retry posts only what is missing;
the root's ts is recorded from chat.postMessage's own answer, and a root message posted by
a process that died before recording it is found again where the app may read the
channel's history — with the scopes closebot ships (no channels:history), it is posted
again, so the thread always opens."""

from __future__ import annotations

import logging
from datetime import datetime

from slack_sdk.errors import SlackApiError

from bot.blocks import outgoing
from bot.close import period_label
from bot.core.config import CHANNEL_ID
from bot.slack.presenter.messages import HISTORY_LIMIT, Messages
from bot.slack.presenter.plan import PlanStream
from bot.slack.presenter.root import RootMessage, root_block_id, status_title
from bot.slack.presenter.status import Status
from bot.store import Run

log = logging.getLogger(__name__)


class Thread:
    def __init__(
        self, messages: Messages, root: RootMessage, plan: PlanStream, status: Status
    ) -> None:
        self.messages = messages
        self.store = messages.store
        self.root = root
        self.plan = plan
        self.status = status

    def open(self, run_id: str, *, again: bool = False) -> Run:
        """Post the root message and the status message; record where they are. Idempotent:
        a retry after a failure posts only what is missing, and `again` (a retry or a
        recovery, when a process may have died with the root message in flight) first looks
        for a root message already posted, as post_form does for forms."""
        client, store = self.messages.client, self.store
        run = store.runs.get(run_id)
        assert run.channel
        # the run's people by name, once each, before anything shows them (and for the
        # console, the CSVs and the close's own texts, which read the cache)
        self.messages.names.warm([run.started_by, *sorted(self.messages.approvers)])
        if not run.thread_ts and again and (ts := self.find_root(run)):
            store.runs.set_thread(run_id, channel=run.channel, thread_ts=ts, status_ts=None)
            run = store.runs.get(run_id)
        if not run.thread_ts:
            assert run.channel
            title, root_blocks = self.root.draw(run)
            root = client.chat_postMessage(channel=run.channel, text=title, blocks=root_blocks)
            store.runs.set_thread(
                run_id, channel=root["channel"], thread_ts=root["ts"], status_ts=None
            )
            run = store.runs.get(run_id)
        if not run.status_ts:
            assert run.channel and run.thread_ts
            status_ts = self.plan.start(run)
            if status_ts is None:
                status = client.chat_postMessage(
                    channel=run.channel,
                    thread_ts=run.thread_ts,
                    text=outgoing(status_title(run)),
                    blocks=self.status.blocks(run, run.steps),
                )
                status_ts = str(status["ts"])
                self.plan.as_message(status_ts)
            store.runs.set_thread(
                run_id, channel=run.channel, thread_ts=run.thread_ts, status_ts=status_ts
            )
        return store.runs.get(run_id)

    def find_root(self, run: Run) -> str | None:
        """The ts of the run's root message if it is already in the channel (a process that
        died between posting it and recording where it went), found through
        conversations.history from the run's start on by its block_id; None when it is not
        there, or when the app may not read the channel's history (`missing_scope`: the
        manifest grants no channels:history / groups:history), so the root is posted again —
        after a crash with the root in flight the channel may then show it twice (the first
        one's Stop still stops this run), but the thread opens."""
        assert run.channel
        oldest = datetime.fromisoformat(run.created_at).timestamp() - 60
        cursor = None
        for _ in range(10):  # 10 pages of 15 messages since the run began
            try:
                page = self.messages.client.conversations_history(
                    channel=run.channel, oldest=f"{oldest:.6f}", limit=HISTORY_LIMIT, cursor=cursor
                )
            except SlackApiError as e:
                if e.response.get("error") != "missing_scope":
                    raise
                log.info(
                    "run %s: the channel's history is not readable (missing_scope, needs %s):"
                    " its root message is posted again",
                    run.id,
                    e.response.get("needed"),
                )
                return None
            for message in page.get("messages") or []:
                if any(
                    b.get("block_id") == root_block_id(run.id) for b in message.get("blocks") or []
                ):
                    return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None
        return None

    def never_opened(self, run: Run, error: str) -> None:
        """A close that failed before its thread opened (its root message never reached
        Slack): its starter is told in their DM with closebot (im:write, chat:write) why,
        and how to go on — nothing was posted, `/close <period>` starts it again."""
        if run.thread_ts or not run.started_by:
            return
        client = self.messages.client
        label = period_label(run.period)
        # the channel's link is the bot's own (<#C…>, from the store), so it is added after
        # the escaping that keeps the error's text from becoming a link or a mention
        where = f" in <#{run.channel}>" if CHANNEL_ID.match(run.channel or "") else ""
        text = (
            outgoing(f"I could not open the thread of the {label} close")
            + where
            + outgoing(
                f": {error}. Nothing was posted. Run `/close {run.period}` to start it again."
            )
        )
        opened = client.conversations_open(users=run.started_by)
        client.chat_postMessage(channel=str(opened["channel"]["id"]), text=text)
