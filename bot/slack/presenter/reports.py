"""A finished close's files in its thread: the decision log and the journal entries as CSV,
and a posted batch as your ledger's journal import files (QBO, Xero, NetSuite) through the
account map."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.close import (
    Ledger,
    build_export,
    export_documents,
    export_operators,
    formats,
    read_account_map,
    require_map,
)
from bot.core.decision_log import ENTRY_COLUMNS, decision_rows, journal_rows, named_lines, to_csv
from bot.core.errors import CloseBotError
from bot.slack.presenter.messages import Messages, slack_error

log = logging.getLogger(__name__)


class Reports:
    def __init__(
        self, messages: Messages, *, account_map: Path | None, data_dir: Path | None = None
    ) -> None:
        self.messages = messages
        self.store = messages.store
        # your GL's accounts: a posted batch's import files for QBO, Xero and NetSuite
        self.account_map = account_map
        self.data_dir = data_dir  # the team's data folder (None: the sample)

    def gl_files(
        self, run_id: str, period: str, batch: Mapping[str, Any], lines: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, str]]:
        """The posted batch as your ledger's journal import files, through the account map;
        none (and a note in the thread) when an account is not mapped."""
        try:
            export = build_export(
                batch,
                lines,
                period=period,
                documents=export_documents(self.store, run_id),
                account_map=read_account_map(self.account_map or require_map(self.data_dir)),
                operators=export_operators(self.store, run_id, self.data_dir),
            )
            # each format the export registry attaches (closebot's own CSV is the journal), in
            # as many files as the ledger's line limit needs
            return [
                {
                    "filename": name,
                    "title": f"Journal import · {fmt.title} · {batch['id']}",
                    "content": content,
                }
                for fmt in formats()
                if fmt.attached
                for name, content in export.files(fmt.id)
            ]
        except CloseBotError as e:
            self.messages.post(run_id, f"No journal import files for your ledger: {e}")
            return []

    def upload(self, run_id: str) -> None:
        """The decision log and the journal entries as CSV files in the thread."""
        run = self.store.runs.get(run_id)
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
            lines = named_lines(Ledger(self.store).lines(batch["id"]), self.messages.names)
            uploads.append(
                {
                    "filename": f"journal-{batch['id']}.csv",
                    "title": f"Journal entries · {batch['id']} ({batch['status']})",
                    "content": to_csv(journal_rows(batch, lines), ENTRY_COLUMNS),
                }
            )
            if batch["status"] == "posted":
                uploads.extend(self.gl_files(run_id, run.period, batch, lines))
        try:
            self.messages.client.files_upload_v2(
                channel=run.channel, thread_ts=run.thread_ts, file_uploads=uploads
            )
        except SlackApiError as e:
            log.warning("run %s: could not upload reports: %s", run_id, slack_error(e))
            self.messages.post(
                run_id,
                f"I could not attach the CSV reports ({slack_error(e)}); `closebot audit {run_id} --csv` prints them.",
            )
