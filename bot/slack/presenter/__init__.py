"""The Slack presenter: a run's events become messages and updates in its thread."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bot import blocks
from bot.agent_loop import ask_of, outcome_of
from bot.blocks import outgoing
from bot.close import gl_export, groups
from bot.close.controls import (
    APPROVAL_HEADERS,
    SECOND_APPROVAL_HEADER,
    first_approver,
    header_of,
)
from bot.close.data import period_label
from bot.close.decisions import changeable_decisions
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.close.ledger import Ledger
from bot.close.progress import intake_figures, loading_messages, step_lines
from bot.close.registry import STEPS
from bot.core.decision_log import (
    ENTRY_COLUMNS,
    decision_rows,
    iter_named_lines,
    journal_rows,
    named_lines,
    to_csv,
)
from bot.core.errors import CloseBotError
from bot.core.identity import mention, same_person
from bot.core.names import Names, named_text
from bot.core.questions import USER_ID_RE, Ask, answer_text
from bot.slack.presenter.debounce import Debounce
from bot.store import QuestionRecord, Run, Store

log = logging.getLogger(__name__)

# Slack errors no retry can fix: the run is failed and the person told why.
CANNOT_POST = {
    "not_in_channel": "I'm not in this channel: invite me with `/invite @closebot`, then run `/close` again.",
    "channel_not_found": "I can't see this channel (a private channel or a DM I'm not in): invite me with `/invite @closebot`, then run `/close` again.",
    "is_archived": "This channel is archived; run `/close` in an active channel.",
    "restricted_action": "This workspace does not let me post in this channel; ask an admin, or run `/close` in another channel.",
}


def slack_error(e: Exception) -> str:
    """The Slack error code of a failed Web API call ('internal_error' for an HTTP failure)."""
    if isinstance(e, SlackApiError):
        return str(e.response.get("error") or f"http_{e.response.status_code}")
    return type(e).__name__


def who_may_answer(run: Run, approvers: frozenset[str]) -> str:
    """'<@U1> (started this close) or an approver: <@U2>, <@U3>'."""
    text = (
        f"<@{run.started_by}> (started this close)"
        if run.started_by
        else "the person who started this close"
    )
    if approvers:
        text += " or an approver: " + ", ".join(mention(a) for a in sorted(approvers))
    return text


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
_MENTION = re.compile(r"<@([UW][A-Z0-9]{2,})>")
_TOKEN = re.compile(r"<([^<>]*)>")
NARRATION_CHARS = 200  # the model's line on the plan: one line, not a paragraph


def who_may_approve(run: Run, approvers: frozenset[str], *, first: str | None = None) -> str:
    """Who may approve this posting, and why the others may not."""
    if not approvers:
        if first is not None:
            return "A second approval needs a second approver: set CLOSEBOT_APPROVERS."
        return (
            f"Who may approve: <@{run.started_by}> (started this close; no approvers are set, "
            "so this is self-approval)"
        )
    eligible = sorted(
        a for a in approvers if not same_person(a, run.started_by) and not same_person(a, first)
    )
    names = ", ".join(mention(a) for a in eligible) or "nobody (every approver is excluded)"
    why = []
    if run.started_by and run.started_by in approvers | {run.started_by}:
        why.append(f"<@{run.started_by}>, who started this close")
    if first:
        why.append(f"<@{first}>, who gave the first approval")
    reason = f" — not {' or '.join(why)}" if why else ""
    return f"Who may approve: {names}{reason}"


def entries_by_account(
    lines: Iterable[dict[str, Any]],
) -> tuple[list[str], list[list[str]]]:
    """The batch by account ("2115 Accrued LOE", debit, credit) with its totals, as table rows."""
    totals: dict[str, list[Decimal]] = {}
    for line in lines:
        acc = totals.setdefault(str(line["account"]), [Decimal(0), Decimal(0)])
        acc[0] += Decimal(str(line["debit"] or 0))
        acc[1] += Decimal(str(line["credit"] or 0))
    rows = [
        [f"{a} {ACCOUNT_NAMES.get(a, '')}".strip(), money(d) if d else "", money(c) if c else ""]
        for a, (d, c) in sorted(totals.items())
    ]
    debit = sum((d for d, _ in totals.values()), Decimal(0))
    credit = sum((c for _, c in totals.values()), Decimal(0))
    rows.append(["Total", money(debit), money(credit)])
    # three columns (the account's number and name in one, wrapped): the table fits a
    # thread's narrow pane, Credit included
    return ["Account", "Debit", "Credit"], rows


def _shown_as(task: dict[str, Any]) -> str:
    return json.dumps(task, sort_keys=True)


def every_step_ran(run: Run) -> bool:
    """A close is finished only when each of its steps ran; a run that ended earlier (a
    cancelled question, a stop) is stopped, whatever its status says."""
    return all(run.steps.get(step) == "done" for step in STEPS)


def status_title(run: Run, status: str | None = None) -> str:
    state = status or run.status
    if state == "done" and not every_step_ran(run):
        state = "stopped"
    word = {
        "running": "in progress",
        "waiting": "waiting on you",
        "done": "finished",
        "failed": "stopped",
        "cancelled": "cancelled",
        "stopped": "stopped",
    }
    return f"Month-end close · {period_label(run.period)} — {word.get(state, state)}"


def seen_block_id(inbox_id: int) -> str:
    """The block_id of a form's notice of thread messages, up to the inbox message it names."""
    return f"closebot-seen-{inbox_id}"


def root_block_id(run_id: str) -> str:
    """The block_id that marks a run's root message, so a retry can find it."""
    return f"closebot-root-{run_id}"


def cut_id(value: str) -> str:
    return value[:255]


def _amount(value: Any) -> str:
    try:
        amount = Decimal(str(value or "0"))
    except ArithmeticError:
        return ""
    return money(amount) if amount else ""


