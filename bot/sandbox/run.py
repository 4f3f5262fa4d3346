"""`closebot sandbox`: the fake Slack and its page on one loopback port, and the bot over HTTP.

The bot is the production one: `build_service` + `HttpServer`, with SLACK_API_URL
pointing at the fake and a signing secret the page's requests are signed with.
"""

from __future__ import annotations

import os
import secrets
import signal
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.core.config import Settings
from bot.core.models import Model
from bot.sandbox.client import SlackClient
from bot.sandbox.http import LoopbackServer
from bot.sandbox.page import Guard, Page
from bot.sandbox.slack_api import BOT_USER, Channel, FakeSlack, Person
from bot.slack.app import Service, build_service
from bot.slack.http.server import EVENTS_PATH, HttpServer
from bot.store import Store

STARTER = Person("UALICE", "Alice Park", "Senior accountant · starts the close", "#e8912d")
APPROVER = Person("UBEN", "Ben Ortiz", "Controller · approver", "#1d9bd1")
SECOND_APPROVER = Person("UDANA", "Dana Reyes", "CFO · approver", "#611f69")
COLLEAGUE = Person("UCARA", "Cara Lee", "AP clerk · colleague", "#e01e5a")
PEOPLE = [STARTER, APPROVER, SECOND_APPROVER, COLLEAGUE]
APPROVERS = [
    APPROVER,
    SECOND_APPROVER,
]  # posting needs one who did not start the close; over the limit, two


def workspace() -> FakeSlack:
    """The sandbox's workspace: four people, #finance-close and #general, closebot in both."""
    everyone = {BOT_USER, *(p.id for p in PEOPLE)}
    channels = [
        Channel(
            "CFINANCE",
            "finance-close",
            set(everyone),
            "Month-end close · type /close 2026-10 to start one",
        ),
        Channel("CGENERAL", "general", set(everyone), "Company-wide announcements and chatter"),
        # each person's DM with closebot (the App Home's Messages tab)
        *(Channel(f"D{p.id}", "closebot", {BOT_USER, p.id}) for p in PEOPLE),
    ]
    return FakeSlack(
        token=f"xoxb-sandbox-{secrets.token_hex(12)}",
        people=PEOPLE,
        channels=channels,
        auto_channels=False,
        team_name="Acme Energy",
    )


def sandbox_settings(env: Mapping[str, str], *, api_url: str, token: str, secret: str) -> Settings:
    """The caller's settings, with Slack pointed at the fake and Ben and Dana as the approvers."""
    merged = {k: v for k, v in env.items() if k != "SLACK_APP_TOKEN"}
    merged.update(
        SLACK_API_URL=api_url,
        SLACK_BOT_TOKEN=token,
        SLACK_SIGNING_SECRET=secret,
        CLOSEBOT_APPROVERS=",".join(p.id for p in APPROVERS),
    )
    # the starter works in finance: she may drop a period's files in the DM (issue 31)
    merged.setdefault("CLOSEBOT_FINANCE", STARTER.id)
    # a close started from the DM runs in #finance-close, where its approvers can act
    merged.setdefault("CLOSEBOT_CLOSE_CHANNEL", "CFINANCE")
    return Settings.from_env(merged)


class Sandbox:
    """Everything `closebot sandbox` runs; start() returns the URL to open, stop() ends it all."""

    def __init__(
        self,
        *,
        store: Store,
        model: Model,
        env: Mapping[str, str] | None = None,
        port: int = 0,
        workspace_file: Path | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.env = dict(os.environ if env is None else env)
        self.fake = workspace()
        self.secret = secrets.token_hex(16)
        self.server = LoopbackServer([], port=port)
        self.client = SlackClient(self.fake, signing_secret=self.secret)
        self.page = Page(self.fake, self.client, self.server.stopping)
        self.guard = Guard(self.server.port)  # Host and Origin, on every request
        self.server.routes.extend([self.guard.route, self.fake.route, self.page.route])
        self.fake.url = self.server.url
        self.workspace_file = workspace_file  # the channels' history, kept across restarts
        if workspace_file and workspace_file.exists():
            self.fake.load(workspace_file)
        self.service: Service | None = None
        self.bot: HttpServer | None = None
        self._stop_deadlines = threading.Event()
        self.recovered: list[str] = []

    @property
    def url(self) -> str:
        return f"{self.server.url}/"

    def start(self) -> str:
        self.server.start()
        assert self.fake.token
        settings = sandbox_settings(
            self.env, api_url=self.fake.api_url, token=self.fake.token, secret=self.secret
        )
        self.service = build_service(settings, store=self.store, model=self.model)
        self.recovered = self.service.work.recover()
        self.service.work.watch(self._stop_deadlines)
        self.bot = HttpServer(self.service, host="127.0.0.1", port=0)
        self.bot.start()
        self.client.events_url = f"http://127.0.0.1:{self.bot.port}{EVENTS_PATH}"
        return self.url

    def stop(self) -> None:
        self._stop_deadlines.set()
        if self.bot:
            self.bot.stop()
        if self.service:
            self.service.runner.shutdown(timeout=15)
        self.client.close()
        self.server.stop()
        if self.workspace_file:
            self.fake.save(self.workspace_file)

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_sandbox(sandbox: Sandbox, *, driver: str, db_path: Path, out: Any) -> int:
    """Start, say where to look, wait for Ctrl-C (or SIGTERM), stop."""
    stop = threading.Event()

    def refused(method: str, body: dict[str, Any]) -> None:
        details = "; ".join(body.get("errors") or [])
        print(
            f"closebot sandbox: Slack would refuse {method}: {body['error']}"
            + (f" — {details}" if details else ""),
            file=out,
            flush=True,
        )

    sandbox.fake.on_refusal = refused
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        url = sandbox.start()
    except BaseException:
        sandbox.stop()
        raise
    print(
        f"closebot sandbox: open {url} in your browser\n"
        f"  A Slack workspace on this machine (no Slack account needed): #finance-close and #general,\n"
        f"  with {STARTER.name} (starts closes), {APPROVER.name} and {SECOND_APPROVER.name} (approvers)\n"
        f"  and {COLLEAGUE.name} (a colleague); switch between them at the top right.\n"
        f"  Type /close 2026-10 in #finance-close. Driven by {driver}; state in {db_path}"
        + (f" and {sandbox.workspace_file.name}" if sandbox.workspace_file else "")
        + ".\n"
        "  Ctrl-C stops.",
        file=out,
        flush=True,
    )
    try:
        # Wake up now and then: a signal that lands on another thread runs its Python
        # handler only when the main thread runs again, never inside an untimed wait.
        while not stop.wait(0.25):
            pass
    finally:
        sandbox.stop()
    print("closebot sandbox: stopped.", file=out, flush=True)
    return 0
