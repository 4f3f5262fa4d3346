"""Open items, each owner told by DM once: the items the sign-off gave them, with amount,
due date and a link to the close's thread. Told owners are recorded (audit `owner_told`); a
DM that may have gone out before a crash is looked for first, as forms are."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.blocks import outgoing
from bot.close import Ledger, header_of, money, period_label
from bot.core.questions import USER_ID_RE
from bot.slack.presenter.messages import HISTORY_LIMIT, Messages, slack_error
from bot.store import Run

log = logging.getLogger(__name__)


def cut_id(value: str) -> str:
    return value[:255]


def _amount(value: Any) -> str:
    try:
        amount = Decimal(str(value or "0"))
    except ArithmeticError:
        return ""
    return money(amount) if amount else ""


class OwnerDMs:
    def __init__(self, messages: Messages) -> None:
        self.messages = messages
        self.store = messages.store

    def tell_owners(self, run_id: str) -> None:
        """DM each owner the open items the sign-off gave them: text, amount, due date and a
        link to the close's thread. Once per owner and run: told owners are recorded (audit
        `owner_told`); one whose DM may have gone out before a crash (`owner_telling` without
        `owner_told`) is looked for in the DM first, as forms are (find_form)."""
        run = self.store.runs.get(run_id)
        mine: dict[str, list[Mapping[str, Any]]] = {}
        for item in Ledger(self.store).open_items(run_id):
            if item["status"] == "open" and USER_ID_RE.match(str(item.get("owner") or "")):
                mine.setdefault(str(item["owner"]), []).append(item)
        if not mine:
            return
        told = {e.detail.get("owner") for e in self.store.audit.events(run_id, kind="owner_told")}
        started = {
            e.detail.get("owner") for e in self.store.audit.events(run_id, kind="owner_telling")
        }
        for owner, items in mine.items():
            if owner in told:
                continue
            try:
                self._tell_owner(run, owner, items, again=owner in started)
            except SlackApiError as e:  # the next finish (a retry, a restart) tries again
                log.warning("run %s: owner %s not told: %s", run_id, owner, slack_error(e))

    def _tell_owner(
        self, run: Run, owner: str, items: list[Mapping[str, Any]], *, again: bool
    ) -> None:
        client = self.messages.client
        opened = client.conversations_open(users=owner)
        channel = str(opened["channel"]["id"])
        marker = cut_id(f"closebot:items:{run.id}")
        if again and self._dm_has(channel, run, marker):
            self.store.audit.record(
                run_id=run.id, kind="owner_told", actor=None, detail={"owner": owner, "found": True}
            )
            return
        self.store.audit.record(
            run_id=run.id, kind="owner_telling", actor=None, detail={"owner": owner}
        )
        text, shown = self._items_message(run, items, marker, owner)
        posted = client.chat_postMessage(channel=channel, text=text, blocks=shown)
        self.store.audit.record(
            run_id=run.id,
            kind="owner_told",
            actor=None,
            detail={"owner": owner, "items": len(items), "channel": channel, "ts": posted["ts"]},
        )

    def _dm_has(self, channel: str, run: Run, marker: str) -> bool:
        oldest = datetime.fromisoformat(run.created_at).timestamp() - 60
        page = self.messages.client.conversations_history(
            channel=channel, oldest=f"{oldest:.6f}", limit=HISTORY_LIMIT
        )
        return any(
            b.get("block_id") == marker
            for message in page.get("messages") or []
            for b in message.get("blocks") or []
        )

    def _items_message(
        self, run: Run, items: list[Mapping[str, Any]], marker: str, owner: str
    ) -> tuple[str, list[dict[str, Any]]]:
        """(notification text, blocks) of an owner's DM: their items, amounts and due dates,
        and a link to the close's thread where the owner can open it (a close run in its
        starter's DM is theirs alone: no dead link for anyone else)."""
        label = period_label(run.period)
        in_dm = (run.channel or "").startswith("D") and run.started_by != owner
        link = None if in_dm else self.messages.thread_link(run)
        signed = [
            q
            for q in self.store.questions.of_run(run.id)
            if (header_of(q) or "").startswith("Sign-off")
        ]
        by = self.messages.names(signed[-1].answered_by, default="") if signed else ""
        head = (
            f"*{len(items)} open item{'s' if len(items) != 1 else ''} from the {label} close "
            f"{'are' if len(items) != 1 else 'is'} yours* (assigned at sign-off"
            + (f" by {by}" if by else "")
            + ")."
        )
        lines = []
        for item in sorted(items, key=lambda i: (str(i.get("due") or ""), i["id"])):
            amount = _amount(item.get("amount"))
            said = amount and amount in str(item["text"])  # each amount once
            lines.append(
                f"• {item['text']}"
                + (f" — {amount}" if amount and not said else "")
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
