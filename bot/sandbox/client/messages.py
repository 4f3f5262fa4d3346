"""A person's messages, files, slash commands and App Home visits, as the events and
requests Slack sends the bot (and Slackbot's replies when a command fails)."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from bot.sandbox.client.sending import (
    APP_ID,
    SLACKBOT,
    ActionError,
    SlackSender,
    _handle,
)
from bot.sandbox.slack_api import BOT_ID, BOT_USER, TEAM_ID


class MessageActions(SlackSender):
    """What a person types or drops into a conversation, or opens."""

    def say(
        self, *, user: str, channel: str, text: str, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """A person pressed Enter in a composer: a slash command, or a message and its events."""
        self._user(user)
        text = text.strip()
        if not text:
            raise ActionError("type a message first")
        with self.fake.lock:
            chan = self.fake.channel(channel)
            if user not in chan.members:
                raise ActionError(f"{user} is not in #{chan.name}")
        if text.startswith("/"):
            command, _, rest = text.partition(" ")
            return self.command(
                user=user, channel=channel, command=command, text=rest.strip(), thread_ts=thread_ts
            )
        with self.fake.lock:
            root = self.fake.messages.get(thread_ts or "")
            thread = (root.get("thread_ts") or root["ts"]) if root else None
            message = self.fake.add_message(
                channel,
                text=self._mentions(text),
                user=user,
                thread_ts=thread,
                client_msg_id=str(uuid.uuid4()),
                blocks=[],
            )
        inner: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "user": user,
            "text": message["text"],
            "ts": message["ts"],
            "event_ts": message["ts"],
            "channel_type": "im" if channel.startswith("D") else "channel",
            "client_msg_id": message["client_msg_id"],
            "team": TEAM_ID,
        }
        if thread:
            inner["thread_ts"] = thread
        self._emit(inner)
        if f"<@{BOT_USER}>" in message["text"]:
            self._emit({**inner, "type": "app_mention"} | {"channel_type": None})
        return {"ok": True, "ts": message["ts"]}

    def share_file(
        self,
        *,
        user: str,
        channel: str,
        name: str,
        data: bytes,
        thread_ts: str | None = None,
        text: str = "",
    ) -> dict[str, Any]:
        """A person dropped a file into a conversation: Slack keeps it, and sends the bot a
        `message` event with subtype `file_share` and a `file_shared` event."""
        self._user(user)
        name = name.replace("/", "_").replace("\\", "_").strip() or "file"
        if not data:
            raise ActionError("the file is empty")
        with self.fake.lock:
            chan = self.fake.channel(channel)
            if user not in chan.members:
                raise ActionError(f"{user} is not in #{chan.name}")
            root = self.fake.messages.get(thread_ts or "")
            thread = (root.get("thread_ts") or root["ts"]) if root else None
            message, f = self.fake.share_file(
                user=user, channel=channel, thread_ts=thread, name=name, data=data, text=text
            )
        inner: dict[str, Any] = {
            "type": "message",
            "subtype": "file_share",
            "channel": channel,
            "user": user,
            "text": text,
            "ts": message["ts"],
            "event_ts": message["ts"],
            "channel_type": "im" if channel.startswith("D") else "channel",
            "upload": True,
            "display_as_bot": False,
            "files": [{k: v for k, v in f.items() if k != "shares"}],
            "team": TEAM_ID,
        }
        if thread:
            inner["thread_ts"] = thread
        self._emit(inner)
        self._emit(
            {
                "type": "file_shared",
                "channel_id": channel,
                "file_id": f["id"],
                "user_id": user,
                "file": {"id": f["id"]},
                "event_ts": message["ts"],
            }
        )
        return {"ok": True, "ts": message["ts"], "file": f["id"]}

    def home_opened(self, *, user: str, tab: str = "home") -> dict[str, Any]:
        """A person opened closebot's App Home (its Home or Messages tab)."""
        self._user(user)
        self._emit(
            {
                "type": "app_home_opened",
                "user": user,
                "channel": f"D{user}",
                "tab": tab,
                "event_ts": f"{time.time():.6f}",
            }
        )
        return {"ok": True}

    def _mentions(self, text: str) -> str:
        """'@closebot' and '@ben' become <@U…> mentions, as Slack's composer makes them."""
        names = {_handle(p.name): p.id for p in self.fake.people.values()}
        names.update({p.name.split()[0].lower(): p.id for p in self.fake.people.values()})

        def swap(m: re.Match[str]) -> str:
            found = names.get(m.group(1).lower())
            return f"<@{found}>" if found else m.group(0)

        return re.sub(r"(?<![<\w])@([A-Za-z][\w.-]*)", swap, text)

    def command(
        self, *, user: str, channel: str, command: str, text: str, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """A slash command: known ones go to the bot, others get Slackbot's reply."""
        if command != "/close":
            self._slackbot(
                channel,
                user,
                f"`{command}` is not a valid command. In Slack, all messages that start with "
                'the "/" character are interpreted as commands. Try `/close 2026-10`.',
                thread_ts,
            )
            return {"ok": False, "error": "invalid_command"}
        chan = self.fake.channel(channel)
        person = self._user(user)
        delivery = self._form(
            {
                "token": "sandbox-verification-token",
                "team_id": TEAM_ID,
                "team_domain": "sandbox",
                "channel_id": channel,
                "channel_name": chan.name,
                "user_id": user,
                "user_name": person["username"],
                "command": command,
                "text": text,
                "api_app_id": APP_ID,
                "is_enterprise_install": "false",
                "response_url": self.fake.response_url(channel=channel, user=user, message_ts=None),
                "trigger_id": self.fake.issue_trigger(user),
            }
        )
        if not delivery.ok:
            self._slackbot(
                channel, user, f'{command} failed with the error "dispatch_failed"', thread_ts
            )
            return {"ok": False, "error": "dispatch_failed", "status": delivery.status}
        reply = delivery.json()
        if isinstance(reply, dict) and (reply.get("text") or reply.get("blocks")):
            kind = reply.get("response_type", "ephemeral")
            with self.fake.lock:
                if kind == "in_channel":
                    self.fake.add_message(
                        channel,
                        text=reply.get("text") or "",
                        blocks=reply.get("blocks") or [],
                        user=BOT_USER,
                        bot_id=BOT_ID,
                    )
                else:
                    self.fake.add_ephemeral(
                        channel,
                        user,
                        text=reply.get("text") or "",
                        blocks=reply.get("blocks") or [],
                        thread_ts=thread_ts,
                    )
        elif delivery.body and not isinstance(reply, dict | list):
            with self.fake.lock:
                self.fake.add_ephemeral(
                    channel, user, text=delivery.body.decode(errors="replace"), thread_ts=thread_ts
                )
        return {"ok": True, "seconds": round(delivery.seconds, 3)}

    def _slackbot(self, channel: str, user: str, text: str, thread_ts: str | None) -> None:
        with self.fake.lock:
            self.fake.add_ephemeral(
                channel, user, text=text, user=SLACKBOT, bot_id=None, thread_ts=thread_ts
            )
