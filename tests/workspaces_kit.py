"""Two workspaces behind one fake Slack, closebot installed in each through the OAuth flow
over HTTP (as a browser does it), and a Harness per workspace that speaks as its people."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

from slack_bolt.response import BoltResponse

from bot.close.playbook import PlaybookModel
from bot.core.config import Settings
from bot.sandbox.slack_api import BOT_USER, TEAM_ID, Channel, FakeSlack, Person
from bot.sandbox.slack_api.oauth import FakeSlackHost
from bot.slack.app import Service, build_service
from bot.slack.http.server import HttpServer
from bot.store import Store
from tests import slack_payloads as sp
from tests.slack_harness import Harness, slack_sample

# Each workspace's people: its finance lead and its two approvers (user ids are Slack-wide).
PEOPLE = {
    "TAAAA": ("UALICE", "UAPPROVER", "UAPPROVER2"),
    "TBBBB": ("UBEA", "UBAPPROVER", "UBAPPROVER2"),
}
FINANCE = {"TAAAA": "CAFIN", "TBBBB": "CBFIN"}


def add_workspace(host: FakeSlackHost, team_id: str, **kw: Any) -> FakeSlack:
    """A workspace with its own people and finance channel, and nothing made up: a channel
    or person it does not have is not found (its token sees only its own)."""
    people = [Person(u, u[1:].title(), team=team_id) for u in PEOPLE[team_id]]
    members = {BOT_USER, *PEOPLE[team_id]}
    return host.add(
        team_id,
        people=people,
        channels=[
            Channel(FINANCE[team_id], "finance", members),
            *(Channel(f"D{u}", "closebot", {BOT_USER, u}) for u in PEOPLE[team_id]),
        ],
        auto_channels=False,
        team_name=f"Workspace {team_id}",
        **kw,
    )


def oauth_settings(host: FakeSlackHost, db_path: Path, **extra: str) -> Settings:
    env = {
        "SLACK_API_URL": host.api_url,
        "SLACK_CLIENT_ID": host.client_id,
        "SLACK_CLIENT_SECRET": host.client_secret,
        "SLACK_SIGNING_SECRET": sp.SECRET,  # one app: one signing secret for every workspace
        "CLOSEBOT_DB": str(db_path),
        "CLOSEBOT_APPROVERS": ",".join(u for t in PEOPLE.values() for u in t[1:]),
        "CLOSEBOT_FINANCE": ",".join(t[0] for t in PEOPLE.values()),
        "CLOSEBOT_DATA": str(slack_sample(db_path.parent)),
        **extra,
    }
    return Settings.from_env(env)


def get(url: str, cookie: str = "") -> tuple[int, str, dict[str, str]]:
    """A browser's GET: (status, body, headers), redirects not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def install(host: FakeSlackHost, base: str, team_id: str, **approve: Any) -> tuple[int, str]:
    """Install closebot in `team_id` as its admin would: open /slack/install, follow "Add to
    Slack" to Slack's authorize page, press Allow, and land on /slack/oauth_redirect with
    the code (and the state cookie the install page set). The redirect's (status, body)."""
    status, page, headers = get(f"{base}/slack/install")
    assert status == 200, page
    link = unescape(re.search(r'href="([^"]+oauth/v2/authorize[^"]+)"', page)[1])  # type: ignore[index]
    cookie = headers.get("Set-Cookie", "").split(";")[0]
    redirect = host.approve(link, team_id=team_id, **approve)
    status, body, _ = get(redirect, cookie)
    return status, body


class WorkspaceHarness(Harness):
    """A Harness whose payloads come from one workspace of the host (its team id in each)."""

    def __init__(self, fake: FakeSlack, service: Service, store: Store) -> None:
        self.fake = fake
        self.store = store
        self.service = service

    def dispatch(self, body: str, content_type: str, **headers: str) -> BoltResponse:
        return super().dispatch(body.replace(TEAM_ID, self.fake.team_id), content_type, **headers)

    def close(self) -> None:  # the shared service is closed once, by `served_workspaces`
        pass


@dataclass
class Hosted:
    host: FakeSlackHost
    service: Service
    store: Store
    base: str  # closebot's own address (/slack/install, /slack/events)
    a: WorkspaceHarness
    b: WorkspaceHarness


@contextmanager
def served_workspaces(
    host: FakeSlackHost, db_path: Path, *, installed: bool = True, **env: str
) -> Iterator[Hosted]:
    """closebot over HTTP for the host's workspaces TAAAA and TBBBB, installed in both
    through the OAuth flow (unless not `installed`)."""
    store = Store(db_path)
    service = build_service(
        oauth_settings(host, db_path, **env), store=store, model=PlaybookModel()
    )
    server = HttpServer(service, host="127.0.0.1", port=0)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    host.redirect_url = f"{base}/slack/oauth_redirect"  # the app's OAuth settings say so
    try:
        if installed:
            for team in ("TAAAA", "TBBBB"):
                status, body = install(host, base, team)
                assert status == 200, body
        yield Hosted(
            host,
            service,
            store,
            base,
            WorkspaceHarness(host.workspaces["TAAAA"], service, store),
            WorkspaceHarness(host.workspaces["TBBBB"], service, store),
        )
    finally:
        server.stop()
        service.runner.shutdown(timeout=15)
        store.close()


def everything_shown(fake: FakeSlack) -> str:
    """Everything the bot showed in a workspace, as text: messages, ephemerals, Home tabs,
    modals, response_url answers, the names of files it uploaded."""
    with fake.lock:
        return json.dumps(
            [
                list(fake.messages.values()),
                fake.ephemerals,
                fake.homes,
                fake.modals,
                fake.responses,
                [f.get("name") for f in fake.files.values()],
            ],
            default=str,
        )
