"""The ask_user_question tool as the model sees it: its JSON schema (TOOL_SCHEMA) and the
validation of its input (parse_ask), with every problem worded for the model."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from bot.core.questions.contract import (
    MAX_CONTEXT,
    MAX_LABEL,
    MAX_QUESTION_TEXT,
    MAX_QUESTIONS,
    MIN_QUESTIONS,
    TOOL_NAME,
)
from bot.core.questions.declaration import Ask

REF_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ref": {
            "type": "string",
            "description": "The ref of a question closebot prepared (a step result's `ref`, "
            "a drafted batch's `approval_ref`): shown with its figures, options and "
            "recommendation exactly as prepared. Prefer it to writing the question out.",
        }
    },
    "required": ["ref"],
    "additionalProperties": False,
}


class AskInvalid(ValueError):
    """The model's ask_user_question input breaks the contract; the messages say where."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


_TEXT_LIMITS = {"context": MAX_CONTEXT, "question": MAX_QUESTION_TEXT, "label": MAX_LABEL}


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "input"


def _words(error: Any) -> tuple[str, str]:
    """(where, what) of one pydantic error, in the words the model is told."""
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    where = _where(loc)
    name = loc[-1] if loc else ""
    limit = _TEXT_LIMITS.get(str(name), ctx.get("max_length"))
    if kind == "missing":
        return where, f"missing; give a non-empty string of at most {limit} characters"
    if kind == "string_too_short":
        return where, f"is empty; give a non-empty string of at most {limit} characters"
    if kind == "string_too_long":
        return where, f"{len(str(value).strip())} characters, the limit is {ctx['max_length']}"
    if kind == "string_type":
        return where, f"must be a string, got {type(value).__name__}"
    if kind == "bool_type":
        return where, f"must be true or false, got {value!r}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return where, "must be an object" + (" with `context` and `questions`" if not loc else "")
    if kind in ("tuple_type", "list_type"):
        return where, f"must be a list of {MIN_QUESTIONS}–{MAX_QUESTIONS} questions"
    if kind in ("too_short", "too_long"):
        count = len(value) if isinstance(value, list | tuple) else "?"
        return where, f"{count} questions, one call takes {MIN_QUESTIONS} to {MAX_QUESTIONS}"
    if kind == "literal_error":
        return where, f"{value!r} is not one of " + str(ctx.get("expected", "")).replace("'", "")
    if kind in ("greater_than_equal", "less_than_equal", "float_parsing", "float_type"):
        return where, f"must be a number from 0 to 1, got {value!r}"
    return where + str(ctx.get("at", "")), str(error["msg"])


def _problems(e: ValidationError) -> list[str]:
    out: list[str] = []
    unknown: dict[str, list[str]] = {}
    for error in e.errors():
        if error["type"] == "extra_forbidden":
            unknown.setdefault(_where(tuple(error["loc"][:-1])), []).append(str(error["loc"][-1]))
            continue
        value = error.get("input")
        if (
            error["type"] in ("too_short", "too_long")
            and isinstance(value, list | tuple)
            and MIN_QUESTIONS <= len(value) <= MAX_QUESTIONS
        ):
            continue  # counted after its invalid items were dropped: those are the problem
        where, what = _words(error)
        out.append(f"{where}: {what}")
    out += [f"{where}: unknown field(s) {', '.join(sorted(n))}" for where, n in unknown.items()]
    return out


def parse_ask(raw: Any) -> Ask:
    """Validate the model's tool input; AskInvalid lists every problem, precisely."""
    if not isinstance(raw, dict):
        raise AskInvalid(["input: must be an object with `context` and `questions`"])
    try:
        return Ask.model_validate(raw)
    except ValidationError as e:
        raise AskInvalid(_problems(e)) from None


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """The JSON schema with $refs inlined, titles dropped and `X or null` read as optional X."""
    if isinstance(schema, list):
        return [_inline(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    if "$ref" in schema:
        out.update(_inline(defs[schema["$ref"].split("/")[-1]], defs))
    for key, value in schema.items():
        if key in ("title", "$defs", "default", "$ref"):
            continue
        out[key] = _inline(value, defs)
    options = out.pop("anyOf", None)
    if options is not None:
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) == 1:
            out = {**kept[0], **out}
        else:
            out["anyOf"] = kept
    return out


def _input_schema() -> dict[str, Any]:
    raw = Ask.model_json_schema()
    schema: dict[str, Any] = _inline(raw, raw.get("$defs", {}))
    schema.pop("additionalProperties", None)
    # a question is written out, or named by the ref of one closebot prepared (refs.py)
    questions = schema["properties"]["questions"]
    questions["items"] = {"anyOf": [REF_ITEM_SCHEMA, questions["items"]]}
    return schema


TOOL_SCHEMA: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Ask the accountant running the close to decide something that is theirs to decide "
        "(an exception, an approval, a missing fact). The run pauses until they answer in the "
        "thread; the result tells you what they chose, or that they cancelled or the question "
        'expired. A question closebot prepared is asked by its ref alone (`{"ref": …}`): '
        "closebot renders it. Otherwise put the situation and its key figures in `context`; give "
        "each option what it books (accounts and amounts) in its description; recommend an "
        "option when the data supports one, say why in `reasoning`, and give options a "
        "`confidence` when you can. Never ask in plain text instead."
    ),
    "input_schema": _input_schema(),
}
