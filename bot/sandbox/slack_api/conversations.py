"""conversations.replies, .history, .info, .members and .open, and users.info (people as Slack's
user objects)."""

from __future__ import annotations

from typing import Any

from bot.sandbox.slack_api.tiers import HISTORY_PAGE
from bot.sandbox.slack_api.workspace import (
    BOT_USER,
    ENTERPRISE_ID,
    Channel,
    Person,
    SlackError,
    Workspace,
    _public,
)


def user_object(person: Person, team_id: str) -> dict[str, Any]:
    """A person as Slack's user object: `name` is the handle, the profile has the real and
    display names (display_name may be empty in Slack; here it is the first name)."""
    first, _, last = person.name.partition(" ")
    handle = ".".join(person.name.lower().split()) or person.id.lower()
    bot = person.id == BOT_USER
    return {
        "id": person.id,
        "team_id": team_id,
        "name": handle,
        "deleted": False,
        "color": person.color.lstrip("#"),
        "real_name": person.name,
        "tz": "America/Chicago",
        "tz_label": "Central Standard Time",
        "tz_offset": -21600,
        "profile": {
            "title": person.title,
            "phone": "",
            "skype": "",
            "real_name": person.name,
            "real_name_normalized": person.name,
            "display_name": first,
            "display_name_normalized": first,
            "status_text": "",
            "status_emoji": "",
            "avatar_hash": "",
            "first_name": first,
            "last_name": last,
            "team": team_id,
        },
        # docs.slack.dev/reference/objects/user-object: is_admin, is_owner, is_primary_owner
        # (an owner is an admin too; the primary owner is an owner)
        "is_admin": person.role in ("admin", "owner", "primary_owner"),
        "is_owner": person.role in ("owner", "primary_owner"),
        "is_primary_owner": person.role == "primary_owner",
        "is_restricted": False,
        "is_ultra_restricted": False,
        "is_bot": bot,
        "is_app_user": False,
        "updated": 1_761_000_000,
        # an Enterprise Grid member's org-wide identity, in the shape of Slack's own sample
        # (slackapi/java-slack-sdk json-logs/samples/api/users.info.json: `enterprise_user`
        # with id, enterprise_id, enterprise_name, is_admin, is_owner, teams)
        **(
            {
                "enterprise_user": {
                    "id": person.enterprise_user,
                    "enterprise_id": ENTERPRISE_ID,
                    "enterprise_name": "Sandbox Org",
                    "is_admin": False,
                    "is_owner": False,
                    "teams": [team_id],
                }
            }
            if person.enterprise_user
            else {}
        ),
    }


class ConversationMethods(Workspace):
    """Reading threads and channels, opening the bot's DM with a person, and people."""

    def m_conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        root = self.messages.get(str(p.get("ts") or ""))
        if root is None or root["channel"] != channel.id:
            raise SlackError("thread_not_found")
        ts = root.get("thread_ts") or root["ts"]
        thread = [m for m in self._sorted() if m["ts"] == ts or m.get("thread_ts") == ts]
        # at most (and by default) 15 for a non-Marketplace distributed app (tiers.py)
        limit = max(1, min(int(p.get("limit") or HISTORY_PAGE), HISTORY_PAGE))
        start = int(p.get("cursor") or 0)
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        return {
            "messages": [_public(m) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def m_conversations_history(self, p: dict[str, Any]) -> dict[str, Any]:
        """A channel's top-level messages, newest first, from `oldest` on."""
        channel = self._bot_channel(p.get("channel"))
        oldest = float(p.get("oldest") or 0)
        top = [
            m
            for m in reversed(self._sorted())
            if m["channel"] == channel.id
            and m.get("thread_ts") in (None, m["ts"])
            and float(m["ts"]) >= oldest
        ]
        # at most (and by default) 15 for a non-Marketplace distributed app (tiers.py)
        limit = max(1, min(int(p.get("limit") or HISTORY_PAGE), HISTORY_PAGE))
        start = int(p.get("cursor") or 0)
        page = top[start : start + limit]
        more = start + limit < len(top)
        return {
            "messages": [_public(m) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def m_conversations_info(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self.channel(p.get("channel"))
        return {
            "channel": {
                "id": channel.id,
                "name": channel.name,
                "is_channel": True,
                "is_member": BOT_USER in channel.members,
            }
        }

    def m_conversations_members(self, p: dict[str, Any]) -> dict[str, Any]:
        """The user ids of a conversation's members, a page at a time, as Slack answers
        (docs.slack.dev/reference/methods/conversations.members): `limit` "under 1000"
        (`invalid_limit` otherwise), `cursor` from the last page's
        `response_metadata.next_cursor` (`invalid_cursor` for one it never gave). A private
        channel or DM the bot is not in is `channel_not_found` to it, as Slack hides
        conversations a token cannot see (docs.slack.dev/apis/web-api/using-the-conversations-api)."""
        channel = self.channel(p.get("channel"))
        if channel.id[0] in "GD" and BOT_USER not in channel.members:
            raise SlackError("channel_not_found")
        try:
            limit = int(p.get("limit") or 100)
            start = int(p.get("cursor") or 0)
        except (TypeError, ValueError):
            raise SlackError("invalid_cursor") from None
        if not 0 < limit < 1000:
            raise SlackError("invalid_limit")
        members = sorted(channel.members)
        if not 0 <= start <= len(members):
            raise SlackError("invalid_cursor")
        page, more = members[start : start + limit], start + limit < len(members)
        return {
            "members": page,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def m_conversations_open(self, p: dict[str, Any]) -> dict[str, Any]:
        """The bot's DM with one person (the App Home's Messages tab), opened if need be:
        {"ok": true, "no_op": true, "already_open": true, "channel": {"id": "D…"}} as Slack
        answers for an IM that exists (docs.slack.dev/reference/methods/conversations.open)."""
        users = [u.strip() for u in str(p.get("users") or "").split(",") if u.strip()]
        if p.get("channel"):
            channel = self.channel(p["channel"])
            return {"no_op": True, "already_open": True, "channel": {"id": channel.id}}
        if not users:
            raise SlackError("users_list_not_supplied")
        if len(users) > 1:
            raise SlackError("method_not_supported_for_channel_type")  # an MPIM: not closebot's
        user = users[0]
        if user not in self.people and not (self.auto_channels and user[:1] in ("U", "W")):
            raise SlackError("user_not_found")
        found = f"D{user}" in self.channels
        channel = self.channels.setdefault(
            f"D{user}", Channel(f"D{user}", "closebot", {BOT_USER, user})
        )
        return {"no_op": found, "already_open": found, "channel": {"id": channel.id}}

    def m_users_info(self, p: dict[str, Any]) -> dict[str, Any]:
        """users.info as Slack answers it: the user object with its profile (the fields of
        Slack's own sample, slackapi/java-slack-sdk json-logs/samples/api/users.info.json)."""
        user = str(p.get("user") or "")
        person = self.people.get(user)
        if person is None and self.auto_channels and user[:1] in ("U", "W"):
            person = Person(user, user[1:].title())  # a test's made-up colleague
        if person is None:
            raise SlackError("user_not_found")
        return {"user": user_object(person, person.team)}
