"""The Model protocol and the Claude adapter on the anthropic SDK."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from bot.core.encoded import dumps, request_body
from bot.core.errors import (
    ModelAuthError,
    ModelError,
    ModelOverloadedError,
    ModelRateLimitedError,
    ModelRequestError,
    ModelUnavailableError,
)
from bot.core.prices import cost, cost_by_model, dollars

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 16_000  # room for adaptive thinking as well as the reply
EFFORTS = ("low", "medium", "high", "xhigh", "max")
DEFAULT_EFFORT = "medium"
DEFAULT_MAX_RETRIES = 2  # then the run waits and retries by itself (RetrySchedule)
DEFAULT_TIMEOUT_S = 120.0


def real_model_name(name: str | None) -> bool:
    """Whether `name` is a Claude model's id the API serves (claude-…), not a stand-in's
    (the offline playbook, a test's scripted model): only such a name is pinned to a run."""
    return bool(name) and str(name).startswith("claude-")


@dataclass(frozen=True)
class Reply:
    """One assistant message: content blocks as the Messages API takes them back."""

    content: list[dict[str, Any]]
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


class Model(Protocol):
    """Anything that turns a transcript into the next assistant message."""

    name: str

    def respond(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
    ) -> Reply: ...


def _block_dict(block: Any) -> dict[str, Any]:
    """An SDK content block as a plain dict the API accepts back in the next request."""
    data: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    if data.get("type") == "text":
        return {"type": "text", "text": data.get("text", "")}
    if data.get("type") == "tool_use":
        # A block missing its id or name is kept as it came: the loop refuses it as malformed.
        return {
            "type": "tool_use",
            **{k: data[k] for k in ("id", "name") if k in data},
            "input": data.get("input") if data.get("input") is not None else {},
        }
    return data  # thinking blocks (with their signature) go back to the API untouched


class ClaudeModel:
    """Claude through the Messages API, with prompt caching and the SDK's own retries."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        base_url: str | None = None,
        effort: str = DEFAULT_EFFORT,
    ) -> None:
        import anthropic  # imported here: a second of start-up the offline playbook never needs

        self.name = model
        self.max_tokens = max_tokens
        self.effort = effort
        # base_url None lets the SDK read ANTHROPIC_BASE_URL itself.
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
        )
        self._heads = threading.local()  # each turn's thread: its request head, made once

    def pinned(self, name: str) -> ClaudeModel:
        """The same client on another model: a run resumes on the model that began it."""
        if name == self.name:
            return self
        other = object.__new__(ClaudeModel)
        other.__dict__.update(self.__dict__)
        other.name = name
        return other

    def respond(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
    ) -> Reply:
        import anthropic

        marked = with_conversation_breakpoint(messages)
        # Only `auto` (or `none`): forced tool use (`any`, `tool`) returns a 400 on the
        # default model (https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5,
        # "Forced tool use returns an error").
        if tool_choice is not None and tool_choice.get("type") not in ("auto", "none"):
            raise ValueError(f"tool_choice {tool_choice!r}: only auto or none may be sent")
        head = self._head(system, tools, tool_choice)
        try:
            # Streamed, so a long reply is read as it is written and never abandoned for time
            # (the timeout is between events, not for the whole reply): the SDK's own advice
            # for long requests (https://platform.claude.com/docs/en/build-with-claude/streaming).
            with self._stream(head, marked, messages) as stream:
                response = stream.get_final_message()
        except anthropic.AuthenticationError as e:
            raise ModelAuthError(f"the Anthropic API refused the key (401): {_detail(e)}") from e
        except anthropic.PermissionDeniedError as e:
            raise ModelAuthError(f"the Anthropic API denied access (403): {_detail(e)}") from e
        except anthropic.RateLimitError as e:
            raise ModelRateLimitedError(
                f"rate limited by the Anthropic API (429) after retries: {_detail(e)}",
                retry_after=_retry_after(e),
            ) from e
        except anthropic.APIStatusError as e:
            if e.status_code == 529 or _error_type(e) == "overloaded_error":
                raise ModelOverloadedError(
                    f"the Anthropic API is overloaded (529) after retries: {_detail(e)}",
                    retry_after=_retry_after(e),
                ) from e
            if e.status_code >= 500:
                raise ModelUnavailableError(
                    f"the Anthropic API failed ({e.status_code}) after retries: {_detail(e)}",
                    retry_after=_retry_after(e),
                ) from e
            raise ModelRequestError(
                f"the Anthropic API rejected the request ({e.status_code}): {_detail(e)}"
            ) from e
        except anthropic.APITimeoutError as e:
            raise ModelUnavailableError("the Anthropic API timed out after retries") from e
        except anthropic.APIConnectionError as e:
            raise ModelUnavailableError(f"could not reach the Anthropic API: {e}") from e
        except anthropic.AnthropicError as e:
            raise ModelError(f"the Anthropic SDK failed: {e}") from e
        usage = flat_usage(response.usage.model_dump(exclude_none=True) if response.usage else {})
        log.info("model reply stop=%s usage=%s", response.stop_reason, usage)
        return Reply(
            content=[_block_dict(b) for b in response.content],
            stop_reason=response.stop_reason,
            usage=usage,
        )

    def _head(
        self, system: str, tools: list[dict[str, Any]], tool_choice: dict[str, Any] | None
    ) -> bytes:
        """Everything of the request but its messages, as JSON, with "stream": true. A run
        sends the same system prompt and tools (the very list) at every step of a turn: made
        once per turn and thread, not per step."""
        key = (self.name, self.max_tokens, self.effort, system, id(tools), dumps(tool_choice))
        kept = getattr(self._heads, "kept", None)
        if kept is not None and kept[0] == key and kept[1] is tools:
            return cast(bytes, kept[2])
        cached_tools = [dict(t) for t in tools]
        if cached_tools:
            # One breakpoint after the last tool caches tools and system together.
            cached_tools[-1]["cache_control"] = CACHE_1H
        request: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens,
            # The default model thinks; its words between tool calls arrive as thinking.
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": self.effort},
            "system": [{"type": "text", "text": system, "cache_control": CACHE_1H}],
            "tools": cached_tools,
            "stream": True,
        }
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
        head = dumps(request)
        self._heads.kept = (key, tools, head)  # the list held: its id is not reused meanwhile
        return head

    def _stream(
        self, head: bytes, marked: list[dict[str, Any]], messages: list[dict[str, Any]]
    ) -> Any:
        """`messages.stream(...)` of the request, with the body built from each
        message's JSON made once (bot/core/encoded.py) rather than the whole request copied
        and encoded again by the SDK at every step (issue 33). Sent with the SDK's own
        request path (`client.post`, documented for requests the SDK has no method for:
        https://github.com/anthropics/anthropic-sdk-python#making-customundocumented-requests),
        so its retries, timeouts and errors are the same, and read with its own stream
        accumulator."""
        from anthropic import NOT_GIVEN, Stream
        from anthropic.lib.streaming import MessageStreamManager
        from anthropic.types import Message, RawMessageStreamEvent

        body = request_body(head, marked, messages)
        return MessageStreamManager(
            lambda: self._client.post(
                "/v1/messages",
                cast_to=Message,
                content=body,
                stream=True,
                stream_cls=Stream[RawMessageStreamEvent],
            ),
            output_format=NOT_GIVEN,
        )


def flat_usage(usage: dict[str, Any]) -> dict[str, int]:
    """The API's usage as flat counts: the totals as reported, and the parts pricing needs —
    the 1-hour cache writes (`cache_creation.ephemeral_1h_input_tokens`) and the thinking
    tokens (`output_tokens_details.thinking_tokens`), both already inside the totals."""
    flat = {k: v for k, v in usage.items() if isinstance(v, int)}
    creation = usage.get("cache_creation")
    if isinstance(creation, dict) and isinstance(creation.get("ephemeral_1h_input_tokens"), int):
        flat["cache_write_1h_input_tokens"] = creation["ephemeral_1h_input_tokens"]
    details = usage.get("output_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
        flat["thinking_tokens"] = details["thinking_tokens"]
    return flat


CACHEABLE = ("text", "tool_result", "tool_use", "image", "document")

# The 1-hour cache on every breakpoint: a close waits on people, answers minutes apart, and
# a 5-minute entry would lapse at nearly every question, writing the whole prefix again.
# A 1-hour write costs 2× base input (5-minute: 1.25×), a read 0.1× either way; the lifetime is
# refreshed by each read (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
# "1-hour cache duration" and pricing). docs/performance.md has the arithmetic.
CACHE_1H = {"type": "ephemeral", "ttl": "1h"}


def with_conversation_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with a cache breakpoint on the last block of the last message, so the
    next call reads the whole conversation so far from the cache (tools and system have
    theirs: three of the four breakpoints the API allows). Copies what it marks: the
    caller's transcript is never changed."""
    if not messages:
        return messages
    last = messages[-1]
    content = last.get("content")
    if not isinstance(content, list) or not content or not isinstance(content[-1], dict):
        return messages
    if content[-1].get("type") not in CACHEABLE:
        return messages  # a thinking block cannot carry a breakpoint
    marked = {**content[-1], "cache_control": CACHE_1H}
    return [*messages[:-1], {**last, "content": [*content[:-1], marked]}]


def estimated_cost(model: str | None, usage: dict[str, int]) -> float:
    """What these tokens cost at list price, in US$ (bot/core/prices.py's table)."""
    return float(cost(model, usage))


def usage_line(usage_by_model: dict[str | None, dict[str, int]], calls: int) -> str:
    """One line for a summary: model calls, tokens, cache hit rate and the cost at list price."""
    usage = {k: sum(u.get(k, 0) for u in usage_by_model.values()) for k in USAGE_KEYS}
    read = usage["cache_read_input_tokens"]
    prompt = read + usage["input_tokens"] + usage["cache_creation_input_tokens"]
    hit = f", {read / prompt:.0%} of input read from cache" if prompt else ""
    thinking = usage["thinking_tokens"]
    of_which = f" ({thinking:,} of them thinking)" if thinking else ""
    return (
        f"Model use: {calls} call{'s' if calls != 1 else ''}, {prompt:,} input tokens{hit}, "
        f"{usage['output_tokens']:,} output tokens{of_which}; "
        f"cost {dollars(cost_by_model(usage_by_model))} at list price"
    )


USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "thinking_tokens",
)


def _retry_after(error: anthropic.APIStatusError) -> float | None:
    """The seconds the API asked us to wait (`retry-after`), if it said."""
    try:
        value = error.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


def _error_type(error: anthropic.APIStatusError) -> str | None:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            return str(inner.get("type") or "") or None
    return None


def _detail(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return error.message
