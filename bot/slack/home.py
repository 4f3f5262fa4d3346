"""closebot outside a close's thread, in Slack: the App Home (views.publish), the DM and the
assistant pane (suggested prompts; "what's waiting on me?", "what's open?", "who decided X?"),
and the same answers asked in a run's thread at any time. A close's amounts and decisions go
only to the people on it, and nothing to another team (bot/slack/close_readers.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.blocks import escape, outgoing
from bot.close import APPROVAL_HEADERS, PROMPTS, Desk, Intent, how_answered, period_label
from bot.core.names import Names
from bot.slack.close_readers import CloseReaders, not_on
from bot.slack.close_start import visible_to
from bot.slack.presenter import slack_error, status_title
from bot.store import Run, Store

log = logging.getLogger(__name__)

HELP = (
    "I run the month-end close. Ask me:\n"
    "• *close October* (or `close 2026-10`, *close last month*) — starts the close here\n"
    "• *what's waiting on me?* — the decisions that wait on you\n"
    "• *what's open?* — open items with owner and due date\n"
    "• *who decided* … — a past decision from the decision log\n"
    "In a channel: `/close 2026-10`."
)
MAX_HOME_LINES = 20
DECISIONS_SHOWN = 5  # "who decided …?": the newest five of the closes the asker is on


class SlackDesk:
    """Draws the Desk's answers in Slack. Web API calls only; run off the ack path."""

    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        desk: Desk,
        readers: CloseReaders,
        names: Names | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.desk = desk
        self.readers = readers  # who may read which close (issue 31)
        self.names = names or Names(store)  # people by name (users.info, cached)
        self.viewers: set[str] = set()  # who opened the Home tab (republished on a change)
        self._published: dict[str, str] = {}  # viewer → a digest of the view they were sent
        self._republishing = threading.Lock()  # one round of republishing at a time
        self._links: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        # the Settings section a viewer may see (bot/slack/settings.py; issue 32)
        self.settings_blocks: Callable[[str], list[dict[str, Any]]] | None = None

    # -- links -------------------------------------------------------------------

    def link(self, run: Run) -> str | None:
        """The run's thread as a link (chat.getPermalink, once per thread)."""
        if not (run.channel and run.thread_ts):
            return None
        key = (run.channel, run.thread_ts)
        with self._lock:
            if key in self._links:
                return self._links[key]
        try:
            url = str(
                self.client.chat_getPermalink(channel=run.channel, message_ts=run.thread_ts)[
                    "permalink"
                ]
            )
        except SlackApiError as e:
            log.info("run %s: no permalink (%s)", run.id, slack_error(e))
            return None
        with self._lock:
            self._links[key] = url
        return url

    def _thread(self, run: Run, label: str, viewer: str) -> str:
        """The run's label, linked to its thread where `viewer` can open it (never a link to
        someone else's DM: a dead link)."""
        url = self.link(run) if visible_to(run, viewer) else None
        return f"<{url}|{escape(label)}>" if url else escape(label)

    # -- the answers ----------------------------------------------------------------

    def answer(self, intent: Intent, user: str, team: str | None = None) -> str:
        """mrkdwn, made safe here, for one of the desk's questions: of the closes `user` is
        on; nothing of any to another team (`team`: the one the payload names for them)."""
        verdict = self.readers.team(user, team)
        if not verdict.ok:
            self.readers.refused(user, (), where="dm", asked=intent.kind, reason=verdict.reason)
            return verdict.text
        if intent.kind == "waiting":
            return self._waiting_text(user)
        if intent.kind == "open":
            return self._open_text(user)
        if intent.kind == "decided":
            return self._decided_text(intent.arg, user)
        if intent.kind == "status":
            return self._closes_text(user)
        return HELP

    def _readable(
        self, user: str, *, where: str, asked: str, runs: list[Run] | None = None
    ) -> tuple[list[Run], str]:
        """(the closes `user` is on, the line saying which they are not on: '' for none);
        what was withheld audited (on the Home tab, once for as long as it stays the same)."""
        shown, withheld = self.readers.split(self.desk.closes() if runs is None else runs, user)
        if withheld:
            self.readers.refused(user, withheld, where=where, asked=asked, once=where == "home")
        return shown, not_on(withheld)

    def _waiting_text(self, user: str, *, brief: bool = False) -> str:
        """What waits on `user`; `brief` (the Home tab): a close's pending question by its
        kind, not its header (an approval's, and each question put off, named), so the tab
        changes when whom a close waits on does, not with each question."""
        waiting = self.desk.waiting_on(user)
        items = self._yours_text(user)  # open items due are theirs to do too
        if not waiting:
            return items or "Nothing waits on you right now."
        lines = [
            f"• {self._thread(w.run, status_title(w.run, 'waiting'), user)} — "
            f"{escape(_what(w.header, w.question.status) if brief else w.header)}"
            for w in waiting[:MAX_HOME_LINES]
        ]
        return (
            f"*Waiting on you ({len(waiting)})*\n"
            + "\n".join(lines)
            + (f"\n{items}" if items else "")
        )

    def _open_text(self, user: str, *, shown: list[Run] | None = None) -> str:
        """The open items of the closes `user` is on (`shown`: as the Home tab found them,
        its withheld closes said there), and which closes' items are withheld."""
        items = self.desk.open_items()
        refused = ""
        if shown is None:
            having = [r for r in self.desk.closes() if any(i["run_id"] == r.id for i in items)]
            shown, refused = self._readable(user, where="dm", asked="open", runs=having)
        mine = {r.id for r in shown}
        items = [i for i in items if i["run_id"] in mine]
        note = f"\n{refused}" if refused else ""
        if not items:
            return "No open items." + note
        lines = [self._item_line(i) for i in items[:MAX_HOME_LINES]]
        more = f"\n…and {len(items) - MAX_HOME_LINES} more" if len(items) > MAX_HOME_LINES else ""
        return f"*Open items ({len(items)})*\n" + "\n".join(lines) + more + note

    def _yours_text(self, user: str) -> str:
        """The open items `user` owns (chosen at sign-off), oldest due first; '' for none."""
        items = self.desk.items_of(user)
        if not items:
            return ""
        lines = [
            f"• {escape(str(i['text']))} — due {escape(str(i.get('due') or 'no due date'))}"
            f" ({escape(period_label(i['period']))})"
            for i in items[:MAX_HOME_LINES]
        ]
        more = f"\n…and {len(items) - MAX_HOME_LINES} more" if len(items) > MAX_HOME_LINES else ""
        return f"*Your open items ({len(items)})*\n" + "\n".join(lines) + more

    def _item_line(self, item: dict[str, Any]) -> str:
        owner = escape(self.names(item["owner"])) if item.get("owner") else "no owner"
        due = item.get("due") or "no due date"
        return f"• {escape(str(item['text']))} — {owner}, due {escape(str(due))}"

    def _decided_text(self, what: str | None, user: str) -> str:
        """Decisions about `what` in the closes `user` is on (the newest five); the closes
        whose matching decisions are withheld named."""
        rows = self.desk.decided(what, limit=1_000_000)
        having = {r["run_id"] for r in rows}
        closes = [r for r in self.desk.closes() if r.id in having]
        shown, refused = self._readable(user, where="dm", asked="decided", runs=closes)
        mine = {r.id for r in shown}
        rows = [r for r in rows if r["run_id"] in mine][:DECISIONS_SHOWN]
        if not rows:
            found = f"I found no decision about “{escape(what or '')}” in the decision logs"
            return f"{found} of the closes you are on.\n{refused}" if refused else found + "."
        lines = []
        for r in rows:
            who = escape(self.names(r.get("answered_by")))
            why = f" — why: {escape(str(r['rationale']))}" if r.get("rationale") else ""
            lines.append(
                f"• *{escape(str(r.get('header') or r.get('question')))}* ({escape(period_label(r['period']))}): "
                f"{escape(str(r.get('answer')))} — decided by {who} on "
                f"{escape(str(r.get('answered_at') or '')[:10])}"
                + (f" ({escape(how)})" if (how := how_answered(r.get("source"))) else "")
                + why
            )
        return "\n".join(lines) + (f"\n{refused}" if refused else "")

    def _closes_text(self, user: str) -> str:
        if not self.desk.closes():
            return "No close has run yet. Start one with `/close 2026-10` or *close October*."
        runs, refused = self._readable(user, where="dm", asked="status")
        lines = [f"• {self._thread(r, status_title(r), user)}" for r in runs[:MAX_HOME_LINES]]
        return "\n".join([*lines, *([refused] if refused else [])])

    def reply(self, *, channel: str, thread_ts: str | None, user: str, text: str) -> None:
        """Post an answer in a DM (or the assistant thread)."""
        safe = self._safe(text, user)
        try:
            self.client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=safe, blocks=blocks.notice_blocks(safe)
            )
        except SlackApiError as e:
            log.warning("desk reply in %s not posted: %s", channel, slack_error(e))

    def post_blocks(
        self, *, channel: str, thread_ts: str | None, text: str, blocks: list[dict[str, Any]]
    ) -> None:
        """A form in the DM (say, which period to close); `text` and `blocks` are safe."""
        try:
            self.client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=text, blocks=blocks
            )
        except SlackApiError as e:
            log.warning("desk form in %s not posted: %s", channel, slack_error(e))

    def tell(self, *, channel: str, thread_ts: str | None, user: str, text: str) -> None:
        """An answer only the asker sees (asked in a close's thread: the thread stays quiet)."""
        safe = self._safe(text, user)
        try:
            self.client.chat_postEphemeral(
                channel=channel,
                user=user,
                thread_ts=thread_ts,
                text=safe,
                blocks=blocks.notice_blocks(safe),
            )
        except SlackApiError as e:
            log.warning("desk answer in %s not posted: %s", channel, slack_error(e))

    def _safe(self, text: str, user: str) -> str:
        # The text is built here from escaped parts and the bot's own links and mentions.
        return blocks.cut(text, blocks.MAX_SECTION_TEXT) if text else outgoing("…", [user])

    def suggest(self, *, channel: str) -> None:
        """The suggested prompts of closebot's Messages tab (the DM): under the manifest's
        `agent_view` they are set on `app_home_opened` with `tab == "messages"` and no
        `thread_ts` — with one, Slack answers ok and shows nothing."""
        try:
            self.client.assistant_threads_setSuggestedPrompts(
                channel_id=channel,
                title="What can I do for your close?",
                prompts=[{"title": t, "message": m} for t, m in PROMPTS],
            )
        except SlackApiError as e:
            log.info("suggested prompts not set: %s", slack_error(e))

    # -- App Home ------------------------------------------------------------------------

    def home_view(self, user: str) -> dict[str, Any]:
        """The Home tab of `user`: the closes they are on; to another team, none."""
        head = {"type": "header", "text": blocks.plain("closebot · month-end close", 150)}
        verdict = self.readers.team(user)
        if not verdict.ok:
            self.readers.refused(
                user, (), where="home", asked="home", reason=verdict.reason, once=True
            )
            return {"type": "home", "blocks": [head, blocks.section(verdict.text)]}
        runs, refused = self._readable(user, where="home", asked="home")
        out: list[dict[str, Any]] = [
            head,
            # the forms and the open items that wait on the person, once
            *(
                blocks.section(t)
                for t in blocks.split_text(self._waiting_text(user, brief=True))[:4]
            ),
            {"type": "divider"},
        ]
        if runs:
            lines = [
                f"• {self._thread(r, status_title(r), user)}{_why(r)}"
                for r in runs[:MAX_HOME_LINES]
            ]
            out.append(blocks.section("*Closes by period*\n" + "\n".join(lines)))
        elif not refused:
            out.append(blocks.section("*Closes by period*\nNo close has run yet."))
        if refused:
            out.append(blocks.section(refused))
        out += [{"type": "divider"}, blocks.section(self._open_text(user, shown=runs))]
        finished = next((r for r in runs if r.status == "done"), None)
        if finished is not None:
            files = (
                f"*Latest files* ({escape(period_label(finished.period))})\n"
                f"• Decision log `decisions-{finished.period}-{finished.id}.csv`\n"
                f"• Journal entries — in {self._thread(finished, 'the close’s thread', user)}"
            )
            out += [{"type": "divider"}, blocks.section(files)]
        if self.settings_blocks is not None:
            out += self.settings_blocks(user)
        out.append(
            blocks.context(
                "Ask me in the Messages tab: “close October”, “what’s waiting on me?”, “what’s open?”, “who decided …?”"
            )
        )
        return {"type": "home", "blocks": out}

    def publish_home(self, user: str, *, unless_unchanged: bool = False) -> None:
        """The Home tab of `user` (they opened it); with `unless_unchanged`, only if what it
        shows differs from what they were last sent."""
        self.viewers.add(user)
        view = self.home_view(user)
        digest = hashlib.sha256(json.dumps(view, sort_keys=True).encode()).hexdigest()
        with self._lock:
            if unless_unchanged and self._published.get(user) == digest:
                return
        try:
            self.client.views_publish(user_id=user, view=view)
        except SlackApiError as e:
            log.warning("Home of %s not published: %s", user, slack_error(e))
            return
        with self._lock:
            self._published[user] = digest

    def republish(self) -> None:
        """The Home tabs whose view changed (a run moved, a form was answered or posted),
        published again; a viewer whose Home reads the same is not sent it again
        (views.publish is Tier 4: 100 a minute for the whole workspace)."""
        with self._republishing:
            for user in sorted(self.viewers):
                self.publish_home(user, unless_unchanged=True)


def _what(header: str, status: str) -> str:
    """A pending question on the Home tab: an approval by its name; another question as a
    decision on its form (its header changes with every question, and views.publish is
    Tier 4 for the whole workspace)."""
    if header in APPROVAL_HEADERS or status != "pending":
        return header
    return "a decision, on its form in the thread"


def _why(run: Run) -> str:
    if run.status == "failed" and run.error:
        return f" — {escape(blocks.cut(run.error, 120))}"
    return ""
