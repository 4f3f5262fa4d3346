"""The ack path over the real WSGI app: one transaction per ack, replays answered once, and
the work a request queues starts only after its answer is written."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bot.blocks import SUBMIT_ACTION
from bot.sandbox.slack_api import FakeSlack
from bot.slack.http.server import ThenStart, wsgi_app
from bot.store import Store
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness


def environ(body: str) -> dict[str, Any]:
    raw = body.encode()
    env: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/slack/events",
        "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": FORM,
        "wsgi.input": io.BytesIO(raw),
        "QUERY_STRING": "",
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    for name, value in sp.signed_headers(body, content_type=FORM).items():
        if name.lower() != "content-type":
            env["HTTP_" + name.upper().replace("-", "_")] = value
    return env


def call(
    app: Callable[..., Iterable[bytes]], body: str, env: dict[str, Any] | None = None
) -> tuple[int, bytes, Iterable[bytes]]:
    status: list[str] = []
    answer = app(env or environ(body), lambda s, headers, *rest: status.append(s))
    return int(status[0].split()[0]), b"".join(answer), answer


def transactions(store: Store) -> list[str]:
    """Records each BEGIN IMMEDIATE on the store's connection from now on."""
    seen: list[str] = []
    store.db.conn.set_trace_callback(
        lambda sql: seen.append(sql) if sql.startswith("BEGIN") else None
    )
    return seen


def test_close_acks_in_one_transaction_and_starts_its_work_only_once_answered(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    app = wsgi_app(bot.service)
    begun = transactions(bot.store)
    status, raw, answer = call(app, sp.slash_command("2026-10"))
    assert status == 200 and "Starting the October 2026 close" in json.loads(raw)["text"]
    assert len(begun) == 1  # the signature and the run, together
    run = bot.store.runs.recent()[0]
    assert not bot.service.runner.busy(run.id), "work started before the answer was written"
    assert not bot.service.runner.wait_idle(0.05)  # held work still counts: not idle yet
    assert not [c for c in fake.calls if c.method == "chat.postMessage"]
    assert isinstance(answer, ThenStart)
    answer.close()  # what the server does once the last byte is out
    bot.store.db.conn.set_trace_callback(None)
    bot.idle()
    assert bot.store.questions.pending(run.id) is not None  # the close went on to its first form
    bot.close()


def test_a_replay_after_the_ack_changes_nothing_and_queues_nothing(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    app = wsgi_app(bot.service)
    body = sp.slash_command("2026-10")
    signed = environ(body)  # a replay is the same request: same timestamp, same signature

    def delivery() -> dict[str, Any]:
        return {**signed, "wsgi.input": io.BytesIO(body.encode())}

    first = call(app, body, delivery())
    getattr(first[2], "close", lambda: None)()
    bot.idle()
    status, raw, again = call(app, body, delivery())
    assert (status, raw) == (200, b"")
    assert list(getattr(again, "jobs", [])) == []
    assert len(bot.store.runs.recent()) == 1
    bot.close()


def test_the_same_submit_delivered_twice_at_once_is_claimed_once_and_both_get_200(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    run = bot.start()
    question_id = bot.pending(run.id)
    message = bot.form_of(question_id)
    values = sp.form_values(message["blocks"], bot.recommended_picks(question_id), None, "ok")
    body = sp.block_action(
        SUBMIT_ACTION, question_id, channel=message["channel"], message=message, values=values
    )
    app = wsgi_app(bot.service)
    go = threading.Barrier(2)
    results: list[tuple[int, bytes]] = []

    def deliver() -> None:
        go.wait()
        status, raw, answer = call(app, body)
        getattr(answer, "close", lambda: None)()
        results.append((status, raw))

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert sorted(s for s, _ in results) == [200, 200]
    bot.idle()
    record = bot.store.questions.get(question_id)
    assert record.status == "answered" and record.answered_by == "UALICE"
    answered = [e for e in bot.store.audit.events(run.id) if e.kind == "question_answered"]
    assert len(answered) == 1
    # neither delivery told the person their own answer was "already answered"
    assert not [t for t in bot.ephemerals_to("UALICE") if "already" in t]
    bot.close()


def test_a_request_whose_listener_writes_nothing_is_still_recorded_once(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    app = wsgi_app(bot.service)
    body = sp.block_action("radio_changed", "1")  # a click inside a form: nothing to store
    env = environ(body)
    signature = env["HTTP_X_SLACK_SIGNATURE"]
    status, _, answer = call(app, body, env)
    getattr(answer, "close", lambda: None)()  # as the server does once the answer is out
    assert status == 200
    assert bot.store.replay.first_sighting(f"sig:{signature}") is False  # recorded by the request
    bot.close()


def test_work_queued_before_a_failure_in_dispatch_still_starts(
    fake: FakeSlack, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = Harness(fake, db_path)
    app = wsgi_app(bot.service)
    ran = threading.Event()
    real = bot.service.app.dispatch

    def dispatch_then_fail(request: Any) -> Any:
        real(request)
        bot.service.runner.side(ran.set)  # queued (held) by the request, then a crash
        raise RuntimeError("a bug after the listener")

    monkeypatch.setattr(bot.service.app, "dispatch", dispatch_then_fail)
    with pytest.raises(RuntimeError):
        call(app, sp.slash_command("2026-10"))
    assert ran.wait(10), "the held job was lost with the failed request"
    bot.close()


def test_a_submit_hands_its_work_on_without_the_request_thread_starting_any_job(
    fake: FakeSlack, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request's thread answers and closes its answer; it never hands a job to a pool
    itself (issue 33: a pool's submit wakes a worker, which takes the GIL from the ack), and
    the work still runs: the form turns read-only and the run goes on."""
    bot = Harness(fake, db_path)
    run = bot.start()
    question_id = bot.pending(run.id)
    message = bot.form_of(question_id)
    values = sp.form_values(message["blocks"], bot.recommended_picks(question_id), None, "ok")
    body = sp.block_action(
        SUBMIT_ACTION, question_id, channel=message["channel"], message=message, values=values
    )
    app = wsgi_app(bot.service)
    submitted_by: list[int] = []
    submit = ThreadPoolExecutor.submit

    def counting(self: ThreadPoolExecutor, *args: Any, **kwargs: Any) -> Any:
        submitted_by.append(threading.get_ident())
        return submit(self, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counting)
    status, _, answer = call(app, body)
    getattr(answer, "close", lambda: None)()  # what the server does once the answer is out
    assert status == 200
    bot.idle()
    monkeypatch.undo()
    assert submitted_by, "the answer's work was never started"
    assert threading.get_ident() not in submitted_by  # none from the request's thread
    assert bot.store.questions.get(question_id).status == "answered"
    assert bot.pending(run.id) != question_id  # the run went on to its next form
    bot.close()
