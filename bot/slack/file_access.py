"""Who may give closebot a period's data by dropping a file (issue 31): the close's starter
(in the thread of their close), an approver, or someone in CLOSEBOT_FINANCE; in the DM, where
no close is named, an approver or finance only. Anyone else's file is not fetched, not kept;
the refusal is audited and told to the dropper alone."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.blocks import outgoing
from bot.core.identity import one_of
from bot.store import Store

log = logging.getLogger(__name__)

REFUSED = (
    "I did not read {name}: only the close's starter, an approver or someone in finance "
    "(CLOSEBOT_FINANCE) may give me a period's data. Nothing was read or kept."
)


def may_drop(user: str, starter: str | None, trusted: Iterable[str]) -> bool:
    """`user` is the starter of the close the file is dropped into, or one of `trusted`."""
    return one_of(user, {*trusted, *([starter] if starter else [])})


def refuse_drop(
    store: Store,
    client: WebClient,
    user: str,
    name: str,
    file_id: str,
    *,
    channel: str,
    thread_ts: str | None,
    run_id: str | None,
) -> None:
    """Not read, not kept; the refusal audited and told to the dropper alone (in the DM, a
    reply; in a channel, an ephemeral message)."""
    store.audit.record(
        run_id=run_id,
        kind="file_drop_refused",
        actor=user,
        detail={"file": file_id, "filename": name, "channel": channel},
    )
    text = outgoing(REFUSED.format(name=name))
    try:
        if channel.startswith("D"):
            client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        else:
            client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=text)
    except SlackApiError as e:
        log.warning("file %s: refusal not told: %s", file_id, e.response.get("error"))
