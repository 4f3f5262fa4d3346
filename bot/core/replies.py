"""A model's reply read as data: whether it can be the next assistant message
(reply_problem), its tool calls and text, what the thread shows of it (narration_of),
and tool inputs that are not objects kept so the model can be told (objectified)."""

from __future__ import annotations

import json
from typing import Any

from bot.core.models import Reply

TRUNCATED = {"max_tokens": "output limit", "model_context_window_exceeded": "context window"}
NARRATION_LIMIT = 1500  # summarized thinking shown in the thread is cut to this


def reply_problem(reply: Reply) -> str | None:
    """Why a model reply cannot be used as the next assistant message, or None if it can."""
    content = reply.content
    if reply.stop_reason == "refusal":
        return "the model refused to continue this close (stop_reason: refusal)"
    if reply.stop_reason in TRUNCATED:
        # A cut-off reply is never a finished one, whatever it holds: max_tokens (its output
        # limit) or model_context_window_exceeded (the context window filled while it wrote)
        # (https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons).
        return (
            f"the model's reply was cut off at its {TRUNCATED[reply.stop_reason]} "
            f"(stop_reason: {reply.stop_reason}); retry continues from the last complete step"
        )
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        return "the model returned a malformed reply (content is not a list of blocks)"
    for block in tool_uses(content):
        if not (
            isinstance(block.get("id"), str) and block["id"] and isinstance(block.get("name"), str)
        ):
            return "the model returned a malformed tool call (no id or no name)"
    useful = [
        b
        for b in content
        if b.get("type") in ("tool_use", "thinking", "redacted_thinking")
        or (b.get("type") == "text" and str(b.get("text", "")).strip())
    ]
    if not useful and reply.stop_reason != "pause_turn":
        return "the model returned an empty reply"
    if reply.stop_reason == "end_turn" and not tool_uses(content) and not text_of(content):
        return "the model ended its turn without a word (only thinking)"
    return None


NOT_AN_OBJECT = "not_an_object"  # a tool_use's input that was not a JSON object, kept here


def objectified(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reply with each tool_use's input an object, as the Messages API takes it back: an
    input that was not one (a list, say) is kept as {NOT_AN_OBJECT: input}, and the tool's
    result tells the model to call it again with an object (tool_input_problem)."""
    return [
        {**b, "input": {NOT_AN_OBJECT: b.get("input")}}
        if b.get("type") == "tool_use" and not isinstance(b.get("input", {}), dict)
        else b
        for b in content
    ]


def tool_input_problem(name: str, raw: Any) -> str | None:
    """Why a tool_use's input cannot be used at all (it was not a JSON object), or None."""
    if isinstance(raw, dict) and set(raw) == {NOT_AN_OBJECT}:
        sent = json.dumps(raw[NOT_AN_OBJECT], ensure_ascii=False)
        kind = type(raw[NOT_AN_OBJECT]).__name__
        return (
            f"{name}: the input must be a JSON object with the tool's arguments, not a {kind} "
            f"({sent[:200]}); nothing was done — call {name} again with an object"
        )
    return None


def tool_uses(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in content if b.get("type") == "tool_use"]


def text_of(content: list[dict[str, Any]]) -> str:
    return "\n\n".join(
        b["text"].strip()
        for b in content
        if b.get("type") == "text" and str(b.get("text", "")).strip()
    )


def narration_of(content: list[dict[str, Any]]) -> str:
    """What the thread shows between tool calls: the text, else the summarized thinking."""
    text = text_of(content)
    if text:
        return text
    thought = "\n\n".join(
        str(b.get("thinking", "")).strip()
        for b in content
        if b.get("type") == "thinking" and str(b.get("thinking", "")).strip()
    )
    if not thought:
        return ""
    cut = thought if len(thought) <= NARRATION_LIMIT else thought[: NARRATION_LIMIT - 1] + "…"
    return f"_{cut}_" if "_" not in cut else cut
