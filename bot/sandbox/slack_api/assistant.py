"""assistant.threads.setStatus and assistant.threads.setSuggestedPrompts."""

from __future__ import annotations

import json
from typing import Any

from bot.sandbox.blockkit import MAX_LOADING_MESSAGES
from bot.sandbox.slack_api.workspace import SlackError, Workspace


class AssistantMethods(Workspace):
    """The bot's status line under a thread and its suggested prompts."""

    def m_assistant_threads_setStatus(self, p: dict[str, Any]) -> dict[str, Any]:
        """The bot's "is working…" line under a thread: `status` ('' clears it) and up to 10
        `loading_messages` Slack rotates through; cleared by the bot's next reply."""
        channel = self._bot_channel(p.get("channel_id"))
        status = p.get("status")
        if not isinstance(status, str):
            raise SlackError("invalid_arguments", ["status: must provide a string"])
        thread = self._status_thread(channel.id, p.get("thread_ts"))
        loading = p.get("loading_messages")
        if isinstance(loading, str):  # a form body carries it as JSON
            loading = json.loads(loading)
        if loading is not None and (
            not isinstance(loading, list)
            or len(loading) > MAX_LOADING_MESSAGES
            or not all(isinstance(m, str) and m for m in loading)
        ):
            raise SlackError(
                "invalid_arguments",
                [f"loading_messages: at most {MAX_LOADING_MESSAGES} non-empty strings"],
            )
        key = f"{channel.id}:{thread}"
        if status:
            self.statuses[key] = {"status": status, "loading_messages": loading or []}
        else:
            self.statuses.pop(key, None)
        return {}

    def _status_thread(self, channel: str, thread_ts: Any) -> str:
        root = self.messages.get(str(thread_ts or ""))
        if root is None or root["channel"] != channel or root.get("thread_ts"):
            raise SlackError("invalid_thread_ts")
        return str(root["ts"])

    def status_of(self, channel: str, thread_ts: str) -> dict[str, Any] | None:
        """The status shown under a thread now, or None."""
        with self._changed:
            return self.statuses.get(f"{channel}:{thread_ts}")

    def m_assistant_threads_setSuggestedPrompts(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self.channel(p.get("channel_id"))
        prompts = p.get("prompts")
        if isinstance(prompts, str):
            prompts = json.loads(prompts)
        if (
            not isinstance(prompts, list)
            or not 1 <= len(prompts) <= 4
            or not all(isinstance(x, dict) and x.get("title") and x.get("message") for x in prompts)
        ):
            raise SlackError(
                "invalid_arguments", ["prompts: 1 to 4 objects with a title and a message"]
            )
        self.prompts[f"{channel.id}:{p.get('thread_ts') or ''}"] = {
            "title": p.get("title"),
            "prompts": prompts,
        }
        return {}
