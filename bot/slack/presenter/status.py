"""Where a run stands, shown in its thread: the status message (the plan, streamed one working
stretch at a time, else an ordinary message moved with chat.update) with the root message
beside it, and the thread's status line ("closebot is working…",
assistant.threads.setStatus) naming the step at work. One update of a run at a time; a final
state is not replaced by a late one."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.blocks import outgoing
from bot.close import intake_figures, loading_messages, period_label
from bot.slack.presenter.messages import Messages, slack_error
from bot.slack.presenter.plan import ENDED, MESSAGE, PlanStream
from bot.slack.presenter.root import RootMessage, status_title
from bot.store import Run

log = logging.getLogger(__name__)

OVER = ("done", "failed", "cancelled")  # a close that will not work again without a person

# The status line is set once per working stretch (issue 33: 3.8 setStatus calls per resume
# were 7.6 % of a resume's time): when a turn starts, and again only by the still-working timer
# before Slack's two minutes clear it. Its loading messages name the step at work and the steps
# after it (the plan shows each step), so a step change does not set it again; it is cleared
# only while Slack still shows it. The calls are made off the turn's thread (work/jobs.py).
# assistant.threads.setStatus has special rate limits (about one a second for the workspace):
# 20 closes at once must share them.
MAX_LOADING_MESSAGES = 10  # assistant.threads.setStatus: "Maximum of 10 messages"
LINE_LIFETIME = 120.0
# The close's message in the channel is not moved for a short working stretch between two
# human waits (an answer, a few seconds of work, the next form): it goes on saying whom the
# close waits on, and says "running" only once a stretch has worked this long (on the
# presenter's clock) — each form costs no chat.update of it (Tier 3, bench/slack_budget.py).
ROOT_FOLD = 15.0
# Likewise the plan: a stretch after a human wait streams its plan (a new chat.startStream,
# then chat.stopStream at the next wait: both Tier 2, 20 a minute for the whole workspace)
# only once it has worked this long; meanwhile the status line says the close is at work. A
# shorter stretch is drawn, where it ended, on the stopped plan's message (one chat.update,
# Tier 3, as a Block Kit plan: plan.py).
STREAM_AFTER = 20.0
# And a plan drawn again at a wait is drawn at most once in PLAN_GAP seconds: when people
# answer faster than that, the wait's plan is owed and drawn when the gap has passed (the
# watchdog's tick, draw_owed) or at the next wait — the plan lags a fast decision by less than
# PLAN_GAP, never a slow one; the form and the close's message in the channel do not lag.
PLAN_GAP = 60.0


class Status:
    """The status message and the thread's status line of each run."""

    def __init__(
        self, messages: Messages, root: RootMessage, plan: PlanStream, steps: Sequence[str]
    ) -> None:
        self.messages = messages
        self.store = messages.store
        self.root = root
        self.plan = plan
        self.steps = list(steps)
        # Told when a run's state changes (the App Home tabs are published again).
        self.on_state_change: Callable[[], None] | None = None
        self._states: dict[str, str] = {}
        self._figures: dict[str, dict[str, Any]] = {}  # run → the intake's counts
        self._line_set_at: dict[str, float] = {}  # run → when its status line was last set
        # run → the question pending when its line was last set (a new one, posted in the
        # thread since, cleared the line in Slack)
        self._line_question: dict[str, str | None] = {}
        # run → when its working stretch began (a run whose root showed a wait: ROOT_FOLD)
        self._working_since: dict[str, float] = {}
        self._rested: set[str] = set()  # runs whose root has shown a wait or an end
        self._plan_drawn_at: dict[str, float] = {}  # run → when its plan was last drawn at rest
        self._plan_owed: dict[str, str | None] = {}  # run → its note, its plan owed (PLAN_GAP)
        self.clock: Callable[[], float] = time.monotonic
        # One status update of a run at a time, each reading the run when it holds the lock:
        # a folded update still in flight never lands after the final state (striped locks,
        # so their number stays bounded however many runs there are).
        self._locks = [threading.Lock() for _ in range(64)]
        # Runs whose status message shows a final state (finished, failed, stopped): a folded
        # update that was already on its way does not replace it (the failure's note stays).
        # A new turn's first step change clears the mark.
        self._final: set[str] = set()

    def lock(self, run_id: str) -> threading.Lock:
        return self._locks[hash(run_id) % len(self._locks)]

    def moves_again(self, run_id: str) -> None:
        """A new turn's step change: the run's final state may be replaced again."""
        with self.lock(run_id):
            self._final.discard(run_id)

    # -- the thread's status line (assistant.threads.setStatus) -----------------

    def set_line(self, run_id: str, step: str | None = None, *, again: bool = False) -> None:
        """ "closebot is working…" under the thread, with loading messages naming the step:
        once per working stretch; `again` (the still-working timer) sets it once more before
        Slack's two minutes clear it."""
        if run_id in self._line_set_at and not again:
            return  # set in this stretch already: its rotation names the steps after
        run = self.store.runs.get(run_id)
        if not (run.channel and run.thread_ts):
            return
        now = self.clock()
        if run.id not in self._figures or not self._figures[run.id]:
            self._figures[run.id] = intake_figures(self.store, run.id)
        messages = self._rotation(run, step)
        try:
            self.messages.client.assistant_threads_setStatus(
                channel_id=run.channel,
                thread_ts=run.thread_ts,
                status="is working on the close…",
                loading_messages=[outgoing(m) for m in messages],
            )
            pending = self.store.questions.pending(run_id)
            self._line_question[run_id] = pending.id if pending else None
            self._line_set_at[run_id] = now
        except SlackApiError as e:  # a nicety: the plan still shows where the close is
            log.info("run %s: status not set: %s", run_id, slack_error(e))

    def _rotation(self, run: Run, step: str | None) -> list[str]:
        """The loading messages Slack rotates through (at most 10): the step at work's, then
        the steps after it — so a folded line still names each step a turn runs through.
        With no step running yet (a turn's start), from the first step not done."""
        start = step or next((s for s in self.steps if run.steps.get(s) != "done"), None)
        if start not in self.steps:
            return loading_messages(start, period_label(run.period), self._figures[run.id])
        rotation: list[str] = []
        for name in self.steps[self.steps.index(start) :]:
            for message in loading_messages(name, period_label(run.period), self._figures[run.id]):
                if len(rotation) < MAX_LOADING_MESSAGES:
                    rotation.append(message)
        return rotation

    def clear_line(self, run_id: str) -> None:
        """The status line taken away (a turn ended), if Slack still shows it."""
        last = self._line_set_at.pop(run_id, None)
        before = self._line_question.pop(run_id, None)
        if last is None or self.clock() - last >= LINE_LIFETIME:
            return  # never set this turn, or Slack has cleared it by itself
        run = self.store.runs.get(run_id)
        if not (run.channel and run.thread_ts):
            return
        asked = self.store.questions.pending(run_id) if run.status == "waiting" else None
        if asked and asked.id != before and asked.message_ts and asked.channel == run.channel:
            # the turn ended on a new form posted in the thread: Slack cleared the status
            # when the bot replied there ("clears on the bot's next reply", SLACK.md)
            return
        try:
            self.messages.client.assistant_threads_setStatus(
                channel_id=run.channel, thread_ts=run.thread_ts, status=""
            )
        except SlackApiError as e:
            log.info("run %s: status not cleared: %s", run_id, slack_error(e))

    # -- the status message --------------------------------------------------------

    def _tell_homes(self, run: Run) -> None:
        """The Home tabs may read differently: a run seen for the first time, or one at rest
        (waiting on a person, finished, failed, stopped) — after every answer too, whether or
        not the run's state changed. Not while it runs: a turn's passing state is not
        published to every viewer. The desk sends only the views that changed."""
        first = run.id not in self._states
        self._states[run.id] = run.status
        if not self.on_state_change or not (first or run.status != "running"):
            return
        try:
            self.on_state_change()
        except SlackApiError as e:
            log.warning("Home tabs not updated: %s", slack_error(e))

    def blocks(
        self, run: Run, steps: dict[str, str], note: str | None = None
    ) -> list[dict[str, Any]]:
        """The ordinary status message: the steps with their states, a note, Stop."""
        ordered = [(s, steps.get(s, "pending")) for s in self.steps]
        ordered += [(s, state) for s, state in steps.items() if s not in self.steps]
        live = run.status in ("running", "waiting") and not run.stop_requested_by
        return blocks.status_blocks(
            status_title(run), ordered, note, stop_run_id=run.id if live else None
        )

    def update(
        self, run_id: str, note: str | None = None, *, final: bool = False, folded: bool = False
    ) -> None:
        """Move the status message; `note` is plain text (mentions of the run's people kept).
        A `final` state (the turn ended) is not replaced by a `folded` update sent late."""
        with self.lock(run_id):
            run = self.store.runs.get(run_id)
            self._tell_homes(run)
            if folded and run_id in self._final:
                return
            if final:
                self._final.add(run_id)
            if not (run.channel and run.status_ts):
                return
            try:
                if self._root_due(run):
                    self.root.update(run)
            except SlackApiError as e:  # the plan still shows the state
                log.warning("run %s: channel message not updated: %s", run_id, slack_error(e))
            if self.show_plan(run, note):
                return
            self._move_message(self.store.runs.get(run_id), note)

    def _root_due(self, run: Run) -> bool:
        """Whether the root is moved now: always at rest (waiting, over); while the close
        works, in its first stretch, or once a later stretch has worked ROOT_FOLD seconds."""
        if run.status != "running":
            self._working_since.pop(run.id, None)
            self._rested.add(run.id)
            return True
        self._plan_owed.pop(run.id, None)  # the close works again: its next wait is drawn
        since = self._working_since.setdefault(run.id, self.clock())
        return run.id not in self._rested or self.clock() - since >= ROOT_FOLD

    def owed(self) -> list[tuple[str, str | None]]:
        """(run, note) of each plan owed at a wait (PLAN_GAP) that may be drawn now."""
        now = self.clock()
        return [
            (r, note)
            for r, note in sorted(self._plan_owed.items())
            if now - self._plan_drawn_at.get(r, -PLAN_GAP) >= PLAN_GAP
        ]

    def _stream_due(self, run: Run) -> bool:
        """Whether a working stretch streams its plan now: the close's first, or a later one
        that has worked STREAM_AFTER seconds (on the presenter's clock)."""
        since = self._working_since.get(run.id)
        return run.id not in self._rested or (
            since is not None and self.clock() - since >= STREAM_AFTER
        )

    def _move_message(self, run: Run, note: str | None) -> None:
        """The status message as an ordinary message (chat.update), if it would change."""
        assert run.channel and run.status_ts
        said = self.plan.narration.get(run.id) if run.status in ("running", "waiting") else None
        note = note or said
        safe_note = self.messages.safe(note, run=run) if note else None
        text = outgoing(status_title(run))
        status_blocks = self.blocks(run, run.steps, safe_note)
        shown = self.messages.shown.key(run.channel, text, status_blocks)
        if self.messages.shown.already(run.status_ts, shown):
            return  # the message already shows exactly this
        self.messages.client.chat_update(
            channel=run.channel, ts=run.status_ts, text=text, blocks=status_blocks
        )
        self.messages.shown.remember(run.status_ts, shown)

    # -- the plan, one stream per working stretch -----------------------------------

    def show_plan(self, run: Run, note: str | None) -> bool:
        """The plan as it stands, streamed: appended to while the close works; stopped (kept
        readable) when it waits on a person or is over, before Slack's five-minute lifetime
        can end it (python-slack-sdk #1859); a new stream when it works again. False where the
        status message is an ordinary message (Slack refused the stream): the caller moves it."""
        plan = self.plan
        ts = run.status_ts
        if not (plan.enabled and ts and run.channel) or plan.kind(ts) == MESSAGE:
            return False
        working = run.status == "running"
        if plan.kind(ts) != ENDED:  # live (or unknown after a restart: tried as live)
            try:
                if working:
                    plan.append(run)
                else:
                    plan.stop(run, note)
                    self._plan_drawn_at[run.id] = self.clock()
                return True
            except SlackApiError as e:
                error = slack_error(e)
                if error == "message_not_in_streaming_state":
                    # Slack ended it (its lifetime, or a person's Stop): a stream Slack ended
                    # shows a broken placeholder until chat.update mends it (python-slack-sdk
                    # #1859 / PR #1880). A close at work goes on in a new stream.
                    log.info("run %s: Slack ended the plan's stream; mended", run.id)
                    self._move_message(run, note)
                    plan.ended(run)
                    if not working:
                        return True  # the mended message shows where the close stands
                elif error != "message_not_found":  # (deleted: a new plan below)
                    # Anything else (rate limits, Slack unwell): the stream still streams, and
                    # chat.update of a streaming message is refused (streaming_state_conflict):
                    # the next update carries the state.
                    raise
        elif working and not self._stream_due(run):
            return True  # a short stretch so far: the status line says the close works
        elif not working and not plan.differs(run, note):
            return True  # between stretches: the stopped plan shows where the close stands
        elif not working and run.status not in OVER:
            # a short stretch ended in a wait: the plan moved to it, PLAN_GAP apart
            now = self.clock()
            if now - self._plan_drawn_at.get(run.id, -PLAN_GAP) < PLAN_GAP:
                self._plan_owed[run.id] = note
                return True
            plan.redraw(run, note)
            self._plan_drawn_at[run.id] = now
            self._plan_owed.pop(run.id, None)
            return True
        elif not working:
            # over: the close's end drawn on its stopped plan, not a second plan below
            # (issue 30: one plan a thread)
            plan.redraw(run, note)
            self._plan_owed.pop(run.id, None)
            return True
        new = plan.start(run, note=None if working else note, stop=not working)
        if new is None:  # Slack refuses streams now: the status message moves as a message
            plan.as_message(ts)
            return False
        assert run.thread_ts
        self.store.runs.set_thread(
            run.id, channel=run.channel, thread_ts=run.thread_ts, status_ts=new
        )
        plan.forget(ts)
        return True
