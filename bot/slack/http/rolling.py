"""A rolling deploy: while a newer closebot has migrated the database, this (older) process
stops taking work and says so, instead of reading rows shaped for code it does not have.

The server asks `Store.newer_schema()` before handing a signed request to Bolt; a request it
refuses is answered here without touching the database: a slash command gets a private
"being upgraded" answer, a button a private notice, an event a 200 (Slack would retry a 5xx
up to three times, at this same process if the load balancer keeps it). `/healthz` is 503
with the reason meanwhile (Store.health), so the load balancer moves traffic to the newer
process; the watchdog and every run's lease step aside too.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING, Any

from bot.slack.http import edge

if TYPE_CHECKING:
    from bot.slack.app import Service

log = logging.getLogger(__name__)

UPGRADING = "closebot is being upgraded, try again in a minute."


def _is_run_thread(service: Service, channel: str, thread_ts: str) -> bool:
    try:  # runs' channel and thread_ts have been there since the first release
        return service.store.runs.has_thread(channel=channel, thread_ts=thread_ts)
    except sqlite3.Error:
        return False


def while_upgrading(service: Service, checked: edge.Checked) -> tuple[int, dict[str, Any] | None]:
    """(HTTP status, JSON body or None) for a signed request this process will not serve;
    a private notice goes to the person where Slack shows nothing else."""
    body, kind = checked.body, checked.kind
    if kind.startswith("command:"):
        return 200, {"response_type": "ephemeral", "text": UPGRADING}
    if kind == "options":
        return 200, {"options": []}
    user: str | None
    channel: str | None
    thread_ts: str | None
    if kind.startswith("event:"):
        event = body.get("event") or {}
        user, channel = event.get("user"), event.get("channel")
        thread_ts = event.get("thread_ts")
        person = bool(user and channel) and not event.get("bot_id") and not event.get("subtype")
        tell = person and (
            kind == "event:app_mention"
            or bool(thread_ts and _is_run_thread(service, str(channel), str(thread_ts)))
        )
    else:  # a button or a form: Slack shows the person nothing unless told
        container = body.get("container") or {}
        user = (body.get("user") or {}).get("id")
        channel = (body.get("channel") or {}).get("id") or container.get("channel_id")
        thread_ts = container.get("thread_ts")
        tell = bool(user and channel)
    if tell:
        presenter = service.presenter
        service.runner.side(
            lambda: presenter.ephemeral(
                channel=str(channel), user=str(user), thread_ts=thread_ts, text=UPGRADING
            )
        )
    return 200, None
