"""A close's per-turn work does not grow with its transcript (issue 31): each message is read
from the store, and by the offline playbook, once — not again at every step (which made a
close of 1,305 exceptions decode 241,131 rows and re-walk the whole transcript 803 times).
Counted, never timed: bench/exceptions.py measures the time."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bot.close.playbook import PlaybookModel
from bot.close.playbook.transcript import parse
from bot.core import transcript as core_transcript
from bot.store import Store
from bot.store import transcript as store_transcript
from tests.close_helpers import close_run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.genmonth import generate


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows of the transcript decoded: each json.loads the store's transcript makes."""
    decoded = [0]

    def loads(text: str) -> Any:
        decoded[0] += 1
        return json.loads(text)

    monkeypatch.setattr(store_transcript, "json", SimpleNamespace(loads=loads))
    return decoded


def test_a_read_of_the_transcript_decodes_only_what_was_appended_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "closebot.db")
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    decoded = _count_decodes(monkeypatch)
    for n in range(1, 201):
        role = "user" if n % 2 else "assistant"
        store.transcript.append(run.id, role=role, content=[{"type": "text", "text": f"m{n}"}])
        before = decoded[0]
        messages = store.transcript.messages(run.id)
        # the whole transcript, in order, as stored...
        assert [m.content[0]["text"] for m in messages] == [f"m{i}" for i in range(1, n + 1)]
        # ...for the one row decoded that is new (not n rows: the read does not grow)
        assert decoded[0] - before == 1, f"read {n} decoded {decoded[0] - before} rows"


def test_a_transcript_changed_under_the_kept_copy_is_read_again(tmp_path: Path) -> None:
    """The kept copy is checked against the store at each read: a last message that is not
    as it was read (an append rolled back and another written in its place) reads the run
    again whole, never serving what the store no longer holds."""
    store = Store(tmp_path / "closebot.db")
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    for n in range(1, 4):
        store.transcript.append(run.id, role="user", content=[{"type": "text", "text": f"m{n}"}])
    assert [m.content[0]["text"] for m in store.transcript.messages(run.id)] == ["m1", "m2", "m3"]
    with store.write() as db:
        db.execute("delete from messages where run_id = ? and seq = 3", (run.id,))
    store.transcript.append(run.id, role="user", content=[{"type": "text", "text": "other"}])
    assert [m.content[0]["text"] for m in store.transcript.messages(run.id)] == [
        "m1",
        "m2",
        "other",
    ]


_READS = [0]  # messages whose content the playbook read


class _Counted(dict[str, Any]):
    """A message that counts the reads of its content."""

    def __getitem__(self, key: str) -> Any:
        if key == "content":
            _READS[0] += 1
        return super().__getitem__(key)


def test_a_close_reads_each_message_once_not_once_per_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a close with 40 distinct exceptions (each its own question): the store decodes
    each message about once (plus the last one, read alone at each turn), each is encoded
    for a model request about once (when it joins, and once more read back at the next
    turn), and the playbook reads each message's content about once — not the whole
    transcript at each of its steps."""
    data = tmp_path / "month"
    generate(data, 2000, seed=7, distinct=40)
    decoded = _count_decodes(monkeypatch)
    encoded = [0]  # messages JSON-encoded for a model request
    real_dumps = core_transcript.dumps

    def dumps(value: Any) -> bytes:
        encoded[0] += 1
        return real_dumps(value)

    monkeypatch.setattr(core_transcript, "dumps", dumps)
    shown: dict[int, _Counted] = {}  # one counting copy per message: the same object each turn
    kept: list[Any] = []
    calls = [0]
    respond = PlaybookModel.respond

    def counted(self: PlaybookModel, *, messages: list[dict[str, Any]], **kw: Any) -> Any:
        calls[0] += 1
        wrapped = []
        for m in messages:
            if id(m) not in shown:
                kept.append(m)  # keeps its id taken
                shown[id(m)] = _Counted(m)
            wrapped.append(shown[id(m)])
        return respond(self, messages=wrapped, **kw)

    monkeypatch.setattr(PlaybookModel, "respond", counted)
    _READS[0] = 0
    run = close_run(data, tmp_path / "closebot.db", max_forms=200)
    messages = run.store.transcript.messages(run.run_id)
    wi = [e for e in run.ledger.exceptions(run.run_id) if e["kind"] == "wi_nri"]
    assert len(wi) == 40 and all(e["status"] == "resolved" for e in wi)
    assert calls[0] > 40 and len(messages) > 80  # a long transcript, many turns
    # read from scratch, the whole transcript at every step, would be about
    # calls × messages / 2 (here some thousands)
    assert _READS[0] <= len(messages) + 2 * calls[0], (
        f"the playbook read {_READS[0]} messages over {calls[0]} steps "
        f"of a {len(messages)}-message transcript"
    )
    assert encoded[0] <= 2 * len(messages), (
        f"{encoded[0]} messages encoded for a {len(messages)}-message transcript"
    )
    assert decoded[0] <= len(messages) + 3 * calls[0], (
        f"the store decoded {decoded[0]} rows over {calls[0]} steps "
        f"of a {len(messages)}-message transcript"
    )


def test_the_kept_reading_equals_a_reading_from_the_first_message(tmp_path: Path) -> None:
    """At every turn of a close, the playbook's kept state (fed only what is new) gives the
    same reply as the transcript read afresh: a restarted process, which reads the durable
    transcript from the first message, goes on exactly where the kept one would."""
    data = tmp_path / "month"
    generate(data, 2000, seed=7, distinct=12)
    run = close_run(data, tmp_path / "closebot.db", max_forms=200)
    api = [m.api() for m in run.store.transcript.messages(run.run_id)]
    model = PlaybookModel()

    def shape(reply: Any) -> list[Any]:
        return [
            {k: v for k, v in b.items() if k != "id"} if b.get("type") == "tool_use" else b
            for b in reply.content
        ]

    turns = 0
    for k in range(1, len(api) + 1):
        if api[k - 1]["role"] != "user":
            continue
        turns += 1
        kept = model._respond(api[:k])  # the kept state, fed this turn's messages
        afresh = model._respond(api[:k], keep=False)
        assert shape(kept) == shape(afresh), f"turn {turns} (message {k})"
        state = parse(api[:k])
        assert len(state.fed) == k
    assert turns > 20


def test_a_kept_reading_is_lent_to_one_reader_at_a_time() -> None:
    """Two replies at once on the same messages (two runs of a server, say) never feed one
    state: while one reads it, the other reads afresh; after, the kept one is found again."""
    from bot.close.playbook.transcript import reading

    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Run the close for 2026-10."}]},
    ]
    with reading(messages) as first:
        second = parse(messages)
        assert second is not first and second.period == first.period == "2026-10"
    assert parse(messages) in (first, second)
