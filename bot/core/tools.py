"""A registry of small typed tool functions whose docstrings are their spec."""

from __future__ import annotations

import inspect
import json
import logging
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, get_args, get_origin

from bot.core import gc_pause as bulk
from bot.store import Store

log = logging.getLogger(__name__)


class ToolError(Exception):
    """A tool's refusal or failure, written for the model to read and act on."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the run it serves."""

    run_id: str
    store: Store
    # a line for the person watching the run (Slack thread, terminal) while a tool works
    progress: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    fn: Callable[..., Any]
    description: str
    input_schema: dict[str, Any]
    step: str | None

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


def _json_type(hint: Any) -> dict[str, Any]:
    origin = get_origin(hint)
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if origin is Literal:
        return {"type": "string", "enum": list(get_args(hint))}
    if origin is list:
        (item,) = get_args(hint)
        return {"type": "array", "items": _json_type(item)}
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return _json_type(args[0])
    raise TypeError(f"tool parameters cannot be of type {hint!r}")


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(fn) or ""
    head, _, args_section = doc.partition("\nArgs:\n")
    params: dict[str, str] = {}
    current = None
    for line in args_section.splitlines():
        if m := re.match(r"^\s{2,}(\w+):\s*(.*)$", line):
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return " ".join(head.split()), params


def _check_type(name: str, value: Any, schema: dict[str, Any]) -> str | None:
    kind = schema["type"]
    ok = {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "array": isinstance(value, list),
    }[kind]
    if not ok:
        return f"`{name}` must be a {kind}, got {json.dumps(value)[:60]}"
    if "enum" in schema and value not in schema["enum"]:
        return f"`{name}` must be one of {', '.join(schema['enum'])}, got {value!r}"
    if kind == "array":
        for item in value:
            if problem := _check_type(f"{name}[]", item, schema["items"]):
                return problem
    return None


def to_json(value: Any) -> str:
    """Tool results as JSON; Decimal stays exact as a string."""

    def default(o: Any) -> Any:
        if isinstance(o, Decimal):
            return str(o)
        raise TypeError(f"{type(o).__name__} is not JSON serialisable")

    return json.dumps(value, default=default, ensure_ascii=False)


# A domain's prepared questions: the ask_user_question questions a `ref` names, rendered by
# the domain (ToolError for a ref it does not know). The model asks by reference.
PreparedQuestions = Callable[[ToolContext, str], list[dict[str, Any]]]
# What the domain does with the answers to questions asked by reference (its decisions
# recorded, bound to the question): given the answered question's id and (1-based number,
# ref) of each asked by reference, what the model reads back for each.
RecordAnswers = Callable[[ToolContext, str, list[tuple[int, str]]], list[dict[str, Any]]]


class ToolRegistry:
    """Tools by name, their JSON schemas, and the steps of the work they belong to."""

    def __init__(self, steps: Sequence[str] = ()) -> None:
        self.steps = list(steps)
        self._tools: dict[str, Tool] = {}
        self.prepared: PreparedQuestions | None = None  # questions asked by reference
        self.record_answers: RecordAnswers | None = None  # ...and their answers recorded

    def add(
        self, fn: Callable[..., Any], *, step: str | None = None, name: str | None = None
    ) -> Tool:
        """Register `fn(ctx, **params)`; its hints and docstring become the schema."""
        if step is not None and step not in self.steps:
            raise ValueError(f"step {step!r} is not one of {self.steps}")
        name = name or fn.__name__
        description, param_docs = _doc_parts(fn)
        hints = typing.get_type_hints(fn)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for pname, param in inspect.signature(fn).parameters.items():
            if pname == "ctx":
                continue
            prop = _json_type(hints[pname])
            if pname in param_docs:
                prop["description"] = param_docs[pname]
            properties[pname] = prop
            if param.default is inspect.Parameter.empty:
                required.append(pname)
        schema = {"type": "object", "properties": properties, "required": required}
        tool = Tool(name=name, fn=fn, description=description, input_schema=schema, step=step)
        self._tools[name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def by_step(self, step: str) -> list[Tool]:
        return [t for t in self._tools.values() if t.step == step]

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools.values()]

    def call(self, name: str, ctx: ToolContext, raw_input: Any) -> tuple[str, bool]:
        """Run a tool; (content, is_error). Failures come back as data the model can read."""
        tool = self._tools.get(name)
        if tool is None:
            return f"unknown tool {name!r}; the tools are: {', '.join(self._tools)}", True
        if not isinstance(raw_input, dict):
            return "the tool input must be a JSON object", True
        props = tool.input_schema["properties"]
        problems = [f"unknown argument `{k}`" for k in raw_input if k not in props]
        problems += [
            f"missing argument `{k}`" for k in tool.input_schema["required"] if k not in raw_input
        ]
        problems += [
            p for k, v in raw_input.items() if k in props and (p := _check_type(k, v, props[k]))
        ]
        if problems:
            return f"{name}: " + "; ".join(problems), True
        try:
            with bulk.paused():  # a tool walks the period's rows: bulk work (bot/core/gc_pause.py)
                result = tool.fn(ctx, **raw_input)
        except ToolError as e:
            return str(e), True
        except Exception as e:  # a bug in a tool must not end the run: the model reads it
            log.warning("tool %s failed: %r", name, e, exc_info=log.isEnabledFor(logging.DEBUG))
            return f"{name} failed unexpectedly: {type(e).__name__}: {e}", True
        return (result if isinstance(result, str) else to_json(result)), False
