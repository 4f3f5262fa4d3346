"""closebot's performance figures beside their targets (issue 11), in one table.

Run: make bench   (or .venv/bin/python bench/perf.py [--quick])

Over real HTTP on loopback: the production server (`closebot serve --http`, waitress) in
its own process against a fake Slack Web API in this one, side by side with bare Bolt
apps that only ack (reference_app.py: process_before_response on waitress, and Bolt's
defaults), interleaved request by request. The history figure runs the agent loop
in-process with a scripted model, so the model's own time is excluded exactly; the
memory figure starts the server on a database of cloned paused runs. Numbers are
printed, never asserted: the machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import os
import platform
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.agent_loop import AgentLoop  # noqa: E402
from bot.blocks import SUBMIT_ACTION  # noqa: E402
from bot.close import SYSTEM_PROMPT, CloseTools, PlaybookModel, start_prompt  # noqa: E402
from bot.core.message_events import sse  # noqa: E402
from bot.core.models import Reply  # noqa: E402
from bot.core.tools import ToolContext, ToolRegistry  # noqa: E402
from bot.sandbox.slack_api import FakeSlack, fake_slack  # noqa: E402
from bot.store import USAGE_FIELDS, QuestionRecord, Store  # noqa: E402
from tests import slack_payloads as sp  # noqa: E402
from tests.loopback import QuietHandler, loopback  # noqa: E402
from tests.slack_harness import distinct_periods, slack_sample  # noqa: E402

FORM = "application/x-www-form-urlencoded"
APPROVAL_HEADERS = ("Posting", "Second approval")


# -- processes ----------------------------------------------------------------


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[str]
    port: int

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _started(name: str, cmd: list[str], env: dict[str, str], log: Path) -> Server:
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"(?:127\.0\.0\.1:|listening on )(\d+)", line)
    if not found:
        proc.kill()
        raise SystemExit(f"{name} did not start: {line!r}; see {log}")
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain stdout
    return Server(name, proc, int(found.group(1)))


def closebot_server(
    fake: FakeSlack, db: Path, data: Path, log: Path, anthropic: str | None = None
) -> Server:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CLOSEBOT_", "SLACK_"))},
        "SLACK_API_URL": fake.api_url,
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DATA": str(data),
        "CLOSEBOT_APPROVERS": "UAPPROVER,UAPPROVER2",
    }
    env.pop("ANTHROPIC_API_KEY", None)  # the offline playbook drives the runs
    if anthropic:  # or Claude, through the SDK, against a fake Messages API
        env.update(ANTHROPIC_API_KEY="sk-bench", ANTHROPIC_BASE_URL=anthropic)
    cmd = [sys.executable, "-m", "bot", "serve", "--http", "--host", "127.0.0.1", "--port", "0"]
    return _started("closebot", [*cmd, "--db", str(db)], env, log)


def reference_server(fake: FakeSlack, mode: str, log: Path) -> Server:
    cmd = [sys.executable, str(ROOT / "bench" / "reference_app.py"), mode]
    return _started(f"bolt-{mode}", cmd, {**os.environ, "SLACK_API_URL": fake.api_url}, log)


# -- an HTTP client that keeps its connection, as Slack's does -------------------


class Client:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.conn.connect()
        assert self.conn.sock is not None
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def post(self, body: str, content_type: str = FORM) -> float:
        """POST a signed Slack request; the milliseconds until the whole answer is read."""
        headers = sp.signed_headers(body, content_type=content_type)
        started = time.perf_counter()
        self.conn.request("POST", "/slack/events", body=body.encode(), headers=headers)
        response = self.conn.getresponse()
        raw = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {raw[:200]!r}")
        return elapsed

    def close(self) -> None:
        self.conn.close()


# -- forms waiting in the fake Slack ------------------------------------------------


def picks_for(record: QuestionRecord) -> dict[int, Any]:
    picks: dict[int, Any] = {}
    for n, q in enumerate(record.questions, start=1):
        if q.get("type") == "free_text":
            picks[n] = "Explained in the close file."
        elif q.get("type") == "multiple_choice":
            picks[n] = [q.get("recommended") or 1]
        else:
            picks[n] = q.get("recommended") or 1
    return picks


_nonce = iter(range(10**9))
# A period has one live close, so each /close of the bench names its own period: October's
# files under another name (tests.slack_harness.distinct_periods), set up by main().
PERIODS = 3000
_periods: Iterator[str] = iter(())


def close_body(fake: FakeSlack) -> str:
    """A signed /close of the next period; a nonce keeps two in one second from being a replay."""
    period = next(_periods)
    return sp.slash_command(period, response_url=fake.response_url()) + f"&nonce={next(_nonce)}"


def submit_body(fake: FakeSlack, record: QuestionRecord) -> str:
    assert record.message_ts
    message = fake.messages[record.message_ts]
    values = sp.form_values(message["blocks"], picks_for(record), None, "bench")
    return sp.block_action(
        SUBMIT_ACTION,
        record.id,
        user="UALICE",
        channel=message["channel"],
        message=message,
        values=values,
        response_url=fake.response_url(
            channel=message["channel"], user="UALICE", message_ts=message["ts"]
        ),
    )


def answerable(store: Store) -> list[QuestionRecord]:
    """Pending questions whose form is in Slack and which the run's starter may answer."""
    found = []
    for run in store.runs.with_status("waiting"):
        record = store.questions.pending(run.id)
        if (
            record is not None
            and record.message_ts
            and record.questions[0].get("header") not in APPROVAL_HEADERS
        ):
            found.append(record)
    return found


