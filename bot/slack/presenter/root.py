"""The close's message in the channel (the thread's root): its title, where the close
stands in one line, and its buttons — Stop while it runs, Decide for each question put off,
Change a decision before posting. Moved only when it would change, and it changes only with
what a person in the channel needs: started, running, waiting on whom (and on which approval),
finished or stopped — not each step, nor each question (the plan and the forms in the thread
show those). chat.update is Tier 3 for the whole workspace (bench/slack_budget.py)."""

from __future__ import annotations

from typing import Any

from bot import blocks
from bot.close import (
    APPROVAL_HEADERS,
    STEPS,
    changeable_decisions,
    every_step_ran,
    header_of,
    period_label,
    steps_done,
    who_may_answer,
)
from bot.slack.presenter.messages import Messages
from bot.store import Run


def status_title(run: Run, status: str | None = None) -> str:
    state = status or run.status
    if state == "done" and not every_step_ran(run):
        state = "stopped"
    if state == "waiting" and run.retry_at:  # on the model API, not on a person
        return f"Month-end close · {period_label(run.period)} — waiting to retry at {run.retry_at[11:16]} UTC"
    word = {
        "running": "in progress",
        "waiting": "waiting on you",
        "done": "finished",
        "failed": "stopped",
        "cancelled": "cancelled",
        "stopped": "stopped",
    }
    return f"Month-end close · {period_label(run.period)} — {word.get(state, state)}"


def root_block_id(run_id: str) -> str:
    """The block_id that marks a run's root message, so a retry can find it."""
    return f"closebot-root-{run_id}"


class RootMessage:
    """The close's message in the channel, drawn from the run as it stands."""

    def __init__(self, messages: Messages) -> None:
        self.messages = messages
        self.store = messages.store

    def draw(self, run: Run) -> tuple[str, list[dict[str, Any]]]:
        """(notification text, blocks) of the close's message in the channel, as it stands."""
        out = self.messages
        started = f" · started by <@{run.started_by}>" if run.started_by else ""
        title = out.safe(f"Month-end close · {period_label(run.period)}{started}")
        state = self.state_line(run, brief=True)
        live = run.status in ("running", "waiting") and not run.stop_requested_by
        pending = self.store.questions.pending(run.id) if live else None
        parked = live and run.status == "waiting" and pending is None and not run.retry_at
        decide = (
            [(q.id, header_of(q) or "the question") for q in self.store.questions.deferred(run.id)]
            if parked
            else []
        )
        change = None
        if parked or (pending is not None and header_of(pending) in APPROVAL_HEADERS):
            change = blocks.change_menu(run.id, changeable_decisions(self.store, run.id))
        shown = blocks.root_blocks(
            title,
            out.safe(state, out.waits_on(run), run=run),
            stop_run_id=run.id if live else None,
            decide=decide,
            change=change,
        )
        # the first block names the run, so a retry can find the message (find_root)
        return title, [{**shown[0], "block_id": root_block_id(run.id)}, *shown[1:]]

    def state_line(self, run: Run, *, brief: bool = False) -> str:
        """Where the close stands, in one line (plain text; mentions of its people). `brief`
        (the close's message in the channel): without the step at work or the question's
        header (an approval's kept), which the thread shows — the line then changes only when
        whom the close waits on does."""
        running = [s for s, state in run.steps.items() if state == "running"]
        if run.status == "running":
            put_off = self.store.questions.deferred(run.id)
            later = f" · {len(put_off)} put off, for Decide at the end" if put_off else ""
            if brief:
                return "⏳ Running: each step on the plan in the thread" + later
            return (f"⏳ Running: {running[-1]}" if running else "⏳ Running") + later
        if run.status == "waiting" and run.retry_at:  # the model API could not answer
            return f"⏳ Waiting to retry the model at {run.retry_at[11:16]} UTC: {run.error}"
        if run.status == "waiting" and self.store.questions.pending(run.id) is None:
            put_off = self.store.questions.deferred(run.id)
            if put_off:
                names = "; ".join(header_of(q) or "a question" for q in put_off)
                return (
                    f"🙋 Waiting on <@{run.started_by}> for {len(put_off)} decision"
                    f"{'s' if len(put_off) != 1 else ''} put off ({names}): press Decide · "
                    f"{steps_done(run)} of {len(STEPS)} steps done, nothing posted"
                )
        if run.status == "waiting":
            pending = self.store.questions.pending(run.id)
            header = header_of(pending) if pending is not None else None
            shown = header and (header in APPROVAL_HEADERS or not brief)
            what = f" — {header}" if shown else ""
            who = who_may_answer(run, self.messages.approvers)
            if header in APPROVAL_HEADERS and self.messages.approvers:  # who may approve
                who = ", ".join(f"<@{a}>" for a in self.messages.waits_on(run, pending))
            return f"🙋 Waiting on {who}{what}"
        if run.status == "done":
            if every_step_ran(run):
                return "✅ Finished: every step ran"
            return f"⏹ Stopped after {steps_done(run)} of {len(STEPS)} steps: see the thread"
        if run.status == "cancelled":
            by = run.stop_requested_by
            return f"⏹ Stopped by <@{by}>" if by else "⏹ Stopped"
        if run.status == "failed":
            return f"❌ Failed: {run.error or 'see the thread'}"
        return run.status

    def update(self, run: Run) -> None:
        """Move the channel message to the run's state (only when it would change)."""
        if not (run.channel and run.thread_ts):
            return
        text, root_blocks = self.draw(run)
        shown = self.messages.shown.key(text, root_blocks)
        if self.messages.shown.already(run.thread_ts, shown):
            return
        self.messages.client.chat_update(
            channel=run.channel, ts=run.thread_ts, text=text, blocks=root_blocks
        )
        self.messages.shown.remember(run.thread_ts, shown)
