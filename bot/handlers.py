"""Bolt listeners: parse, authorize, claim, ack — then hand the work to the work queue.

No listener runs the agent or waits on a Web API call before it acks: with
process_before_response=True the HTTP answer leaves when the listener returns.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from slack_bolt import Ack, App, Assistant, BoltContext

from bot import blocks
from bot.agent_loop import ask_of
from bot.close import preview
from bot.close.controls import approval_refusal
from bot.close.decisions import ask_change
from bot.close.inquiries import Intent, intent
from bot.core.answers import Answers, may_steer
from bot.core.errors import (
    AlreadyAnsweredError,
    AnswerError,
    BusyError,
    CloseBotError,
    NotAuthorizedError,
    NotFoundError,
    PeriodTakenError,
    StorageError,
)
from bot.core.questions import check_responses, question_whys
from bot.core.tools import ToolError
from bot.slack.blocks import files as file_blocks
from bot.slack.blocks import period as period_blocks
from bot.slack.close_start import USAGE, CloseCommand, open_periods, storage_text
from bot.slack.files import FileIntake
from bot.slack.home import SlackDesk
from bot.slack.work import SlackWork
from bot.store import QuestionRecord, Run, Store

log = logging.getLogger(__name__)


# Thread messages that reach the agent: plain replies, replies also sent to the channel, and
# files shared in the thread (their text and names; the files themselves are read elsewhere).
READ_SUBTYPES = (None, "thread_broadcast", "file_share")
ASKED_ANY_TIME = ("status", "waiting", "open", "decided")  # answered without the agent
NO_WHY_BOX = "answered on a form from an earlier release, which had no Why box"


@dataclass(frozen=True)
class Deps:
    store: Store
    work: SlackWork
    approvers: frozenset[str]
    data_dir: Path | None = None
    files: FileIntake | None = None
    desk: SlackDesk | None = None


def register(app: App, deps: Deps) -> None:
    """Attach every listener to `app`."""
    h = Listeners(deps)
    app.command("/close")(h.close_command)
    app.action(blocks.SUBMIT_ACTION)(h.submit)
    app.action(blocks.CANCEL_ACTION)(h.cancel)
    app.action(blocks.CHOICE_ACTION_RE)(h.choose)
    app.action(period_blocks.PERIOD_ACTION)(h.period_picked)
    app.action(blocks.STOP_ACTION)(h.stop)
    app.action(blocks.RETRY_ACTION)(h.retry)
    app.action(re.compile(rf"^{blocks.DECIDE_ACTION}(_\d+)?$"))(h.decide)
    app.action(blocks.CHANGE_ACTION)(h.change)
    app.action(file_blocks.CONFIRM_ACTION)(h.file_confirm)
    app.options(blocks.ANSWER_ACTION)(h.menu_options)
    app.options(file_blocks.PICK_ACTION)(h.file_menu_options)
    app.action(re.compile(".*"))(h.any_other_action)  # after the specific ones: first match wins
    app.event("app_mention")(h.mention)
    app.event("message")(h.message)
    app.event("file_shared")(h.file_shared)
    app.event("tokens_revoked")(h.tokens_revoked)
    app.event("app_uninstalled")(h.app_uninstalled)
    app.event("app_home_opened")(h.home_opened)
    # The assistant pane, through Bolt's Assistant middleware: its thread's start, context
    # changes (acknowledged; closebot keeps no pane context) and the person's messages.
    assistant = Assistant()
    assistant.thread_started(h.assistant_started)
    assistant.thread_context_changed(h.assistant_context_changed)
    assistant.user_message(h.assistant_message)
    app.use(assistant)


def _who(body: dict[str, Any]) -> tuple[str, str, str | None]:
    """(user, channel, thread_ts) of an interaction payload."""
    container = body.get("container") or {}
    user = (body.get("user") or {}).get("id") or ""
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id", "")
    return str(user), str(channel), container.get("thread_ts")


class Listeners:
    """The listeners, as plain methods over the store and the work queue.

    Each runs its database calls inside store.quick(): a database locked by someone else
    costs the person a "busy, try again", never a missed 3-second ack.
    """

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.store = deps.store
        self.work = deps.work
        self.closes = CloseCommand(store=deps.store, work=deps.work, data_dir=deps.data_dir)
        self.answers = Answers(
            deps.store,
            deps.approvers,
            vet=lambda record, run, user, answer: approval_refusal(
                deps.store, record, run, user, deps.approvers, answer
            ),
        )

    def close_command(self, ack: Ack, command: dict[str, Any]) -> None:
        """`/close [YYYY-MM]`: one close per period (bot/slack/close_start.py)."""
        self.closes.command(ack, command, self.deps.files)

    def period_picked(self, ack: Ack, body: dict[str, Any]) -> None:
        """The which-period form's Submit."""
        self.closes.period_picked(ack, body)

    def _notify(
        self,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: tuple[str, ...] = (),
    ) -> None:
        presenter = self.work.presenter
        self.work.runner.side(
            lambda: presenter.ephemeral(
                channel=channel, user=user, thread_ts=thread_ts, text=text, people=people
            )
        )

    def _refused(self, e: NotAuthorizedError, what: str) -> tuple[str, tuple[str, ...]]:
        if e.reason:  # a control refused this answer (say, the second approver must differ)
            return f"{e.reason}; nothing was changed.", (e.started_by or "", *self.deps.approvers)
        starter = (
            f"<@{e.started_by}> (who started this close)"
            if e.started_by
            else "the person who started this close"
        )
        return f"Only {starter} or an approver can {what}; nothing was changed.", (
            e.started_by or "",
        )

    def _settle(
        self, ack: Ack, body: dict[str, Any], *, cancel: bool, chosen: int | None = None
    ) -> None:
        """Submit, a choice's own button (`chosen`: its option) or Cancel: authorize, read and
        check the form, claim atomically, ack, resume."""
        user, channel, thread_ts = _who(body)
        actions = body.get("actions") or []
        if not user or not actions or not isinstance(actions[0], dict):
            log.warning(
                "ignored a %s payload with no user or no action", "cancel" if cancel else "submit"
            )
            ack()
            return
        question_id = str(actions[0].get("value") or "")
        values = (body.get("state") or {}).get("values") or {}
        if not cancel and self._unseen(ack, body, question_id, user, channel, thread_ts):
            return
        if not cancel and self._preview_first(ack, question_id, values, user, channel, thread_ts):
            return
        # A form an earlier release posted has no "Why" box: its answer is taken without one
        # (an override could never be recorded otherwise), and recorded as such.
        why_box = blocks.has_why_box((body.get("message") or {}).get("blocks"))
        try:
            with self.store.quick():
                record = self.answers.settle(
                    question_id,
                    user=user,
                    source="user",
                    read=None
                    if cancel
                    else (
                        (lambda ask: blocks.read_choice(ask, chosen))
                        if chosen is not None
                        else (lambda ask: blocks.read_form(ask, values))
                    ),
                    rationale=blocks.read_rationale(values) if isinstance(values, dict) else None,
                    require_rationale=why_box,
                    evidence=None if why_box else {"form": NO_WHY_BOX},
                )
        except NotFoundError:
            ack()
            self._notify(
                channel, user, thread_ts, "I don't know this form any more; nothing was changed."
            )
            return
        except NotAuthorizedError as e:
            ack()
            text, people = self._refused(e, "answer this")
            self._notify(channel, user, thread_ts, text, people)
            return
        except (AnswerError, blocks.FormError) as e:
            ack()
            self._notify(
                channel, user, thread_ts, f"Not submitted: {e}. Your choices are still in the form."
            )
            return
        except AlreadyAnsweredError:
            ack()
            self._notify(channel, user, thread_ts, *_already(self.store.question(question_id)))
            return
        except StorageError as e:
            ack()
            self._notify(channel, user, thread_ts, storage_text(e))
            return
        ack()
        self.work.answered(record.run_id, question_id)

    def _unseen(
        self,
        ack: Ack,
        body: dict[str, Any],
        question_id: str,
        user: str,
        channel: str,
        thread_ts: str | None,
    ) -> bool:
        """An approval submitted on a form that did not yet show a message written in the
        thread after it was posted: nothing is claimed; the form shows it, answer again."""
        try:
            with self.store.quick():
                record = self.store.question(question_id)
                shown = (body.get("message") or {}).get("blocks") or []
                unseen = self.work.presenter.unseen_messages(
                    record, shown if isinstance(shown, list) else []
                )
        except (NotFoundError, StorageError):
            return False  # the claim says what is wrong
        if not unseen or record.status != "pending":
            return False
        ack()
        writers = list(dict.fromkeys(m["user"] for m in unseen if m["user"]))
        who = " and ".join(f"<@{u}>" for u in writers) or "Someone"
        self._notify(
            channel,
            user,
            thread_ts,
            f"{who} wrote in the thread after this form was posted, so nothing was changed: "
            "the form now shows what was written — read it, then answer again.",
            tuple(writers),
        )
        self.work.runner.fast(partial(self.work.presenter.note_message, record.run_id))
        return True

    def _preview_first(
        self,
        ack: Ack,
        question_id: str,
        values: Any,
        user: str,
        channel: str,
        thread_ts: str | None,
    ) -> bool:
        """A typed date or amount is shown before it is booked: a valid Submit whose typed
        answer books something, not yet previewed for that exact text, books nothing — the
        person is shown the entry (ephemeral) and submits again to book it."""
        try:
            with self.store.quick():
                record = self.store.question(question_id)
                run = self.store.run(record.run_id)
                if record.status != "pending" or not may_steer(run, user, self.deps.approvers):
                    return False  # the claim says what is wrong
                ask = ask_of(record)
                responses = blocks.read_form(ask, values)
                check_responses(ask, responses)
                question_whys(ask, responses, blocks.read_rationale(values))
                todo = [
                    (n, typed)
                    for n, r in sorted(responses.items())
                    if (typed := r.other or r.text or "")
                    and preview.may_need(record, n, typed)
                    and not preview.seen(self.store, record, n, typed)
                ]
        except (CloseBotError, blocks.FormError):
            return False  # not found, storage, a bad answer: the claim says what is wrong
        if not todo:
            return False
        ack()
        self.work.runner.side(partial(self._show_previews, record, todo, user, channel, thread_ts))
        return True

    def _show_previews(
        self,
        record: QuestionRecord,
        todo: list[tuple[int, str]],
        user: str,
        channel: str,
        thread_ts: str | None,
    ) -> None:
        shown = []
        for number, typed in todo:
            try:
                text = preview.preview(self.store, self.deps.data_dir, record, number, typed)
            except (CloseBotError, ToolError) as e:
                text = f"I could not work out what it books ({e})"
            text = text or "It books nothing by itself: it is kept with the item as your note."
            preview.record_shown(self.store, record, number, typed, text, user)
            shown.append(f"*Question {number}*, your answer “{blocks.cut(typed, 200)}”: {text}")
        self.work.presenter.ephemeral(
            channel=channel,
            user=user,
            thread_ts=thread_ts,
            text="Not booked yet — check what your typed answer books:\n"
            + "\n".join(shown)
            + "\nSubmit again to book it, or change your answer.",
        )

    def submit(self, ack: Ack, body: dict[str, Any]) -> None:
        self._settle(ack, body, cancel=False)

    def choose(self, ack: Ack, body: dict[str, Any]) -> None:
        """A choice made by its own button: the posting approval's Approve / Keep as draft /
        Reject. The same path as Submit (the approval controls vet it, refusals audited)."""
        actions = body.get("actions") or []
        first = actions[0] if actions and isinstance(actions[0], dict) else {}
        number = blocks.chosen_option(str(first.get("action_id") or ""))
        self._settle(ack, body, cancel=False, chosen=number or 0)

    def cancel(self, ack: Ack, body: dict[str, Any]) -> None:
        self._settle(ack, body, cancel=True)

    def decide(self, ack: Ack, body: dict[str, Any]) -> None:
        """Decide on the close's message: a question put off comes back as a fresh form."""
        ack()
        user, channel, thread_ts = _who(body)
        actions = body.get("actions") or []
        if not user or not actions or not isinstance(actions[0], dict):
            return
        question_id = str(actions[0].get("value") or "")
        try:
            with self.store.quick():
                record = self.store.question(question_id)
                run = self.store.run(record.run_id)
                self.answers.authorize(
                    run, user, action="decide", detail={"question_id": question_id}
                )
                if record.status != "deferred":
                    self._notify(
                        channel,
                        user,
                        thread_ts,
                        f"This question is already {record.status}; nothing was changed.",
                    )
                    return
                if not self.work.loop.parked(run.id):
                    self._notify(
                        channel,
                        user,
                        thread_ts,
                        "The close is still working; Decide brings this question back once it waits on you.",
                    )
                    return
                self.store.reopen_question(question_id, by=user)
        except NotFoundError:
            self._notify(
                channel, user, thread_ts, "I don't know this question; nothing was changed."
            )
            return
        except NotAuthorizedError as e:
            self._notify(channel, user, thread_ts, *self._refused(e, "decide it"))
            return
        except AlreadyAnsweredError as e:
            self._notify(channel, user, thread_ts, f"{e}; nothing was changed.")
            return
        except StorageError as e:
            self._notify(channel, user, thread_ts, storage_text(e))
            return
        self.work.ask_again(run.id, question_id)

    def change(self, ack: Ack, body: dict[str, Any]) -> None:
        """'Change a decision': the chosen decision is asked again; a pending approval is
        withdrawn, and the batch is drafted again once it is answered."""
        ack()
        user, channel, thread_ts = _who(body)
        actions = body.get("actions") or []
        if not user or not actions or not isinstance(actions[0], dict):
            return
        value = str((actions[0].get("selected_option") or {}).get("value") or "")
        question_id = value.partition(":")[0]
        try:
            with self.store.quick():
                run = self.store.run(self.store.question(question_id).run_id)
                self.answers.authorize(run, user, action="change", detail={"decision": value})
                record, withdrawn = ask_change(self.store, run.id, value, by=user)
        except NotFoundError:
            self._notify(
                channel, user, thread_ts, "I don't know this decision; nothing was changed."
            )
            return
        except NotAuthorizedError as e:
            self._notify(channel, user, thread_ts, *self._refused(e, "change its decisions"))
            return
        except CloseBotError as e:
            if isinstance(e, StorageError):
                self._notify(channel, user, thread_ts, storage_text(e))
            else:
                self._notify(channel, user, thread_ts, f"Not changed: {e}.")
            return
        self.work.ask_again(run.id, record.id, withdrawn=withdrawn)

    def _control(self, ack: Ack, body: dict[str, Any], *, what: str) -> Run | None:
        """Stop and Retry: the run of the button, if the person may steer it (else a notice)."""
        ack()
        user, channel, thread_ts = _who(body)
        actions = body.get("actions") or []
        if not user or not actions or not isinstance(actions[0], dict):
            return None
        try:
            with self.store.quick():
                run = self.store.run(str(actions[0].get("value") or ""))
                self.answers.authorize(run, user, action=what, detail={})
        except NotFoundError:
            self._notify(channel, user, thread_ts, "I don't know this close; nothing was changed.")
            return None
        except NotAuthorizedError as e:
            self._notify(channel, user, thread_ts, *self._refused(e, f"{what} this close"))
            return None
        except StorageError as e:
            self._notify(channel, user, thread_ts, storage_text(e))
            return None
        return run

    def stop(self, ack: Ack, body: dict[str, Any]) -> None:
        run = self._control(ack, body, what="stop")
        if run is None:
            return
        user, channel, thread_ts = _who(body)
        if run.status not in ("running", "waiting"):
            self._notify(channel, user, thread_ts, f"This close is already {status_word(run)}.")
            return
        try:
            with self.store.quick():
                self.work.stop(run.id, by=user)
        except StorageError as e:
            self._notify(channel, user, thread_ts, storage_text(e))

    def retry(self, ack: Ack, body: dict[str, Any]) -> None:
        run = self._control(ack, body, what="retry")
        if run is None:
            return
        user, channel, thread_ts = _who(body)
        if run.status != "failed":
            self._notify(
                channel, user, thread_ts, f"Nothing to retry: this close is {status_word(run)}."
            )
            return
        self.work.retry(run.id)

    def menu_options(self, ack: Ack, body: dict[str, Any]) -> None:
        """Options of a large question's external select, searched from the store."""
        container = body.get("container") or {}
        try:
            with self.store.quick():
                record = self.store.question_for_message(
                    channel=str(container.get("channel_id", "")),
                    message_ts=str(container.get("message_ts", "")),
                )
        except StorageError:
            ack(options=[])
            return
        parsed = blocks.parse_block_id(body.get("block_id", ""))
        if record is None or parsed is None or not 1 <= parsed[1] <= len(record.questions):
            ack(options=[])
            return
        question = ask_of(record).questions[parsed[1] - 1]
        ack(options=blocks.search_options(question, body.get("value") or ""))

    def any_other_action(self, ack: Ack) -> None:
        """Radio buttons, selects and the like need an ack and nothing more."""
        ack()

    def mention(
        self, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
    ) -> None:
        ack()
        self._conversation(event, body, context, mentioned=True)

    def message(
        self, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
    ) -> None:
        ack()
        if event.get("subtype") == "file_share" and not event.get("bot_id"):
            for f in event.get("files") or []:
                if isinstance(f, dict) and f.get("id"):
                    self._file_dropped(
                        str(f["id"]),
                        str(event.get("channel") or ""),
                        event.get("thread_ts"),
                        str(event.get("user") or ""),
                    )
            if not (event.get("text") or "").strip():
                return  # a file alone: closebot answers it (bot/slack/files.py)
        if event.get("bot_id") or event.get("subtype") not in READ_SUBTYPES:
            return  # bots (ourselves included), edits, joins
        if event.get("channel_type") == "im" and not self._run_thread(event):
            self._dm(event, body)  # the DM with closebot (its Messages tab)
            return
        if not event.get("thread_ts"):
            return  # messages outside threads
        if context.bot_user_id and f"<@{context.bot_user_id}>" in (event.get("text") or ""):
            return  # the app_mention event carries this one
        self._conversation(event, body, context, mentioned=False)

    def file_shared(self, ack: Ack, event: dict[str, Any], context: BoltContext) -> None:
        """`file_shared` (files:read): the same drop as the `file_share` message; its thread
        is found through files.info."""
        ack()
        user = str(event.get("user_id") or "")
        if not user or user == context.bot_user_id:
            return
        self._file_dropped(
            str(event.get("file_id") or ""), str(event.get("channel_id") or ""), None, user
        )

    def _file_dropped(self, file_id: str, channel: str, thread_ts: Any, user: str) -> None:
        files = self.deps.files
        if files is None or not file_id or not channel:
            return
        try:
            with self.store.quick():
                if not files.first(file_id):
                    return  # the other event of the same drop, or a retry
        except StorageError:
            return  # the other event of the drop gets another try
        self.work.runner.side(
            lambda: files.dropped(
                file_id=file_id,
                channel=channel,
                thread_ts=str(thread_ts) if thread_ts else None,
                user=user,
            )
        )

    def file_menu_options(self, ack: Ack, body: dict[str, Any]) -> None:
        """A file form's column menu: the file's headers."""
        found = file_blocks.column_of(str(body.get("block_id") or ""))
        if found is None or self.deps.files is None:
            ack(options=[])
            return
        column, file_id = found
        try:
            with self.store.quick():
                headers, may_skip = self.deps.files.headers(file_id, column)
        except (CloseBotError, ValueError):
            ack(options=[])
            return
        ack(
            options=file_blocks.header_options(
                headers, str(body.get("value") or ""), may_skip=may_skip
            )
        )

    def file_confirm(self, ack: Ack, body: dict[str, Any]) -> None:
        """Submit on a file's form: who may answer, what was chosen; the import runs after."""
        user, channel, thread_ts = _who(body)
        actions = body.get("actions") or []
        files = self.deps.files
        if files is None or not user or not actions or not isinstance(actions[0], dict):
            ack()
            return
        try:
            file_id = int(str(actions[0].get("value") or "0"))
            values = file_blocks.read_file_form((body.get("state") or {}).get("values") or {})
            with self.store.quick():
                f = files.authorize(file_id, user)
        except (ValueError, file_blocks.FileFormError) as e:
            ack()
            self._notify(
                channel, user, thread_ts, f"Not submitted: {e}. Your choices are still in the form."
            )
            return
        except NotFoundError:
            ack()
            self._notify(
                channel, user, thread_ts, "I don't know this file any more; nothing was changed."
            )
            return
        except NotAuthorizedError as e:
            ack()
            self._notify(channel, user, thread_ts, f"{e}; nothing was changed.")
            return
        except StorageError as e:
            ack()
            self._notify(channel, user, thread_ts, storage_text(e))
            return
        ack()
        if f["status"] != "pending":
            self._notify(
                channel,
                user,
                thread_ts,
                f"{f['filename']} was already {f['status']}; nothing was changed.",
            )
            return
        self.work.runner.side(lambda: files.confirmed(file_id=file_id, user=user, values=values))

    def _conversation(
        self, event: dict[str, Any], body: dict[str, Any], context: BoltContext, *, mentioned: bool
    ) -> None:
        """A person wrote to the bot: continue the run of that thread, or say how to start one."""
        thread_ts = event.get("thread_ts")
        channel = str(event.get("channel", ""))
        user = str(event.get("user") or "")
        text = re.sub(rf"<@{context.bot_user_id}>\s*", "", str(event.get("text") or "")).strip()
        files = [f for f in event.get("files") or [] if isinstance(f, dict)]
        if files:  # a file shared in the thread reaches the agent like any reply
            names = ", ".join(str(f.get("name") or f.get("title") or f.get("id")) for f in files)
            text = f"{text}\n(shared {len(files)} file{'s' if len(files) > 1 else ''}: {names})".strip()
        try:
            with self.store.quick():
                if not self.store.first_sighting(
                    str(body.get("event_id") or f"{channel}:{event.get('ts')}")
                ):
                    return  # a Slack retry of an event already handled
                run = (
                    self.store.run_for_thread(channel=channel, thread_ts=str(thread_ts))
                    if thread_ts
                    else None
                )
                if run is None:
                    if mentioned:
                        presenter = self.work.presenter
                        self.work.runner.side(
                            lambda: presenter.reply(
                                channel=channel,
                                # a mention inside a thread is answered in that thread
                                thread_ts=event.get("thread_ts") or event.get("ts"),
                                text=f"Hi! {USAGE}",
                            )
                        )
                    return
                asked = intent(text)
                if asked.kind in ASKED_ANY_TIME and self.deps.desk is not None:
                    self._asked(asked, run, user=user, channel=channel, thread_ts=thread_ts)
                    return  # answered privately, at once, form pending or not
                self.answers.authorize(run, user, action="steer", detail={"text": text[:200]})
                self.work.message(run.id, user=user or None, text=text or "(empty message)")
        except NotAuthorizedError as e:
            self._notify(channel, user, thread_ts, *self._refused(e, "steer it"))
        except StorageError as e:
            self._notify(
                channel,
                user,
                thread_ts,
                "I could not read your message (the database is busy or read-only); please send it again in a moment."
                if isinstance(e, BusyError)
                else storage_text(e),
            )

    def _asked(
        self, asked: Intent, run: Run, *, user: str, channel: str, thread_ts: str | None
    ) -> None:
        """`status`, `what's open?`, `who decided X?` in a close's thread: answered to the
        asker alone, whatever the run is doing (the thread stays quiet)."""
        desk, presenter = self.deps.desk, self.work.presenter
        assert desk is not None
        run_id = run.id

        def answer() -> None:
            text = (
                presenter.state_line(self.store.run(run_id))
                if asked.kind == "status"
                else desk.answer(asked, user)
            )
            desk.tell(
                channel=channel,
                thread_ts=thread_ts,
                user=user,
                # people by name: the answer is the asker's alone, and notifies nobody
                text=presenter.safe(text, run=run) if asked.kind == "status" else text,
            )

        self.work.runner.side(answer)

    # -- the DM, the assistant pane and the App Home --------------------------------

    def _run_thread(self, event: dict[str, Any]) -> bool:
        thread_ts = event.get("thread_ts")
        if not thread_ts:
            return False
        with self.store.quick():
            return (
                self.store.run_for_thread(channel=str(event.get("channel")), thread_ts=thread_ts)
                is not None
            )

    def _dm(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        """A message to closebot in its DM or the assistant pane: start a close, or answer."""
        desk, user = self.deps.desk, str(event.get("user") or "")
        channel, thread_ts = str(event.get("channel") or ""), event.get("thread_ts")
        if desk is None or not user or not channel:
            return
        try:
            with self.store.quick():
                if not self.store.first_sighting(
                    str(body.get("event_id") or f"{channel}:{event.get('ts')}")
                ):
                    return
        except StorageError:
            return
        asked = intent(str(event.get("text") or ""))
        if asked.kind == "close":
            self._close_from_dm(asked, user=user, channel=channel, thread_ts=thread_ts)
            return
        self.work.runner.side(
            lambda: desk.reply(
                channel=channel, thread_ts=thread_ts, user=user, text=desk.answer(asked, user)
            )
        )

    def _close_from_dm(
        self, asked: Intent, *, user: str, channel: str, thread_ts: str | None
    ) -> None:
        """ "close October": the /close flow in the DM; which period, when that is unclear."""
        desk = self.deps.desk
        assert desk is not None
        period, periods = desk.desk.period_for(asked.arg)
        try:
            with self.store.quick():
                open_ = [] if asked.arg else open_periods(self.store, self.deps.data_dir)
                if period is None and len(open_) == 1:
                    period = open_[0].period
                taken = period is not None and self.closes.is_taken(period)
        except StorageError as e:
            text = storage_text(e)
            self.work.runner.side(
                lambda: desk.reply(channel=channel, thread_ts=thread_ts, user=user, text=text)
            )
            return
        if period is None and len(open_) > 1:  # which one? a form, the earliest recommended
            self.work.runner.side(
                lambda: desk.post_blocks(
                    channel=channel,
                    thread_ts=thread_ts,
                    text="Which period do you want to close?",
                    blocks=period_blocks.which_period_form(open_),
                )
            )
            return
        if period is None:
            named = ", ".join(f"`close {p}`" for p in periods) or "none: add a period's files"
            text = f"Which period? Periods with data: {named}."
            self.work.runner.side(
                lambda: desk.reply(channel=channel, thread_ts=thread_ts, user=user, text=text)
            )
            return
        say = partial(self._dm_say, channel=channel, thread_ts=thread_ts, user=user)
        if taken:
            self.closes.tell_taken(period, say)
            return
        try:
            with self.store.quick():
                run = self.store.create_run(
                    period=period,
                    mode="slack",
                    started_by=user,
                    model=self.work.loop.model.name,
                    channel=channel,
                    one_per_period=True,
                )
        except PeriodTakenError:
            self.closes.tell_taken(period, say)
            return
        except StorageError as e:
            text = storage_text(e)
            self.work.runner.side(
                lambda: desk.reply(channel=channel, thread_ts=thread_ts, user=user, text=text)
            )
            return
        self.work.start_close(run.id)

    def _dm_say(self, text: str, *, channel: str, thread_ts: str | None, user: str) -> None:
        if self.deps.desk is not None:
            self.deps.desk.reply(channel=channel, thread_ts=thread_ts, user=user, text=text)

    def home_opened(self, ack: Ack, event: dict[str, Any]) -> None:
        """The App Home's Home tab: published for the viewer (the Messages tab needs nothing)."""
        ack()
        user, desk = str(event.get("user") or ""), self.deps.desk
        if event.get("tab", "home") == "home" and user and desk is not None:
            self.work.runner.side(lambda: desk.publish_home(user))

    def assistant_started(self, ack: Ack, payload: dict[str, Any]) -> None:
        ack()
        thread = payload.get("assistant_thread") or {}
        channel, thread_ts, desk = thread.get("channel_id"), thread.get("thread_ts"), self.deps.desk
        if channel and thread_ts and desk is not None:
            self.work.runner.side(lambda: desk.suggest(channel=channel, thread_ts=thread_ts))

    def assistant_context_changed(self, ack: Ack) -> None:
        ack()  # the pane's channel context: closebot's answers do not depend on it

    def assistant_message(
        self, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
    ) -> None:
        ack()
        if self._run_thread(event):  # a close started from the pane: its own thread
            self._conversation(event, body, context, mentioned=False)
            return
        self._dm(event, body)

    def tokens_revoked(self, ack: Ack, event: dict[str, Any]) -> None:
        """The workspace took back the bot's token: every run waits until a token works again."""
        ack()
        if "bot" in (event.get("tokens") or {}) or not event.get("tokens"):
            self.work.runner.side(lambda: _pause(self.work, "tokens_revoked"))

    def app_uninstalled(self, ack: Ack) -> None:
        ack()
        self.work.runner.side(lambda: _pause(self.work, "app_uninstalled"))


def _pause(work: SlackWork, reason: str) -> None:
    work.pause_workspace(reason)


def _already(record: QuestionRecord) -> tuple[str, tuple[str, ...]]:
    who = f" by <@{record.answered_by}>" if record.answered_by else ""
    return f"This question was already {record.status}{who}; nothing was changed.", (
        record.answered_by or "",
    )


def status_word(run: Run) -> str:
    return {"done": "finished", "failed": "stopped by an error", "cancelled": "stopped"}.get(
        run.status, run.status
    )
