"""Names, never ids: who a Slack user id is comes from users.info (on the one fake of Slack),
once per person, cached in the store so it survives a restart and the console shows it;
refreshed after a day; a failed lookup shows the id and never fails the close."""

from __future__ import annotations

import csv
import io
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slack_bolt.response import BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.blocks import STOP_ACTION
from bot.console.cli import main
from bot.core.names import Names, Profile
from bot.sandbox.slack_api import FakeSlack, Person, fake_slack
from bot.slack.http.server import HttpServer
from bot.slack.people import users_info
from bot.store import Store
from tests import slack_payloads as sp
from tests.conftest import WI_QUESTION, Clock, ScriptedModel, ask_input, text, tool_use
from tests.slack_harness import Harness

PEOPLE = [
    Person("UALICE", "Alice Park", "Senior accountant"),
    Person("UAPPROVER", "Ben Ortiz", "Controller"),
    Person("UAPPROVER2", "Dana Reyes", "CFO"),
]


@pytest.fixture
def named() -> Iterator[FakeSlack]:
    """The fake Slack with the harness's people named."""
    with fake_slack(people=PEOPLE) as f:
        yield f


def test_users_info_answers_in_slacks_shape_and_refuses_an_unknown_user(named: FakeSlack) -> None:
    client = WebClient(token="xoxb-test", base_url=named.api_url)
    user = client.users_info(user="UAPPROVER")["user"]
    assert user["id"] == "UAPPROVER" and user["name"] == "ben.ortiz"
    assert user["real_name"] == "Ben Ortiz" and user["is_bot"] is False
    assert user["profile"]["real_name"] == "Ben Ortiz"
    assert user["profile"]["display_name"] == "Ben" and user["profile"]["title"] == "Controller"
    assert users_info(client)("UAPPROVER") == Profile("Ben Ortiz", "Ben", "ben.ortiz")
    strict = FakeSlack(auto_channels=False)  # a workspace that knows only its people
    with pytest.raises(Exception, match="user_not_found"):
        strict.m_users_info({"user": "UNOBODY"})


