"""The Slack side of bot/core/names.py: what `users.info` says a user is called (scope
users:read), and which team they belong to (who may read a close: bot/slack/close_readers.py).
One answer serves both: a person is asked of Slack once for a while, whatever asks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.core.names import Lookup, Names, Profile
from bot.store import Store

KEPT_FOR = 600.0  # seconds a users.info answer (or its refusal) serves every part that asks


def profile_of(user: dict[str, Any]) -> Profile:
    """A users.info user object's real and display names and handle."""
    profile = user.get("profile") or {}
    return Profile(
        real_name=str(profile.get("real_name") or user.get("real_name") or ""),
        display_name=str(profile.get("display_name") or ""),
        handle=str(user.get("name") or ""),
    )


def users_info(client: WebClient) -> Lookup:
    """A lookup through users.info: the profile's real and display names and the handle.
    Raises SlackApiError (user_not_found, missing_scope, …) for Names to fall back on."""

    def lookup(user_id: str) -> Profile:
        return profile_of(client.users_info(user=user_id).get("user") or {})

    return lookup


class SlackUsers:
    """users.info answers, kept KEPT_FOR seconds in memory, for every part that asks: the
    names (`lookup`, for Names, which keeps them in the store for a day), the teams (`teams`:
    who may read a close) and the org-wide identity (bot/slack/grid.py). A refusal is kept
    as long (raised again), so a failing look-up is not repeated on every message."""

    def __init__(self, client: WebClient, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.clock = clock
        self._kept: dict[str, tuple[float, dict[str, Any] | SlackApiError]] = {}
        self._lock = threading.Lock()

    def user(self, user_id: str) -> dict[str, Any]:
        """The user object; raises SlackApiError when Slack cannot say."""
        now = self.clock()
        with self._lock:
            kept = self._kept.get(user_id)
        if kept is None or now - kept[0] >= KEPT_FOR:
            try:
                found: dict[str, Any] | SlackApiError = dict(
                    self.client.users_info(user=user_id).get("user") or {}
                )
            except SlackApiError as e:
                found = e
            kept = (now, found)
            with self._lock:
                self._kept[user_id] = kept
        if isinstance(kept[1], SlackApiError):
            raise kept[1]
        return kept[1]

    def lookup(self, user_id: str) -> Profile:
        return profile_of(self.user(user_id))

    def teams(self, user_id: str) -> frozenset[str]:
        """The teams the person belongs to: their `team_id`, and in an org the workspaces of
        `enterprise_user.teams` (docs.slack.dev/reference/objects/user-object)."""
        user = self.user(user_id)
        grid = user.get("enterprise_user") or {}
        return frozenset(
            str(t)
            for t in (user.get("team_id"), *(grid.get("teams") or []))
            if isinstance(t, str) and t
        )


def slack_names(store: Store, client: WebClient, users: SlackUsers | None = None) -> Names:
    """Names looked up in Slack (cached in the store), through `users` when given."""
    return Names(store, users.lookup if users is not None else users_info(client))
