"""Streamed messages: chat.startStream, chat.appendStream, chat.stopStream (markdown text,
plan and task chunks, blocks at the end), and how a stream ends without the app: Slack's
lifetime, or a person's stop.

A stream's states: `streaming`; `stopped` (the app's chat.stopStream); `expired` (Slack ended
it: the message shows a broken placeholder until chat.update replaces it); `stopped_by_user`
(a person pressed Stop: what was streamed stays, the app hears `agent_session_stopped`).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from bot.sandbox.blockkit import TASK_DISPLAY_MODES, chunk_problems
from bot.sandbox.slack_api.workspace import (
    BOT_ID,
    BOT_USER,
    SlackError,
    Workspace,
    _public,
    may_post,
)

# Slack ends a chat.startStream message about five minutes after it starts, appended to or not:
# appendStream and stopStream then answer `message_not_in_streaming_state`, and the message is
# "stuck as a broken pill in the UI" until chat.update replaces it. Undocumented on the method
# pages; observed and confirmed in python-slack-sdk #1859 (fixed by PR #1880, which exposes the
# stream's ts for that chat.update) and node-slack-sdk #2702 ("automatically closed after
# approximately 5 minutes, even if we continue sending updates").
STREAM_LIFETIME = timedelta(minutes=5)


def live_stream(message: dict[str, Any], now: float) -> bool:
    """Whether `message` is a stream still streaming at `now`; one past its lifetime is marked
    `expired` on the way (what Slack shows from then on)."""
    stream = message.get("stream")
    if not stream or stream.get("state") != "streaming":
        return False
    if now >= float(stream.get("ends_at") or "inf"):
        stream["state"] = "expired"
        return False
    return True


class StreamMethods(Workspace):
    """A streamed reply, chunk by chunk, until it stops (or Slack, or a person, stops it)."""

    # How long Slack keeps a stream open (STREAM_LIFETIME); a test shortens it, or moves the
    # workspace's clock on with advance().
    stream_lifetime: timedelta = STREAM_LIFETIME

    def _chunks(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        chunks = p.get("chunks")
        if isinstance(chunks, str):
            chunks = json.loads(chunks)
        chunks = list(chunks or [])
        if p.get("markdown_text"):
            chunks.insert(0, {"type": "markdown_text", "text": p["markdown_text"]})
        found = chunk_problems(chunks)
        if found:
            raise SlackError("invalid_chunks", found)
        return chunks

    @staticmethod
    def _apply_chunks(stream: dict[str, Any], chunks: list[dict[str, Any]]) -> None:
        for chunk in chunks:
            kind = chunk["type"]
            if kind == "markdown_text":
                stream["text"] += chunk["text"]
            elif kind == "plan_update":
                stream["title"] = chunk["title"]
            elif kind == "blocks":
                stream["blocks"] += chunk["blocks"]
            else:
                task = {
                    k: chunk[k]
                    for k in ("id", "title", "status", "details", "output")
                    if k in chunk
                }
                tasks = stream["tasks"]
                at = next((i for i, t in enumerate(tasks) if t["id"] == task["id"]), None)
                if at is None:
                    tasks.append(task)
                else:
                    tasks[at] = {**tasks[at], **task}

    def m_chat_startStream(self, p: dict[str, Any]) -> dict[str, Any]:
        """A streamed reply: in a channel (not a DM) Slack needs whom it answers
        (`recipient_user_id`, `recipient_team_id`)."""
        channel = self._bot_channel(p.get("channel"))
        # A streamed message is a message in the channel: its posting rule refuses it as it
        # refuses chat.postMessage (documented there, not on this method's page: assumed).
        may_post(channel.posting, threaded=bool(p.get("thread_ts")))
        if channel.id[0] != "D":
            if not p.get("recipient_user_id"):
                raise SlackError("missing_recipient_user_id")
            if not p.get("recipient_team_id"):
                raise SlackError("missing_recipient_team_id")
            # "The encoded ID of the team the user receiving the streaming text belongs to"
            # (docs.slack.dev/reference/methods/chat.startStream): not the app's own team
            # when that user is a Slack Connect guest or in an org's other workspace.
            person = self.people.get(str(p.get("recipient_user_id")))
            if person is not None and p.get("recipient_team_id") != person.team:
                raise SlackError(
                    "invalid_arguments",
                    ["recipient_team_id: must be the team recipient_user_id belongs to"],
                )
        mode = p.get("task_display_mode") or "timeline"
        if mode not in TASK_DISPLAY_MODES:
            raise SlackError("invalid_arguments", ["task_display_mode: must be timeline or plan"])
        chunks = self._chunks(p)
        thread_ts = self._thread_root(channel.id, p.get("thread_ts"))
        stream: dict[str, Any] = {
            "mode": mode,
            "state": "streaming",
            "title": None,
            "tasks": [],
            "text": "",
            "blocks": [],
            "recipient": p.get("recipient_user_id"),
            "started": self.now(),
            "ends_at": self.now() + self.stream_lifetime.total_seconds(),
        }
        self._apply_chunks(stream, chunks)
        message = self.add_message(
            channel.id, text="", thread_ts=thread_ts, user=BOT_USER, bot_id=BOT_ID, stream=stream
        )
        if thread_ts:
            self.statuses.pop(f"{channel.id}:{thread_ts}", None)
        return {"channel": channel.id, "ts": message["ts"]}

    def _streaming(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        message = self.messages.get(str(p.get("ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        if message.get("bot_id") != BOT_ID:
            raise SlackError("message_not_owned_by_app")
        if not live_stream(message, self.now()):
            # stopped by the app or a person, or past Slack's lifetime (STREAM_LIFETIME): the
            # one error chat.appendStream / chat.stopStream document for "not streaming"
            raise SlackError("message_not_in_streaming_state")
        return message

    def m_chat_appendStream(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(p)
        chunks = self._chunks(p)
        if not chunks:
            raise SlackError("no_text")
        self._apply_chunks(message["stream"], chunks)
        self._bump()
        return {"channel": message["channel"], "ts": message["ts"]}

    def m_chat_stopStream(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(p)
        chunks = self._chunks(p)
        blocks = p.get("blocks") or []
        if blocks:
            _, blocks = self._content({"blocks": blocks})
        self._apply_chunks(message["stream"], chunks)
        message["stream"]["state"] = "stopped"
        message["blocks"] = blocks
        self._bump()
        return {"channel": message["channel"], "ts": message["ts"], "message": _public(message)}

    def stop_streams_by_user(self, channel: str, thread_ts: str, user: str) -> list[str]:
        """A person pressed Slack's Stop on the app's work in a thread: Slack stops the app's
        streams there that are still streaming (what was streamed stays readable) and tells the
        app with an `agent_session_stopped` event listing them in `streaming_message_ts`
        (docs.slack.dev/reference/events/agent_session_stopped; sent by the sandbox's client).
        Appending to or stopping them then answers `message_not_in_streaming_state`: Slack's
        method pages document no error of their own for a stream a person stopped. The ts of
        the streams stopped, oldest first."""
        stopped = []
        with self._changed:
            for message in self._sorted():
                if (
                    message["channel"] == channel
                    and (message.get("thread_ts") or message["ts"]) == thread_ts
                    and message.get("bot_id") == BOT_ID
                    and live_stream(message, self.now())
                ):
                    message["stream"]["state"] = "stopped_by_user"
                    message["stream"]["stopped_by"] = user
                    stopped.append(message["ts"])
            self._bump()
        return stopped

    def _time_passed(self) -> None:
        super()._time_passed()
        now = self.now()
        for message in self.messages.values():
            live_stream(message, now)  # a stream past its lifetime shows as ended

    def sorted_messages(self) -> list[dict[str, Any]]:
        self._time_passed()  # the page shows streams as Slack would now
        return super().sorted_messages()
