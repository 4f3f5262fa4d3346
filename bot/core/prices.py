"""What model calls cost: the documented price table per model, kept in this one place, and
the cost of token usage as the Messages API reports it.

Prices are US$ per million tokens, from Anthropic's pricing documentation
(https://platform.claude.com/docs/en/about-claude/pricing, "Model pricing"; each model's
overview page, e.g. https://platform.claude.com/docs/en/models/sonnet-5-5/overview), checked
2026-11-28. What the documentation says about how tokens are billed:
- thinking tokens are output tokens: they are counted in `output_tokens` and billed at the
  output price (https://platform.claude.com/docs/en/build-with-claude/extended-thinking,
  "Pricing"); `output_tokens_details.thinking_tokens` is part of `output_tokens`, not extra;
- a cache write costs 1.25 × the input price for the 5-minute cache and 2 × for the 1-hour
  cache; a cache read ("cache hits and refreshes") is listed per model — 0.1 × input for most,
  less for some (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
  "Pricing");
- `cache_creation_input_tokens` counts both cache durations; `cache_creation` splits it into
  `ephemeral_5m_input_tokens` and `ephemeral_1h_input_tokens`.
Claude Sonnet 5.5's cache reads cost $0.10 / MTok (0.05 ×), half Claude Sonnet 5's rate
(https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide, "Claude Sonnet 5.5 has
the same prices as Claude Sonnet 5, except for prompt cache reads"); some translated copies of
the model page still show the earlier $0.20.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

MILLION = Decimal(1_000_000)
WRITE_5M = Decimal("1.25")  # × input: a 5-minute cache write
WRITE_1H = Decimal(2)  # × input: a 1-hour cache write


@dataclass(frozen=True)
class Price:
    """One model's list prices, US$ per million tokens."""

    input: Decimal
    output: Decimal
    cache_read: Decimal

    @property
    def cache_write_5m(self) -> Decimal:
        return self.input * WRITE_5M

    @property
    def cache_write_1h(self) -> Decimal:
        return self.input * WRITE_1H


def _price(input: str, output: str, cache_read: str) -> Price:
    return Price(Decimal(input), Decimal(output), Decimal(cache_read))


# Model id → its prices, from the pricing page's "Model pricing" table.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": _price("10", "50", "0.25"),
    "claude-opus-5-5": _price("4", "20", "0.20"),
    "claude-opus-5": _price("5", "25", "0.50"),
    "claude-opus-4-8": _price("5", "25", "0.50"),
    "claude-opus-4-7": _price("5", "25", "0.50"),
    "claude-opus-4-6": _price("5", "25", "0.50"),
    "claude-opus-4-5": _price("5", "25", "0.50"),
    "claude-sonnet-5-5": _price("2", "10", "0.10"),
    "claude-sonnet-5": _price("2", "10", "0.20"),
    "claude-sonnet-4-6": _price("3", "15", "0.30"),
    "claude-sonnet-4-5": _price("3", "15", "0.30"),
    "claude-haiku-4-5": _price("1", "5", "0.10"),
}
DEFAULT_PRICED = "claude-sonnet-5-5"  # a model not in the table is priced as the default model


def price_of(model: str | None) -> Price:
    """The prices of `model`: its own row, else the longest listed id it begins with (a dated
    id such as claude-sonnet-5-5-20260928), else the default model's (an estimate)."""
    name = model or ""
    if name in PRICES:
        return PRICES[name]
    prefixes = [m for m in PRICES if name.startswith(m + "-")]
    return PRICES[max(prefixes, key=len)] if prefixes else PRICES[DEFAULT_PRICED]


def cost(model: str | None, usage: Mapping[str, int]) -> Decimal:
    """What this usage cost at list price, in US$: input, output (thinking included), cache
    writes at their duration's rate and cache reads. `cache_write_1h_input_tokens` is the part
    of `cache_creation_input_tokens` written to the 1-hour cache."""
    p = price_of(model)
    written = usage.get("cache_creation_input_tokens", 0)
    hour = min(usage.get("cache_write_1h_input_tokens", 0), written)
    dollars = (
        usage.get("input_tokens", 0) * p.input
        + usage.get("output_tokens", 0) * p.output
        + (written - hour) * p.cache_write_5m
        + hour * p.cache_write_1h
        + usage.get("cache_read_input_tokens", 0) * p.cache_read
    )
    return dollars / MILLION


def cost_by_model(usage: Mapping[str | None, Mapping[str, int]]) -> Decimal:
    """The cost of a run whose calls went to one or more models (usage summed per model)."""
    return sum((cost(model, u) for model, u in usage.items()), Decimal(0))


def dollars(amount: Decimal) -> str:
    """'$0.22'; a cost under a cent but not nothing reads '<$0.01'."""
    if 0 < amount < Decimal("0.005"):
        return "<$0.01"
    return f"${amount.quantize(Decimal('0.01'))}"