def test_a_whole_close_looks_each_person_up_once_and_keeps_the_names(
    named: FakeSlack, db_path: Path
) -> None:
    bot = Harness(named, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
        assert bot.store.runs.get(run.id).status == "done"
    finally:
        bot.close()
    asked = [p["user"] for p in named.to("users.info")]
    assert sorted(asked) == sorted(set(asked))  # once per person
    assert {"UALICE", "UAPPROVER", "UAPPROVER2"} <= set(asked)
    # the names outlive the process: a new store on the file (the console) has them
    store = Store(db_path)
    try:
        names = Names(store)  # no Slack client at the console
        assert names("UALICE") == "Alice Park" and names("UAPPROVER2") == "Dana Reyes"
        assert names("alice") == "alice"  # a console identity is its OS login
        assert names(None) == "closebot" and names("UNKNOWN") == "UNKNOWN"
    finally:
        store.close()


def test_a_failing_users_info_shows_the_id_and_the_close_still_finishes(
    named: FakeSlack, db_path: Path
) -> None:
    named.fail("users.info", error="missing_scope", times=1_000)
    bot = Harness(named, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
        assert bot.store.runs.get(run.id).status == "done"
        assert bot.service.presenter.names("UALICE") == "UALICE"
        # a failed lookup is not repeated on every message: once per person until retried
        asked = [p["user"] for p in named.to("users.info")]
        assert sorted(asked) == sorted(set(asked))
    finally:
        bot.close()


def test_a_name_is_refreshed_after_a_day_and_a_failure_keeps_the_old_one(db_path: Path) -> None:
    clock = Clock()
    store = Store(db_path, clock=clock)
    said = {"UALICE": Profile("Alice Park", "alice", "alice.park")}
    asked: list[str] = []

    def lookup(user_id: str) -> Profile:
        asked.append(user_id)
        if user_id not in said:
            raise SlackApiError("user_not_found", {"ok": False, "error": "user_not_found"})
        return said[user_id]

    try:
        names = Names(store, lookup)
        assert names("UALICE") == "Alice Park" and names("UALICE") == "Alice Park"
        assert asked == ["UALICE"]
        clock.advance(hours=23)
        assert names("UALICE") == "Alice Park" and asked == ["UALICE"]
        said["UALICE"] = Profile("Alice Park-Lee", "alice", "alice.park")
        clock.advance(hours=2)  # more than a day since it was fetched
        assert names("UALICE") == "Alice Park-Lee" and asked == ["UALICE"] * 2
        del said["UALICE"]  # Slack no longer answers: the last name it gave is kept
        clock.advance(days=2)
        assert names("UALICE") == "Alice Park-Lee"
        assert names("UGHOST") == "UGHOST" and names("UGHOST") == "UGHOST"
        assert asked.count("UGHOST") == 1  # not asked again at once
        clock.advance(minutes=11)
        assert names("UGHOST") == "UGHOST" and asked.count("UGHOST") == 2
        assert names.cached("UALICE") == "Alice Park-Lee" and len(asked) == 5
    finally:
        store.close()


# -- a whole close over the HTTP edge: names everywhere, mentions only of whom a form waits on --

PEOPLE_IDS = {p.id for p in PEOPLE}
RAW_ID = re.compile(r"(?<!<@)\b(" + "|".join(sorted(PEOPLE_IDS, key=len, reverse=True)) + r")\b")
MENTION = re.compile(r"<@([UW][A-Z0-9]+)>")
SHOWN = (
    "chat.postMessage",
    "chat.update",
    "chat.postEphemeral",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "views.publish",
    "assistant.threads.setStatus",
)


class OverHttp(Harness):
    """The harness with every Slack request signed and posted to the real HTTP server."""

    def __init__(self, fake: FakeSlack, db_path: Path, **env: str) -> None:
        super().__init__(fake, db_path, **env)
        self.server = HttpServer(self.service, host="127.0.0.1", port=0)
        self.server.start()

    def dispatch(self, body: str, content_type: str, **headers: str) -> BoltResponse:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.server.port}/slack/events",
            data=body.encode(),
            headers={**sp.signed_headers(body, content_type=content_type), **headers},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return BoltResponse(status=response.status, body=response.read().decode())

    def close(self) -> None:
        self.server.stop()
        super().close()


def strings(value: Any) -> list[str]:
    """Every string a person may read in a Web API call's params (ids of blocks, actions and
    values are the bot's own keys, not shown)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [
            s
            for k, v in value.items()
            if k not in ("block_id", "action_id", "value", "ts", "thread_ts", "channel", "user")
            and not k.startswith("recipient")
            and k not in ("user_id", "channel_id", "id", "initial_user")  # Slack draws a name
            for s in strings(v)
        ]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_a_whole_slack_close_shows_names_never_ids_and_mentions_only_whom_a_form_waits_on(
    named: FakeSlack, db_path: Path
) -> None:
    bot = OverHttp(named, db_path)
    try:
        run = bot.start()
        # asked in the thread while a form waits: answered at once, privately, by name
        bot.say(run, "status")
        bot.say(run, "what's open?")
        bot.idle()
        assert bot.pending(run.id)  # the form still waits
        told = bot.ephemerals_to("UALICE")
        assert any(t.startswith("🙋 Waiting on") for t in told), told
        assert any("open items" in t.lower() for t in told), told
        bot.finish(run.id)
        assert bot.store.runs.get(run.id).status == "done"
        bot.say(run, "who decided the posting?")
        bot.dispatch(
            sp.event(
                {"type": "app_home_opened", "user": "UAPPROVER", "tab": "home"},
                event_id="EvHome1",
            ),
            "application/json",
        )
        bot.idle()
        assert named.wait_for(lambda: bool(named.to("views.publish")))
        decided = bot.ephemerals_to("UALICE")[-1]
        assert "decided by Ben Ortiz" in decided, decided
    finally:
        bot.close()

    sent = [(c.method, c.params) for c in named.calls if c.method in SHOWN]
    shown = [(m, s) for m, p in sent for s in strings(p)]
    assert [(m, s[:120]) for m, s in shown if "&lt;@" in s] == []  # no escaped mention
    leaks = [(m, s[:300]) for m, s in shown if RAW_ID.search(s)]
    assert leaks == []  # no bare id
    tasks = [
        chunk.get(field) or ""
        for m, p in sent
        for chunk in p.get("chunks") or []
        if chunk.get("type") == "task_update"
        for field in ("output", "details")
    ]
    assert tasks and not [t for t in tasks if "&amp;" in t or "&lt;" in t or "&gt;" in t]
    everything = " ".join(s for _, s in shown)
    assert "Alice Park" in everything and "Ben Ortiz" in everything

    # forms mention only whom they wait on: the starter, or the eligible approvers
    forms = [
        p
        for m, p in sent
        if m in ("chat.postMessage", "chat.update")
        and any(b.get("type") == "input" for b in p.get("blocks") or [])
    ]
    assert len(forms) >= 3
    for form in forms:
        mentioned = set(MENTION.findall(json.dumps(form)))
        shown_blocks = json.dumps(form["blocks"])
        # the second approval waits on an approver other than the first (Ben approved first)
        waits_on = (
            {"UAPPROVER2"}
            if "Second approval" in shown_blocks
            else {"UAPPROVER", "UAPPROVER2"}
            if "Posting" in shown_blocks
            else {"UALICE"}
        )
        assert mentioned == waits_on, (mentioned, form.get("text"))

    # each person looked up once, whatever the number of messages
    asked = [p["user"] for p in named.to("users.info")]
    assert sorted(asked) == sorted(set(asked))

    # every other file attached (the draft and the posted journal, the ledgers' import files)
    # names who decided each decision's entry, never by id
    others = [d.decode() for d in named.uploads.values() if b"answered_by_name" not in d[:2000]]
    journals = [f for f in others if f.startswith("batch_id,")]
    assert len(journals) == 2 and all("(by Alice Park)" in f for f in journals)
    assert [f[:200] for f in others if RAW_ID.search(f)] == []

    # the decision log names people beside their ids
    logs = [data.decode() for data in named.uploads.values() if b"answered_by_name" in data[:2000]]
    assert logs, "no decision log was attached"
    rows = list(csv.DictReader(io.StringIO(logs[-1])))
    by = {(r["answered_by"], r["answered_by_name"]) for r in rows if r["answered_by"]}
    assert ("UALICE", "Alice Park") in by and ("UAPPROVER", "Ben Ortiz") in by
    posting = [r for r in rows if r["header"] == "Posting"]
    assert posting and posting[-1]["self_approved"] == "no"
    assert posting[-1]["approval_ids"] and len(posting[-1]["content_hash"]) == 64


def test_the_cli_shows_the_cached_names(named: FakeSlack, db_path: Path) -> None:
    bot = Harness(named, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
    finally:
        bot.close()
    seen: list[str] = []
    for args in (["runs"], ["audit", run.id], ["entries", run.id, "--csv"]):
        out = io.StringIO()
        assert main([*args, "--db", str(db_path)], out) == 0
        text = out.getvalue()
        assert not RAW_ID.search(text), text
        seen.append(text)
    assert "Alice Park" in seen[0]  # runs: who started each close
    assert "Alice Park" in seen[1] and "Ben Ortiz" in seen[1]  # audit: who decided, approved
    assert "(by Alice Park)" in seen[2]  # the journal: who decided each decision's entry


def test_the_plan_shows_the_models_line_as_written_and_a_stop_names_who_stopped(
    named: FakeSlack, db_path: Path
) -> None:
    model = ScriptedModel()
    model.enqueue(
        text("Checking the accruals."),
        tool_use("toolu_q", "ask_user_question", **ask_input(WI_QUESTION)),
    )
    bot = Harness(named, db_path, model=model)
    try:
        run = bot.start()
        # a plan task's output and details are shown as written: an ampersand once, people
        # by name, and no Slack token
        line = bot.service.presenter.plain("Checking P&A accruals for UAPPROVER <!channel>", run)
        assert line == "Checking P&A accruals for Ben Ortiz ‹!channel›"
        bot.press(STOP_ACTION, run.id, user="UALICE")
        bot.idle()
        assert bot.store.runs.get(run.id).status == "cancelled"
        said = " ".join(strings(named.thread(run.thread_ts or "")))
        assert "⏹ Alice Park stopped this close" in said
        assert "&lt;@" not in said and not RAW_ID.search(said), said
        root = json.dumps(bot.message(run.thread_ts or "")["blocks"], ensure_ascii=False)
        assert "Stopped by Alice Park" in root and "<@" not in root
    finally:
        bot.close()
