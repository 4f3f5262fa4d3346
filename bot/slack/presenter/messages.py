"""How anything reaches a run's thread: text made safe (only the mentions the bot means
survive; people by name), a post in the thread, a private notice, an answer through a
response_url — and the run's people and whom a pending form waits on, which decide who is
mentioned. Every other part of the presenter posts through this one."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bot import blocks
from bot.blocks import outgoing
from bot.close import (
    APPROVAL_HEADERS,
    APPROVAL_LIMIT,
    SECOND_APPROVAL_HEADER,
    eligible_approvers,
    first_approver,
    header_of,
)
from bot.core.names import Names, named_text
from bot.slack.client import KeepAliveWebClient
from bot.store import QuestionRecord, Run, Store

log = logging.getLogger(__name__)

# conversations.history / .replies pages: a commercially distributed app outside the Slack
# Marketplace may read 15 messages a call and one call a minute
# (docs.slack.dev/reference/methods/conversations.history): closebot reads them only to
# recover from a crash, and asks for no more than it may have.
HISTORY_LIMIT = 15

# Slack errors no retry can fix: the run is failed and the person told why.
CANNOT_POST = {
    "not_in_channel": "I'm not in this channel: invite me with `/invite @closebot`, then run `/close` again.",
    "channel_not_found": "I can't see this channel (a private channel or a DM I'm not in): invite me with `/invite @closebot`, then run `/close` again.",
    "is_archived": "This channel is archived; run `/close` in an active channel.",
    "restricted_action": "This workspace does not let me post in this channel; ask an admin, or run `/close` in another channel.",
    "restricted_action_read_only_channel": "This channel is read-only for me (only admins may post): run `/close` in another channel.",
    "restricted_action_thread_only_channel": "This channel takes replies in threads only, and a close needs its own thread: run `/close` in another channel.",
    "restricted_action_non_threadable_channel": "This channel does not allow threads, and a close runs in its own thread: run `/close` in another channel.",
}
_MENTION = re.compile(r"<@([UW][A-Z0-9]{2,})>")
_TOKEN = re.compile(r"<([^<>]*)>")


def slack_error(e: Exception) -> str:
    """The Slack error code of a failed Web API call ('internal_error' for an HTTP failure)."""
    if isinstance(e, SlackApiError):
        return str(e.response.get("error") or f"http_{e.response.status_code}")
    return type(e).__name__


@dataclass(frozen=True)
class Clicked:
    """The message a person clicked on (its channel and ts) and the interaction's
    response_url. Replacing that message through the response_url (`replace_original`) is not
    a Web API call, so it spends none of chat.update's Tier 3 budget: Slack's rate tiers are
    "per API method per workspace/team per app" (docs.slack.dev/apis/web-api/rate-limits),
    and a response_url takes up to 5 uses within 30 minutes of the interaction
    (docs.slack.dev/interactivity/handling-user-interaction, "Message responses")."""

    response_url: str
    channel: str
    ts: str

    def of(self, channel: str | None, ts: str | None) -> bool:
        return bool(self.response_url) and (self.channel, self.ts) == (channel, ts)


class Shown:
    """What each message was last updated to (ts → its text and blocks), so an update that
    would change nothing is not sent. Memory only: after a restart, one repeat."""

    def __init__(self) -> None:
        self._shown: dict[str, str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(*parts: Any) -> str:
        return json.dumps(list(parts), sort_keys=True)

    def already(self, ts: str, shown: str) -> bool:
        with self._lock:
            return self._shown.get(ts) == shown

    def remember(self, ts: str, shown: str) -> None:
        with self._lock:
            self._shown[ts] = shown


class Messages:
    """Posts to a run's thread; every call is one Web API request through the retrying client.

    Every outgoing `text` and block goes through blocks.outgoing(): only the mentions the bot
    means to make (the run's own people) survive; `<!channel>` and links never do.
    """

    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        names: Names,
        approvers: frozenset[str],
        approval_limit: Decimal = APPROVAL_LIMIT,
    ) -> None:
        self.client = client
        self.store = store
        self.names = names  # who a user id is, as people read it (users.info, cached)
        self.approvers = approvers
        self.approval_limit = approval_limit  # over it, a first approval posts nothing
        self.shown = Shown()

    def people(self, run: Run) -> set[str]:
        """The run's people: its starter, the approvers and whoever answered its forms (their
        bare ids in the model's or a tool's text read as names)."""
        return {
            run.started_by or "",
            *self.approvers,
            *(q.answered_by or "" for q in self.store.questions.of_run(run.id)),
        }

    def safe(self, text: str, mention: Iterable[str] = (), *, run: Run | None = None) -> str:
        """Text made safe for Slack (blocks.outgoing) with people shown by name: a `<@U…>`
        stays a mention only for `mention` (whom the message waits on); with `run`, the bare
        ids of its people read as names too."""
        safe = outgoing(text, mention, self.names)
        if run is not None:
            safe = blocks.name_ids(safe, self.people(run), self.names)
        return safe

    def plain(self, text: str, run: Run) -> str:
        """Text for a plan task's output or details, which Slack shows as written (escaping
        there showed a literal '&amp;'): people by name, and no `<…>` left that Slack could
        read as a mention, a link or `<!channel>` (its brackets become ‹ ›)."""
        text = _MENTION.sub(lambda m: self.names(m.group(1)), text)
        text = named_text(text, self.people(run), self.names)
        return _TOKEN.sub(lambda m: f"‹{m.group(1)}›", text)

    def waits_on(self, run: Run, record: QuestionRecord | None = None) -> list[str]:
        """Whom a pending form waits on (the people it mentions): the eligible approvers for a
        posting approval when approvers are set, else the person who started the close."""
        record = record or self.store.questions.pending(run.id)
        if record is None:
            return []
        if header_of(record) in APPROVAL_HEADERS and self.approvers:
            first = (
                first_approver(self.store, run.id)
                if header_of(record) == SECOND_APPROVAL_HEADER
                else None
            )
            return eligible_approvers(run, self.approvers, first=first)
        return [run.started_by] if run.started_by else []

    def post(
        self,
        run_id: str,
        text: str,
        block_list: list[dict[str, Any]] | None = None,
        *,
        mention: Iterable[str] = (),
        fold: str | None = None,
    ) -> str | None:
        """Text (from the model, a person or the bot) in the run's thread; people are shown by
        name, and only those in `mention` (whom it waits on) are mentioned. `fold`: a long text
        shows its lead, the rest folded under that title (blocks.folded_text_blocks)."""
        run = self.store.runs.get(run_id)
        if not (run.channel and run.thread_ts):
            return None
        response = self.client.chat_postMessage(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=blocks.cut(self.safe(text, mention, run=run), 3000),
            blocks=block_list
            or (
                blocks.folded_text_blocks(
                    text, fold, people=self.people(run), names=self.names, mention=mention
                )
                if fold
                else blocks.text_blocks(
                    text, people=self.people(run), names=self.names, mention=mention
                )
            ),
        )
        return str(response["ts"])

    def reply(self, *, channel: str, thread_ts: str | None, text: str) -> None:
        """A message outside any run (help for a mention in the channel)."""
        safe = outgoing(text)
        try:
            self.client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=safe, blocks=blocks.notice_blocks(safe)
            )
        except SlackApiError as e:  # a courtesy reply: nothing waits on it
            log.warning("reply in %s not posted: %s", channel or "(no channel)", slack_error(e))

    def ephemeral(
        self,
        *,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: Iterable[str] = (),
    ) -> None:
        """A private notice; `people` are the users it may mention (the reader is always one);
        anyone else is named."""
        safe = self.safe(text, [user, *people])
        self.client.chat_postEphemeral(
            channel=channel,
            user=user,
            thread_ts=thread_ts,
            text=safe,
            blocks=blocks.notice_blocks(safe),
        )

    def respond(self, response_url: str | None, text: str, people: Iterable[str] = ()) -> None:
        """A private answer through a slash command's response_url: it works where the bot
        cannot post (not in the channel)."""
        if not response_url:
            return
        safe = self.safe(text, people)
        try:
            WebhookClient(response_url, timeout=10).send(
                text=safe, response_type="ephemeral", blocks=blocks.notice_blocks(safe)
            )
        except Exception as e:  # the person sees nothing more; the run's state says why
            log.warning("response_url not reachable: %s", e)

    def redraw(
        self,
        *,
        channel: str,
        ts: str,
        text: str,
        blocks: list[dict[str, Any]],
        via: Clicked | None = None,
    ) -> None:
        """Replace a message (`text` and `blocks` safe): through the interaction's
        response_url when it is the message clicked (no Web API call), else — or when the
        response_url is spent, expired or unreachable — with chat.update (SlackApiError where
        Slack refuses)."""
        if via is not None and via.of(channel, ts) and self._replace(via, text, blocks):
            return
        self.client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks)

    def _replace(self, via: Clicked, text: str, form: list[dict[str, Any]]) -> bool:
        body = {"text": text, "blocks": form, "replace_original": True}
        try:
            if isinstance(self.client, KeepAliveWebClient):  # a kept-alive connection
                status, said = self.client.respond(via.response_url, body)
            else:
                sent = WebhookClient(via.response_url, timeout=10).send_dict(body)
                status, said = sent.status_code, sent.body
        except Exception as e:  # chat.update instead
            log.info("response_url not reachable (%s); chat.update instead", e)
            return False
        if status != 200:  # expired_url, used_url: chat.update instead
            log.info("response_url refused (%s %s); chat.update instead", status, said)
            return False
        return True

    def thread_link(self, run: Run) -> str | None:
        """The run's thread as a link (chat.getPermalink), or None."""
        if not (run.channel and run.thread_ts):
            return None
        try:
            answer = self.client.chat_getPermalink(channel=run.channel, message_ts=run.thread_ts)
        except SlackApiError as e:
            log.info("run %s: no permalink (%s)", run.id, slack_error(e))
            return None
        return str(answer.get("permalink") or "") or None