def wait_until(
    check: Callable[[], bool], timeout: float = 60.0, what: str = "", every: float = 0.005
) -> None:
    """Poll `check` (the benchmark may; tests wait on conditions): SystemExit on timeout."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(every)


def has_submit(fake: FakeSlack, record: QuestionRecord) -> bool:
    """Whether the form's message, as it stands in Slack, still has its Submit button."""
    message = fake.messages.get(record.message_ts or "") or {}
    return SUBMIT_ACTION in str(message.get("blocks"))


def settled(fake: FakeSlack, store: Store, question_ids: list[str]) -> bool:
    """Every question answered, its form read-only, and its run moved past it (to its next
    form, posted in Slack, or to its end)."""
    for qid in question_ids:
        record = store.questions.get(qid)
        if record.status != "answered" or has_submit(fake, record):
            return False
        run = store.runs.get(record.run_id)
        pending = store.questions.pending(run.id)
        if pending is None:  # finished (or failed), or answered and not yet resumed
            if run.status in ("running", "waiting"):
                return False
        elif pending.id == qid or not pending.message_ts:
            return False  # not resumed yet, or its next form is not in Slack yet
    return True


# -- the figures ---------------------------------------------------------------------


@dataclass
class Row:
    figure: str
    target: str
    closebot: str
    reference: str
    ratio: str
    verdict: str


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def p99(xs: list[float]) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def ack_rows(
    fake: FakeSlack, store: Store, bot: Server, refs: dict[str, Server], n: int, rounds: int
) -> list[Row]:
    """Sequential acks, closebot and each reference interleaved request by request, in
    `rounds` rounds of `n`: the figure is the median of the rounds' p50s."""
    clients = {name: Client(s.port) for name, s in {"bot": bot, **refs}.items()}
    close_rounds: list[dict[str, float]] = []
    submit_rounds: list[dict[str, float]] = []
    for _ in range(rounds):
        # /close: each waits for its first form before the next (the runs are used below).
        times: dict[str, list[float]] = {k: [] for k in clients}
        for _ in range(n):
            before = len(answerable(store))
            body = close_body(fake)
            times["bot"].append(clients["bot"].post(body))
            wait_until(lambda b=before: len(answerable(store)) > b, what="a form")
            for name in refs:
                times[name].append(clients[name].post(body))
        close_rounds.append({k: p50(v) for k, v in times.items()})
        # Submit: each waits until its resume has finished.
        times = {k: [] for k in clients}
        for _ in range(n):
            record = answerable(store)[0]
            body = submit_body(fake, record)
            times["bot"].append(clients["bot"].post(body))
            wait_until(lambda r=record: settled(fake, store, [r.id]), what="a resume")
            for name in refs:
                times[name].append(clients[name].post(body))
        submit_rounds.append({k: p50(v) for k, v in times.items()})
    for c in clients.values():
        c.close()
    return [
        _ack_row("/close ack p50, sequential", close_rounds, n),
        _ack_row("Submit ack p50, sequential", submit_rounds, n),
    ]


