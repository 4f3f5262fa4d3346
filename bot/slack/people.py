"""The Slack side of bot/core/names.py: what `users.info` says a user is called (scope users:read)."""

from __future__ import annotations

from slack_sdk import WebClient

from bot.core.names import Lookup, Names, Profile
from bot.store import Store


def users_info(client: WebClient) -> Lookup:
    """A lookup through users.info: the profile's real and display names and the handle.
    Raises SlackApiError (user_not_found, missing_scope, …) for Names to fall back on."""

    def lookup(user_id: str) -> Profile:
        user = client.users_info(user=user_id).get("user") or {}
        profile = user.get("profile") or {}
        return Profile(
            real_name=str(profile.get("real_name") or user.get("real_name") or ""),
            display_name=str(profile.get("display_name") or ""),
            handle=str(user.get("name") or ""),
        )

    return lookup


def slack_names(store: Store, client: WebClient) -> Names:
    """Names looked up in Slack (cached in the store)."""
    return Names(store, users_info(client))
