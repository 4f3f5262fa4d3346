"""A question's form: Submit, a choice's own button (Approve / Keep as draft / Reject) and
Cancel — authorize, read and check the form, claim atomically, ack, resume. A typed answer
that books something is shown before it is booked; an approval whose form did not show a
message written in the thread since is not claimed."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from slack_bolt import Ack, App

from bot import blocks
from bot.agent_loop import ask_of
from bot.close import answer_preview, preview_may_need, preview_seen, record_preview_shown
from bot.core.answers import may_steer
from bot.core.errors import (
    AlreadyAnsweredError,
    AnswerError,
    CloseBotError,
    NotAuthorizedError,
    NotFoundError,
    StorageError,
)
from bot.core.questions import check_responses, question_whys
from bot.core.tools import ToolError
from bot.slack.close_start import storage_text
from bot.slack.listeners.shared import Deps, already, bind, notify, refused, who
from bot.slack.presenter import Clicked
from bot.store import QuestionRecord

log = logging.getLogger(__name__)

NO_WHY_BOX = "answered on a form from an earlier release, which had no Why box"


def register(app: App, deps: Deps) -> None:
    app.action(blocks.SUBMIT_ACTION)(bind(submit, deps))
    app.action(blocks.CANCEL_ACTION)(bind(cancel, deps))
    app.action(blocks.CHOICE_ACTION_RE)(bind(choose, deps))
    app.action(blocks.ANSWER_ACTION)(bind(pick, deps))


def pick(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """A choice on a card whose input dispatches (blocks/boxes.py): ack at once; then, for a
    person who may answer it, the card redrawn with the Other or Why box the choice calls for."""
    ack()
    user, channel, _ = who(body)
    question_id = blocks.form_parts((body.get("message") or {}).get("blocks"))[0]
    if not (user and question_id):
        return

    def redraw() -> None:
        try:
            record = deps.store.questions.get(question_id)
            if may_steer(deps.store.runs.get(record.run_id), user, deps.approvers):
                deps.work.presenter.pick_on_form(question_id, body, clicked(body, channel))
        except CloseBotError as e:  # the card stays; Submit still asks for what is due
            log.warning("question %s: choice not shown: %s", question_id, e)

    deps.work.runner.fast(redraw, key=pick_key(question_id))


def pick_key(question_id: str) -> str:
    """The runner key a card's redraw after a choice runs under (busy while it is on its way)."""
    return f"pick:{question_id}"


