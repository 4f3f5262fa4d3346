"""assistant.threads.setStatus and assistant.threads.setSuggestedPrompts, the latter as the
manifest's agent feature has it (`agent_view`, Slack's default since 2026-06-30, or the legacy
`assistant_view`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.sandbox.blockkit import MAX_LOADING_MESSAGES
from bot.sandbox.slack_api.tiers import STATUS_SECONDS
from bot.sandbox.slack_api.workspace import SlackError, Workspace

MANIFEST = Path(__file__).resolve().parents[3] / "manifest.yml"


def manifest_agent_feature(path: Path = MANIFEST) -> str | None:
    """Which agent feature a manifest declares: "agent_view", "assistant_view" or None."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    section = ""
    for line in lines:  # the top-level key a line sits under; pyyaml is a dev dependency only
        if line[:1].isalpha():
            section = line.split(":", 1)[0]
            continue
        key = line.strip().split(":", 1)[0]
        direct = line.startswith("  ") and not line.startswith("   ")  # features' own key
        if section == "features" and direct and key in ("agent_view", "assistant_view"):
            return key
    return None


class AssistantMethods(Workspace):
    """The bot's status line under a thread and its suggested prompts."""

    # The manifest's agent feature ("agent_view" / "assistant_view" / None); read from the
    # project's manifest.yml on first use, a test may set it.
    agent_feature: str | None = None
    _agent_feature_read = False

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
        self.expire_statuses()
        if status:
            self.statuses[key] = {"status": status, "loading_messages": loading or []}
            self.status_set_at[key] = self.clock.now()
        else:
            self.statuses.pop(key, None)
        return {}

    def expire_statuses(self) -> None:
        """Statuses set two minutes ago (on the fake's clock) with no message since are gone:
        "A two minute timeout applies, which will cause the status to be removed if no
        message has been sent" (docs.slack.dev/reference/methods/assistant.threads.setStatus).
        Hold `lock`."""
        now = self.clock.now()
        for key in [
            k for k in self.statuses if now - self.status_set_at.get(k, now) >= STATUS_SECONDS
        ]:
            self.statuses.pop(key, None)
            self.status_set_at.pop(key, None)

    def _status_thread(self, channel: str, thread_ts: Any) -> str:
        root = self.messages.get(str(thread_ts or ""))
        if root is None or root["channel"] != channel or root.get("thread_ts"):
            raise SlackError("invalid_thread_ts")
        return str(root["ts"])

    def status_of(self, channel: str, thread_ts: str) -> dict[str, Any] | None:
        """The status shown under a thread now, or None."""
        with self._changed:
            self.expire_statuses()
            return self.statuses.get(f"{channel}:{thread_ts}")

    def feature(self) -> str | None:
        """The app's agent feature: as set, else the one manifest.yml declares."""
        if self.agent_feature is None and not self._agent_feature_read:
            self.agent_feature, self._agent_feature_read = manifest_agent_feature(), True
        return self.agent_feature

    def m_assistant_threads_setSuggestedPrompts(self, p: dict[str, Any]) -> dict[str, Any]:
        """Suggested prompts. Under `agent_view` they belong to the app's Messages tab, set on
        `app_home_opened` with `tab == "messages"` and no `thread_ts`; with a `thread_ts` the
        call answers ok and does nothing (docs.slack.dev/ai/agent-entry-and-interaction;
        bolt-python docs/english/concepts/adding-agent-features.md; SLACK.md "Agent entry"):
        such a call lands in `ineffective_prompts`, never in `prompts`. Under the legacy
        `assistant_view` a thread's prompts need its `thread_ts`
        (docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts)."""
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
        thread_ts = str(p.get("thread_ts") or "")
        entry = {"channel": channel.id, "thread_ts": thread_ts, "title": p.get("title")}
        if self.feature() == "agent_view" and thread_ts:
            self.ineffective_prompts.append({**entry, "prompts": prompts})
            return {}
        if self.feature() == "assistant_view" and not thread_ts:
            raise SlackError("invalid_arguments", ["thread_ts: required"])
        self.prompts[f"{channel.id}:{thread_ts}"] = {"title": p.get("title"), "prompts": prompts}
        return {}
