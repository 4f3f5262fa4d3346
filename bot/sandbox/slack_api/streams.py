"""Streamed messages: chat.startStream, chat.appendStream, chat.stopStream (markdown text,
plan and task chunks, blocks at the end)."""

from __future__ import annotations

import json
from typing import Any

from bot.sandbox.blockkit import TASK_DISPLAY_MODES, chunk_problems
from bot.sandbox.slack_api.workspace import BOT_ID, BOT_USER, SlackError, Workspace, _public


class StreamMethods(Workspace):
    """A streamed reply, chunk by chunk, until it stops."""

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
        if channel.id[0] != "D":
            if not p.get("recipient_user_id"):
                raise SlackError("missing_recipient_user_id")
            if not p.get("recipient_team_id"):
                raise SlackError("missing_recipient_team_id")
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
        if (message.get("stream") or {}).get("state") != "streaming":
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
