"""Issue 28, items 3 and 4: the model asks the prepared questions by reference and closebot
renders them and records their answers; what a close costs under the documented usage
accounting; `closebot eval` scores every scripted scenario beside the offline playbook (and
fails a model that breaks a rule). Claude's side runs through the real adapter and SDK
against the scripted Messages API on loopback."""

from __future__ import annotations

import io
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.agent_loop import AgentLoop, Paused
from bot.close import SYSTEM_PROMPT, CloseTools, PlaybookModel, start_prompt
from bot.console import eval_run
from bot.console.cli import main
from bot.console.eval_api import ScriptedApi, cost_of, scripted_api
from bot.console.eval_run import Scenario, Silent, run_scenario
from bot.console.eval_scenarios import _genmonth, scenarios
from bot.core.models import Reply
from bot.core.questions import Question
from bot.core.tools import ToolContext
from bot.store import Store

SCENARIOS = 12


def _asks(api: ScriptedApi) -> list[dict[str, Any]]:
    """Every ask_user_question input the model sent, from the last request's transcript."""
    last = api.requests[-1]["messages"]
    return [
        b["input"]
        for m in last
        if m["role"] == "assistant"
        for b in m["content"]
        if b.get("type") == "tool_use" and b["name"] == "ask_user_question"
    ]


def test_the_model_asks_by_ref_and_the_forms_are_exactly_the_prepared_questions(
    tmp_path: Path,
) -> None:
    """The sample closed by the scripted model through ClaudeModel: each question it asks is
    a ref alone, every form shown is the question exception_details prepared (figures,
    options, recommendation), each answer is recorded by closebot bound to its question, and
    no answer's result repeats the question's text."""
    seen: dict[str, Any] = {}
    score = eval_run.score

    def keep(scenario: Scenario, store: Store, run_id: str, *rest: Any) -> Any:
        seen["store"], seen["run"] = store, run_id
        seen["records"] = store.questions.of_run(run_id)
        seen["results"] = eval_run._tool_results(store, run_id)
        tools = CloseTools()
        ctx = ToolContext(run_id=run_id, store=store)
        seen["prepared"] = {}
        for record in seen["records"]:
            for item in record.questions:
                for ref in re.findall(r"\[ref ([^\]]+)\]", str(item.get("question"))):
                    prepared = tools.tool("exception_details")(ctx, ref)["question"]
                    seen["prepared"][ref] = (item, Question.from_dict(prepared).to_dict())
        seen["excs"] = eval_run.Ledger(store).exceptions(run_id)
        return score(scenario, store, run_id, *rest)

    eval_run.score = keep  # type: ignore[assignment]
    try:
        with scripted_api() as api:
            result = run_scenario(Scenario("sample"), claude=True, api=api, workdir=tmp_path)
    finally:
        eval_run.score = score  # type: ignore[assignment]
    assert result.outcome == "Finished" and result.posted
    asks = _asks(api)
    assert asks and all(set(q) == {"ref"} for a in asks for q in a["questions"]), asks
    assert len(seen["prepared"]) >= 10
    for ref, (shown, prepared) in seen["prepared"].items():
        assert shown == prepared, ref
    # every decision came from the question that named it, answered by a person
    asked_in = {
        ref: record.id
        for record in seen["records"]
        for item in record.questions
        for ref in re.findall(r"\[ref ([^\]]+)\]", str(item.get("question")))
    }
    decided = [e for e in seen["excs"] if e["status"] == "resolved"]
    assert decided and all(e["details"]["ref"] in asked_in for e in decided)
    assert all(e["decided_by"] in ("alice", "bob", "carol") for e in decided)
    # answers come back without their question's text
    for r in seen["results"]:
        if r.name != "ask_user_question":
            continue
        body = json.loads(r.content)
        for n, answer in (body.get("answers") or {}).items():
            assert "question" not in answer, (n, answer)
        for record in seen["records"]:
            if record.id == r.tool_use_id:
                for item in record.questions:
                    assert str(item.get("question"))[:80] not in r.content


class AsksByRef:
    """A model that asks for a ref nobody prepared, then ends its turn."""

    name = "claude-sonnet-5-5"

    def __init__(self, ref: str) -> None:
        self.ref = ref

    def respond(self, *, system: str, messages: list[Any], tools: list[Any], **_: Any) -> Reply:
        if len(messages) == 1:
            use = {
                "type": "tool_use",
                "id": "toolu_ref",
                "name": "ask_user_question",
                "input": {"context": "Intake.", "questions": [{"ref": self.ref}]},
            }
            return Reply(content=[use], stop_reason="tool_use")
        return Reply(content=[{"type": "text", "text": "done"}], stop_reason="end_turn")


