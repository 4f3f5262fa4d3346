"""The plan: the close's steps streamed as tasks under the thread (chat.startStream,
appendStream, stopStream), each with its state, its one-line result and the model's latest
line on the step at work. Where Slack refuses the stream, the caller falls back to an
ordinary status message (bot/slack/presenter/status.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.close import step_lines
from bot.slack.presenter.auth import Workspace
from bot.slack.presenter.messages import Messages, slack_error
from bot.slack.presenter.root import status_title
from bot.store import Run

log = logging.getLogger(__name__)

# A step's state as a task of the streamed plan (Slack's task_update statuses).
TASK_STATUS = {
    "pending": "pending",
    "running": "in_progress",
    "waiting": "in_progress",
    "done": "complete",
    "failed": "error",
    "stopped": "error",
}
PLAN_MODE = "plan"


def _shown_as(task: dict[str, Any]) -> str:
    return json.dumps(task, sort_keys=True)


class PlanStream:
    """A run's status message as a streamed plan, while Slack takes it as a stream."""

    def __init__(
        self, messages: Messages, workspace: Workspace, steps: Sequence[str], *, enabled: bool
    ) -> None:
        self.messages = messages
        self.workspace = workspace
        self.steps = list(steps)
        self.enabled = enabled
        # status ts → True while it is a live stream, False once it is an ordinary message
        # (refused, or the stream ended); unknown after a restart: tried as a stream first.
        self.streams: dict[str, bool] = {}
        self._tasks_shown: dict[str, dict[str, str]] = {}  # ts → task id → as shown
        self.narration: dict[str, str] = {}  # run → the model's latest line, shown on its step

    def tasks(self, run: Run, steps: dict[str, str]) -> list[dict[str, Any]]:
        """One task_update chunk per step: its state and its one-line result."""
        results = step_lines(self.messages.store, run.id)
        ordered = [*self.steps, *(s for s in steps if s not in self.steps)]
        chunks = []
        for n, step in enumerate(ordered, start=1):
            state = steps.get(step, "pending")
            chunk: dict[str, Any] = {
                "type": "task_update",
                "id": f"step-{n}",
                "title": step,
                "status": TASK_STATUS.get(state, "pending"),
            }
            line = results.get(step) if state != "pending" else None
            if state == "waiting":
                line = f"{line} · waiting on a decision" if line else "waiting on a decision"
            if state == "stopped":
                line = f"{line} · stopped" if line else "stopped"
            if state == "done" and not line:
                line = "no exceptions"
            if line:
                chunk["output"] = self.messages.plain(line, run)
            said = self.narration.get(run.id)
            if said and state in ("running", "waiting"):
                chunk["details"] = self.messages.plain(said, run)
            chunks.append(chunk)
        return chunks

    def start(self, run: Run) -> str | None:
        """chat.startStream with the steps as a plan; None where Slack refuses (the caller
        posts the ordinary status message instead)."""
        if not self.enabled or not (run.channel and run.thread_ts):
            return None
        team = self.workspace.team_id()
        tasks = self.tasks(run, run.steps)
        try:
            response = self.messages.client.chat_startStream(
                channel=run.channel,
                thread_ts=run.thread_ts,
                recipient_user_id=run.started_by,
                recipient_team_id=team,
                task_display_mode=PLAN_MODE,
                chunks=[{"type": "plan_update", "title": status_title(run)}, *tasks],
            )
        except SlackApiError as e:
            log.info(
                "run %s: the plan cannot be streamed here (%s); a status message instead",
                run.id,
                slack_error(e),
            )
            return None
        ts = str(response["ts"])
        self.streams[ts] = True
        self._tasks_shown[ts] = {t["id"]: _shown_as(t) for t in tasks}
        return ts

    def move(
        self, run: Run, steps: dict[str, str], *, final: bool, note: str | None = None
    ) -> bool:
        """The plan's changed tasks appended (stopped with the final state when `final`);
        False when the status message is not (or no longer) a stream."""
        ts = run.status_ts
        if not (self.enabled and ts and run.channel) or self.streams.get(ts) is False:
            return False
        client = self.messages.client
        tasks = self.tasks(run, steps)
        shown = self._tasks_shown.get(ts, {})
        changed = [t for t in tasks if shown.get(t["id"]) != _shown_as(t)]
        try:
            if final:
                last: list[dict[str, Any]] = [{"type": "plan_update", "title": status_title(run)}]
                if note:
                    last.append(
                        {"type": "markdown_text", "text": self.messages.safe(note, run=run)}
                    )
                client.chat_stopStream(channel=run.channel, ts=ts, chunks=[*last, *changed])
                self.streams[ts] = False  # further changes (a retry) move it as a message
            elif changed:
                client.chat_appendStream(channel=run.channel, ts=ts, chunks=changed)
        except SlackApiError as e:
            log.info(
                "run %s: the plan no longer streams (%s); its message is updated instead",
                run.id,
                slack_error(e),
            )
            self.streams[ts] = False
            return False
        self.streams.setdefault(ts, True)
        self._tasks_shown[ts] = {t["id"]: _shown_as(t) for t in tasks}
        return True