def _ack_row(figure: str, rounds: list[dict[str, float]], n: int) -> Row:
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ratios = sorted(r["bot"] / r["pbr"] for r in rounds)
    ratio = statistics.median(ratios)
    return Row(
        f"{figure} (median of {len(rounds)} rounds of {n})",
        "≤ 1.25 × bare Bolt pbr",
        f"{median['bot']:.2f} ms",
        f"pbr {median['pbr']:.2f} ms; Bolt dev server {median['dev']:.2f} ms; "
        f"defaults {median['defaults']:.2f} ms",
        f"{ratio:.2f}× pbr (rounds {ratios[0]:.2f}–{ratios[-1]:.2f}); "
        f"{median['defaults'] / median['bot']:.1f}× faster than defaults",
        "met" if ratio <= 1.25 else "missed",
    )


def concurrent_rows(
    fake: FakeSlack,
    store: Store,
    bot: Server,
    ref: Server,
    clients_n: int,
    each: int,
    rounds: int,
) -> list[Row]:
    """`clients_n` clients each Submit `each` forms back to back while the resumes run, and
    the same bodies to the reference; `rounds` rounds, each on fresh paused runs."""
    need = clients_n * each
    ratios: list[float] = []
    bot_all: list[float] = []
    ref_all: list[float] = []
    bot_p50s: list[float] = []
    ref_p50s: list[float] = []
    for _ in range(rounds):
        open_many(fake, store, bot, need)
        records = answerable(store)[:need]
        bodies = [submit_body(fake, r) for r in records]
        bot_times = _blast(bot.port, bodies, clients_n)
        wait_until(
            lambda rs=records: settled(fake, store, [r.id for r in rs]),
            timeout=120,
            what="all resumes",
        )
        ref_times = _blast(ref.port, bodies, clients_n)
        bot_all += bot_times
        ref_all += ref_times
        bot_p50s.append(p50(bot_times))
        ref_p50s.append(p50(ref_times))
        ratios.append(p50(bot_times) / p50(ref_times))
    ratio = statistics.median(ratios)
    return [
        Row(
            f"Submit ack p50, {clients_n} concurrent clients, resumes running "
            f"(median of {rounds} rounds of {need})",
            "≤ 2 × bare Bolt pbr",
            f"{statistics.median(bot_p50s):.2f} ms (p99 {p99(bot_all):.1f})",
            f"pbr {statistics.median(ref_p50s):.2f} ms (p99 {p99(ref_all):.1f})",
            f"{ratio:.2f}× (rounds {min(ratios):.2f}–{max(ratios):.2f})",
            "met" if ratio <= 2 else "missed",
        )
    ]