def test_a_ref_nothing_prepared_is_refused_naming_it_and_nothing_is_shown(db_path: Path) -> None:
    store = Store(db_path)
    loop = AgentLoop(
        store=store,
        model=AsksByRef("intake:NO-SUCH-WELL"),
        tools=CloseTools().registry(),
        presenter=Silent(),
        system_prompt=SYSTEM_PROMPT,
    )
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="x")
    outcome = loop.start(run.id, start_prompt("2026-10"))
    assert not isinstance(outcome, Paused)
    stored = store.transcript.tool_result("toolu_ref")
    assert stored is not None and stored.is_error
    assert "intake:NO-SUCH-WELL" in stored.content and "nothing was shown" in stored.content
    assert store.questions.of_run(run.id) == []
    store.close()


def test_the_cost_is_the_documented_accounting() -> None:
    """$2 / $10 per million tokens; a 5-minute write 1.25× input, a 1-hour write 2×, a read
    $0.10 (0.05×: Claude Sonnet 5.5's cache reads cost half Claude Sonnet 5's, per its
    migration guide; bot/core/prices.py); thinking is output. Worked by hand."""
    usage = {
        "input_tokens": 1_000,
        "cache_read_input_tokens": 10_000,
        "cache_creation_input_tokens": 5_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 2_000, "ephemeral_1h_input_tokens": 3_000},
        "output_tokens": 500,
    }
    dollars = (
        Decimal(1_000) * 2
        + Decimal(2_000) * Decimal("2.5")
        + Decimal(3_000) * 4
        + Decimal(10_000) * Decimal("0.1")
        + Decimal(500) * 10
    ) / 1_000_000
    assert Decimal(str(round(cost_of("claude-sonnet-5-5", usage), 9))) == dollars


def _request(ttl: str | None, text: str) -> dict[str, Any]:
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {
        "model": "claude-sonnet-5-5",
        "system": [{"type": "text", "text": "s" * 4000, "cache_control": control}],
        "tools": [],
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    }


@pytest.mark.parametrize(("ttl", "read_after_ten_minutes"), [(None, False), ("1h", True)])
def test_a_five_minute_entry_lapses_over_a_ten_minute_answer_and_a_one_hour_one_is_read(
    ttl: str | None, read_after_ten_minutes: bool
) -> None:
    api = ScriptedApi(script=_Quiet())
    # the system block, at the bench's four bytes of JSON a token
    system = len(json.dumps({"text": "s" * 4000, "type": "text"}, sort_keys=True)) // 4
    first = api.answer(_request(ttl, "Run the close for 2026-10."))["usage"]
    assert first["cache_creation_input_tokens"] == system and first["cache_read_input_tokens"] == 0
    api.wait(600)
    later = api.answer(_request(ttl, "Run the close for 2026-10."))["usage"]
    assert (later["cache_read_input_tokens"] == system) is read_after_ten_minutes
    assert (later["cache_creation_input_tokens"] == 0) is read_after_ten_minutes
    written = later["cache_creation"][
        "ephemeral_1h_input_tokens" if ttl else "ephemeral_5m_input_tokens"
    ]
    assert written == (0 if read_after_ten_minutes else system)


class _Quiet:
    def respond(self, **_: Any) -> Reply:
        return Reply(content=[{"type": "text", "text": "ok"}], stop_reason="end_turn")


def test_closebot_eval_scores_every_scenario_beside_the_playbook() -> None:
    names = [s.name for s in scenarios()]
    assert len(names) >= SCENARIOS and len(set(names)) == len(names)
    out = io.StringIO()
    assert main(["eval"], out=out) == 0, out.getvalue()
    text = out.getvalue()
    rows = [line for line in text.splitlines() if "claude (scripted)" in line]
    assert len(rows) == len(names)
    for name, row in zip(names, rows, strict=True):
        assert row.startswith(name), row
        assert "FAIL" not in row and "$" in row, row
    assert text.count("playbook") >= len(names)
    assert f"score: Claude {len(names)}/{len(names)}" in text


class Retypes(PlaybookModel):
    """A model that writes the questions out itself, and gets one figure wrong."""

    def respond(self, **kwargs: Any) -> Reply:
        reply = super().respond(**kwargs)
        content = json.loads(json.dumps(reply.content))
        for b in content:
            if b.get("type") == "tool_use" and b["name"] == "ask_user_question":
                q = b["input"]["questions"][0]
                q["question"] = re.sub(r"\$([0-9])", r"$9\1", q["question"], count=1)
        return Reply(content=content, stop_reason=reply.stop_reason)


def test_the_eval_fails_a_model_that_mistypes_a_figure_in_a_form(tmp_path: Path) -> None:
    with scripted_api(ScriptedApi(script=Retypes())) as api:
        result = run_scenario(Scenario("the sample"), claude=True, api=api, workdir=tmp_path)
    assert not result.figures_exact and not result.passed
    assert any("differs from the prepared question" in p for p in result.problems)


