"""Block Kit for one close per period: the form that asks which period `/close` means when
several are open, and what is said when a period's close is under way or posted.
Pure: data in, blocks and mrkdwn out; text that came from outside is escaped here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.blocks import MAX_BUTTON_TEXT, MAX_OPTION_TEXT, context, cut, escape, plain, section
from bot.close import period_label
from bot.core.identity import mention

PERIOD_ACTION = "closebot_close_period"  # the which-period form's Submit
PERIOD_PICK = "closebot_period_pick"  # its radio buttons (block and action id)


@dataclass(frozen=True)
class OpenPeriod:
    """A period with data and no posted batch; `live`: its close under way, if one is."""

    period: str
    live: str | None = None  # "running" or "waiting"


def link(url: str | None, label: str) -> str:
    """mrkdwn: `label` linked to `url` (escaped; no link when there is no url)."""
    safe = escape(label).replace("|", "¦")
    return f"<{url}|{safe}>" if url else safe


def under_way(status: str) -> str:
    return "waiting on a decision" if status == "waiting" else "running"


def which_period_form(periods: list[OpenPeriod]) -> list[dict[str, Any]]:
    """`/close` with no period when several are open: one radio button per period, the
    earliest not posted preselected as recommended (a close goes month by month)."""
    first = periods[0].period

    def option(p: OpenPeriod) -> dict[str, Any]:
        note = (
            f"under way ({under_way(p.live)}): Submit opens its thread"
            if p.live
            else ("earliest not posted — recommended" if p.period == first else "not posted")
        )
        return {
            "text": plain(cut(period_label(p.period), MAX_OPTION_TEXT), MAX_OPTION_TEXT),
            "description": plain(note, MAX_OPTION_TEXT),
            "value": p.period,
        }

    options = [option(p) for p in periods[:10]]
    names = ", ".join(period_label(p.period) for p in periods)
    return [
        section(
            f"*Which period do you want to close?* Several are open (have data, not posted): "
            f"{escape(names)}."
        ),
        {
            "type": "input",
            "block_id": PERIOD_PICK,
            "label": plain("Period", 2000),
            "element": {
                "type": "radio_buttons",
                "action_id": PERIOD_PICK,
                "options": options,
                "initial_option": options[0],
            },
        },
        context(
            f"⭐ Recommended, preselected: {escape(period_label(first))}, the earliest not "
            "posted — its close carries its accruals and open items into the next."
        ),
        {
            "type": "actions",
            "block_id": "closebot_period_actions",
            "elements": [
                {
                    "type": "button",
                    "action_id": PERIOD_ACTION,
                    "text": plain("Submit", MAX_BUTTON_TEXT),
                    "style": "primary",
                    "value": "close",
                }
            ],
        },
    ]


def picked_period(values: Any) -> str | None:
    """The period chosen on the which-period form (state.values), or None."""
    if not isinstance(values, dict):
        return None
    picked = (values.get(PERIOD_PICK) or {}).get(PERIOD_PICK) or {}
    option = picked.get("selected_option") if isinstance(picked, dict) else None
    value = option.get("value") if isinstance(option, dict) else None
    return value if isinstance(value, str) else None


def live_text(
    period: str,
    *,
    run_id: str,
    status: str,
    started_by: str | None,
    url: str | None,
    opening_in: str | None = None,
) -> str:
    """A second close of a period whose close is under way: where that one is (mrkdwn). A
    close whose thread is not open yet (`opening_in`: its channel, a bot-made `<#C…>` link or
    words) says so and where it will show, rather than an unlinked 'open its thread'."""
    who = f", started by {mention(escape(started_by))}" if started_by else ""
    where = (
        f"its thread is being opened {opening_in}: it shows there in a moment"
        if opening_in is not None
        else link(url, "open its thread")
    )
    return (
        f"The {escape(period_label(period))} close is already under way (run `{escape(run_id)}`"
        f"{who}, {under_way(status)}): {where}. "
        "A period has one close, so nothing new was started."
    )


def posted_text(
    period: str, *, batch: Mapping[str, Any], approvers: Sequence[str], url: str | None
) -> str:
    """A close of a posted period: refused, who approved it (`Ledger.approvers`), and why
    closebot does not reopen it (mrkdwn)."""
    label = escape(period_label(period))
    by = f" by {' and '.join(mention(escape(a)) for a in approvers)}" if approvers else ""
    when = f" on {escape(str(batch['posted_at'])[:10])}" if batch.get("posted_at") else ""
    return (
        f"{label} is already posted: batch `{escape(str(batch['id']))}`, approved{by}{when} "
        f"({link(url, 'its thread')}). A period is closed once, so nothing was started.\n"
        "closebot does not reopen a posted period: a reopening would have to draft a reversing "
        "batch, have it approved and posted like any posting, and release the period's one "
        f"posting claim — none of which it does yet. To change {label}, book the correction in "
        "the next period's close, or reverse the batch in your ledger."
    )
