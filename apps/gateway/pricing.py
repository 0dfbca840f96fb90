"""Cost of one call: provider-reported first, else list price from the price map, else NULL (never 0).

Token convention (LiteLLM's and OpenAI's): `input_tokens` counts every prompt token, cache reads and cache
writes included. Anthropic's raw `input_tokens` excludes them, so the wire parser adds them back before this
module sees the numbers (passing the raw value under-charges: notes §4, finding 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

PROVIDER = "provider"
LIST = "list"
UNPRICED = "unpriced"
NONE = "none"  # no billable work happened: refused by the gateway, or the upstream answered an error


@dataclass
class Usage:
    """Token counts of one call, normalised to the OpenAI convention (input includes cache reads and writes)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0  # the part of cache_write_tokens written with a 1-hour TTL (Anthropic)
    output_tokens: int = 0
    reasoning_tokens: int = 0
    provider_cost: Decimal | None = None  # e.g. OpenRouter's usage.cost (credits, 1 credit = 1 USD)
    service_tier: str = ""


_TIER_KEY = re.compile(r"^input_cost_per_token_above_(\d+)k_tokens$")


def _price(value: Any) -> Decimal:
    # repr() keeps the JSON's shortest form (3e-06), so Decimal arithmetic is exact to the map's digits.
    return Decimal(repr(float(value)))


def _pick(entry: dict[str, Any], base: str, suffixes: list[str]) -> Any:
    for suffix in suffixes:
        if base + suffix in entry:
            return entry[base + suffix]
    return None


def list_cost(usage: Usage, entry: dict[str, Any] | None) -> Decimal | None:
    """List price of `usage` under price-map `entry`; None when the entry is missing or cannot price a non-zero
    dimension (a cache read with no cache-read price, say): an unknown is never silently 0."""
    if entry is None or "input_cost_per_token" not in entry or "output_cost_per_token" not in entry:
        return None
    # Context tiers (`*_above_200k_tokens`) apply to the whole call once the prompt passes the threshold.
    passed = [int(m.group(1)) for m in map(_TIER_KEY.match, entry) if m and usage.input_tokens > int(m.group(1)) * 1000]
    tier = f"_above_{max(passed)}k_tokens" if passed else ""
    service = f"_{usage.service_tier}" if usage.service_tier in ("priority", "flex") else ""
    suffixes = [s for s in (tier + service, tier, service) if s] + [""]

    cache_write_1h = usage.cache_write_1h_tokens
    cache_write_5m = usage.cache_write_tokens - cache_write_1h
    uncached = usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens
    if uncached < 0 or cache_write_5m < 0:
        # Inconsistent counts from upstream: better unpriced than a wrong number.
        return None

    parts: list[tuple[int, Any]] = [
        (uncached, _pick(entry, "input_cost_per_token", suffixes)),
        (usage.cached_input_tokens, _pick(entry, "cache_read_input_token_cost", suffixes)),
        (cache_write_5m, _pick(entry, "cache_creation_input_token_cost", suffixes)),
        (cache_write_1h, entry.get("cache_creation_input_token_cost_above_1hr")),
    ]
    reasoning_price = entry.get("output_cost_per_reasoning_token")
    if reasoning_price is not None and usage.reasoning_tokens:
        parts.append((usage.output_tokens - usage.reasoning_tokens, _pick(entry, "output_cost_per_token", suffixes)))
        parts.append((usage.reasoning_tokens, reasoning_price))
    else:
        parts.append((usage.output_tokens, _pick(entry, "output_cost_per_token", suffixes)))

    total = Decimal(0)
    for tokens, price in parts:
        if not tokens:
            continue
        if price is None:
            return None
        total += tokens * _price(price)
    return total


def call_cost(usage: Usage | None, entry: dict[str, Any] | None) -> tuple[Decimal | None, str]:
    """(cost_usd, source) for a served call: the provider's charge, else list price, else (None, unpriced)."""
    if usage is None:
        return None, UNPRICED
    if usage.provider_cost is not None:
        return usage.provider_cost, PROVIDER
    cost = list_cost(usage, entry)
    return (cost, LIST) if cost is not None else (None, UNPRICED)