def submit(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    settle(deps, ack, body, cancel=False)


def choose(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """A choice made by its own button: the posting approval's Approve / Keep as draft /
    Reject. The same path as Submit (the approval controls vet it, refusals audited)."""
    actions = body.get("actions") or []
    first = actions[0] if actions and isinstance(actions[0], dict) else {}
    number = blocks.chosen_option(str(first.get("action_id") or ""))
    settle(deps, ack, body, cancel=False, chosen=number or 0)


def cancel(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    settle(deps, ack, body, cancel=True)


def settle(
    deps: Deps, ack: Ack, body: dict[str, Any], *, cancel: bool, chosen: int | None = None
) -> None:
    """Submit, a choice's own button (`chosen`: its option) or Cancel: authorize, read and
    check the form, claim atomically, ack, resume."""
    user, channel, thread_ts = who(body)
    actions = body.get("actions") or []
    if not user or not actions or not isinstance(actions[0], dict):
        log.warning(
            "ignored a %s payload with no user or no action", "cancel" if cancel else "submit"
        )
        ack()
        return
    question_id = str(actions[0].get("value") or "")
    values = (body.get("state") or {}).get("values") or {}
    if not cancel and _unseen(deps, ack, body, question_id, user, channel, thread_ts):
        return
    if not cancel and _preview_first(deps, ack, question_id, values, user, channel, thread_ts):
        return
    # A form an earlier release posted has no "Why" box: its answer is taken without one
    # (an override could never be recorded otherwise), and recorded as such.
    why_box = blocks.has_why_box((body.get("message") or {}).get("blocks"))
    try:
        with deps.store.quick():
            record = deps.answers.settle(
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
        notify(
            deps, channel, user, thread_ts, "I don't know this form any more; nothing was changed."
        )
        return
    except NotAuthorizedError as e:
        ack()
        text, people = refused(deps, e, "answer this")
        notify(deps, channel, user, thread_ts, text, people)
        return
    except (AnswerError, blocks.FormError) as e:
        ack()
        shown = blocks.form_parts((body.get("message") or {}).get("blocks"))[2]
        if chosen is not None and "say why" in str(e) and "w" not in shown:
            # a choice's own button against the ⭐: its card shows the Why box now (issue 30)
            via = clicked(body, channel)
            deps.work.runner.fast(partial(deps.work.presenter.ask_why_on_form, question_id, via))
            notify(deps, channel, user, thread_ts, f"Not yet: {e} — the box is on the card now.")
            return
        notify(
            deps,
            channel,
            user,
            thread_ts,
            f"Not submitted: {e}. Your choices are still in the form.",
        )
        return
    except AlreadyAnsweredError:
        ack()
        notify(deps, channel, user, thread_ts, *already(deps.store.questions.get(question_id)))
        return
    except StorageError as e:
        ack()
        notify(deps, channel, user, thread_ts, storage_text(e))
        return
    ack()
    deps.work.answered(record.run_id, question_id, clicked(body, channel))


def _unseen(
    deps: Deps,
    ack: Ack,
    body: dict[str, Any],
    question_id: str,
    user: str,
    channel: str,
    thread_ts: str | None,
) -> bool:
    """An approval submitted on a form that did not yet show a message written in the
    thread after it was posted: nothing is claimed; the form shows it, answer again."""
    work = deps.work
    try:
        with deps.store.quick():
            record = deps.store.questions.get(question_id)
            shown = (body.get("message") or {}).get("blocks") or []
            unseen = work.presenter.unseen_messages(
                record, shown if isinstance(shown, list) else []
            )
    except (NotFoundError, StorageError):
        return False  # the claim says what is wrong
    if not unseen or record.status != "pending":
        return False
    ack()
    writers = list(dict.fromkeys(m["user"] for m in unseen if m["user"]))
    names = " and ".join(f"<@{u}>" for u in writers) or "Someone"
    notify(
        deps,
        channel,
        user,
        thread_ts,
        f"{names} wrote to closebot in the thread after this form was posted, so nothing was changed: "
        "the form now shows what was written — read it, then answer again.",
        tuple(writers),
    )
    work.runner.fast(partial(work.presenter.note_message, record.run_id))
    return True


def _preview_first(
    deps: Deps,
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
    store = deps.store
    try:
        with store.quick():
            record = store.questions.get(question_id)
            run = store.runs.get(record.run_id)
            if record.status != "pending" or not may_steer(run, user, deps.approvers):
                return False  # the claim says what is wrong
            ask = ask_of(record)
            responses = blocks.read_form(ask, values)
            check_responses(ask, responses)
            question_whys(ask, responses, blocks.read_rationale(values))
            todo = [
                (n, typed)
                for n, r in sorted(responses.items())
                if (typed := r.other or r.text or "")
                and preview_may_need(record, n, typed)
                and not preview_seen(store, record, n, typed)
            ]
    except (CloseBotError, blocks.FormError):
        return False  # not found, storage, a bad answer: the claim says what is wrong
    if not todo:
        return False
    ack()
    deps.work.runner.side(partial(_show_previews, deps, record, todo, user, channel, thread_ts))
    return True


def _show_previews(
    deps: Deps,
    record: QuestionRecord,
    todo: list[tuple[int, str]],
    user: str,
    channel: str,
    thread_ts: str | None,
) -> None:
    shown = []
    for number, typed in todo:
        try:
            text = answer_preview(deps.store, deps.data_dir, record, number, typed)
        except (CloseBotError, ToolError) as e:
            text = f"I could not work out what it books ({e})"
        text = text or "It books nothing by itself: it is kept with the item as your note."
        record_preview_shown(deps.store, record, number, typed, text, user)
        shown.append(f"*Question {number}*, your answer “{blocks.cut(typed, 200)}”: {text}")
    deps.work.presenter.ephemeral(
        channel=channel,
        user=user,
        thread_ts=thread_ts,
        text="Not booked yet — check what your typed answer books:\n"
        + "\n".join(shown)
        + "\nSubmit again to book it, or change your answer.",
    )


def clicked(body: dict[str, Any], channel: str) -> Clicked | None:
    """The form a person answered on, with the interaction's response_url (it is turned
    read-only through that URL: no Web API call)."""
    url = body.get("response_url")
    ts = (body.get("container") or {}).get("message_ts")
    if not (isinstance(url, str) and url and isinstance(ts, str) and ts and channel):
        return None
    return Clicked(response_url=url, channel=channel, ts=ts)
