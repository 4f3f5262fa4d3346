"""Files people drop into a /close thread or a DM with closebot: fetched from Slack
(`files.info`, then `url_private_download` with the bot token), read by bot/close/imports,
and answered in the thread — what was read, every problem, or a form for what can't be told.

Both events Slack sends for one drop (`message` with subtype `file_share`, and
`file_shared`) lead here; the file's id makes the second a no-op.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.blocks import escape, outgoing, section
from bot.close import FILE_KINDS, FILE_LEVEL_COLUMNS, Imports, Received, period_label, period_taken
from bot.close import file_preview as preview
from bot.close import optional_file as optional
from bot.core.errors import CloseBotError, NotAuthorizedError
from bot.core.names import Names
from bot.slack.blocks import files as file_blocks
from bot.slack.client import bot_token
from bot.slack.downloads import (
    DownloadRefused,
    DownloadTooBig,
    DownloadTooSlow,
    SignInPage,
    SignInRedirect,
    SlackDownloads,
    allowed_origins,
    is_sign_in_page,
)
from bot.slack.file_access import may_drop, refuse_drop
from bot.slack.file_forms import later_channel, later_thread, missing_required, with_headers
from bot.slack.file_shares import Shares
from bot.store import Store

log = logging.getLogger(__name__)

# (channel, thread_ts, period, who asked): start the close in the thread that has its files
StartClose = Callable[[str, str, str, str], None]

MAX_FILE_BYTES = 20_000_000
DOWNLOAD_SECONDS = 60.0  # a download's time budget, however slowly its server answers
READABLE = (".csv", ".xlsx", ".xlsm", ".txt", ".tsv")


class FileIntake:
    """Reads dropped files and answers in their thread; confirms a file form."""

    def __init__(
        self,
        *,
        store: Store,
        client: WebClient,
        approvers: frozenset[str] = frozenset(),
        finance: frozenset[str] = frozenset(),
        data_dir: Path | None = None,
        start: StartClose | None = None,
        names: Names | None = None,
    ) -> None:
        self.store = store
        self.client = client
        self.names = names or Names(store)  # people by name (users.info, cached)
        self.imports = Imports(store, data_dir=data_dir)
        self.approvers = approvers
        self.finance = finance  # CLOSEBOT_FINANCE: may drop any period's files
        self.data_dir = data_dir
        self.start = start  # begins a close in a thread that waited for its files
        self.shares = Shares(client)  # files.info, retried, and the thread of each drop
        self._seen: set[str] = set()
        self._seen_lock = threading.Lock()

    # -- a drop --------------------------------------------------------------

    def first(self, file_id: str) -> bool:
        """True once per file id in this process (the two events of one drop)."""
        with self._seen_lock:
            if file_id in self._seen:
                return False
            self._seen.add(file_id)
        return self.imports.by_slack_file(file_id) is None

    def dropped(self, *, file_id: str, channel: str, thread_ts: str | None, user: str) -> None:
        """Fetch, read and answer one dropped file (a background job, never in a listener)."""
        try:
            info = self.shares.info(file_id)
        except SlackApiError as e:
            log.warning("file %s: files.info refused: %s", file_id, e.response.get("error"))
            return
        name = str(info.get("name") or info.get("title") or file_id)
        if not name.lower().endswith(READABLE):
            return  # a screenshot or a PDF in the thread is not for closebot
        # file_shared carries no thread: the share (or the message event) says where it went
        info, thread_ts, top = self.shares.located(file_id, info, channel, thread_ts)
        reply_to = thread_ts or top
        run = (
            self.store.runs.for_thread(channel=channel, thread_ts=thread_ts) if thread_ts else None
        )
        waiting = (
            self.imports.waiting_thread(channel=channel, thread_ts=thread_ts)
            if thread_ts and run is None
            else None
        )
        if run is None and waiting is None and not channel.startswith("D"):
            return  # a file in a channel outside a close's thread is not for closebot
        starter = run.started_by if run else waiting["started_by"] if waiting else None
        if not may_drop(user, starter, {*self.approvers, *self.finance}):
            refuse_drop(
                self.store,
                self.client,
                user,
                name,
                file_id,
                channel=channel,
                thread_ts=reply_to,
                run_id=run.id if run else None,
            )
            return
        if int(info.get("size") or 0) > MAX_FILE_BYTES:
            self._say(channel, reply_to, f"{name} is over 20 MB; I did not read it.")
            return
        try:
            raw = self._download(str(info.get("url_private_download") or ""))
        except DownloadRefused as e:
            # never the token to another host (api.slack.com/types/file: a remote file's URL
            # "can point to any host. Don't send Slack tokens or cookies to it")
            log.warning("file %s: download refused: %s", file_id, e)
            self.store.audit.record(
                run_id=run.id if run else None,
                kind="file_download_refused",
                actor=user,
                detail={"file": file_id, "filename": name, "why": str(e)},
            )
            self._say(
                channel,
                reply_to,
                f"I did not read {name}: its address is not on Slack's file host, and I "
                "fetch files only from Slack; nothing was read.",
            )
            return
        except (DownloadTooBig, DownloadTooSlow) as e:
            log.warning("file %s: download cut off: %s", file_id, e)
            self._say(channel, reply_to, f"I stopped downloading {name} ({e}); nothing was read.")
            return
        except (SignInPage, SignInRedirect):
            log.warning("file %s: the download answered Slack's sign-in page", file_id)
            self._say(
                channel,
                reply_to,
                f"I could not read {name}: that download was Slack's sign-in page, not the "
                "file — my token cannot open it (share it again in this thread, or ask an "
                "admin to reinstall closebot with files:read); nothing was read.",
            )
            return
        except OSError as e:
            log.warning("file %s: download failed: %s", file_id, e)
            self._say(
                channel,
                reply_to,
                f"I could not download {name} from Slack ({e}); nothing was read.",
            )
            return
        try:
            got = self.imports.receive(
                filename=name,
                raw=raw,
                dropped_by=user,
                origin="slack",
                period=run.period if run else waiting["period"] if waiting else None,
                slack_file=file_id,
                channel=channel,
                thread_ts=reply_to,
                run_id=run.id if run else None,
            )
        except sqlite3.IntegrityError:
            return  # another process took this drop (its other event)
        self._answer(got, channel=channel, thread_ts=reply_to, user=user)
        self._after(got, channel=channel, thread_ts=reply_to, user=user)

    # -- a close that waits for its files -------------------------------------

    def open_waiting(self, *, channel: str, period: str, user: str) -> None:
        """/close for a period with no data yet: a thread where its files are dropped."""
        title = outgoing(
            f"Month-end close · {period_label(period)} · started by <@{user}> — waiting for files",
            names=self.names,
        )
        text = (
            f"I have no data for {period_label(period)} yet. Drop the period's files into this "
            "thread (CSV or Excel, in your operators' own layouts): "
            + ", ".join(FILE_KINDS)
            + ". I tell you what I read from each, ask when I can't tell, and start the close "
            "when all eleven are in."
        )
        root = self.client.chat_postMessage(
            channel=channel, text=title, blocks=[section(f"*{title}*")]
        )
        self.imports.open_thread(
            channel=str(root["channel"]), thread_ts=str(root["ts"]), period=period, started_by=user
        )
        self.client.chat_postMessage(
            channel=str(root["channel"]),
            thread_ts=str(root["ts"]),
            text=outgoing(text),
            blocks=[section(escape(text))],
        )

    def _after(self, got: Received, *, channel: str, thread_ts: str | None, user: str) -> None:
        """In a thread waiting for its files: what is still missing, or the close starts."""
        if got.status not in ("active", "duplicate") or not thread_ts:
            return
        run = self.store.runs.for_thread(channel=channel, thread_ts=thread_ts)
        if run is not None:
            taken = period_taken(self.store, run.period)
            if taken is not None and taken.posted is not None:  # issue 31: never a promise
                self._say(
                    channel,
                    thread_ts,
                    f"{run.period} is posted, and a posted period is not closed again: "
                    f"{got.filename} is kept on record but no close will use it.",
                )
            elif self.store.audit.events(run.id, kind="input_files"):
                self._say(
                    channel,
                    thread_ts,
                    f"This close read its files when it began (their SHA-256 are its evidence), "
                    f"so it goes on with those; {got.filename} is kept for {run.period} and the "
                    f"next /close {run.period} uses it.",
                )
            return
        waiting = self.imports.waiting_thread(channel=channel, thread_ts=thread_ts)
        if waiting is None or waiting["run_id"] or waiting["period"] != got.period:
            return
        asked = self.imports.unsettled(got.period)
        if asked:  # an operator's file still asked about: the close waits to read it too
            self._say(
                channel,
                thread_ts,
                f"Waiting for what I asked about {', '.join(asked)} before the close starts.",
            )
            return
        missing = self.imports.missing(got.period, self.data_dir)
        if missing:
            self._say(
                channel,
                thread_ts,
                f"Still needed for {period_label(got.period)}: {', '.join(missing)}.",
            )
            return
        if self.start is None or not self.imports.claim_thread(
            channel=channel, thread_ts=thread_ts, run_id="starting"
        ):
            return
        self._say(
            channel,
            thread_ts,
            f"All eleven files for {period_label(got.period)} are in: starting the close.",
        )
        self.start(channel, thread_ts, got.period, waiting["started_by"] or user)

    def _download(self, url: str) -> bytes:
        if not url:
            raise OSError("the file has no download address")
        fetched = SlackDownloads(
            token=bot_token(self.client),
            allowed=allowed_origins(self.client.base_url),
            max_bytes=MAX_FILE_BYTES,
            seconds=DOWNLOAD_SECONDS,
        ).fetch(url)
        if is_sign_in_page(fetched.content_type, fetched.data):
            raise SignInPage(url)
        return fetched.data

    def _answer(self, got: Received, *, channel: str, thread_ts: str | None, user: str) -> None:
        for later in got.followups:  # files that waited for this DOI, read now
            self._answer(
                later,
                channel=later_channel(self, later) or channel,
                thread_ts=later_thread(self, later) or thread_ts,
                user=user,
            )
            self._after(later, channel=channel, thread_ts=thread_ts, user=user)
        if got.status == "waiting":
            self._say(
                channel,
                thread_ts,
                f"{got.filename} reads as {file_blocks.kind_label(got.kind)} for "
                f"{period_label(got.period)}; I read it once the period's DOI master (doi.csv) "
                "is in, to tie its wells to the DOI's.",
            )
            return
        if got.status == "pending":
            assert got.ask is not None
            f = self.imports.file(got.id)
            sheet = self.imports._sheet(f)
            rows = preview(sheet, got.ask.kind, got.ask.mapping) if got.ask.kind else []
            form = file_blocks.file_form(got.id, got.filename, got.ask, rows, nonce=str(got.id))
            text = outgoing(f"{got.filename}: a question for <@{user}> before I use it", [user])
            response = self.client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=text, blocks=form
            )
            self.imports.set_form(got.id, str(response["ts"]))
            return
        text = file_blocks.received_text(got, user, self.names)
        self.client.chat_postMessage(
            channel=channel,
            thread_ts=thread_ts,
            text=outgoing(text.split("\n", 1)[0], names=self.names),
            blocks=[{**b} for b in file_blocks.received_blocks(got, user, self.names)],
        )
        if got.status == "refused" and len(got.problems) > file_blocks.MAX_PROBLEMS_SHOWN:
            listing = "\n".join(str(p) for p in got.problems)
            try:
                self.client.files_upload_v2(
                    channel=channel,
                    thread_ts=thread_ts,
                    file_uploads=[
                        {
                            "filename": f"problems-{got.filename}.txt",
                            "title": f"Every problem in {got.filename}",
                            "content": listing,
                        }
                    ],
                )
            except SlackApiError as e:
                log.warning("problem list not attached: %s", e.response.get("error"))

    def _say(self, channel: str, thread_ts: str | None, text: str) -> None:
        safe = outgoing(text, names=self.names)
        self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=safe)

    # -- a file form's Submit -----------------------------------------------

    def headers(self, file_id: int, column: str) -> tuple[list[str], bool]:
        """A pending file's headers, and whether `column` may be left unmapped."""
        f = self.imports.file(file_id)
        kind = f["kind"]
        may_skip = (
            bool(kind)
            and column in FILE_KINDS[kind].columns
            and (optional(kind, column) or column in FILE_LEVEL_COLUMNS)
        )
        return [h for h in self.imports._sheet(f).header if h], may_skip

    def authorize(self, file_id: int, user: str) -> dict[str, Any]:
        """The pending file, if `user` may answer for it (who dropped it, the close's starter
        or an approver)."""
        f = self.imports.file(file_id)
        allowed = {f["dropped_by"], *self.approvers}
        if f["run_id"]:
            allowed.add(self.store.runs.get(f["run_id"]).started_by or "")
        if user not in allowed:
            raise NotAuthorizedError(
                f"Only <@{f['dropped_by']}> (who dropped {f['filename']}) or an approver can answer this",
                started_by=f["dropped_by"],
            )
        return f

    def confirmed(self, *, file_id: int, user: str, values: dict[str, Any]) -> None:
        """Apply a submitted file form: use the file (or ask the rest), and show the form settled."""
        f = self.imports.file(file_id)
        if values.get("mapping"):
            headers = [h for h in self.imports._sheet(f).header if h]
            values = {**values, "mapping": with_headers(headers, values["mapping"])}
            unread = missing_required(f["kind"], values["mapping"])
            if unread and not values.get("header_row"):  # the form stays, as it was
                self._say(
                    f["channel"],
                    f["thread_ts"],
                    f"{f['filename']}: not submitted — choose a column for {', '.join(unread)}, "
                    "or type its value for the whole file.",
                )
                return
        try:
            got = self.imports.confirm(
                file_id,
                by=user,
                kind=values.get("kind"),
                period=values.get("period"),
                mapping=values.get("mapping"),
                wells=values.get("wells"),
                header_row=values.get("header_row"),
            )
        except CloseBotError as e:
            self._say(f["channel"], f["thread_ts"], f"{f['filename']}: {e}")
            return
        what = []
        if values.get("kind"):
            what.append(f"it is {file_blocks.kind_label(values['kind'])}")
        if values.get("period"):
            what.append(f"for {values['period']}")
        if values.get("mapping"):
            what.append("the column mapping")
        if values.get("wells"):
            what.append("which wells its names are")
        if f["form_ts"]:
            try:
                self.client.chat_update(
                    channel=f["channel"],
                    ts=f["form_ts"],
                    text=outgoing(f"{f['filename']}: answered by {self.names(user)}"),
                    blocks=file_blocks.settled_form(
                        f["filename"], self.names(user), ", ".join(what) or "confirmed"
                    ),
                )
            except SlackApiError as e:
                log.warning("file form %s not settled: %s", file_id, e.response.get("error"))
        self._answer(got, channel=f["channel"], thread_ts=f["thread_ts"], user=user)
        self._after(got, channel=f["channel"], thread_ts=f["thread_ts"], user=user)
