"""Slack's rate limits, per Web API method, and the fake's meter of them.

Slack limits each method "per API method per workspace/team per app" to its documented tier
(https://docs.slack.dev/apis/web-api/rate-limits): Tier 1 1+ a minute, Tier 2 20+, Tier 3
50+, Tier 4 100+, and "special" methods their own (chat.postMessage about one a second per
channel). Past it, Slack answers HTTP 429 `ratelimited` with a Retry-After header in seconds.

The fake holds every call to these limits, as sliding windows of a minute on its clock
(clock.py): the floor of each tier, bursts allowed within the minute. `LIMITS` is the one
table; each row names the method page it was read from. A test that is not about rate
limits may `scale` the allowances or turn them `off`; the default (every test, the sandbox)
is Slack's.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from bot.sandbox.slack_api.clock import FakeClock

WINDOW = 60.0  # seconds: every tier is "per minute"
TIER = {1: 1, 2: 20, 3: 50, 4: 100}  # calls a minute, the floor of each documented tier
# conversations.history / .replies for a commercially distributed app outside the Marketplace
# (closebot): 1 request a minute, and `limit` at most (and by default) 15 objects
# (https://docs.slack.dev/reference/methods/conversations.history, "This method has
# different rates for non-Marketplace commercially distributed apps", 2025-05-29; existing
# installations too from 2026-03-03).
HISTORY_PAGE = 15
# assistant.threads.setStatus: "A two minute timeout applies, which will cause the status to
# be removed if no message has been sent"
# (https://docs.slack.dev/reference/methods/assistant.threads.setStatus).
STATUS_SECONDS = 120.0


@dataclass(frozen=True)
class Limit:
    """At most `per_minute` calls of a method in any minute, counted for the whole workspace
    or for each channel (`per="channel"`: the call's `channel` / `channel_id`)."""

    per_minute: int
    per: str = "workspace"
    doc: str = ""


def _page(method: str) -> str:
    return f"https://docs.slack.dev/reference/methods/{method}"


LIMITS: dict[str, Limit] = {
    # Special: "one message per second per channel", short bursts allowed (rate-limits page)
    "chat.postMessage": Limit(60, "channel", _page("chat.postMessage")),
    "chat.update": Limit(TIER[3], doc=_page("chat.update")),  # Tier 3
    "chat.delete": Limit(TIER[3], doc=_page("chat.delete")),  # Tier 3
    "chat.postEphemeral": Limit(TIER[4], doc=_page("chat.postEphemeral")),  # Tier 4
    # Special: "This method allows hundreds of requests per minute"
    "chat.getPermalink": Limit(2 * TIER[4], doc=_page("chat.getPermalink")),
    # Tier 2 (SLACK.md; the method pages), appendStream Tier 4
    "chat.startStream": Limit(TIER[2], doc=_page("chat.startStream")),
    "chat.appendStream": Limit(TIER[4], doc=_page("chat.appendStream")),
    "chat.stopStream": Limit(TIER[2], doc=_page("chat.stopStream")),
    "reactions.add": Limit(TIER[3], doc=_page("reactions.add")),  # Tier 3
    "files.getUploadURLExternal": Limit(TIER[4], doc=_page("files.getUploadURLExternal")),
    "files.completeUploadExternal": Limit(TIER[4], doc=_page("files.completeUploadExternal")),
    "files.info": Limit(TIER[4], doc=_page("files.info")),  # Tier 4
    # 1 a minute for non-Marketplace commercially distributed apps (Tier 3 otherwise)
    "conversations.history": Limit(1, doc=_page("conversations.history")),
    "conversations.replies": Limit(1, doc=_page("conversations.replies")),
    "conversations.info": Limit(TIER[3], doc=_page("conversations.info")),  # Tier 3
    "conversations.members": Limit(TIER[4], doc=_page("conversations.members")),  # Tier 4
    "conversations.open": Limit(TIER[3], doc=_page("conversations.open")),  # Tier 3
    "users.info": Limit(TIER[4], doc=_page("users.info")),  # Tier 4
    "views.publish": Limit(TIER[4], doc=_page("views.publish")),  # Tier 4
    "views.open": Limit(TIER[4], doc=_page("views.open")),  # Tier 4
    "auth.test": Limit(TIER[4], doc=_page("auth.test")),  # Special; held to Tier 4 here
    # Special, not given as a number on the page; about one a second (slack-morphism's
    # assistant.rs holds it to 1/s), here 60 a minute for the workspace
    "assistant.threads.setStatus": Limit(60, doc=_page("assistant.threads.setStatus")),
    "assistant.threads.setSuggestedPrompts": Limit(
        TIER[4], doc=_page("assistant.threads.setSuggestedPrompts")
    ),
}


class RateMeter:
    """Each method's calls in the last minute of the fake's clock; says when one is one too many."""

    def __init__(self, clock: FakeClock, limits: dict[str, Limit] | None = None) -> None:
        self.clock = clock
        self.limits = dict(LIMITS if limits is None else limits)
        self.factor = 1.0  # scale(): allowances multiplied, for a test that is not about them
        self.enabled = True
        self.refused: list[tuple[str, int]] = []  # (method, Retry-After) of each 429 answered
        self._seen: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def scale(self, factor: float) -> None:
        """Allow `factor` times Slack's calls a minute (a test not about rate limits)."""
        self.factor = factor

    def off(self) -> None:
        self.enabled = False

    def on(self) -> None:
        self.enabled = True

    def allowance(self, method: str) -> int | None:
        limit = self.limits.get(method)
        return None if limit is None else max(1, math.floor(limit.per_minute * self.factor))

    def check(self, method: str, params: dict[str, Any]) -> int | None:
        """None when the call may go ahead (and it is counted), else its Retry-After in seconds."""
        limit = self.limits.get(method)
        if not self.enabled or limit is None:
            return None
        key = ""
        if limit.per == "channel":
            key = str(params.get("channel") or params.get("channel_id") or "")
        allowed = self.allowance(method) or 1
        now = self.clock.now()
        with self._lock:
            seen = self._seen.setdefault((method, key), deque())
            while seen and seen[0] <= now - WINDOW:
                seen.popleft()
            if len(seen) >= allowed:
                wait = max(1, math.ceil(seen[0] + WINDOW - now))
                self.refused.append((method, wait))
                return wait
            seen.append(now)
            return None
