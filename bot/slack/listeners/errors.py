"""Bolt's catch-all for errors: an unhandled request is acknowledged in one log line, a
listener's failure is logged with context and the person told where that is possible."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_bolt.error import BoltUnhandledRequestError
from slack_bolt.response import BoltResponse

from bot.core.errors import ReplayedError, StorageError
from bot.slack.close_start import storage_text
from bot.slack.listeners.shared import Deps, bind

log = logging.getLogger(__name__)

SOMETHING_WENT_WRONG = (
    "Something went wrong on my side and nothing was changed; please try again. "
    "If it keeps happening, tell whoever runs closebot."
)


def register(app: App, deps: Deps) -> None:
    app.error(bind(on_error, deps))


def on_error(
    deps: Deps, error: Exception, body: dict[str, Any], response: BoltResponse | None
) -> None:
    """Log with context, and tell the person where that is possible."""
    if isinstance(error, BoltUnhandledRequestError):  # acknowledged: Slack needs a 2xx
        log.info("unhandled %s: acknowledged", request_kind(body))
        if response is not None:
            response.status, response.body = 200, ""
        return
    if isinstance(error, ReplayedError):  # a concurrent duplicate delivery: answered once
        log.info("a duplicate delivery was ignored (%s)", error)
        if response is not None:
            response.status, response.body = 200, ""
        return
    body = body if isinstance(body, dict) else {}
    user = (body.get("user") or {}).get("id") if isinstance(body.get("user"), dict) else None
    user = user or body.get("user_id") or (body.get("event") or {}).get("user")
    channel = (
        (body.get("channel") or {}).get("id") if isinstance(body.get("channel"), dict) else None
    )
    channel = channel or body.get("channel_id") or (body.get("event") or {}).get("channel")
    log.error(
        "listener failed: %s: %s (type=%s user=%s channel=%s)",
        type(error).__name__,
        error,
        body.get("type") or body.get("command"),
        user,
        channel,
        exc_info=error,
    )
    if isinstance(error, StorageError):  # the database, not the request: no 500, say so
        if response is not None:
            response.status, response.body = 200, ""
        text = storage_text(error)
    else:
        text = SOMETHING_WENT_WRONG
    if user and channel:
        work = deps.work
        work.runner.side(
            lambda: work.presenter.ephemeral(
                channel=str(channel), user=str(user), thread_ts=None, text=text
            )
        )


def request_kind(body: Any) -> str:
    """What a request is, in a word or two, for the log: 'event member_joined_channel'."""
    if not isinstance(body, dict):
        return "request"
    event = body.get("event")
    if isinstance(event, dict):
        return f"event {event.get('type')}"
    if body.get("command"):
        return f"command {body.get('command')}"
    return str(body.get("type") or "request")