class SlackPresenter:
    """Posts to a run's thread; every call is one Web API request through the retrying client.

    Every outgoing `text` and block goes through blocks.outgoing(): only the mentions the bot
    means to make (the run's own people) survive; `<!channel>` and links never do.
    """

    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        steps: Sequence[str],
        approvers: frozenset[str] = frozenset(),
        reminder: timedelta | None = None,
        plan: bool = True,
        account_map: Path | None = None,
        names: Names | None = None,
    ) -> None:
        self.client = client
        # who a user id is, as people read it (users.info, cached in the store)
        self.names = names or Names(store)
        # your GL's accounts: a posted batch's import files for QBO, Xero and NetSuite
        self.account_map = account_map
        # The status message as a plan streamed with chat.startStream; where Slack refuses the
        # stream, an ordinary message moved with chat.update (what the plan falls back to).
        self.plan = plan
        self._team_id: str | None = None
        # status ts → True while it is a live stream, False once it is an ordinary message
        # (refused, or the stream ended); unknown after a restart: tried as a stream first.
        self._streams: dict[str, bool] = {}
        self._tasks_shown: dict[str, dict[str, str]] = {}  # ts → task id → as shown
        self._figures: dict[str, dict[str, Any]] = {}  # run → the intake's counts
        self._status_step: dict[str, str | None] = {}  # run → the step its status line names
        self._narration: dict[str, str] = {}  # run → the model's latest line, shown on its step
        # Told when a run's state changes (the App Home tabs are published again).
        self.on_state_change: Callable[[], None] | None = None
        self._states: dict[str, str] = {}
        self.store = store
        self.steps = list(steps)
        self.approvers = approvers
        self.reminder = reminder  # first reminder of a pending question; then daily
        # What each status message was last updated to (ts → text and blocks), so an update
        # that would change nothing is not sent. Memory only: after a restart, one repeat.
        self._shown: dict[str, str] = {}
        self._shown_lock = threading.Lock()
        # One status update of a run at a time, each reading the run when it holds the lock:
        # a folded update still in flight never lands after the final state (striped locks,
        # so their number stays bounded however many runs there are).
        self._status_locks = [threading.Lock() for _ in range(64)]
        # Runs whose status message shows a final state (finished, failed, stopped): a folded
        # update that was already on its way does not replace it (the failure's note stays).
        # A new turn's first step change clears the mark.
        self._final: set[str] = set()
        # A turn's many step changes become one status update at a time (bot/slack/presenter/debounce.py).
        self._status_updates = Debounce(self._progress_now)

    def people(self, run: Run) -> set[str]:
        """The run's people: its starter, the approvers and whoever answered its forms (their
        bare ids in the model's or a tool's text read as names)."""
        return {
            run.started_by or "",
            *self.approvers,
            *(q.answered_by or "" for q in self.store.questions(run.id)),
        }

    def safe(self, text: str, mention: Iterable[str] = (), *, run: Run | None = None) -> str:
        """Text made safe for Slack (blocks.outgoing) with people shown by name: a `<@U…>`
        stays a mention only for `mention` (whom the message waits on); with `run`, the bare
        ids of its people read as names too."""
        safe = outgoing(text, mention, self.names)
        if run is not None:
            safe = blocks.name_ids(safe, self.people(run), self.names)
        return safe

    def plain(self, text: str, run: Run) -> str:
        """Text for a plan task's output or details, which Slack shows as written (escaping
        there showed a literal '&amp;'): people by name, and no `<…>` left that Slack could
        read as a mention, a link or `<!channel>` (its brackets become ‹ ›)."""
        text = _MENTION.sub(lambda m: self.names(m.group(1)), text)
        text = named_text(text, self.people(run), self.names)
        return _TOKEN.sub(lambda m: f"‹{m.group(1)}›", text)

    def waits_on(self, run: Run, record: QuestionRecord | None = None) -> list[str]:
        """Whom a pending form waits on (the people it mentions): the eligible approvers for a
        posting approval when approvers are set, else the person who started the close."""
        record = record or self.store.pending_question(run.id)
        if record is None:
            return []
        if header_of(record) in APPROVAL_HEADERS and self.approvers:
            first = (
                first_approver(self.store, run.id)
                if header_of(record) == SECOND_APPROVAL_HEADER
                else None
            )
            return sorted(
                a
                for a in self.approvers
                if not same_person(a, run.started_by) and not same_person(a, first)
            )
        return [run.started_by] if run.started_by else []

    # -- thread set-up ---------------------------------------------------

    def open_thread(self, run_id: str, *, again: bool = False) -> Run:
        """Post the root message and the status message; record where they are. Idempotent:
        a retry after a failure posts only what is missing, and `again` (a retry or a
        recovery, when a process may have died with the root message in flight) first looks
        for a root message already posted, as post_form does for forms."""
        run = self.store.run(run_id)
        assert run.channel
        # the run's people by name, once each, before anything shows them (and for the
        # console, the CSVs and the close's own texts, which read the cache)
        self.names.warm([run.started_by, *sorted(self.approvers)])
        if not run.thread_ts and again and (ts := self.find_root(run)):
            self.store.set_run_thread(run_id, channel=run.channel, thread_ts=ts, status_ts=None)
            run = self.store.run(run_id)
        if not run.thread_ts:
            assert run.channel
            title, root_blocks = self._root(run)
            root = self.client.chat_postMessage(channel=run.channel, text=title, blocks=root_blocks)
            self.store.set_run_thread(
                run_id, channel=root["channel"], thread_ts=root["ts"], status_ts=None
            )
            run = self.store.run(run_id)
        if not run.status_ts:
            assert run.channel and run.thread_ts
            status_ts = self._start_plan(run)
            if status_ts is None:
                status = self.client.chat_postMessage(
                    channel=run.channel,
                    thread_ts=run.thread_ts,
                    text=outgoing(status_title(run)),
                    blocks=self._status(run, run.steps),
                )
                status_ts = str(status["ts"])
                self._streams[status_ts] = False
            self.store.set_run_thread(
                run_id, channel=run.channel, thread_ts=run.thread_ts, status_ts=status_ts
            )
        return self.store.run(run_id)

    # -- the root message: the close's live state in the channel -----------------

    def _root(self, run: Run) -> tuple[str, list[dict[str, Any]]]:
        """(notification text, blocks) of the close's message in the channel, as it stands."""
        started = f" · started by <@{run.started_by}>" if run.started_by else ""
        title = self.safe(f"Month-end close · {period_label(run.period)}{started}")
        state = self.state_line(run)
        live = run.status in ("running", "waiting") and not run.stop_requested_by
        pending = self.store.pending_question(run.id) if live else None
        parked = live and run.status == "waiting" and pending is None
        decide = (
            [(q.id, header_of(q) or "the question") for q in self.store.deferred_questions(run.id)]
            if parked
            else []
        )
        change = None
        if parked or (pending is not None and header_of(pending) in APPROVAL_HEADERS):
            change = blocks.change_menu(run.id, changeable_decisions(self.store, run.id))
        shown = blocks.root_blocks(
            title,
            self.safe(state, self.waits_on(run), run=run),
            stop_run_id=run.id if live else None,
            decide=decide,
            change=change,
        )
        # the first block names the run, so a retry can find the message (find_root)
        return title, [{**shown[0], "block_id": root_block_id(run.id)}, *shown[1:]]

    def state_line(self, run: Run) -> str:
        """Where the close stands, in one line (plain text; mentions of its people)."""
        running = [s for s, state in run.steps.items() if state == "running"]
        if run.status == "running":
            put_off = self.store.deferred_questions(run.id)
            later = f" · {len(put_off)} put off, for Decide at the end" if put_off else ""
            return (f"⏳ Running: {running[-1]}" if running else "⏳ Running") + later
        if run.status == "waiting" and self.store.pending_question(run.id) is None:
            put_off = self.store.deferred_questions(run.id)
            if put_off:
                names = "; ".join(header_of(q) or "a question" for q in put_off)
                ran = sum(run.steps.get(step) == "done" for step in STEPS)
                return (
                    f"🙋 Waiting on <@{run.started_by}> for {len(put_off)} decision"
                    f"{'s' if len(put_off) != 1 else ''} put off ({names}): press Decide · "
                    f"{ran} of {len(STEPS)} steps done, nothing posted"
                )
        if run.status == "waiting":
            pending = self.store.pending_question(run.id)
            header = header_of(pending) if pending is not None else None
            what = f" — {header}" if header else ""
            who = who_may_answer(run, self.approvers)
            if header in APPROVAL_HEADERS and self.approvers:  # only those who may approve
                who = ", ".join(f"<@{a}>" for a in self.waits_on(run, pending))
            return f"🙋 Waiting on {who}{what}"
        if run.status == "done":
            if every_step_ran(run):
                return "✅ Finished: every step ran"
            ran = sum(run.steps.get(step) == "done" for step in STEPS)
            return f"⏹ Stopped after {ran} of {len(STEPS)} steps: see the thread"
        if run.status == "cancelled":
            by = run.stop_requested_by
            return f"⏹ Stopped by <@{by}>" if by else "⏹ Stopped"
        if run.status == "failed":
            return f"❌ Failed: {run.error or 'see the thread'}"
        return run.status

    def update_root(self, run: Run) -> None:
        """Move the channel message to the run's state (only when it would change)."""
        if not (run.channel and run.thread_ts):
            return
        text, root_blocks = self._root(run)
        shown = json.dumps([text, root_blocks], sort_keys=True)
        with self._shown_lock:
            if self._shown.get(run.thread_ts) == shown:
                return
        self.client.chat_update(
            channel=run.channel, ts=run.thread_ts, text=text, blocks=root_blocks
        )
        with self._shown_lock:
            self._shown[run.thread_ts] = shown

    # -- the plan: the close's steps streamed as tasks ---------------------------

    def team_id(self) -> str | None:
        """The workspace's id (auth.test, once), for a stream's recipient_team_id."""
        if self._team_id is None:
            try:
                self._team_id = str(self.client.auth_test().get("team_id") or "") or None
            except SlackApiError as e:
                log.warning("auth.test failed: %s", slack_error(e))
        return self._team_id

    def _tasks(self, run: Run, steps: dict[str, str]) -> list[dict[str, Any]]:
        """One task_update chunk per step: its state and its one-line result."""
        results = step_lines(self.store, run.id)
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
                chunk["output"] = self.plain(line, run)
            said = self._narration.get(run.id)
            if said and state in ("running", "waiting"):
                chunk["details"] = self.plain(said, run)
            chunks.append(chunk)
        return chunks

    def _start_plan(self, run: Run) -> str | None:
        """chat.startStream with the steps as a plan; None where Slack refuses (the caller
        posts the ordinary status message instead)."""
        if not self.plan or not (run.channel and run.thread_ts):
            return None
        team = self.team_id()
        tasks = self._tasks(run, run.steps)
        try:
            response = self.client.chat_startStream(
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
        self._streams[ts] = True
        self._tasks_shown[ts] = {t["id"]: _shown_as(t) for t in tasks}
        return ts

    def _move_plan(
        self, run: Run, steps: dict[str, str], *, final: bool, note: str | None = None
    ) -> bool:
        """The plan's changed tasks appended (stopped with the final state when `final`);
        False when the status message is not (or no longer) a stream."""
        ts = run.status_ts
        if not (self.plan and ts and run.channel) or self._streams.get(ts) is False:
            return False
        tasks = self._tasks(run, steps)
        shown = self._tasks_shown.get(ts, {})
        changed = [t for t in tasks if shown.get(t["id"]) != _shown_as(t)]
        try:
            if final:
                last: list[dict[str, Any]] = [{"type": "plan_update", "title": status_title(run)}]
                if note:
                    last.append({"type": "markdown_text", "text": self.safe(note, run=run)})
                self.client.chat_stopStream(channel=run.channel, ts=ts, chunks=[*last, *changed])
                self._streams[ts] = False  # further changes (a retry) move it as a message
            elif changed:
                self.client.chat_appendStream(channel=run.channel, ts=ts, chunks=changed)
        except SlackApiError as e:
            log.info(
                "run %s: the plan no longer streams (%s); its message is updated instead",
                run.id,
                slack_error(e),
            )
            self._streams[ts] = False
            return False
        self._streams.setdefault(ts, True)
        self._tasks_shown[ts] = {t["id"]: _shown_as(t) for t in tasks}
        return True

    # -- the thread's status line (assistant.threads.setStatus) -----------------

    def set_status(self, run_id: str, step: str | None = None) -> None:
        """ "closebot is working…" under the thread, with loading messages naming the step."""
        run = self.store.run(run_id)
        if not (run.channel and run.thread_ts):
            return
        if run.id not in self._figures or not self._figures[run.id]:
            self._figures[run.id] = intake_figures(self.store, run.id)
        messages = loading_messages(step, period_label(run.period), self._figures[run.id])
        self._status_step[run_id] = step
        try:
            self.client.assistant_threads_setStatus(
                channel_id=run.channel,
                thread_ts=run.thread_ts,
                status="is working on the close…",
                loading_messages=[outgoing(m) for m in messages],
            )
        except SlackApiError as e:  # a nicety: the plan still shows where the close is
            log.info("run %s: status not set: %s", run_id, slack_error(e))

    def clear_status(self, run_id: str) -> None:
        self._status_step.pop(run_id, None)
        run = self.store.run(run_id)
        if not (run.channel and run.thread_ts):
            return
        try:
            self.client.assistant_threads_setStatus(
                channel_id=run.channel, thread_ts=run.thread_ts, status=""
            )
        except SlackApiError as e:
            log.info("run %s: status not cleared: %s", run_id, slack_error(e))

    def _status(
        self, run: Run, steps: dict[str, str], note: str | None = None
    ) -> list[dict[str, Any]]:
        ordered = [(s, steps.get(s, "pending")) for s in self.steps]
        ordered += [(s, state) for s, state in steps.items() if s not in self.steps]
        live = run.status in ("running", "waiting") and not run.stop_requested_by
        return blocks.status_blocks(
            status_title(run), ordered, note, stop_run_id=run.id if live else None
        )

    def update_status(
        self, run_id: str, note: str | None = None, *, final: bool = False, folded: bool = False
    ) -> None:
        """Move the status message; `note` is plain text (mentions of the run's people kept).
        A `final` state (the turn ended) is not replaced by a `folded` update sent late."""
        with self._status_locks[hash(run_id) % len(self._status_locks)]:
            if folded and run_id in self._final:
                return
            if final:
                self._final.add(run_id)
            run = self.store.run(run_id)
            if not (run.channel and run.status_ts):
                return
            if self.on_state_change and self._states.get(run_id) != run.status:
                self._states[run_id] = run.status
                try:
                    self.on_state_change()
                except SlackApiError as e:
                    log.warning("Home tabs not updated: %s", slack_error(e))
            try:
                self.update_root(run)
            except SlackApiError as e:  # the plan still shows the state
                log.warning("run %s: channel message not updated: %s", run_id, slack_error(e))
            if self._move_plan(run, run.steps, final=final, note=note):
                return
            said = self._narration.get(run_id) if run.status in ("running", "waiting") else None
            note = note or said
            safe_note = self.safe(note, run=run) if note else None
            text = outgoing(status_title(run))
            status_blocks = self._status(run, run.steps, safe_note)
            shown = json.dumps([run.channel, text, status_blocks], sort_keys=True)
            with self._shown_lock:
                if self._shown.get(run.status_ts) == shown:
                    return  # the message already shows exactly this
            self.client.chat_update(
                channel=run.channel, ts=run.status_ts, text=text, blocks=status_blocks
            )
            with self._shown_lock:
                self._shown[run.status_ts] = shown

    def post(
        self,
        run_id: str,
        text: str,
        block_list: list[dict[str, Any]] | None = None,
        *,
        mention: Iterable[str] = (),
    ) -> str | None:
        """Text (from the model, a person or the bot) in the run's thread; people are shown by
        name, and only those in `mention` (whom it waits on) are mentioned."""
        run = self.store.run(run_id)
        if not (run.channel and run.thread_ts):
            return None
        response = self.client.chat_postMessage(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=blocks.cut(self.safe(text, mention, run=run), 3000),
            blocks=block_list
            or blocks.text_blocks(text, people=self.people(run), names=self.names, mention=mention),
        )
        return str(response["ts"])

    def reply(self, *, channel: str, thread_ts: str | None, text: str) -> None:
        """A message outside any run (help for a mention in the channel)."""
        safe = outgoing(text)
        try:
            self.client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=safe, blocks=blocks.notice_blocks(safe)
            )
        except SlackApiError as e:  # a courtesy reply: nothing waits on it
            log.warning("reply in %s not posted: %s", channel or "(no channel)", slack_error(e))

    def ephemeral(
        self,
        *,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: Iterable[str] = (),
    ) -> None:
        """A private notice; `people` are the users it may mention (the reader is always one);
        anyone else is named."""
        safe = self.safe(text, [user, *people])
        self.client.chat_postEphemeral(
            channel=channel,
            user=user,
            thread_ts=thread_ts,
            text=safe,
            blocks=blocks.notice_blocks(safe),
        )

    def respond(self, response_url: str | None, text: str, people: Iterable[str] = ()) -> None:
        """A private answer through a slash command's response_url: it works where the bot
        cannot post (not in the channel)."""
        if not response_url:
            return
        safe = self.safe(text, people)
        try:
            WebhookClient(response_url, timeout=10).send(
                text=safe, response_type="ephemeral", blocks=blocks.notice_blocks(safe)
            )
        except Exception as e:  # the person sees nothing more; the run's state says why
            log.warning("response_url not reachable: %s", e)

    # -- the Presenter protocol ------------------------------------------

    def text(self, run_id: str, text: str) -> None:
        """The model's narration between steps: one line on the plan's running step (or the
        status message's note), never a reply of its own — the thread stays quiet."""
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if not line:
            return
        self._narration[run_id] = blocks.cut(line, NARRATION_CHARS)
        self._status_updates.touch(run_id)

    def say(self, run_id: str, text: str) -> None:
        """A reply to a person in the run's thread (not narration)."""
        try:
            self.post(run_id, text)
        except SlackApiError as e:
            log.warning("run %s: reply not posted: %s", run_id, slack_error(e))

    def progress(self, run_id: str, steps: dict[str, str]) -> None:
        running = next((s for s, state in steps.items() if state == "running"), None)
        if running and self._status_step.get(run_id) != running:
            self.set_status(run_id, running)  # the status line names the step now working
        with self._status_locks[hash(run_id) % len(self._status_locks)]:
            self._final.discard(run_id)  # the run moves again
        self._status_updates.touch(run_id)

    def _progress_now(self, run_id: str, *, final: bool = False) -> None:
        try:
            self.update_status(run_id, final=final, folded=not final)
        except SlackApiError as e:  # the next step's update will carry the state
            log.warning("run %s: status not updated: %s", run_id, slack_error(e))

    def question(self, run_id: str, question: QuestionRecord) -> None:
        try:
            self.post_form(question)
        except SlackApiError as e:  # the question is stored; the watchdog posts its form
            log.warning(
                "run %s: form %s not posted (%s); it will be posted again",
                run_id,
                question.id,
                slack_error(e),
            )
        self._status_updates.flush(run_id)  # "waiting on you" shows with the form

    def finished(self, run_id: str, text: str) -> None:
        self.post(run_id, text or "Done.")
        self._status_updates.drop(run_id)
        self._progress_now(run_id, final=True)
        if not self.store.audit_events(run_id, kind="reports_uploaded"):
            self.upload_reports(run_id)
            self.store.audit(run_id=run_id, kind="reports_uploaded", actor=None)
        self.tell_owners(run_id)

    # -- open items: each owner told by DM, once -------------------------------------

    def tell_owners(self, run_id: str) -> None:
        """DM each owner the open items the sign-off gave them: text, amount, due date and a
        link to the close's thread. Once per owner and run: told owners are recorded (audit
        `owner_told`); one whose DM may have gone out before a crash (`owner_telling` without
        `owner_told`) is looked for in the DM first, as forms are (find_form)."""
        run = self.store.run(run_id)
        mine: dict[str, list[dict[str, Any]]] = {}
        for item in Ledger(self.store).open_items(run_id):
            if item["status"] == "open" and USER_ID_RE.match(str(item.get("owner") or "")):
                mine.setdefault(str(item["owner"]), []).append(item)
        if not mine:
            return
        told = {e.detail.get("owner") for e in self.store.audit_events(run_id, kind="owner_told")}
        started = {
            e.detail.get("owner") for e in self.store.audit_events(run_id, kind="owner_telling")
        }
        for owner, items in mine.items():
            if owner in told:
                continue
            try:
                self._tell_owner(run, owner, items, again=owner in started)
            except SlackApiError as e:  # the next finish (a retry, a restart) tries again
                log.warning("run %s: owner %s not told: %s", run_id, owner, slack_error(e))

    def _tell_owner(
        self, run: Run, owner: str, items: list[dict[str, Any]], *, again: bool
    ) -> None:
        opened = self.client.conversations_open(users=owner)
        channel = str(opened["channel"]["id"])
        marker = cut_id(f"closebot:items:{run.id}")
        if again and self._dm_has(channel, run, marker):
            self.store.audit(
                run_id=run.id, kind="owner_told", actor=None, detail={"owner": owner, "found": True}
            )
            return
        self.store.audit(run_id=run.id, kind="owner_telling", actor=None, detail={"owner": owner})
        text, shown = self._items_message(run, items, marker)
        posted = self.client.chat_postMessage(channel=channel, text=text, blocks=shown)
        self.store.audit(
            run_id=run.id,
            kind="owner_told",
            actor=None,
            detail={"owner": owner, "items": len(items), "channel": channel, "ts": posted["ts"]},
        )

    def _dm_has(self, channel: str, run: Run, marker: str) -> bool:
        oldest = datetime.fromisoformat(run.created_at).timestamp() - 60
        page = self.client.conversations_history(channel=channel, oldest=f"{oldest:.6f}", limit=200)
        return any(
            b.get("block_id") == marker
            for message in page.get("messages") or []
            for b in message.get("blocks") or []
        )

    def _items_message(
        self, run: Run, items: list[dict[str, Any]], marker: str
    ) -> tuple[str, list[dict[str, Any]]]:
        """(notification text, blocks) of an owner's DM: their items, amounts and due dates."""
        label = period_label(run.period)
        link = self._thread_link(run)
        signed = [
            q for q in self.store.questions(run.id) if (header_of(q) or "").startswith("Sign-off")
        ]
        by = self.names(signed[-1].answered_by, default="") if signed else ""
        head = (
            f"*{len(items)} open item{'s' if len(items) != 1 else ''} from the {label} close "
            f"{'are' if len(items) != 1 else 'is'} yours* (assigned at sign-off"
            + (f" by {by}" if by else "")
            + ")."
        )
        lines = []
        for item in sorted(items, key=lambda i: (str(i.get("due") or ""), i["id"])):
            amount = _amount(item.get("amount"))
            lines.append(
                f"• {item['text']}"
                + (f" — {amount}" if amount else "")
                + (f" · due {item['due']}" if item.get("due") else "")
            )
        body = outgoing("\n".join(lines))
        shown = [
            {**blocks.section(outgoing(head)), "block_id": marker},
            *(blocks.section(t) for t in blocks.split_text(body)[:45]),
            blocks.context(
                f"<{link}|Open the close's thread>" if link else f"The {label} close's thread"
            ),
        ]
        text = outgoing(f"{len(items)} open item(s) from the {label} close are yours")
        return text, shown

    def _thread_link(self, run: Run) -> str | None:
        if not (run.channel and run.thread_ts):
            return None
        try:
            answer = self.client.chat_getPermalink(channel=run.channel, message_ts=run.thread_ts)
        except SlackApiError as e:
            log.info("run %s: no permalink (%s)", run.id, slack_error(e))
            return None
        return str(answer.get("permalink") or "") or None

    def waiting(self, run_id: str, text: str) -> None:
        """The turn ended on questions put off: the status message says what waits, and the
        close's message in the channel carries a Decide button for each (no new reply)."""
        self._status_updates.drop(run_id)
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        try:
            self.update_status(run_id, note=line or None, final=True)
        except SlackApiError as e:
            log.warning("run %s: waiting not shown: %s", run_id, slack_error(e))

    def failed(self, run_id: str, error: str) -> None:
        run = self.store.run(run_id)
        text = f"The close stopped: {error}"
        safe = self.safe(text, run=run)
        try:
            self.post(run_id, f"❌ {text}", blocks.retry_blocks(safe, run_id))
        except SlackApiError as e:
            log.warning("run %s: failure notice not posted: %s", run_id, slack_error(e))
        self._status_updates.drop(run_id)  # the failure's own update is the last word
        try:
            self.update_status(
                run_id,
                final=True,
                note="Press Retry (or write 'retry' in this thread) to continue from where it stopped.",
            )
        except SlackApiError as e:
            log.warning("run %s: status not updated: %s", run_id, slack_error(e))

    def stopped(self, run_id: str, by: str) -> None:
        for record in self.store.questions(run_id):
            if record.status == "cancelled" and record.source == "stop":
                self.settle_form(record.id)
        self._status_updates.drop(run_id)
        try:
            self.update_status(run_id, note=f"Stopped by <@{by}>.", final=True)
            self.post(run_id, f"⏹ <@{by}> stopped this close. Start a new one with `/close`.")
        except SlackApiError as e:
            log.warning("run %s: stop not shown: %s", run_id, slack_error(e))

    # -- forms -----------------------------------------------------------

    def find_root(self, run: Run) -> str | None:
        """The ts of the run's root message if it is already in the channel (a process that
        died between posting it and recording where it went), found through
        conversations.history from the run's start on by its block_id."""
        assert run.channel
        oldest = datetime.fromisoformat(run.created_at).timestamp() - 60
        cursor = None
        for _ in range(10):  # 10 pages of 200 messages since the run began
            page = self.client.conversations_history(
                channel=run.channel, oldest=f"{oldest:.6f}", limit=200, cursor=cursor
            )
            for message in page.get("messages") or []:
                if any(
                    b.get("block_id") == root_block_id(run.id) for b in message.get("blocks") or []
                ):
                    return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None
        return None

    def find_form(self, record: QuestionRecord) -> str | None:
        """The ts of this question's form if it is already in the thread (a process that died
        between posting it and recording where it went), found through conversations.replies."""
        run = self.store.run(record.run_id)
        if not (run.channel and run.thread_ts):
            return None
        cursor = None
        for _ in range(20):  # 20 pages of 200 replies: far more than a close's thread
            try:
                page = self.client.conversations_replies(
                    channel=run.channel, ts=run.thread_ts, limit=200, cursor=cursor
                )
            except SlackApiError as e:
                if e.response.get("error") != "missing_scope":
                    raise
                # Least privilege: without channels:history the thread cannot be read, so
                # the form is posted again (after a crash between posting and recording it,
                # the thread may show it twice; the first one still answers).
                log.info("question %s: thread not readable (missing_scope)", record.id)
                return None
            for message in page.get("messages") or []:
                for block in message.get("blocks") or []:
                    for element in block.get("elements") or []:
                        if (
                            element.get("action_id") == blocks.SUBMIT_ACTION
                            and element.get("value") == record.id
                        ):
                            return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None
        return None

    def refresh_form(self, question_id: str) -> None:
        """Redraw a pending form in place (its deadline moved); a settled one is left alone."""
        record = self.store.question(question_id)
        run = self.store.run(record.run_id)
        if record.status != "pending" or not (record.channel and record.message_ts):
            return
        ask = ask_of(record)
        form = self._form(record, run, ask, nonce=f"{record.id[-8:]}x{int(time.time())}")
        notice = self._notice(record)  # a notice of thread messages stays on the form
        form = [notice, *form] if notice else form
        try:
            self.client.chat_update(
                channel=record.channel,
                ts=record.message_ts,
                text=self._form_text(record, run, ask),
                blocks=form,
            )
        except SlackApiError as e:  # the old deadline shows; the new one still holds
            log.warning("question %s: form not redrawn: %s", record.id, slack_error(e))

    def post_form(self, record: QuestionRecord, *, nonce: str = "0", again: bool = False) -> None:
        """Post the question's form; `again` (a retry) first looks for one already posted."""
        run = self.store.run(record.run_id)
        if not (run.channel and run.thread_ts):
            return
        if again and (ts := self.find_form(record)):
            self.store.set_question_message(record.id, channel=run.channel, message_ts=ts)
            log.info("question %s: its form was already in the thread (%s)", record.id, ts)
            return
        ask = ask_of(record)
        self._attach_group_details(record, run)
        form = self._form(record, run, ask, nonce=f"{record.id[-8:]}{nonce}", attach=True)
        response = self.client.chat_postMessage(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=self._form_text(record, run, ask),
            blocks=form,
        )
        with self.store.write():  # where the form went and its first reminder: one commit
            self.store.set_question_message(
                record.id, channel=str(response["channel"]), message_ts=str(response["ts"])
            )
            if self.reminder and record.remind_at is None:
                self.store.set_remind_at(record.id, self.store.now(after=self.reminder))

    def _attach_group_details(self, record: QuestionRecord, run: Run) -> None:
        """Before a form that asks about a group of alike exceptions: every line of the group as
        a CSV in the thread (once per form, even when the form is posted again)."""
        found = groups.asked_groups(self.store, record)
        if not found or any(
            e.detail.get("question_id") == record.id
            for e in self.store.audit_events(run.id, kind="group_detail_attached")
        ):
            return
        uploads = []
        for ref, group in found:
            columns, rows = groups.detail_rows(group)
            uploads.append(
                {
                    "filename": groups.detail_file_name(ref),
                    "title": f"Detail · {groups.summary(group)}",
                    "content": to_csv(rows, columns),
                }
            )
        try:
            self.client.files_upload_v2(
                channel=run.channel, thread_ts=run.thread_ts, file_uploads=uploads
            )
        except SlackApiError as e:  # the form still gives the count, the total and a few lines
            log.warning("question %s: group detail not attached: %s", record.id, slack_error(e))
            return
        self.store.audit(
            run_id=run.id,
            kind="group_detail_attached",
            actor=None,
            detail={"question_id": record.id, "groups": [ref for ref, _ in found]},
        )

    def _form(
        self, record: QuestionRecord, run: Run, ask: Ask, *, nonce: str, attach: bool = False
    ) -> list[dict[str, Any]]:
        """A question's form; `attach`: the first time an approval form is posted, with the
        draft journal attached before it."""
        ask = self._named(ask, run)
        if header_of(record) in APPROVAL_HEADERS and len(ask.questions) == 1:
            return self._approval_form(record, run, ask, nonce=nonce, attach=attach)
        return blocks.question_form(
            ask,
            question_id=record.id,
            who_may_answer=self.safe(
                who_may_answer(run, self.approvers), self.waits_on(run, record)
            ),
            nonce=nonce,
            deadline=blocks.deadline_note(ask, record.expires_at),
        )

    def _form_text(self, record: QuestionRecord, run: Run, ask: Ask) -> str:
        """A form's notification text: whom it waits on (mentioned) and the first question."""
        waits_on = self.waits_on(run, record)
        who = ", ".join(f"<@{u}>" for u in waits_on)
        text = blocks.question_text(self._named(ask, run))
        return self.safe(f"{who} — {text}" if who else text, waits_on)

    def _named(self, ask: Ask, run: Run) -> Ask:
        """The form's text with the run's people by name: the model (or the playbook) writes
        the ids its tools gave it ('A different approver than U0B3N must approve')."""
        people = self.people(run)

        def named(text: str | None) -> str | None:
            return blocks.name_ids(text, people, self.names, safe=False) if text else text

        return ask.model_copy(
            update={
                "context": named(ask.context),
                "questions": tuple(
                    q.model_copy(
                        update={"question": named(q.question), "reasoning": named(q.reasoning)}
                    )
                    for q in ask.questions
                ),
            }
        )

    def unseen_messages(
        self, record: QuestionRecord, shown: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Thread messages written after an approval form was posted that the form as the
        approver saw it (`shown`: its blocks) did not show yet; [] for other questions."""
        if header_of(record) not in APPROVAL_HEADERS:
            return []
        since = self.store.messages_since(record.run_id, record.created_at)
        if not since:
            return []
        mark = seen_block_id(since[-1]["id"])
        if any(isinstance(b, dict) and b.get("block_id") == mark for b in shown):
            return []
        return since

    def _notice(self, record: QuestionRecord) -> dict[str, Any] | None:
        """An approval form's notice of the thread messages written after it was posted."""
        since = self.unseen_messages(record, [])
        if not since:
            return None
        writers = list(dict.fromkeys(m["user"] for m in since if m["user"]))
        names = " and ".join(f"<@{u}>" for u in writers) or "Someone"
        quoted = "\n".join(
            "> " + (f"<@{m['user']}>: " if m["user"] else "") + blocks.cut(m["text"], 300)
            for m in since[-5:]
        )
        return {
            **blocks.section(
                self.safe(
                    f"⚠️ {names} wrote in the thread after this form was posted — read it "
                    f"before you answer:\n{quoted}"
                )
            ),
            "block_id": seen_block_id(since[-1]["id"]),
        }

    def note_message(self, run_id: str) -> None:
        """A person wrote in the thread: a pending approval form says so at its top, and
        posting waits until it is approved on the form that shows it."""
        record = self.store.pending_question(run_id)
        if record is None or not (record.channel and record.message_ts):
            return
        notice = self._notice(record)
        if notice is None:
            return
        run = self.store.run(run_id)
        ask = ask_of(record)
        form = self._form(record, run, ask, nonce=f"{record.id[-8:]}s{notice['block_id'][14:]}")
        try:
            self.client.chat_update(
                channel=record.channel,
                ts=record.message_ts,
                text=self._form_text(record, run, ask),
                blocks=[notice, *form],
            )
        except SlackApiError as e:  # the Submit check still holds posting back
            log.warning("form %s: thread message not shown on it: %s", record.id, slack_error(e))

    def _approval_form(
        self, record: QuestionRecord, run: Run, ask: Ask, *, nonce: str, attach: bool
    ) -> list[dict[str, Any]]:
        """The posting approval: the batch by account as a table, addressed to the people who
        may approve it (and why the others may not); Approve / Keep as draft / Reject as
        buttons, only Approve behind a dialog naming what it posts."""
        second = header_of(record) == SECOND_APPROVAL_HEADER
        confirm = self._attach_draft(record, attach=attach and not second)
        ledger = Ledger(self.store)
        batch = ledger.current_batch(run.id)
        facts = None
        if batch is not None:
            # summed by SQLite: the form does not read the batch's lines
            header, rows = entries_by_account(ledger.account_totals(batch["id"]))
            facts = blocks.table(header, rows, right=(1, 2))
        return blocks.approval_form(
            ask,
            question_id=record.id,
            who_may_answer=self.safe(
                who_may_approve(
                    run,
                    self.approvers,
                    first=first_approver(self.store, run.id) if second else None,
                ),
                self.waits_on(run, record),
            ),
            nonce=nonce,
            facts=facts,
            confirm=confirm or "Post to the ledger? This cannot be undone.",
            deadline=blocks.deadline_note(ask, record.expires_at),
        )

    def _attach_draft(self, record: QuestionRecord, *, attach: bool = True) -> str | None:
        """Before an approval form: the draft journal CSV in the thread, once per batch (not
        again when a batch is asked about again); the confirm dialog's text."""
        run = self.store.run(record.run_id)
        ledger = Ledger(self.store)
        batch = ledger.current_batch(run.id)
        if batch is None or batch["status"] != "draft":
            return None
        entries = ledger.entry_count(batch["id"])
        try:
            if attach and not self._draft_shown(record, str(batch["id"])):
                self.client.files_upload_v2(
                    channel=run.channel,
                    thread_ts=run.thread_ts,
                    file_uploads=[
                        {
                            "filename": f"journal-{batch['id']}-draft.csv",
                            "title": f"Draft journal entries · {batch['id']} · for approval",
                            # the lines a page at a time into the CSV, never all as dicts;
                            # who decided, by name
                            "content": to_csv(
                                journal_rows(
                                    batch,
                                    iter_named_lines(ledger.iter_lines(batch["id"]), self.names),
                                ),
                                ENTRY_COLUMNS,
                            ),
                        }
                    ],
                )
        except SlackApiError as e:  # the form still carries the batch by account
            log.warning("run %s: draft CSV not attached: %s", run.id, slack_error(e))
        return (
            f"Post {entries} entries, {money(Decimal(batch['total_debit']))}, batch {batch['id']}? "
            "This cannot be undone."
        )

    def _draft_shown(self, record: QuestionRecord, batch_id: str) -> bool:
        """Whether an earlier approval form of this batch was posted (its draft with it)."""
        return any(
            q.id != record.id
            and q.message_ts
            and header_of(q) in APPROVAL_HEADERS
            and batch_id in q.context + " ".join(str(x.get("question")) for x in q.questions)
            for q in self.store.questions(record.run_id)
        )

    def settle_form(self, question_id: str) -> bool:
        """Turn a settled form read-only: who chose what, how and when. False if Slack refused;
        the form is remembered as still looking live and the watchdog tries again."""
        record = self.store.question(question_id)
        if not (record.channel and record.message_ts):
            return True
        ask = ask_of(record)
        outcome = outcome_of(record)
        if outcome.answers:  # an owner picked on the form is shown by name
            outcome = dataclasses.replace(
                outcome,
                answers={
                    k: {**v, "user": self.names(v["user"])}
                    if isinstance(v, dict) and v.get("user")
                    else v
                    for k, v in outcome.answers.items()
                },
            )
        name = self.names(record.answered_by)
        form = blocks.answered_form(ask, outcome, who=blocks.escape(name))
        chose = ""
        first = (record.answer or {}).get("1")
        if record.status == "answered" and len(ask.questions) == 1 and first:
            chose = f": {answer_text(first)}"
        done = "Put off" if record.status == "deferred" else record.status.capitalize()
        try:
            self.client.chat_update(
                channel=record.channel,
                ts=record.message_ts,
                text=outgoing(f"{done} by {name}{chose}"),
                blocks=form,
            )
        except SlackApiError as e:
            log.warning("form %s not shown as settled: %s", question_id, slack_error(e))
            return False
        self.store.set_form_shown_settled(question_id)
        return True

    def remind(self, record: QuestionRecord) -> None:
        """Ping the people who may answer a question that is still open."""
        run = self.store.run(record.run_id)
        ask = ask_of(record)
        waits_on = self.waits_on(run, record)
        who = (
            ", ".join(f"<@{u}>" for u in waits_on)
            if header_of(record) in APPROVAL_HEADERS and self.approvers
            else who_may_answer(run, self.approvers)
        )
        self.post(
            run.id,
            f"⏰ Still waiting on a decision from {who}: {ask.questions[0].question}",
            mention=waits_on,
        )

    def slack_auth(self) -> str:
        """'ok', or the error auth.test answers (a revoked token, an unreachable Slack)."""
        try:
            self.client.auth_test()
        except SlackApiError as e:
            return slack_error(e)
        except Exception as e:  # unreachable: connection refused, DNS, timeout
            return f"unreachable ({type(e).__name__})"
        return "ok"

    # -- reports ---------------------------------------------------------

    def _gl_files(
        self, run_id: str, period: str, batch: dict[str, Any], lines: list[dict[str, Any]]
    ) -> list[dict[str, str]]:
        """The posted batch as your ledger's journal import files, through the account map;
        none (and a note in the thread) when an account is not mapped."""
        if self.account_map is None:
            return []
        try:
            export = gl_export.build_export(
                batch,
                lines,
                period=period,
                documents=gl_export.documents(self.store, run_id),
                account_map=gl_export.read_account_map(self.account_map),
            )
        except CloseBotError as e:
            self.post(run_id, f"No journal import files for your ledger: {e}")
            return []
        names = {"qbo": "QuickBooks Online", "xero": "Xero", "netsuite": "NetSuite"}
        return [
            {
                "filename": gl_export.file_name(batch["id"], fmt),
                "title": f"Journal import · {name} · {batch['id']}",
                "content": export.render(fmt),
            }
            for fmt, name in names.items()
        ]

    def upload_reports(self, run_id: str) -> None:
        """The decision log and the journal entries as CSV files in the thread."""
        run = self.store.run(run_id)
        if not run.channel:
            return
        uploads = [
            {
                "filename": f"decisions-{run.period}-{run.id}.csv",
                "title": f"Decision log · {run.period}",
                "content": to_csv(decision_rows(self.store, run_id)),
            }
        ]
        batch = Ledger(self.store).current_batch(run_id)
        if batch:
            lines = named_lines(Ledger(self.store).lines(batch["id"]), self.names)
            uploads.append(
                {
                    "filename": f"journal-{batch['id']}.csv",
                    "title": f"Journal entries · {batch['id']} ({batch['status']})",
                    "content": to_csv(journal_rows(batch, lines), ENTRY_COLUMNS),
                }
            )
            if batch["status"] == "posted":
                uploads.extend(self._gl_files(run_id, run.period, batch, lines))
        try:
            self.client.files_upload_v2(
                channel=run.channel, thread_ts=run.thread_ts, file_uploads=uploads
            )
        except SlackApiError as e:
            log.warning("run %s: could not upload reports: %s", run_id, slack_error(e))
            self.post(
                run_id,
                f"I could not attach the CSV reports ({slack_error(e)}); `closebot audit {run_id} --csv` prints them.",
            )
