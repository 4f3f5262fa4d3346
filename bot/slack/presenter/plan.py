"""The plan: the close's steps streamed as tasks under the thread (chat.startStream,
appendStream, stopStream), each with its state, its one-line result and the model's latest
line on the step at work.

One stream per working stretch: Slack ends a stream about five minutes after it starts
(python-slack-sdk #1859, node-slack-sdk #2702) and a close waits on people far longer, so the
plan is stopped as it stands before each human wait (a stopped stream stays readable) and a
new one is started when the close works again (bot/slack/presenter/status.py decides which).
A short stretch between two waits is not streamed (status.py, STREAM_AFTER): where it ended
is drawn on the stopped plan's message with chat.update, as a Block Kit `plan` block of
`task_card`s — the same plan, not plain status blocks
(docs.slack.dev/reference/block-kit/blocks/plan-block, .../task-card-block).
Where Slack refuses the stream, the caller falls back to an ordinary status message."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.blocks import outgoing
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


def _rich_text(text: str) -> dict[str, Any]:
    """A task card's output or details: one rich_text of plain text."""
    section = {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
    return {"type": "rich_text", "elements": [section]}


def _shown_as(task: dict[str, Any]) -> str:
    return json.dumps(task, sort_keys=True)


# What a status message is, by its ts: a stream still streaming, a stream that ended (stopped
# by us before a wait, or ended by Slack and mended), or an ordinary message moved with
# chat.update (Slack refused the stream). Unknown after a restart: tried as a live stream.
LIVE, ENDED, MESSAGE = "live", "ended", "message"


class PlanStream:
    """A run's plan as streamed messages, one per working stretch, while Slack takes streams."""

    def __init__(
        self, messages: Messages, workspace: Workspace, steps: Sequence[str], *, enabled: bool
    ) -> None:
        self.messages = messages
        self.workspace = workspace
        self.steps = list(steps)
        self.enabled = enabled
        self._kinds: dict[str, str] = {}  # status ts → LIVE, ENDED or MESSAGE
        self._shown: dict[str, dict[str, str]] = {}  # ts → task id (and the title) → as shown
        self.narration: dict[str, str] = {}  # run → the model's latest line, shown on its step
        # Runs whose plan was stopped before a human wait: their next step change starts the
        # next stretch's stream at once (not a debounce window later, or a short stretch would
        # never show).
        self._resting: set[str] = set()

    def resting(self, run_id: str) -> bool:
        """Whether the run's plan was stopped for a human wait (its next stretch not begun)."""
        return run_id in self._resting

    def kind(self, ts: str | None) -> str | None:
        return self._kinds.get(ts or "")

    def as_message(self, ts: str) -> None:
        """The status message at `ts` is (from now on) an ordinary message."""
        self._kinds[ts] = MESSAGE

    def forget(self, ts: str) -> None:
        """A plan that is no longer the run's status message (a later stretch has its own)."""
        self._kinds.pop(ts, None)
        self._shown.pop(ts, None)

    def ended(self, run: Run) -> None:
        """The run's stream no longer streams (Slack ended it, and its message was mended)."""
        self._kinds[run.status_ts or ""] = ENDED
        if run.status == "waiting":
            self._resting.add(run.id)

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

    def plan_blocks(self, run: Run, note: str | None = None) -> list[dict[str, Any]]:
        """The plan as it stands as Block Kit: a `plan` block (its title, a `task_card` per
        step with its state, its one-line result and the model's line), then the note."""
        cards = []
        for task in self.tasks(run, run.steps):
            card: dict[str, Any] = {
                "type": "task_card",
                "task_id": task["id"],
                "title": task["title"],
                "status": task["status"],
            }
            for key in ("output", "details"):
                if task.get(key):
                    card[key] = _rich_text(task[key])
            cards.append(card)
        plan = {"type": "plan", "title": status_title(run), "tasks": cards}
        shown = [plan, blocks.section(self.messages.safe(note, run=run))] if note else [plan]
        return shown

    def redraw(self, run: Run, note: str | None = None, *, ts: str | None = None) -> None:
        """The stopped plan's message (`ts`, else the run's status message) moved to where the
        close stands (chat.update: a plan that no longer streams may be edited, and one Slack
        ended must be), drawn as a plan (plan_blocks)."""
        ts, channel = ts or run.status_ts, run.channel
        assert ts and channel
        self.messages.client.chat_update(
            channel=channel,
            ts=ts,
            text=outgoing(status_title(run)),
            blocks=self.plan_blocks(run, note),
        )
        self._kinds[ts] = ENDED
        self._remember(ts, self._title(run), self.tasks(run, run.steps), note)
        if run.status == "waiting":
            self._resting.add(run.id)

    def _title(self, run: Run) -> dict[str, Any]:
        return {"type": "plan_update", "title": status_title(run)}

    def _remember(
        self, ts: str, title: dict[str, Any], tasks: list[dict[str, Any]], note: str | None = None
    ) -> None:
        self._shown[ts] = {t["id"]: _shown_as(t) for t in [*tasks, {**title, "id": "title"}]}
        self._shown[ts]["note"] = note or ""

    def _changed(self, ts: str, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        shown = self._shown.get(ts, {})
        return [
            c for c in chunks if shown.get(c.get("id", "title")) != _shown_as({"id": "title", **c})
        ]

    def differs(self, run: Run, note: str | None = None) -> bool:
        """Whether the plan at the run's status message shows another state (or note) than
        the run's."""
        ts = run.status_ts or ""
        if self._shown.get(ts, {}).get("note") != (note or ""):
            return True
        return bool(self._changed(ts, [self._title(run), *self.tasks(run, run.steps)]))

    def start(self, run: Run, *, note: str | None = None, stop: bool = False) -> str | None:
        """chat.startStream with the steps as a plan: a new stretch's plan, or (with `stop`) a
        plan stopped at once with the close's final state. None where Slack refuses (the caller
        shows an ordinary status message instead)."""
        if not self.enabled or not (run.channel and run.thread_ts):
            return None
        # whom the stream answers: the starter, in their own team (Slack Connect, org installs)
        team = run.started_team or self.workspace.team_id()
        title, tasks = self._title(run), self.tasks(run, run.steps)
        last = [self._note(note, run)] if note else []
        try:
            response = self.messages.client.chat_startStream(
                channel=run.channel,
                thread_ts=run.thread_ts,
                recipient_user_id=run.started_by,
                recipient_team_id=team,
                task_display_mode=PLAN_MODE,
                chunks=[title, *tasks, *last],
            )
        except SlackApiError as e:
            log.info(
                "run %s: the plan cannot be streamed here (%s); a status message instead",
                run.id,
                slack_error(e),
            )
            return None
        ts = str(response["ts"])
        self._kinds[ts] = LIVE
        self._remember(ts, title, tasks, note)
        self._resting.discard(run.id)
        if stop:
            try:
                self.messages.client.chat_stopStream(channel=run.channel, ts=ts)
                self._kinds[ts] = ENDED
            except SlackApiError as e:  # Slack ends it by itself soon; the plan is shown
                log.info("run %s: the final plan not stopped: %s", run.id, slack_error(e))
                if slack_error(e) == "message_not_in_streaming_state":
                    try:  # Slack ended it already: mended, or it shows a broken placeholder
                        self.redraw(run, note, ts=ts)
                    except SlackApiError as again:
                        log.warning("run %s: final plan not mended: %s", run.id, again)
        return ts

    def _note(self, note: str, run: Run) -> dict[str, Any]:
        return {"type": "markdown_text", "text": self.messages.safe(note, run=run)}

    def append(self, run: Run) -> None:
        """The plan's changed tasks appended to the live stream (SlackApiError where Slack
        refuses: `message_not_in_streaming_state` once Slack ended it)."""
        ts, channel = run.status_ts, run.channel
        assert ts and channel
        title, tasks = self._title(run), self.tasks(run, run.steps)
        changed = self._changed(ts, tasks)
        if changed:
            self.messages.client.chat_appendStream(channel=channel, ts=ts, chunks=changed)
        self._kinds[ts] = LIVE
        self._remember(ts, title, tasks)

    def stop(self, run: Run, note: str | None = None) -> None:
        """The stream stopped with the plan as it stands (its title says where the close is:
        waiting on you, finished, stopped): readable for as long as people take. SlackApiError
        where Slack refuses."""
        ts, channel = run.status_ts, run.channel
        assert ts and channel
        title, tasks = self._title(run), self.tasks(run, run.steps)
        last = [self._note(note, run)] if note else []
        self.messages.client.chat_stopStream(
            channel=channel, ts=ts, chunks=[title, *last, *self._changed(ts, tasks)]
        )
        self._kinds[ts] = ENDED
        self._remember(ts, title, tasks, note)
        if run.status == "waiting":
            self._resting.add(run.id)
