"""A file's form in the thread, beyond Submit: what its picks mean (the file's headers by their
place, whole-file values, wells, the header row), the preview redrawn after each pick, and
Cancel (the file withdrawn, nothing of it used). bot/slack/files.py posts the form and applies
its Submit."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from bot.blocks import outgoing
from bot.close import FILE_KINDS, Ask, column_label
from bot.close import file_preview as preview
from bot.close import optional_file as optional
from bot.slack.blocks import files as file_blocks

if TYPE_CHECKING:
    from bot.slack.files import FileIntake

log = logging.getLogger(__name__)


def with_headers(headers: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """A form's mapping ("#i" = the file's i-th header) as the file's header names."""
    out = {}
    for column, v in mapping.items():
        if v.startswith("#") and v[1:].isdigit():
            i = int(v[1:])
            out[column] = headers[i] if i < len(headers) else ""
        else:
            out[column] = v  # "" (none) or "=value" (the whole file's)
    return out


def missing_required(kind: str, mapping: dict[str, str]) -> list[str]:
    """The columns a file cannot do without that a form left unread (in words)."""
    if kind not in FILE_KINDS:
        return []
    return [
        column_label(c)
        for c in FILE_KINDS[kind].columns
        if c in mapping and not mapping[c] and not optional(kind, c)
    ]


def later_channel(intake: FileIntake, got: Any) -> str:
    """Where a file that waited was dropped (its own thread), to answer it there."""
    return str(intake.imports.file(got.id).get("channel") or "")


def later_thread(intake: FileIntake, got: Any) -> str | None:
    return intake.imports.file(got.id).get("thread_ts") or None


def ask_now(intake: FileIntake, f: dict[str, Any], mapping: dict[str, str]) -> Ask:
    """The question a pending file's form asks, with `mapping` as picked so far."""
    sheet = intake.imports.sheet_of(f["id"])
    return Ask(
        kind=f["kind"],
        kinds=[f["kind"]],
        period=f["period"],
        headers=[h for h in sheet.header if h],
        mapping=mapping,
        needs=["mapping"],
        header_row=sheet.header_row,
        top=sheet.top,
    )


def repreview(
    intake: FileIntake, *, file_id: int, user: str, values: dict[str, Any], ts: str
) -> None:
    """A column picked: the form redrawn with the picks so far and their preview."""
    f = intake.imports.file(file_id)
    if f["status"] != "pending" or not f["kind"] or not f["form_ts"] or f["form_ts"] != ts:
        return
    picked = file_blocks.read_file_form(values, partial=True)
    headers = [h for h in intake.imports.sheet_of(file_id).header if h]
    mapping = {**f["mapping"], **with_headers(headers, picked.get("mapping") or {})}
    ask = ask_now(intake, f, mapping)
    rows = preview(intake.imports.sheet_of(file_id), f["kind"], mapping)
    try:
        intake.client.chat_update(
            channel=f["channel"],
            ts=ts,
            text=outgoing(f"{f['filename']}: a question for <@{user}> before I use it", [user]),
            blocks=file_blocks.file_form(file_id, f["filename"], ask, rows, nonce=str(file_id)),
        )
    except SlackApiError as e:
        log.warning("file form %s not redrawn: %s", file_id, e.response.get("error"))


def cancelled(intake: FileIntake, *, file_id: int, user: str) -> None:
    """Cancel on a file's form: the file withdrawn (audited), the form settled."""
    f = intake.imports.cancel(file_id, by=user)
    if f["form_ts"]:
        try:
            intake.client.chat_update(
                channel=f["channel"],
                ts=f["form_ts"],
                text=outgoing(f"{f['filename']}: cancelled by {intake.names(user)}"),
                blocks=file_blocks.settled_form(
                    f["filename"], intake.names(user), "cancelled; nothing of it was used"
                ),
            )
        except SlackApiError as e:
            log.warning("file form %s not settled: %s", file_id, e.response.get("error"))