def test_every_tool_result_is_under_4_kb_on_a_large_generated_month(tmp_path: Path) -> None:
    """A 20,000-line month with 30 alike wells closed by the scripted model: every tool
    result it read, and exception_details of every exception and group and a page of
    document_lines, each under 4 KB (README: at any size)."""
    sizes: list[tuple[int, str]] = []
    score = eval_run.score

    def measure(scenario: Scenario, store: Store, run_id: str, *rest: Any) -> Any:
        sizes.extend(
            (len(r.content.encode()), r.name) for r in eval_run._tool_results(store, run_id)
        )
        tools = CloseTools(data_dir=tmp_path / "month" / "data")
        ctx = ToolContext(run_id=run_id, store=store)
        refs = set()
        for e in eval_run.Ledger(store).exceptions(run_id):
            refs.add(e["details"].get("group") or e["details"]["ref"])
            refs.add(e["details"]["ref"])
        details = tools.tool("exception_details")
        for ref in sorted(refs):
            sizes.append((len(json.dumps(details(ctx, ref), default=str).encode()), ref))
        well = next(e["well_id"] for e in eval_run.Ledger(store).exceptions(run_id) if e["well_id"])
        lines = tools.tool("document_lines")(ctx, "2026-10", "jib", well_id=well)
        sizes.append((len(json.dumps(lines, default=str).encode()), "document_lines"))
        return score(scenario, store, run_id, *rest)

    gen = _genmonth()
    assert gen is not None

    def month(tmp: Path) -> Path:
        gen.generate(tmp_path / "month" / "data", 20_000, alike=30)
        return tmp_path / "month" / "data"

    eval_run.score = measure  # type: ignore[assignment]
    try:
        with scripted_api() as api:
            result = run_scenario(
                Scenario("large", data=month), claude=True, api=api, workdir=tmp_path
            )
    finally:
        eval_run.score = score  # type: ignore[assignment]
    assert result.outcome == "Finished" and result.passed, result.problems
    assert len(sizes) > 60
    too_big = [(size, what) for size, what in sizes if size >= 4096]
    assert not too_big, too_big


def test_a_late_answer_written_by_an_earlier_release_is_still_read_by_its_question_text() -> None:
    """An earlier release's late-answer message names its questions by their text (today's
    by their refs): a run paused across the upgrade still finds which exception it decides."""
    from bot.close.playbook.transcript import parse
    from bot.core.questions.results import LATE_ANSWER

    old = {
        "status": "answered",
        "source": "slack",
        "answered_by": "U1",
        "answers": {"1": {"question": "Which? [ref wi_nri:W-TX-001]", "labels": ["Accept"]}},
        "questions": ["Which? [ref wi_nri:W-TX-001]"],
        "question_id": "toolu_old",
    }
    new = {**old, "question_id": "toolu_new", "refs": ["severance:W-OK-002"]}
    del new["questions"]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Run the close for 2026-10."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Waiting."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"{LATE_ANSWER}. …\n{json.dumps(body)}"}
                for body in (old, new)
            ],
        },
    ]
    asked = parse(messages).asked()
    assert asked["wi_nri:W-TX-001"][0].id == "toolu_old"
    assert asked["severance:W-OK-002"][0].id == "toolu_new"


def test_the_real_api_needs_the_flag_and_a_key_and_stops_at_the_spending_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A key alone never spends: without --real the scripted model runs; --real without a key
    is refused; with both (here the SDK pointed at the scripted API through
    ANTHROPIC_BASE_URL) the eval stops before the next scenario once the cap is spent."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["eval", "--real"], out=io.StringIO()) == 2
    with scripted_api() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-eval-test")
        assert main(["eval", "--real", "--max-cost", "0"], out=io.StringIO()) == 2
        assert api.calls == 0
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        out = io.StringIO()
        main(["eval", "--real", "--max-cost", "0.01", "--only", "the sample"], out=out)
        assert api.calls > 10 and "(real API)" in out.getvalue()
        calls = api.calls
        out = io.StringIO()
        main(["eval", "--real", "--max-cost", "0.01", "--only", "month"], out=out)
    text = out.getvalue()
    # "clean month" ran first (its cost is over the cap), "a planted month" did not
    assert "spending cap $0.01 reached: a planted month and after not run" in text, text
    rows = [line for line in text.splitlines() if "claude" in line and "$" in line]
    assert len(rows) == 1 and rows[0].startswith("clean month"), text
    assert api.calls > calls


class RecommendsOtherwise(PlaybookModel):
    """A model that writes the questions out and recommends the first option everywhere."""

    def respond(self, **kwargs: Any) -> Reply:
        reply = super().respond(**kwargs)
        content = json.loads(json.dumps(reply.content))
        for b in content:
            if b.get("type") == "tool_use" and b["name"] == "ask_user_question":
                for q in b["input"]["questions"]:
                    if q.get("recommended"):
                        q["recommended"] = 1 if q["recommended"] != 1 else 2
        return Reply(content=content, stop_reason=reply.stop_reason)


def test_the_eval_fails_a_model_that_recommends_what_the_rules_do_not(tmp_path: Path) -> None:
    sample = next(s for s in scenarios() if s.name == "the sample")
    with scripted_api(ScriptedApi(script=RecommendsOtherwise())) as api:
        result = run_scenario(sample, claude=True, api=api, workdir=tmp_path)
    assert not result.recommended_ok and not result.passed
    assert any('the rules say "Accept operator\'s decimal"' in p for p in result.problems), (
        result.problems
    )
