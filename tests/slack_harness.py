"""The real Bolt app, runner and store against the fake Slack, driven by signed payloads."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from slack_bolt.request import BoltRequest
from slack_bolt.response import BoltResponse

from bot import blocks
from bot.blocks import CHOICE_ACTION, SUBMIT_ACTION
from bot.close.playbook import PlaybookModel
from bot.core.config import Settings
from bot.core.models import Model
from bot.sandbox.client import ActionError
from bot.sandbox.slack_api import BOT_USER, FakeSlack
from bot.slack.app import Service, build_service
from bot.slack.listeners.forms import pick_key
from bot.store import Run, Store
from tests import slack_payloads as sp

FORM = "application/x-www-form-urlencoded"


def slack_sample(root: Path) -> Path:
    """The shipped sample without the unknown-property line: the first form is the WI/NRI one."""
    from bot.close.data import SAMPLE_DIR

    target = root / "slack-sample"
    if not target.exists():
        shutil.copytree(SAMPLE_DIR, target)
        jib = target / "2026-10" / "jib.csv"
        jib.write_text(
            "".join(x for x in jib.read_text().splitlines(keepends=True) if "PRO-40188" not in x)
        )
    return target


_MONTH = re.compile(r"(?<![0-9])(20[0-9][0-9])-(0[1-9]|1[0-2])(?![0-9])")


def distinct_periods(root: Path, count: int) -> list[str]:
    """`count` more periods in the Slack sample's folder under `root`: October 2026's files
    moved whole years on (October 2101, 2102, …; every month in them moved alike, so each
    close asks what October's asks). For tests and benches that start many closes at once,
    since a period has one live close."""
    sample = slack_sample(root)
    october = sample / "2026-10"
    periods = []
    for n in range(count):
        years = 75 + n
        period = f"{2026 + years}-10"
        periods.append(period)
        folder = sample / period
        if folder.exists():
            continue
        folder.mkdir()
        for f in october.iterdir():
            text = _MONTH.sub(lambda m, y=years: f"{int(m[1]) + y}-{m[2]}", f.read_text())
            (folder / f.name).write_text(text)
    return periods


def choice_buttons(form: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The buttons of a form that answer by themselves (Approve / Keep as draft / Reject)."""
    return [
        e
        for b in form
        if b.get("type") == "actions"
        for e in b.get("elements", [])
        if blocks.chosen_option(str(e.get("action_id"))) is not None
    ]


def settings_for(fake: FakeSlack, db_path: Path, **extra: str) -> Settings:
    env = {
        "SLACK_API_URL": fake.api_url,
        "SLACK_BOT_TOKEN": "xoxb-test-token",
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DB": str(db_path),
        "CLOSEBOT_APPROVERS": "UAPPROVER,UAPPROVER2",
        # Alice works in finance: she may drop a period's files and start a close from the
        # DM (issue 31); a colleague outside it (UCAROL) may not
        "CLOSEBOT_FINANCE": "UALICE",
        "CLOSEBOT_DATA": str(slack_sample(db_path.parent)),
        **extra,
    }
    return Settings.from_env(env)


# A streamed plan's task, in the words of the status message it replaces.
TASK_WORDS = {"pending": "not run yet", "in_progress": "running", "complete": "done"}


def status_text(message: dict[str, Any]) -> str:
    """The status message as a person reads it: the streamed plan's title and one line per
    step ("✅ Intake — done · 1 exception, all decided"), or an ordinary message's blocks."""
    stream = message.get("stream") or drawn_plan(message)
    if not stream:
        return json.dumps(message["blocks"], ensure_ascii=False)
    lines = [stream.get("title") or ""]
    for task in stream["tasks"]:
        output = task.get("output") or ""
        word = TASK_WORDS.get(task["status"], "failed")
        if "waiting on a decision" in output:
            word = "waiting on you"
        elif task["status"] == "error" and output.endswith("stopped"):
            word = "stopped"
        lines.append(f"{task['title']} — {word}" + (f" · {output}" if output else ""))
    return "\n".join([*lines, stream.get("text") or ""])


def drawn_plan(message: dict[str, Any]) -> dict[str, Any] | None:
    """A plan drawn with chat.update as a Block Kit `plan` block (a short working stretch
    between two waits), read as a stream's plan is: its title, its tasks, the note after it."""
    found = [b for b in message.get("blocks") or [] if b.get("type") == "plan"]
    if not found:
        return None

    def text(rich: dict[str, Any] | None) -> str:
        parts = (rich or {}).get("elements") or []
        return "".join(e.get("text", "") for p in parts for e in p.get("elements") or [])

    tasks = [
        {
            "id": t["task_id"],
            "title": t["title"],
            "status": t.get("status") or "pending",
            "output": text(t.get("output")),
        }
        for t in found[0].get("tasks") or []
    ]
    notes = [b["text"]["text"] for b in message["blocks"] if b.get("type") == "section"]
    return {"title": found[0]["title"], "tasks": tasks, "text": "\n".join(notes)}


def refuse_streams(fake: FakeSlack) -> None:
    """A workspace where chat.startStream is refused: the status message is an ordinary
    message moved with chat.update (the plan's fallback)."""
    fake.fail("chat.startStream", error="not_allowed_token_type", times=1_000)


class Harness:
    def __init__(
        self,
        fake: FakeSlack,
        db_path: Path,
        *,
        clock: Callable[[], datetime] | None = None,
        model: Model | None = None,
        **env: str,
    ) -> None:
        self.fake = fake
        self.store = Store(db_path, clock=clock) if clock else Store(db_path)
        self.service: Service = build_service(
            settings_for(fake, db_path, **env), store=self.store, model=model or PlaybookModel()
        )

    def close(self) -> None:
        self.service.runner.shutdown(timeout=15)
        self.store.close()

    def dispatch(self, body: str, content_type: str, **headers: str) -> BoltResponse:
        all_headers = {**sp.signed_headers(body, content_type=content_type), **headers}
        return self.service.app.dispatch(BoltRequest(body=body, headers=all_headers))

    def idle(self) -> None:
        assert self.service.runner.wait_idle(20), "the runner did not go idle"

    def command(self, text: str, *, user: str = "UALICE", channel: str = "CFIN") -> BoltResponse:
        return self.dispatch(
            sp.slash_command(
                text,
                user=user,
                channel=channel,
                response_url=self.fake.response_url(channel=channel, user=user),
            ),
            FORM,
        )

    def start(self, period: str = "2026-10", *, user: str = "UALICE", channel: str = "CFIN") -> Run:
        response = self.command(period, user=user, channel=channel)
        assert response.status == 200, response.body
        self.idle()
        return self.store.runs.recent(limit=1)[0]

    def message(self, ts: str) -> dict[str, Any]:
        return self.fake.messages[ts]

    def status(self, run: Run) -> str:
        """The run's status message (the streamed plan), as text."""
        return status_text(self.message(self.store.runs.get(run.id).status_ts or ""))

    def form_of(self, question_id: str) -> dict[str, Any]:
        record = self.store.questions.get(question_id)
        assert record.message_ts, "the form was never posted"
        return self.message(record.message_ts)

    def click(
        self,
        action_id: str,
        question_id: str,
        *,
        user: str = "UALICE",
        picks: dict[int, Any] | None = None,
        other: dict[int, str] | None = None,
        form: dict[str, Any] | None = None,
        why: str | dict[int, str] | None = "as discussed with the controller",
    ) -> BoltResponse:
        message = form or self.form_of(question_id)
        if picks and form is None and self._picks_hidden(message, picks):
            # owners and due dates to pick: the card's "Change owners or dates" shows them
            self.press_in(message, blocks.EXPAND_ACTION, user=user)
            message = self.form_of(question_id)
        if not self.fake.can_see(user, message["channel"]):  # Slack offers no such click
            raise ActionError(f"{user} cannot see {message['channel']}: not their conversation")
        if action_id == SUBMIT_ACTION and (picks or other):
            message = self._chosen(question_id, message, picks or {}, other or {}, user)
        if action_id == SUBMIT_ACTION and why and choice_buttons(message["blocks"]):
            message = self._asked_why(question_id, message, (picks or {}).get(1, 1), user)
        values = sp.form_values(message["blocks"], picks or {}, other, why)
        if action_id == SUBMIT_ACTION and choice_buttons(message["blocks"]):
            # a form answered by its choices' own buttons (the posting approval): the
            # button of the option picked for its one question
            action_id = f"{CHOICE_ACTION}{(picks or {}).get(1, 1)}"
        body = sp.block_action(
            action_id,
            question_id,
            user=user,
            channel=message["channel"],
            message=message,
            values=values,
            # as Slack sends it: a response_url for this interaction, on the message clicked
            response_url=self.fake.response_url(
                channel=message["channel"], user=user, message_ts=message["ts"]
            ),
        )
        return self.dispatch(body, FORM)

    def _chosen(
        self,
        question_id: str,
        message: dict[str, Any],
        picks: dict[int, Any],
        other: dict[int, str],
        user: str,
    ) -> dict[str, Any]:
        """The choices made on the card before Submit, as a person makes them: a choice whose
        input block dispatches (dispatch_action) reaches the bot as it is made, and the bot
        redraws the card with the Other or Why box it calls for (bot/slack/blocks/boxes.py)."""
        inputs = [b for b in message["blocks"] if b.get("type") == "input"]
        wanted = dict(picks)
        touched = False  # a choice left as the card preselects it sends nothing
        for b in inputs:  # a typed answer is picked as the choice's "Other…", where it has one
            number = (blocks.parse_block_id(b["block_id"]) or ("", 0))[1]
            options = b["element"].get("options") or []
            if number in other and any(o["value"] == blocks.OTHER_VALUE for o in options):
                wanted[number] = blocks.OTHER_VALUE
            initial = (b["element"].get("initial_option") or {}).get("value")
            if b.get("dispatch_action") and number in wanted and str(wanted[number]) != initial:
                touched = True
        if not touched:
            return message
        body = sp.block_action(
            blocks.ANSWER_ACTION,
            "",
            user=user,
            channel=message["channel"],
            message=message,
            values=sp.form_values(message["blocks"], wanted),
            response_url=self.fake.response_url(
                channel=message["channel"], user=user, message_ts=message["ts"]
            ),
        )
        assert self.dispatch(body, FORM).status == 200
        # the card's redraw on its way (not the whole runner: a slow download may hold it)
        key = pick_key(question_id)
        assert self.service.runner.wait_done(key, 20), "the card's redraw did not finish"
        # the card as redrawn; one answered meanwhile (or a copy the test keeps) as it was
        fresh = self.form_of(question_id)
        redrawn = fresh["ts"] == message["ts"] and any(
            b.get("type") == "input" for b in fresh["blocks"]
        )
        return fresh if redrawn else message

    def _asked_why(
        self, question_id: str, message: dict[str, Any], pick: int, user: str
    ) -> dict[str, Any]:
        """An approval card's choice against its ⭐, as a person meets it: pressed with no Why
        box on the card, it is refused and the card redrawn with the box (issue 30)."""
        button = next(
            (
                e
                for e in choice_buttons(message["blocks"])
                if e["action_id"] == f"{CHOICE_ACTION}{pick}"
            ),
            None,
        )
        has_why = "w" in blocks.form_parts(message["blocks"])[2]
        if button is None or has_why or "⭐" in button["text"]["text"]:
            return message
        body = sp.block_action(
            button["action_id"],
            question_id,
            user=user,
            channel=message["channel"],
            message=message,
            values=sp.form_values(message["blocks"], {}),
            response_url=self.fake.response_url(
                channel=message["channel"], user=user, message_ts=message["ts"]
            ),
        )
        assert self.dispatch(body, FORM).status == 200
        self.idle()
        fresh = self.form_of(question_id)
        return fresh if "w" in blocks.form_parts(fresh["blocks"])[2] else message

    def _picks_hidden(self, message: dict[str, Any], picks: dict[int, Any]) -> bool:
        shown = {
            (blocks.parse_block_id(b.get("block_id") or "") or ("", 0))[1]
            for b in message["blocks"]
            if b.get("type") == "input"
        }
        return any(n not in shown for n in picks) and any(
            e.get("action_id") == blocks.EXPAND_ACTION
            for b in message["blocks"]
            for e in b.get("elements") or []
        )

    def press_in(self, message: dict[str, Any], action_id: str, *, user: str = "UALICE") -> None:
        """A button on a form that answers nothing (Details, Change owners or dates)."""
        value = next(
            e.get("value")
            for b in message["blocks"]
            for e in b.get("elements") or []
            if e.get("action_id") == action_id
        )
        body = sp.block_action(
            action_id, value, user=user, channel=message["channel"], message=message
        )
        assert self.dispatch(body, FORM).status == 200
        self.idle()

    def submit(
        self, question_id: str, picks: dict[int, Any], *, user: str = "UALICE", **kw: Any
    ) -> BoltResponse:
        response = self.click(SUBMIT_ACTION, question_id, user=user, picks=picks, **kw)
        assert response.status == 200, response.body
        return response

    def pending(self, run_id: str) -> str:
        record = self.store.questions.pending(run_id)
        assert record is not None, "no question is pending"
        return record.id

    def say(self, run: Run, text: str, *, user: str = "UALICE") -> BoltResponse:
        """A person writes `text` to closebot in the run's thread: in a channel, with an
        @mention, as a person must for closebot to read it (least privilege: manifest.yml
        subscribes to no channel message events, so Slack sends only the `app_mention`)."""
        response = self.reply(run, text, user=user, mention=True)
        assert response is not None, "Slack sent the bot nothing"
        return response

    def reply(
        self, run: Run, text: str, *, user: str = "UALICE", mention: bool = False
    ) -> BoltResponse | None:
        """A person writes `text` in the run's thread, and Slack sends the bot what it sends
        with the manifest's subscriptions and scopes (the fake's grants): a plain reply in a
        channel thread only if the app subscribes to the channel's message events (with the
        shipped manifest it does not: nothing is sent, None); with `mention`, an
        `app_mention`. In a DM, a message event (message.im)."""
        self._said = getattr(self, "_said", 0) + 1
        direct = (run.channel or "").startswith("D")
        said = f"<@{BOT_USER}> {text}" if mention and not direct else text
        msg = {
            "type": "message",
            "channel": run.channel,
            "user": user,
            "text": said,
            "ts": f"1761909999.{self._said:06d}",
            "thread_ts": run.thread_ts,
            "channel_type": "im" if direct else "channel",
        }
        sent = [msg, *([{**msg, "type": "app_mention"}] if said != text else [])]
        response = None
        for n, event in enumerate(e for e in sent if self.fake.grants.delivers(e)):
            body = sp.event(event, event_id=f"EvSay{self._said}x{n}")
            response = self.dispatch(body, "application/json")
        return response

    def press(self, action_id: str, value: str, *, user: str = "UALICE") -> BoltResponse:
        """A button outside a form (Stop on the status message, Retry on a failure)."""
        body = sp.block_action(action_id, value, user=user)
        response = self.dispatch(body, FORM)
        assert response.status == 200, response.body
        return response

    def thread_texts(self, run: Run) -> list[str]:
        """The notification text of every message in the run's thread, as it stands."""
        return [m.get("text") or "" for m in self.fake.thread(run.thread_ts or "")]

    def recommended_picks(self, question_id: str) -> dict[int, Any]:
        """The form's recommended answers, as picks (free text gets a line of text)."""
        picks: dict[int, Any] = {}
        for n, q in enumerate(self.store.questions.get(question_id).questions, start=1):
            if q.get("type") in ("user", "date"):
                continue  # untouched: the preselected owner or due date is sent
            if q.get("type") == "free_text":
                picks[n] = "Explained in the close file."
            elif q.get("type") == "multiple_choice":
                picks[n] = [q.get("recommended") or 1]
            else:
                picks[n] = q.get("recommended") or 1
        return picks

    def answer_until(
        self, run_id: str, header: str, *, user: str = "UALICE", limit: int = 20
    ) -> str:
        """Answer every form with its recommendation until one whose first question has `header`."""
        for _ in range(limit):
            question_id = self.pending(run_id)
            if self.store.questions.get(question_id).questions[0].get("header") == header:
                return question_id
            self.submit(question_id, self.recommended_picks(question_id), user=user)
            self.idle()
        raise AssertionError(f"no {header!r} form after {limit} forms")

    def finish(
        self,
        run_id: str,
        *,
        user: str = "UALICE",
        limit: int = 20,
        approvers: tuple[str, str] = ("UAPPROVER", "UAPPROVER2"),
    ) -> None:
        """Answer every remaining form with its recommendation until the run ends; the approver
        approves posting and a second approver gives the second approval."""
        approvers_of = {"Posting": approvers[0], "Second approval": approvers[1]}
        for _ in range(limit):
            record = self.store.questions.pending(run_id)
            if record is None:
                return
            who = approvers_of.get(record.questions[0].get("header") or "", user)
            self.submit(record.id, self.recommended_picks(record.id), user=who)
            self.idle()
        raise AssertionError(f"still asking after {limit} forms")

    def ephemerals_to(self, user: str) -> list[str]:
        return [p["text"] for p in self.fake.to("chat.postEphemeral") if p.get("user") == user]
