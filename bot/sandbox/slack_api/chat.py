"""chat.postMessage, chat.update, chat.delete, chat.postEphemeral, chat.getPermalink."""

from __future__ import annotations

from typing import Any

from bot.sandbox.slack_api.streams import live_stream
from bot.sandbox.slack_api.workspace import (
    BOT_ID,
    BOT_USER,
    SlackError,
    Workspace,
    _public,
    may_post,
)


class ChatMethods(Workspace):
    """Posting, changing and deleting messages, ephemeral ones, and permalinks."""

    def m_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        may_post(channel.posting, threaded=bool(p.get("thread_ts")))
        text, blocks = self._content(p)
        thread_ts = self._thread_root(channel.id, p.get("thread_ts"))
        message = self.add_message(
            channel.id,
            text=text,
            blocks=blocks,
            thread_ts=thread_ts,
            user=BOT_USER,
            bot_id=BOT_ID,
        )
        if thread_ts:  # the bot spoke in the thread: its status there is cleared
            self.statuses.pop(f"{channel.id}:{thread_ts}", None)
        return {"channel": channel.id, "ts": message["ts"], "message": _public(message)}

    def m_chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        message = self.messages.get(str(p.get("ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        if message.get("bot_id") != BOT_ID:
            raise SlackError("cant_update_message")
        if live_stream(message, self.now()):
            # "The message is currently streaming text and cannot be edited" (chat.update's
            # errors, docs.slack.dev/reference/methods/chat.update): stop the stream first.
            raise SlackError("streaming_state_conflict")
        text, blocks = self._content(p)
        message.update(text=text, blocks=blocks, edited={"user": BOT_USER, "ts": self._ts()})
        # a stream that ended (stopped, past its lifetime, stopped by a person) becomes an
        # ordinary message: chat.update is how an app mends one Slack ended (python-slack-sdk
        # #1859 / PR #1880)
        message.pop("stream", None)
        return {"channel": channel.id, "ts": message["ts"], "text": text}

    def m_chat_delete(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        message = self.messages.get(str(p.get("ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        del self.messages[message["ts"]]
        return {"channel": channel.id, "ts": message["ts"]}

    def m_chat_postEphemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        user = p.get("user")
        if not isinstance(user, str) or not user:
            raise SlackError("user_not_found")
        if not self.auto_channels:
            if user not in self.people:
                raise SlackError("user_not_found")
            if user not in channel.members:
                raise SlackError("user_not_in_channel")
        text, blocks = self._content(p)
        ts = self.add_ephemeral(
            channel.id, user, text=text, blocks=blocks, thread_ts=p.get("thread_ts")
        )
        return {"message_ts": ts}

    def m_chat_getPermalink(self, p: dict[str, Any]) -> dict[str, Any]:
        """A link to a message; in the sandbox it opens the message's thread on the page."""
        channel = self.channel(p.get("channel"))
        message = self.messages.get(str(p.get("message_ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        thread = message.get("thread_ts") or message["ts"]
        return {"channel": channel.id, "permalink": f"{self.url}/#/{channel.id}/thread/{thread}"}
