"""Hermetic tests: the DB in tmp_path, dummy tokens, no API key, fakes at the boundaries."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from bot.agent_loop import AgentLoop
from bot.close.books.migrations import close_migrations
from bot.core.models import Reply
from bot.core.tools import ToolRegistry
from bot.sandbox.slack_api import FakeSlack, fake_slack
from bot.store import QuestionRecord, Store
from tests.pg_backend import pg_schemas, store_backend  # noqa: F401  (fixtures: two backends)
from tests.sandbox_browser import (  # noqa: F401  (fixtures)
    browser,
    open_page,
    page,
    sandbox,
    start_sandbox,
)

# Hypothesis checks what the code does, never how fast a shared two-core machine draws
# examples: no per-example deadline and no "too slow" health check (both measured the
# machine's load and failed the typed-console-answers property on a busy CI box). Every
# property keeps its examples count; a test's own @settings inherits these.
settings.register_profile("closebot", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("closebot")

# `make test-fast` runs the tests not marked `slow`; `make test` runs them all. Slow are whole
# kinds of tests, by module: a real browser, a subprocess or a served port, the upgrade
# fixtures, the bench smoke, two processes, volume, Hypothesis sweeps, crash recovery; and any
# test function measured slow (tests/slow_tests.txt, written by tests/slow_list.py).
SLOW_MODULES = {
    "test_sandbox_browser.py",  # Chromium (so are test_sandbox_browser_*.py and any test
    "test_sandbox_files_browser.py",  # using a BROWSER_FIXTURES fixture)
    "test_cli.py",  # `closebot` as a subprocess
    "test_sandbox_cli.py",
    "test_slack_server.py",  # the production server on a port
    "test_rolling_deploy.py",
    "test_two_processes.py",
    "test_upgrade.py",  # every earlier release's database
    "test_bench_smoke.py",
    "test_volume.py",
    "test_recovery.py",
    "test_models.py",  # the Anthropic SDK's own retries, with their real back-off waits
    "test_properties.py",  # Hypothesis: hundreds of examples each
    "test_form_parse.py",
    "test_payload_samples.py",  # every real Slack payload sample through the app
    "test_fault_table.py",  # collects the whole suite
}
BROWSER_FIXTURES = {"browser", "open_page", "page"}
SLOW_TESTS = {
    line
    for line in (Path(__file__).with_name("slow_tests.txt")).read_text().splitlines()
    if line and not line.startswith("#")
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.name
        function = item.nodeid.split("[", 1)[0].removeprefix("tests/")
        if (
            module in SLOW_MODULES
            or module.startswith("test_sandbox_browser")
            or BROWSER_FIXTURES.intersection(getattr(item, "fixturenames", ()))
            or function in SLOW_TESTS
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def collect_garbage() -> Iterator[None]:
    """A test's stores, servers and clients sit in reference cycles until the cycle
    collector runs; collect after each test so their descriptors and threads do not pile
    up across the session (hundreds of leftover SQLite files before this)."""
    yield
    gc.collect()


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "closebot.db"
    monkeypatch.setenv("CLOSEBOT_DB", str(db))
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "CLOSEBOT_DATA",
        "CLOSEBOT_APPROVERS",
        "CLOSEBOT_CONSOLE_APPROVERS",
        "CLOSEBOT_FINANCE",
        "CLOSEBOT_USER",
        "CLOSEBOT_MODEL",
        "CLOSEBOT_MAX_STEPS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "test-signing-secret")
    return db


@pytest.fixture
def db_path(hermetic_env: Path) -> Path:
    return hermetic_env


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    s = Store(db_path, migrations=[close_migrations])  # as closebot opens it: the close's too
    yield s
    s.close()


class Clock:
    """A clock the test moves by hand: deadlines, stuck runs and reminders without sleeping."""

    def __init__(self, start: datetime = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


class ScriptedModel:
    """A Model that replays enqueued replies and records every request it was given."""

    name = "scripted"

    def __init__(self) -> None:
        self.replies: list[Reply | Exception] = []
        self.history: list[dict[str, Any]] = []

    def enqueue(self, *content: dict[str, Any]) -> None:
        self.replies.append(
            Reply(
                content=list(content),
                stop_reason="tool_use"
                if any(b["type"] == "tool_use" for b in content)
                else "end_turn",
            )
        )

    def enqueue_reply(self, *content: dict[str, Any], stop_reason: str | None) -> None:
        """A reply with an explicit stop_reason (max_tokens, refusal, pause_turn …)."""
        self.replies.append(Reply(content=list(content), stop_reason=stop_reason))

    def enqueue_error(self, error: Exception) -> None:
        self.replies.append(error)

    def respond(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
    ) -> Reply:
        self.history.append(
            {
                "system": system,
                "messages": [dict(m) for m in messages],
                "tools": tools,
                "tool_choice": tool_choice,
            }
        )
        if not self.replies:
            raise AssertionError("the scripted model was called more times than scripted")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


class RecordingPresenter:
    """Keeps every event a run reported, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def text(self, run_id: str, text: str) -> None:
        self.events.append(("text", text))

    def progress(self, run_id: str, steps: dict[str, str]) -> None:
        self.events.append(("progress", dict(steps)))

    def question(self, run_id: str, question: QuestionRecord) -> None:
        self.events.append(("question", question.id))

    def finished(self, run_id: str, text: str) -> None:
        self.events.append(("finished", text))

    def failed(self, run_id: str, error: str) -> None:
        self.events.append(("failed", error))

    def stopped(self, run_id: str, by: str) -> None:
        self.events.append(("stopped", by))

    def waiting(self, run_id: str, text: str) -> None:
        self.events.append(("waiting", text))

    def kinds(self) -> list[str]:
        return [k for k, _ in self.events]


def scripted_loop(
    store: Store, model: ScriptedModel, tools: ToolRegistry | None = None, **kw: Any
) -> tuple[AgentLoop, RecordingPresenter]:
    """The real loop around a scripted model, reporting to a recorder."""
    presenter = RecordingPresenter()
    loop = AgentLoop(
        store=store,
        model=model,
        tools=tools or ToolRegistry(),
        presenter=presenter,
        system_prompt="sys",
        **kw,
    )
    return loop, presenter


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(id: str, name: str, **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def ask_input(*questions: dict[str, Any], context: str = "Need a decision.") -> dict[str, Any]:
    return {"context": context, "questions": list(questions)}


WI_QUESTION: dict[str, Any] = {
    "question": "Smith 14-2H billed at 0.275 vs DOI 0.25. How should it be booked?",
    "header": "WI · Smith 14-2H",
    "options": [
        {"label": "Accept operator's decimal", "description": "update DOI"},
        {"label": "Short-pay and dispute"},
        {"label": "Hold in suspense"},
    ],
    "recommended": 1,
    "reasoning": "Both operator documents agree.",
}


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    """The one fake of Slack's Web API (bot/sandbox/slack_api/), on loopback, recording every call."""
    with fake_slack() as f:
        yield f


@pytest.fixture(autouse=True)
def virtual_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client answered `ratelimited` waits its Retry-After on the fake Slack's clock (moved
    on at once), not in real time: Slack's real tiers cost a test no wall time."""
    from bot.sandbox.slack_api.clock import skip_every_clock
    from bot.slack import client

    monkeypatch.setattr(client, "retry_wait", skip_every_clock)
