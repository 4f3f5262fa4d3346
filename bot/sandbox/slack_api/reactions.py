"""reactions.add, and a person's reaction clicked on the page."""

from __future__ import annotations

from typing import Any

from bot.sandbox.slack_api.workspace import BOT_USER, SlackError, Workspace


class ReactionMethods(Workspace):
    """Reactions on messages, the bot's and people's."""

    def m_reactions_add(self, p: dict[str, Any]) -> dict[str, Any]:
        self.react(p.get("channel"), p.get("timestamp"), p.get("name"), BOT_USER)
        return {}

    def react(self, channel: Any, ts: Any, name: Any, user: str, *, toggle: bool = False) -> None:
        self._bot_channel(channel) if user == BOT_USER else self.channel(channel)
        message = self.messages.get(str(ts or ""))
        if message is None or message["channel"] != channel:
            raise SlackError("message_not_found")
        if not isinstance(name, str) or not name.strip(":"):
            raise SlackError("invalid_name")
        name = name.strip(":")
        reaction = next((r for r in message["reactions"] if r["name"] == name), None)
        if reaction is None:
            reaction = {"name": name, "users": [], "count": 0}
            message["reactions"].append(reaction)
        if user in reaction["users"]:
            if not toggle:
                raise SlackError("already_reacted")
            reaction["users"].remove(user)
        else:
            reaction["users"].append(user)
        reaction["count"] = len(reaction["users"])
        message["reactions"] = [r for r in message["reactions"] if r["count"]]
        self._bump()
