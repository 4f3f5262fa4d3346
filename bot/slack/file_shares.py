"""Where a dropped file went: its `files.info` (asked again when Slack answers a transient
error such as `internal_error`), and the thread it was shared in.

Slack sends two events for one drop — the `message` (subtype `file_share`, with its
`thread_ts`) and `file_shared` (no thread) — in either order, and a `file_shared` can arrive
before the share is in `files.info`'s `shares`. The first event to arrive does the work, so
the thread of the other is kept as a hint (`Shares.hint`), and a file with no share in the
channel yet is asked about again, briefly, until its share or the hint says which thread.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

log = logging.getLogger(__name__)

# files.info errors that say "try again" (docs.slack.dev/reference/methods/files.info, Errors:
# internal_error, fatal_error, service_unavailable, request_timeout, ratelimited)
TRANSIENT = ("internal_error", "fatal_error", "service_unavailable", "request_timeout")
INFO_TRIES = 4
SHARE_WAIT = 5.0  # seconds a file_shared waits for its share (or the message's thread)


class Shares:
    """files.info with retries, and the thread each drop went to."""

    def __init__(self, client: WebClient, *, backoff: float = 0.5) -> None:
        self.client = client
        self.backoff = backoff
        self._hints: dict[str, str] = {}
        self._changed = threading.Condition()

    def hint(self, file_id: str, thread_ts: str) -> None:
        """The `message` event's thread for a file (whichever event came first)."""
        with self._changed:
            self._hints[file_id] = thread_ts
            self._changed.notify_all()

    def info(self, file_id: str) -> dict[str, Any]:
        """files.info's file; SlackApiError once a transient error has lasted INFO_TRIES."""
        for attempt in range(INFO_TRIES):
            try:
                return dict(self.client.files_info(file=file_id)["file"])
            except SlackApiError as e:
                error = str(e.response.get("error") or "")
                if error not in TRANSIENT or attempt == INFO_TRIES - 1:
                    raise
                log.info("file %s: files.info %s, asking again", file_id, error)
                time.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def located(
        self, file_id: str, info: dict[str, Any], channel: str, thread_ts: str | None
    ) -> tuple[dict[str, Any], str | None, str | None]:
        """(the file's info, its thread, its share's ts) in `channel`: the event's thread, else
        the share's, else the other event's hint — waiting up to SHARE_WAIT for a share that
        is not in files.info yet."""
        deadline = time.monotonic() + SHARE_WAIT
        while True:
            mine = [
                s
                for where in (info.get("shares") or {}).values()
                for s in (where or {}).get(channel) or []
            ]
            with self._changed:
                hinted = self._hints.get(file_id)
            thread = (
                thread_ts
                or next((s["thread_ts"] for s in mine if s.get("thread_ts")), None)
                or hinted
            )
            top = next((s.get("ts") for s in mine), None)
            if mine or thread or time.monotonic() >= deadline:
                return info, thread, top
            with self._changed:
                self._changed.wait_for(lambda: file_id in self._hints, timeout=0.5)
            with contextlib.suppress(SlackApiError):  # else keep what was read
                info = self.info(file_id)
