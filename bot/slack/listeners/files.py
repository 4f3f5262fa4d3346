"""Files people drop (the `file_shared` event; the `file_share` message comes through
events.py) and a file's form: its column menus and its Submit. The reading itself runs
after the ack (bot/slack/files.py)."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, BoltContext

from bot.core.errors import CloseBotError, NotAuthorizedError, NotFoundError, StorageError
from bot.slack import file_forms
from bot.slack.blocks import files as file_blocks
from bot.slack.close_start import storage_text
from bot.slack.listeners.shared import Deps, bind, notify, who


def register(app: App, deps: Deps) -> None:
    app.action(file_blocks.CONFIRM_ACTION)(bind(file_confirm, deps))
    app.action(file_blocks.CANCEL_ACTION)(bind(file_cancel, deps))
    app.action(file_blocks.PICK_ACTION)(bind(file_pick, deps))
    app.options(file_blocks.PICK_ACTION)(bind(file_menu_options, deps))
    app.event("file_shared")(bind(file_shared, deps))


def file_shared(deps: Deps, ack: Ack, event: dict[str, Any], context: BoltContext) -> None:
    """`file_shared` (files:read): the same drop as the `file_share` message; its thread
    is found through files.info."""
    ack()
    user = str(event.get("user_id") or "")
    if not user or user == context.bot_user_id:
        return
    dropped(deps, str(event.get("file_id") or ""), str(event.get("channel_id") or ""), None, user)


def dropped(deps: Deps, file_id: str, channel: str, thread_ts: Any, user: str) -> None:
    """A file was dropped: read after the ack, once however many events tell of it."""
    files = deps.files
    if files is None or not file_id or not channel:
        return
    if thread_ts:  # whichever event came first does the work: it may need this thread
        files.shares.hint(file_id, str(thread_ts))
    try:
        with deps.store.quick():
            if not files.first(file_id):
                return  # the other event of the same drop, or a retry
    except StorageError:
        return  # the other event of the drop gets another try
    deps.work.runner.slow_io(  # a download waits on a server: never on the fast pool
        lambda: files.dropped(
            file_id=file_id,
            channel=channel,
            thread_ts=str(thread_ts) if thread_ts else None,
            user=user,
        )
    )


def file_menu_options(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """A file form's column menu: the file's headers."""
    found = file_blocks.column_of(str(body.get("block_id") or ""))
    if found is None or deps.files is None:
        ack(options=[])
        return
    column, file_id = found
    try:
        with deps.store.quick():
            headers, may_skip = deps.files.headers(file_id, column)
    except (CloseBotError, ValueError):
        ack(options=[])
        return
    ack(
        options=file_blocks.header_options(headers, str(body.get("value") or ""), may_skip=may_skip)
    )


def file_confirm(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """Submit on a file's form: who may answer, what was chosen; the import runs after."""
    user, channel, thread_ts = who(body)
    actions = body.get("actions") or []
    files = deps.files
    if files is None or not user or not actions or not isinstance(actions[0], dict):
        ack()
        return
    try:
        found_id = file_blocks.file_id_of(str(actions[0].get("value") or ""))
        if found_id is None:
            raise ValueError("that form names no file of mine")
        file_id = found_id
        values = file_blocks.read_file_form((body.get("state") or {}).get("values") or {})
        with deps.store.quick():
            f = files.authorize(file_id, user)
    except (ValueError, file_blocks.FileFormError) as e:
        ack()
        notify(
            deps,
            channel,
            user,
            thread_ts,
            f"Not submitted: {e}. Your choices are still in the form.",
        )
        return
    except NotFoundError:
        ack()
        notify(
            deps, channel, user, thread_ts, "I don't know this file any more; nothing was changed."
        )
        return
    except NotAuthorizedError as e:
        ack()
        notify(deps, channel, user, thread_ts, f"{e}; nothing was changed.")
        return
    except StorageError as e:
        ack()
        notify(deps, channel, user, thread_ts, storage_text(e))
        return
    ack()
    if f["status"] != "pending":
        notify(
            deps,
            channel,
            user,
            thread_ts,
            f"{f['filename']} was already {f['status']}; nothing was changed.",
        )
        return
    deps.work.runner.side(lambda: files.confirmed(file_id=file_id, user=user, values=values))


def _pending(deps: Deps, body: dict[str, Any], file_id: int) -> tuple[str, str, Any] | None:
    """Who acts on a file's form, if they may (else told privately, and None)."""
    user, channel, thread_ts = who(body)
    files = deps.files
    if files is None or not user:
        return None
    try:
        with deps.store.quick():
            files.authorize(file_id, user)
    except NotFoundError:
        notify(
            deps, channel, user, thread_ts, "I don't know this file any more; nothing was changed."
        )
        return None
    except NotAuthorizedError as e:
        notify(deps, channel, user, thread_ts, f"{e}; nothing was changed.")
        return None
    except StorageError as e:
        notify(deps, channel, user, thread_ts, storage_text(e))
        return None
    return user, channel, thread_ts


def file_cancel(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """Cancel on a file's form: the file is not used (withdrawn, audited)."""
    ack()
    actions = body.get("actions") or []
    if not actions or not isinstance(actions[0], dict) or deps.files is None:
        return
    try:
        found_id = file_blocks.file_id_of(str(actions[0].get("value") or ""))
        if found_id is None:
            raise ValueError("that form names no file of mine")
        file_id = found_id
    except ValueError:
        return
    allowed = _pending(deps, body, file_id)
    if allowed is None:
        return
    user, channel, thread_ts = allowed
    files = deps.files

    def cancel() -> None:
        try:
            file_forms.cancelled(files, file_id=file_id, user=user)
        except CloseBotError as e:
            notify(deps, channel, user, thread_ts, f"{e}")

    deps.work.runner.side(cancel)


def file_pick(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """A column picked on a file's form: its preview redrawn with the picks so far."""
    ack()
    message = body.get("message") or {}
    blocks = message.get("blocks") or []
    file_id = next(
        (
            file_blocks.file_id_of(str(e["value"]))
            for b in blocks
            if b.get("type") == "actions"
            for e in b.get("elements") or []
            if e.get("action_id") == file_blocks.CONFIRM_ACTION
            and file_blocks.file_id_of(str(e.get("value"))) is not None
        ),
        None,
    )
    if file_id is None or deps.files is None:
        return
    allowed = _pending(deps, body, file_id)
    if allowed is None:
        return
    user = allowed[0]
    values = (body.get("state") or {}).get("values") or {}
    files, ts = deps.files, str(message.get("ts") or "")
    deps.work.runner.side(
        lambda: file_forms.repreview(files, file_id=file_id, user=user, values=values, ts=ts)
    )
