"""Text made safe for Slack and the smallest blocks: escaping, the mentions the bot means
(people by name otherwise), cutting to size, sections, notices."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from bot.core.names import named_text
from bot.slack.blocks.limits import (
    MAX_BLOCKS,
    MAX_CONTEXT_ELEMENTS,
    MAX_MESSAGE_CHARS,
    MAX_SECTION_TEXT,
)


def escape(text: str) -> str:
    """Escape &, < and > so text is shown as written, never as a mention or a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


ESCAPED_MENTION = re.compile(r"&lt;@([UW][A-Z0-9]{2,})&gt;")

Namer = Callable[[str], str]  # a user id → the name to show (bot/core/names.py)


def outgoing(text: str, people: Iterable[str] = (), names: Namer | None = None) -> str:
    """Any text made safe to send to Slack, as `text` or mrkdwn: `&`, `<`, `>` escaped, so no
    `<!channel>`, no link and no mention survives — except mentions of `people`, whom the bot
    means to notify (who a form waits on), written as `<@U…>` on purpose. With `names`, every
    other `<@U…>` is shown as that person's name (escaped), never as an escaped mention."""
    allowed = {p for p in people if p and USER_ID.match(p)}

    def shown(m: re.Match[str]) -> str:
        if m.group(1) in allowed:
            return f"<@{m.group(1)}>"
        return escape(names(m.group(1))) if names is not None else m.group(0)

    return ESCAPED_MENTION.sub(shown, escape(text))


def name_ids(text: str, user_ids: Iterable[str], names: Namer, *, safe: bool = True) -> str:
    """Bare user ids of these people (in text from the model or a tool result: 'decided by
    UALICE') shown as their names — escaped in `safe` text, as written in raw text that is
    escaped later; mentions are left as they are."""
    return named_text(text, user_ids, (lambda u: escape(names(u))) if safe else names)


def cut(text: str, limit: int) -> str:
    """Text no longer than `limit`, with an ellipsis where it was cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def split_text(text: str, limit: int = MAX_SECTION_TEXT) -> list[str]:
    """Split long text into pieces of at most `limit`, at line breaks where possible."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines():
        while len(line) > limit:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:limit])
            line = line[limit:]
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > limit:
            pieces.append(current)
            current = line
        else:
            current = candidate
    if current or not pieces:
        pieces.append(current)
    return pieces


def mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": cut(text, limit), "emoji": True}


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": mrkdwn(cut(text, MAX_SECTION_TEXT))}


def context(*texts: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [mrkdwn(cut(t, MAX_SECTION_TEXT)) for t in texts[:MAX_CONTEXT_ELEMENTS]],
    }


USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


def person(who: str | None, default: str = "closebot") -> str:
    """A Slack user id as a mention; anything else (auto, timeout) as escaped text."""
    if who and USER_ID.match(who):
        return f"<@{who}>"
    return escape(who or default)


def mention_known(text: str, user_ids: Iterable[str]) -> str:
    """Turn the bare ids of the run's own people into mentions, after escaping; nothing else."""
    for uid in sorted({u for u in user_ids if u and USER_ID.match(u)}, key=len, reverse=True):
        text = re.sub(rf"(?<![<@\w]){uid}\b", f"<@{uid}>", text)
    return text


def text_blocks(
    text: str,
    *,
    max_blocks: int = MAX_BLOCKS,
    people: Iterable[str] = (),
    names: Namer | None = None,
    mention: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Model text (mrkdwn) as sections, made safe (outgoing) and split; never more than
    `max_blocks`. With `names`, people read as names (the bare ids of the run's `people`, and
    every `<@U…>` but those of `mention`); without, the bare ids of `people` become mentions."""
    people = [p for p in people if p]
    if names is not None:
        safe = name_ids(outgoing(text, mention, names), people, names)
    else:
        safe = mention_known(outgoing(text, people), people)
    pieces = [p for p in split_text(safe) if p.strip()] or [" "]
    if len(pieces) > max_blocks:
        pieces = [*pieces[: max_blocks - 1], "… (cut: the full text is in the run's transcript)"]
    return [section(p) for p in pieces]


MAX_CONTAINER_CHILDREN = 10  # docs.slack.dev/reference/block-kit/blocks/container-block
MAX_CONTAINER_TITLE = 150


def folded(title: str, children: list[dict[str, Any]]) -> dict[str, Any]:
    """A Block Kit container, collapsed until opened: `title` (plain text) is what shows, the
    children (at most 10; a longer list's last one says what was left out) one click away
    (docs.slack.dev/reference/block-kit/blocks/container-block: is_collapsible,
    default_collapsed; changelog 2026-06-29)."""
    kept = children[:MAX_CONTAINER_CHILDREN]
    if len(children) > MAX_CONTAINER_CHILDREN:
        kept[-1] = section("… (more in the decision log: `closebot audit`)")
    return {
        "type": "container",
        "title": plain(title, MAX_CONTAINER_TITLE),
        "is_collapsible": True,
        "default_collapsed": True,
        "child_blocks": kept or [section(" ")],
    }


LEAD_CHARS = 700  # a folded text's lead: its first paragraph, if it is no longer than this
LEAD_LINES = 4  # else its first lines


def lead_and_rest(text: str) -> tuple[str, str]:
    """A long text's point and the rest: its first paragraph (up to the first blank line) when
    that is short, else its first LEAD_LINES lines."""
    head, blank, rest = text.strip().partition("\n\n")
    if blank and len(head) <= LEAD_CHARS:
        return head, rest.strip()
    lines = text.strip().splitlines()
    return "\n".join(lines[:LEAD_LINES]), "\n".join(lines[LEAD_LINES:]).strip()


def folded_text_blocks(
    text: str,
    title: str,
    *,
    people: Iterable[str] = (),
    names: Namer | None = None,
    mention: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Text (mrkdwn) as its lead, then the rest folded under `title` (a collapsed container):
    a long message (the close's summary) reads at a glance, the whole of it one click away."""
    head, rest = lead_and_rest(text)
    shown = text_blocks(head, max_blocks=3, people=people, names=names, mention=mention)
    if not rest:
        return shown
    kept = text_blocks(
        rest, max_blocks=MAX_CONTAINER_CHILDREN, people=people, names=names, mention=mention
    )
    return [*shown, folded(title, kept)]


def fits(blocks: list[dict[str, Any]]) -> bool:
    """Within the block count and the rough size Slack accepts for one message."""
    return (
        len(blocks) <= MAX_BLOCKS
        and len(json.dumps(blocks, ensure_ascii=False)) <= MAX_MESSAGE_CHARS
    )


def when_text(at: str | None) -> str:
    if not at:
        return ""
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return escape(at)
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{moment:%Y-%m-%d %H:%M} UTC>"


def notice_blocks(safe_text: str) -> list[dict[str, Any]]:
    """A short message to one person (ephemeral) or the thread; the text made safe by outgoing()."""
    return [section(safe_text)]


def error_blocks(text: str) -> list[dict[str, Any]]:
    return [section(f"❌ {escape(text)}")]
