"""The offline playbook: a deterministic Model that runs the close without an API key.

It reads the transcript — never hidden state — so it resumes from the store like Claude
would, calls the same tools in order and asks the same kinds of questions, with the
recommendations the data supports.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.close.data import period_label
from bot.close.interests import RESOLUTION_CODES, RESOLUTIONS, money, signed_money
from bot.models import Reply
from bot.questions import MAX_HEADER, MAX_QUESTIONS, TOOL_NAME

WI_HEADER = "WI/NRI"
POSTING_HEADER = "Posting"


@dataclass
class _Call:
    id: str
    name: str
    input: dict[str, Any]
    result: Any = None
    is_error: bool = False
    done: bool = False


@dataclass
class _State:
    period: str
    calls: list[_Call] = field(default_factory=list)
    last_user_text: str | None = None

    def latest(self, name: str) -> _Call | None:
        done = [c for c in self.calls if c.name == name and c.done]
        return done[-1] if done else None

    def asks(self, header: str) -> list[_Call]:
        return [
            c
            for c in self.calls
            if c.name == TOOL_NAME
            and c.done
            and not c.is_error
            and c.input["questions"][0].get("header", "").startswith(header)
        ]


def _parse(messages: list[dict[str, Any]]) -> _State:
    first = messages[0]["content"]
    first_text = (
        first
        if isinstance(first, str)
        else " ".join(b.get("text", "") for b in first if b.get("type") == "text")
    )
    m = re.search(r"\b(\d{4}-\d{2})\b", first_text)
    state = _State(period=m.group(1) if m else "")
    by_id: dict[str, _Call] = {}
    for msg in messages:
        content = msg["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if msg["role"] == "assistant":
            for b in content:
                if b.get("type") == "tool_use":
                    call = _Call(id=b["id"], name=b["name"], input=b.get("input") or {})
                    by_id[call.id] = call
                    state.calls.append(call)
            state.last_user_text = None
        else:
            texts = [b["text"] for b in content if b.get("type") == "text"]
            state.last_user_text = "\n".join(texts) if texts else None
            for b in content:
                if b.get("type") == "tool_result" and b["tool_use_id"] in by_id:
                    call = by_id[b["tool_use_id"]]
                    raw = b.get("content")
                    if isinstance(raw, list):
                        raw = "".join(x.get("text", "") for x in raw)
                    call.is_error = bool(b.get("is_error"))
                    call.done = True
                    try:
                        call.result = json.loads(raw) if not call.is_error else raw
                    except (TypeError, json.JSONDecodeError):
                        call.result = raw
    return state


def _use(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_pb_{uuid.uuid4().hex[:20]}",
        "name": name,
        "input": args,
    }


def _reply(text: str, *uses: dict[str, Any]) -> Reply:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.extend(uses)
    return Reply(content=content, stop_reason="tool_use" if uses else "end_turn")


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mismatch_question(m: dict[str, Any]) -> dict[str, Any]:
    parts = [f"{m['well_name']} ({m['state']}, {m['operator']})."]
    if m["jib_differs"]:
        parts.append(
            f"JIB billed WI {m['jib_decimal']} vs DOI {m['doi_wi']}: {money(Decimal(m['jib_billed']))} billed "
            f"vs {money(Decimal(m['jib_expected_at_doi']))} expected ({signed_money(Decimal(m['jib_difference']))})."
        )
    else:
        parts.append(f"JIB billed at our DOI WI {m['doi_wi']}.")
    if m["stub_differs"]:
        parts.append(
            f"Revenue stub paid NRI {m['stub_decimal']} vs DOI {m['doi_nri']}: {money(Decimal(m['stub_paid']))} "
            f"vs {money(Decimal(m['stub_expected_at_doi']))} ({signed_money(Decimal(m['stub_difference']))})."
        )
    else:
        parts.append(f"Revenue stub paid our DOI NRI {m['doi_nri']}.")
    parts.append("How should it be booked?")
    return {
        "header": _short(f"{WI_HEADER} · {m['well_name']}", MAX_HEADER),
        "question": _short(" ".join(parts), 500),
        "type": "single_choice",
        "options": [
            {"label": RESOLUTIONS[c][0], "description": RESOLUTIONS[c][1]} for c in RESOLUTION_CODES
        ],
        "recommended": RESOLUTION_CODES.index(m["recommended"]) + 1,
        "reasoning": m["reasoning"],
        "allow_other": True,
    }


class PlaybookModel:
    """A Model whose every reply is computed from the transcript."""

    name = "offline-playbook"

    def respond(
        self, *, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Reply:
        state = _parse(messages)
        if state.last_user_text is not None and len(messages) > 1:
            return self._chat(state)
        if not state.period:
            return _reply(
                "I need an accounting period to close, written as YYYY-MM (for example 2026-10)."
            )
        p = state.period
        load = state.latest("load_period")
        if load is None:
            return _reply(
                f"Starting the {period_label(p)} close: loading the period's data.",
                _use("load_period", {"period": p}),
            )
        if load.is_error:
            return _reply(f"I could not load {p}: {load.result}")
        validate = state.latest("validate_interests")
        if validate is None:
            r = load.result
            states = ", ".join(f"{k} {v}" for k, v in r["wells_by_state"].items())
            return _reply(
                f"Loaded {r['wells']} wells ({states}), {r['jib_lines']} JIB lines on {r['jib_invoices']} invoices "
                f"({money(Decimal(r['jib_owner_net_total']))} owner net) and {r['revenue_lines']} revenue lines on "
                f"{r['revenue_checks']} checks ({money(Decimal(r['revenue_owner_net_total']))}). "
                "Checking every owner decimal against the DOI master.",
                _use("validate_interests", {"period": p}),
            )
        if validate.is_error:
            return _reply(f"The WI/NRI validation failed: {validate.result}")
        mismatches = validate.result["mismatches"]
        wi_asks = state.asks(WI_HEADER)
        asked = sum(len(a.input["questions"]) for a in wi_asks)
        if asked < len(mismatches):
            return self._ask_mismatches(mismatches, asked)
        if any(a.result.get("status") != "answered" for a in wi_asks):
            return self._stopped(state, wi_asks)
        resolves = [c for c in state.calls if c.name == "resolve_exception"]
        if mismatches and not resolves:
            return self._resolve(mismatches, wi_asks)
        build = state.latest("build_journal_entries")
        if build is None:
            return _reply(
                "Drafting the journal entries.", _use("build_journal_entries", {"period": p})
            )
        if build.is_error:
            return _reply(f"I could not draft the journal entries: {build.result}")
        approvals = state.asks(POSTING_HEADER)
        if not approvals:
            return self._ask_approval(build.result)
        summary = state.latest("close_summary")
        approval = approvals[-1]
        approved = self._approved(approval)
        if approved and state.latest("post_journal_entries") is None:
            return _reply(
                f"Posting batch {build.result['batch_id']}.",
                _use(
                    "post_journal_entries",
                    {"batch_id": build.result["batch_id"], "approval_question_id": approval.id},
                ),
            )
        if summary is None:
            return _reply("", _use("close_summary", {"period": p}))
        post = state.latest("post_journal_entries")
        return _reply(self._summary_text(summary.result, post))

    def _ask_mismatches(self, mismatches: list[dict[str, Any]], asked: int) -> Reply:
        batch = mismatches[asked : asked + MAX_QUESTIONS]
        n = len(mismatches)
        wells = "well" if n == 1 else "wells"
        context = (
            f"WI/NRI validation found {n} {wells} where the operator's decimals differ from our DOI master. "
            "Each needs your decision before I book anything."
        )
        return _reply(
            f"Found {n} {wells} whose operator decimals differ from the DOI master: "
            + ", ".join(m["well_name"] for m in mismatches)
            + ". I need your decision.",
            _use(
                TOOL_NAME, {"context": context, "questions": [_mismatch_question(m) for m in batch]}
            ),
        )

    def _resolve(self, mismatches: list[dict[str, Any]], asks: list[_Call]) -> Reply:
        uses = []
        flat = [(a, str(i)) for a in asks for i in range(1, len(a.input["questions"]) + 1)]
        for m, (ask, key) in zip(mismatches, flat, strict=False):
            answer = ask.result["answers"][key]
            if answer.get("selected"):
                code = RESOLUTION_CODES[answer["selected"][0] - 1]
                note = ""
            else:  # a typed "Other" answer is an instruction a person must carry out
                code = "defer"
                note = f"Other: {answer.get('other', '')}"
            uses.append(
                _use(
                    "resolve_exception",
                    {
                        "exception_id": m["exception_id"],
                        "resolution": code,
                        "question_id": ask.id,
                        "note": note,
                    },
                )
            )
        return _reply("Recording the decisions.", *uses)

    def _stopped(self, state: _State, asks: list[_Call]) -> Reply:
        ask = next(a for a in asks if a.result.get("status") != "answered")
        status = ask.result.get("status")
        if state.latest("close_summary") is None:
            return _reply(
                f"The WI/NRI question was {status}, so I stopped before booking anything.",
                _use("close_summary", {"period": state.period}),
            )
        summary = state.latest("close_summary")
        assert summary is not None
        return _reply(
            self._summary_text(summary.result, None, stopped=f"the WI/NRI question was {status}")
        )

    def _ask_approval(self, build: dict[str, Any]) -> Reply:
        batch_id = build["batch_id"]
        total = money(Decimal(build["total_debit"]))
        entries = len(build["entries"])
        open_exceptions = build["open_exceptions"]
        already = build.get("period_already_posted") or []
        if already:
            recommended, reasoning = (
                2,
                (
                    f"Batch {already[0]} already posted this period; posting this one too would book it twice."
                ),
            )
        elif build["balanced"] and not open_exceptions:
            recommended, reasoning = (
                1,
                (
                    f"The batch balances to the cent ({total} debits = {total} credits) and every exception has a recorded decision."
                ),
            )
        else:
            recommended, reasoning = (
                2,
                (
                    f"{len(open_exceptions)} exception(s) are still open, so the batch books them at DOI with the difference in suspense; review before posting."
                ),
            )
        question = {
            "header": POSTING_HEADER,
            "question": f"Post journal batch {batch_id}: {entries} entries, {total} debits = {money(Decimal(build['total_credit']))} credits?",
            "type": "single_choice",
            "options": [
                {
                    "label": "Approve and post",
                    "description": f"Post the {entries} entries to the ledger now.",
                },
                {
                    "label": "Keep as draft",
                    "description": "Leave the batch for review; nothing is posted.",
                },
            ],
            "recommended": recommended,
            "reasoning": reasoning,
        }
        return _reply(
            f"Drafted batch {batch_id}: {entries} entries, {total} debits = credits. Posting needs your approval.",
            _use(
                TOOL_NAME,
                {
                    "context": f"Journal batch {batch_id} is ready. Posting is irreversible and needs your approval.",
                    "questions": [question],
                },
            ),
        )

    @staticmethod
    def _approved(approval: _Call) -> bool:
        result = approval.result
        if result.get("status") != "answered":
            return False
        labels = result["answers"]["1"].get("labels", [])
        return any(label.startswith("Approve") for label in labels)

    def _summary_text(
        self, s: dict[str, Any], post: _Call | None, stopped: str | None = None
    ) -> str:
        lines = [
            f"*Month-end close · {s['period_label']}* — "
            + (f"stopped: {stopped}" if stopped else "finished")
        ]
        if s["exceptions"]:
            lines.append(f"*Exceptions ({len(s['exceptions'])})*")
            for e in s["exceptions"]:
                if e["status"] == "resolved":
                    lines.append(
                        f"• {e['well']}: {e['resolution']} — decided by {e['decided_by']} ({e['source']})"
                    )
                else:
                    lines.append(f"• {e['well']}: open")
        else:
            lines.append("*Exceptions*: none; every decimal matches the DOI master.")
        b = s["batch"]
        if b:
            state = (
                f"posted by {b['posted_by']}" if b["status"] == "posted" else "draft, not posted"
            )
            lines.append(
                f"*Journal batch {b['batch_id']}* ({state}): debits {money(Decimal(b['total_debit']))} = credits {money(Decimal(b['total_credit']))}"
            )
            for a in b["by_account"]:
                side = f"Dr {money(Decimal(a['debit']))}" if Decimal(a["debit"]) else ""
                side += (" " if side and Decimal(a["credit"]) else "") + (
                    f"Cr {money(Decimal(a['credit']))}" if Decimal(a["credit"]) else ""
                )
                lines.append(f"• {a['account']} {a['account_name']}: {side}")
        if post is not None and post.is_error:
            lines.append(f"*Posting refused*: {post.result}")
        if s.get("follow_ups"):
            lines.append("*Follow-ups*")
            lines.extend(f"• {f}" for f in s["follow_ups"])
        lines.append("*Open items*: " + ("; ".join(s["open_items"]) if s["open_items"] else "none"))
        return "\n".join(lines)

    def _chat(self, state: _State) -> Reply:
        text = (state.last_user_text or "").strip().lower()
        summary = state.latest("close_summary")
        if "status" in text and summary is not None:
            post = state.latest("post_journal_entries")
            return _reply(self._summary_text(summary.result, post))
        return _reply(
            "I'm running offline (no ANTHROPIC_API_KEY), so I follow the close playbook and can't hold a "
            "free conversation. Say *status* for this run's summary, or start a new close with `/close YYYY-MM`."
        )