def _blast(port: int, bodies: list[str], clients_n: int) -> list[float]:
    """Every body POSTed by `clients_n` kept-alive clients at once; each answer's ms."""
    out: list[float] = []
    lock = threading.Lock()
    go = threading.Barrier(clients_n)

    def client(mine: list[str]) -> None:
        c = Client(port)
        go.wait()
        got = [c.post(b) for b in mine]
        c.close()
        with lock:
            out.extend(got)

    threads = [
        threading.Thread(target=client, args=(bodies[i::clients_n],)) for i in range(clients_n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def open_many(fake: FakeSlack, store: Store, bot: Server, count: int, batch: int = 20) -> None:
    """Start closes, `batch` at a time, until `count` forms wait to be answered."""
    c = Client(bot.port)
    have = len(answerable(store))
    while have < count:
        for _ in range(min(batch, count - have)):
            c.post(close_body(fake))
        target = min(count, have + batch)
        wait_until(lambda t=target: len(answerable(store)) >= t, timeout=120, what="forms")
        have = len(answerable(store))
    c.close()


def advanced(store: Store, question_ids: list[str]) -> int:
    """How many of these questions are answered and their runs moved on: to a next form that
    is in Slack, or to their end (what settled() checks, in one query)."""
    marks = ",".join("?" * len(question_ids))
    rows = store.query(
        f"select count(*) as n from questions q join runs r on r.id = q.run_id "
        f"where q.id in ({marks}) and q.status = 'answered' and ("
        f"exists (select 1 from questions p where p.run_id = r.id and p.status = 'pending' "
        f"and p.message_ts is not null) "
        f"or (r.status not in ('running', 'waiting') and not exists (select 1 from questions p "
        f"where p.run_id = r.id and p.status = 'pending')))",
        tuple(question_ids),
    )
    return int(rows[0]["n"])


def answered_events(store: Store, question_ids: list[str]) -> dict[str, int]:
    """How many times each question's answer was recorded (exactly once is right)."""
    counts = dict.fromkeys(question_ids, 0)
    for row in store.query(
        "select json_extract(detail, '$.question_id') as q from audit_events "
        "where kind = 'question_answered'"
    ):
        if row["q"] in counts:
            counts[row["q"]] += 1
    return counts


def burst_row(fake: FakeSlack, store: Store, bot: Server, count: int, clients_n: int) -> Row:
    """`count` paused runs answered by `count` Submits from `clients_n` concurrent clients."""
    open_many(fake, store, bot, count)
    records = answerable(store)[:count]
    bodies = [submit_body(fake, r) for r in records]
    ids = [r.id for r in records]
    calls_before, connections_before = len(fake.calls), fake.connections
    statuses: list[int] = []
    lock = threading.Lock()
    go = threading.Barrier(clients_n + 1)

    def client(mine: list[str]) -> None:
        c = Client(bot.port)
        go.wait()
        for body in mine:
            headers = sp.signed_headers(body, content_type=FORM)
            c.conn.request("POST", "/slack/events", body=body.encode(), headers=headers)
            response = c.conn.getresponse()
            response.read()
            with lock:
                statuses.append(response.status)
        c.close()

    threads = [
        threading.Thread(target=client, args=(bodies[i::clients_n],)) for i in range(clients_n)
    ]
    for t in threads:
        t.start()
    go.wait()
    started = time.monotonic()
    for t in threads:
        t.join()
    acked = time.monotonic() - started
    # One query per poll: the fake Slack answering the bot shares this process, so a heavy
    # poll would slow down what it measures.
    wait_until(
        lambda: advanced(store, ids) == len(ids),
        timeout=300,
        what="every run advanced",
        every=0.2,  # 5 ms a poll: polling faster would take CPU from what is measured
    )
    assert settled(fake, store, ids)
    done = time.monotonic() - started
    events = answered_events(store, ids)
    once = sum(1 for n in events.values() if n == 1)
    lost = sum(1 for n in events.values() if n == 0)
    twice = sum(1 for n in events.values() if n > 1)
    read_only = sum(1 for r in records if not has_submit(fake, r))
    calls = (len(fake.calls) - calls_before) / count
    opened = fake.connections - connections_before
    ok = statuses.count(200) == count and once == count and read_only == count and done <= 10
    return Row(
        f"burst: {count} paused runs, {count} concurrent Submits ({clients_n} clients)",
        "all exactly once, read-only, advanced ≤ 10 s",
        f"{once}/{count} once, {lost} lost, {twice} twice, {read_only} read-only; "
        f"acked in {acked:.1f} s, all advanced {done:.1f} s after the first; "
        f"{calls:.1f} Slack calls per resume on {opened} new connections",
        "—",
        "—",
        "met" if ok else "missed",
    )


# -- bot time per model step, short against long transcripts ------------------------


class Scripted:
    """A model that answers instantly: a tool call for `calls` steps, then the end."""

    name = "scripted"

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.marks: list[tuple[float, float, int]] = []  # (start, end, transcript length)

    def respond(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
    ) -> Reply:
        started = time.perf_counter()
        n = len(self.marks)
        if n < self.calls:
            content = [
                {"type": "text", "text": f"Checking item {n}."},
                {"type": "tool_use", "id": f"toolu_{n:05d}", "name": "lookup", "input": {"n": n}},
            ]
            reply = Reply(content=content, stop_reason="tool_use")
        else:
            reply = Reply(content=[{"type": "text", "text": "Done."}], stop_reason="end_turn")
        self.marks.append((started, time.perf_counter(), len(messages)))
        return reply


class Silent:
    def text(self, run_id: str, text: str) -> None: ...
    def progress(self, run_id: str, steps: dict[str, str]) -> None: ...
    def question(self, run_id: str, question: QuestionRecord) -> None: ...
    def finished(self, run_id: str, text: str) -> None: ...
    def failed(self, run_id: str, error: str) -> None: ...
    def stopped(self, run_id: str, by: str) -> None: ...
    def waiting(self, run_id: str, text: str) -> None: ...


def lookup(ctx: ToolContext, n: int) -> str:
    """A tool with a realistic result: about 1.3 KB of JSON."""
    rows = ",".join(['"well-0000 ok 12345.67"'] * 50)
    return f'{{"item": {n}, "rows": [{rows}]}}'


def history_round(tmp: Path, steps: int, n: int) -> tuple[float, float, int]:
    """One run of `steps` model steps: median bot time per step (ms) with a 10–60-message
    transcript, with the last 50 messages, and the transcript's final length."""
    registry = ToolRegistry()
    registry.add(lookup)
    model = Scripted(steps)
    store = Store(tmp / f"history-{n}.db")
    loop = AgentLoop(
        store=store,
        model=model,
        tools=registry,
        presenter=Silent(),
        system_prompt="bench",
        max_steps=steps + 5,
    )
    run = store.runs.create(period="2026-10", mode="console", started_by="bench", model="scripted")
    loop.start(run.id, "go")
    store.close()
    marks = model.marks
    gaps = [(marks[i][0] - marks[i - 1][1], marks[i][2]) for i in range(1, len(marks))]
    short = [g for g, length in gaps if length <= 60][5:]  # after five warm-up steps
    long = [g for g, length in gaps if length >= 2 * steps - 50]
    return statistics.median(short) * 1000, statistics.median(long) * 1000, gaps[-1][1]


def history_row(tmp: Path, steps: int, rounds: int = 5) -> Row:
    results = [history_round(tmp, steps, n) for n in range(rounds)]
    ratios = sorted(lo / s for s, lo, _ in results)
    s = statistics.median(r[0] for r in results)
    lo = statistics.median(r[1] for r in results)
    ratio = statistics.median(ratios)
    return Row(
        f"bot time per model step, ~{results[0][2]}- vs 10–60-message transcript "
        f"(median of {rounds} rounds)",
        "≤ 1.5×",
        f"{lo:.2f} ms (long) vs {s:.2f} ms (short)",
        "—",
        f"{ratio:.2f}× (rounds {ratios[0]:.2f}–{ratios[-1]:.2f})",
        "met" if ratio <= 1.5 else "missed",
    )


# -- model cost: a whole close through the Claude adapter against a caching fake ------------


class CachingAnthropic:
    """A fake Messages API that answers as the offline playbook would and counts tokens as
    prompt caching does: a prefix up to a cache breakpoint is written once and read after;
    a later request reads the longest cached prefix ending at any block (the API looks back
    for earlier breakpoints). Tokens are estimated at four bytes of JSON each."""

    def __init__(self) -> None:
        self.playbook = PlaybookModel()
        self.cached: set[str] = set()
        self.usage = {f: 0 for f in USAGE_FIELDS}
        self.sent_bytes = 0
        self.delay = 0.0

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        blocks: list[tuple[str, bool]] = []  # (canonical JSON, is a breakpoint), in prompt order
        for tool in request["tools"]:
            blocks.append((json.dumps(tool, sort_keys=True), "cache_control" in tool))
        for part in request["system"]:
            blocks.append((json.dumps(part, sort_keys=True), "cache_control" in part))
        for message in request["messages"]:
            for b in message["content"]:
                marked = "cache_control" in b
                plain = {k: v for k, v in b.items() if k != "cache_control"}
                blocks.append((message["role"] + json.dumps(plain, sort_keys=True), marked))
        sizes = [len(text) // 4 for text, _ in blocks]
        prefixes = []
        digest = hashlib.sha256()
        for text, _ in blocks:
            digest.update(text.encode())
            prefixes.append(digest.hexdigest())
        read_to = max((i + 1 for i, p in enumerate(prefixes) if p in self.cached), default=0)
        marks = [i + 1 for i, (_, mark) in enumerate(blocks) if mark]
        write_to = max(marks, default=0)
        read = sum(sizes[:read_to])
        written = sum(sizes[read_to:write_to]) if write_to > read_to else 0
        fresh = sum(sizes[max(read_to, write_to) :])
        for m in marks:
            self.cached.add(prefixes[m - 1])
        messages = [
            {
                "role": m["role"],
                "content": [
                    {k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]
                ],
            }
            for m in request["messages"]
        ]
        reply = self.playbook.respond(system="", messages=messages, tools=request["tools"])
        usage = {
            "input_tokens": fresh,
            "output_tokens": len(json.dumps(reply.content)) // 4,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }
        for k, v in usage.items():
            self.usage[k] += v
        return {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": request["model"],
            "content": reply.content,
            "stop_reason": reply.stop_reason or "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }


@contextmanager
def caching_anthropic() -> Iterator[tuple[str, CachingAnthropic]]:
    fake = CachingAnthropic()

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real API

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if fake.delay:
                time.sleep(fake.delay)  # the model thinking: what head-of-line blocking waits on
            fake.sent_bytes += len(raw)
            request = json.loads(raw)
            answer = fake.answer(request)
            if request.get("stream"):  # the adapter streams: server-sent events
                self.send(200, sse(answer), {"content-type": "text/event-stream"})
                return
            self.send(200, json.dumps(answer).encode(), {"content-type": "application/json"})

    with loopback(Handler) as url:
        yield url, fake


def cost_rows(quick: bool) -> list[Row]:
    """What a Claude close costs and the largest tool result (bench/close_cost.py)."""
    import close_cost  # bench/close_cost.py, beside this file

    return [Row(*r) for r in close_cost.rows(quick=quick)]


# -- head-of-line blocking: runs waiting on a slow model ----------------------------------


def roots(fake: FakeSlack) -> int:
    """Root messages (threads opened) in the fake Slack."""
    return sum(1 for m in list(fake.messages.values()) if not m.get("thread_ts"))


def blocking_rows(
    tmp: Path, fake: FakeSlack, data: Path, waiting: int, delay: float, samples: int
) -> list[Row]:
    """With `waiting` runs each waiting `delay` s on the model: how long until a new /close
    opens its thread, and a Submit's form turns read-only (`samples` of each)."""
    with caching_anthropic() as (url, model):
        db = tmp / "blocking.db"
        bot = closebot_server(fake, db, data, tmp / "blocking.log", anthropic=url)
        store = Store(db)
        try:
            open_many(fake, store, bot, samples)  # forms to Submit later, made at full speed
            forms = answerable(store)[:samples]
            model.delay = delay
            c = Client(bot.port)
            for _ in range(waiting):
                c.post(close_body(fake))
            opened, read_only = [], []
            for record in forms:
                before = roots(fake)
                started = time.monotonic()
                c.post(close_body(fake))
                wait_until(lambda b=before: roots(fake) > b, timeout=delay * 8, what="a thread")
                opened.append(time.monotonic() - started)
                started = time.monotonic()
                c.post(submit_body(fake, record))
                wait_until(
                    lambda r=record: not has_submit(fake, r), timeout=delay * 8, what="read-only"
                )
                read_only.append(time.monotonic() - started)
            c.close()
        finally:
            store.close()
            bot.proc.kill()  # its turns are still waiting on the slow model
            bot.proc.wait()
    verdict = "met" if p99(opened) <= 1 and p99(read_only) <= 1 else "missed"

    def spread(xs: list[float]) -> str:
        return f"p50 {p50(xs) * 1000:.0f} / p99 {p99(xs) * 1000:.0f} / max {max(xs) * 1000:.0f} ms"

    return [
        Row(
            f"{waiting} runs waiting {delay:.0f} s on the model: new /close thread opens; "
            f"Submit form read-only ({len(opened)} of each)",
            "≤ 1 s (p99)",
            f"thread {spread(opened)}; read-only {spread(read_only)}",
            "—",
            "—",
            verdict,
        )
    ]


# -- memory with many paused runs ---------------------------------------------------


def paused_db(tmp: Path, fake: FakeSlack, data: Path, copies: int) -> Path:
    """A database of `copies` runs paused on a posted form: one real paused close, cloned."""
    db = tmp / f"paused-{copies}.db"
    store = Store(db)
    tools = CloseTools(data_dir=data)
    loop = AgentLoop(
        store=store,
        model=PlaybookModel(),
        tools=tools.registry(),
        presenter=Silent(),
        system_prompt=SYSTEM_PROMPT,
    )
    run = store.runs.create(
        period="2026-10",
        mode="slack",
        started_by="UALICE",
        model="offline-playbook",
        channel="CFIN",
    )
    store.runs.set_thread(run.id, channel="CFIN", thread_ts="1.000001", status_ts="1.000002")
    loop.start(run.id, start_prompt("2026-10"))
    question = store.questions.pending(run.id)
    assert question is not None
    store.questions.set_message(question.id, channel="CFIN", message_ts="1.000003")
    store.close()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "create temp table n as with recursive c(i) as (select 1 union all select i + 1 from c "
            "where i < ?) select i from c",
            (copies - 1,),
        )
        cols = {
            t: [r[1] for r in conn.execute(f"pragma table_info({t})")]
            for t in ("runs", "messages", "tool_calls", "questions")
        }
        keyed = {"runs": "id", "tool_calls": "tool_use_id", "questions": "id", "messages": None}
        for table, key in keyed.items():
            select = []
            for col in cols[table]:
                if col == "run_id" or col == key:
                    select.append(f"{col} || '-' || n.i")
                elif col == "id" and table == "messages":
                    select.append("null")
                else:
                    select.append(col)
            conn.execute(
                f"insert into {table} ({', '.join(cols[table])}) "
                f"select {', '.join(select)} from {table}, n where "
                + ("id" if table == "runs" else "run_id")
                + " = ?",
                (run.id,),
            )
    conn.close()
    return db


def memory_row(tmp: Path, fake: FakeSlack, data: Path, copies: int) -> Row:
    db = paused_db(tmp, fake, data, copies)
    server = closebot_server(fake, db, data, tmp / f"rss-{copies}.log")
    try:
        c = Client(server.port)
        c.conn.request("GET", "/healthz")
        body = c.conn.getresponse().read()
        c.close()
        assert b'"runs_waiting": ' + str(copies).encode() in body, body[:200]
        rss = server.rss_mb()
    finally:
        server.stop()
    return Row(
        f"RSS with {copies:,} paused runs",
        "≤ 150 MB at 10,000",
        f"{rss:.1f} MB",
        "—",
        "—",
        "met" if rss <= 150 else "missed",
    )


# -- the table ---------------------------------------------------------------------


def machine() -> str:
    mem = "?"
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    return f"{os.cpu_count()} cores, {mem} RAM, Python {platform.python_version()}, {platform.platform()}"


def print_table(rows: list[Row]) -> None:
    head = Row("figure", "target", "closebot", "reference", "ratio", "verdict")
    all_rows = [head, *rows]
    widths = [max(len(getattr(r, f)) for r in all_rows) for f in head.__dataclass_fields__]
    for i, r in enumerate(all_rows):
        cells = [
            getattr(r, f).ljust(w) for f, w in zip(head.__dataclass_fields__, widths, strict=True)
        ]
        print("| " + " | ".join(cells) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


@contextmanager
def servers(
    fake: FakeSlack, db: Path, data: Path, tmp: Path
) -> Iterator[tuple[Server, dict[str, Server]]]:
    bot = closebot_server(fake, db, data, tmp / "closebot.log")
    refs = {m: reference_server(fake, m, tmp / f"{m}.log") for m in ("pbr", "dev", "defaults")}
    try:
        yield bot, refs
    finally:
        for s in (bot, *refs.values()):
            s.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    args = parser.parse_args()
    n, clients_n, each = (8, 4, 2) if args.quick else (40, 16, 3)
    rounds, concurrent_rounds = (2, 2) if args.quick else (5, 3)
    burst, burst_clients = (24, 8) if args.quick else (500, 50)
    history_steps, copies = (60, (300,)) if args.quick else (500, (1_000, 10_000))
    print(f"machine: {machine()}", flush=True)
    rows: list[Row] = []
    keep = os.environ.get("BENCH_TMP")  # keep the logs and databases there
    with (
        contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory() as t,
        fake_slack() as fake,
    ):
        # acks and bursts, not Slack's rate tiers (bench/slack_budget.py measures those): a
        # burst of 500 resumes is far past chat.update's 50 a minute by design
        fake.tiers.off()
        tmp = Path(t)
        data = slack_sample(tmp)
        global _periods
        _periods = iter(distinct_periods(tmp, PERIODS if not args.quick else 400))
        db = tmp / "bench.db"
        with servers(fake, db, data, tmp) as (bot, refs):
            store = Store(db)
            rows += ack_rows(fake, store, bot, refs, n, rounds)
            print(f"  ack: done ({len(fake.calls)} Slack calls so far)", flush=True)
            rows += concurrent_rows(
                fake, store, bot, refs["pbr"], clients_n, each, concurrent_rounds
            )
            print("  concurrency: done", flush=True)
            rows.append(burst_row(fake, store, bot, burst, burst_clients))
            print("  burst: done", flush=True)
            store.close()
        rows.append(history_row(tmp, history_steps))
        print("  history: done", flush=True)
        rows += cost_rows(args.quick)
        print("  model cost: done", flush=True)
        rows += blocking_rows(tmp, fake, data, *((8, 3.0, 5) if args.quick else (50, 10.0, 50)))
        print("  head-of-line blocking: done", flush=True)
        for count in copies:
            rows.append(memory_row(tmp, fake, data, count))
        print("  memory: done", flush=True)
        shutil.rmtree(tmp / "slack-sample", ignore_errors=True)
    print()
    print_table(rows)


if __name__ == "__main__":
    main()
