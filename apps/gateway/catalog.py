"""The model catalog: which models trials can use, how the gateway reaches them, and their list prices.

Prices come from LiteLLM's bundled price map, read as plain JSON. The web and gateway processes never import
litellm: the import costs ~3 s and ~200 MB and fetches the map from GitHub unless told not to (notes §4).
A model absent from the map is listed as unpriced; its calls get a NULL cost, never 0.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass, field
from functools import cache
from typing import Any

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

# Wire formats the gateway relays (never translates between).
OPENAI_CHAT = "openai_chat"
OPENAI_RESPONSES = "openai_responses"
ANTHROPIC_MESSAGES = "anthropic_messages"
WIRE_FORMATS = (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES)

# Which wire formats each Harbor agent can speak. claude-code only speaks Anthropic Messages; codex speaks the
# Responses API; the LiteLLM-based agents (terminus-2, mini-swe-agent) and pi speak Chat Completions or Messages.
HARNESS_WIRE_FORMATS: dict[str, tuple[str, ...]] = {
    "claude-code": (ANTHROPIC_MESSAGES,),
    "codex": (OPENAI_RESPONSES,),
    "pi": (OPENAI_CHAT, ANTHROPIC_MESSAGES),
    "mini-swe-agent": (OPENAI_CHAT, ANTHROPIC_MESSAGES),
    "terminus-2": (OPENAI_CHAT, ANTHROPIC_MESSAGES),
    "muse-code": (OPENAI_CHAT,),
}

# Which wire formats each kind of upstream serves. OpenRouter serves all three (chat/completions and responses
# under /api/v1, and an Anthropic-compatible /api/v1/messages); a custom endpoint is OpenAI-compatible only.
PROVIDER_WIRE_FORMATS: dict[str, tuple[str, ...]] = {
    "openai": (OPENAI_CHAT, OPENAI_RESPONSES),
    "anthropic": (ANTHROPIC_MESSAGES,),
    "openrouter": (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES),
    "custom": (OPENAI_CHAT, OPENAI_RESPONSES),
}


@dataclass(frozen=True)
class CatalogModel:
    """One model trials can pick. `id` is also the model name agents send; `price_key` is its LiteLLM map key."""

    id: str
    name: str
    provider: str  # openai | anthropic | openrouter: who serves it with a managed or a native credential
    upstream_model: str  # the name its native provider expects
    price_key: str
    thinking_levels: tuple[str, ...]
    default_thinking: str
    openrouter_model: str = ""  # its name on OpenRouter, when an OpenRouter credential may serve it
    aliases: tuple[str, ...] = field(default=())

    @property
    def wire_formats(self) -> tuple[str, ...]:
        return PROVIDER_WIRE_FORMATS[self.provider]

    @property
    def harnesses(self) -> tuple[str, ...]:
        return tuple(h for h, formats in HARNESS_WIRE_FORMATS.items() if set(formats) & set(self.wire_formats))

    @property
    def price(self) -> dict[str, Any] | None:
        """The price-map entry, or None when the map cannot price it (then the model is unpriced)."""
        entry = price_map().get(self.price_key)
        if entry is None or "input_cost_per_token" not in entry or "output_cost_per_token" not in entry:
            return None
        return entry

    def upstream_name(self, credential_kind: str) -> str:
        """The model name to send upstream for a credential of `credential_kind`."""
        if credential_kind == "openrouter" and self.provider != "openrouter":
            return self.openrouter_model or self.upstream_model
        return self.upstream_model

    def served_by(self, credential_kind: str) -> bool:
        """Whether a credential of this kind can serve the model."""
        if credential_kind == self.provider or credential_kind == "custom":
            return True
        return credential_kind == "openrouter" and bool(self.openrouter_model)


_ANTHROPIC_THINKING = ("off", "low", "medium", "high", "max")
_GPT5_THINKING = ("minimal", "low", "medium", "high")
_GPT51_THINKING = ("off", "low", "medium", "high")
_CODEX_MAX_THINKING = ("low", "medium", "high", "xhigh")
_OPEN_THINKING = ("off", "high")

CATALOG: tuple[CatalogModel, ...] = (
    CatalogModel(
        "claude-opus-4-6",
        "Claude Opus 4.6",
        "anthropic",
        "claude-opus-4-6",
        "claude-opus-4-6",
        _ANTHROPIC_THINKING,
        "high",
        "anthropic/claude-opus-4.6",
    ),
    CatalogModel(
        "claude-sonnet-4-6",
        "Claude Sonnet 4.6",
        "anthropic",
        "claude-sonnet-4-6",
        "claude-sonnet-4-6",
        _ANTHROPIC_THINKING,
        "high",
        "anthropic/claude-sonnet-4.6",
    ),
    CatalogModel(
        "claude-opus-4-5",
        "Claude Opus 4.5",
        "anthropic",
        "claude-opus-4-5",
        "claude-opus-4-5",
        _ANTHROPIC_THINKING,
        "high",
        "anthropic/claude-opus-4.5",
    ),
    CatalogModel(
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        "anthropic",
        "claude-sonnet-4-5",
        "claude-sonnet-4-5",
        _ANTHROPIC_THINKING,
        "high",
        "anthropic/claude-sonnet-4.5",
    ),
    CatalogModel(
        "claude-haiku-4-5",
        "Claude Haiku 4.5",
        "anthropic",
        "claude-haiku-4-5",
        "claude-haiku-4-5",
        _ANTHROPIC_THINKING,
        "high",
        "anthropic/claude-haiku-4.5",
    ),
    CatalogModel("gpt-5", "GPT-5", "openai", "gpt-5", "gpt-5", _GPT5_THINKING, "high", "openai/gpt-5"),
    CatalogModel(
        "gpt-5-mini", "GPT-5 mini", "openai", "gpt-5-mini", "gpt-5-mini", _GPT5_THINKING, "high", "openai/gpt-5-mini"
    ),
    CatalogModel("gpt-5.1", "GPT-5.1", "openai", "gpt-5.1", "gpt-5.1", _GPT51_THINKING, "high", "openai/gpt-5.1"),
    CatalogModel(
        "gpt-5.1-codex",
        "GPT-5.1 Codex",
        "openai",
        "gpt-5.1-codex",
        "gpt-5.1-codex",
        _GPT51_THINKING,
        "high",
        "openai/gpt-5.1-codex",
    ),
    CatalogModel(
        "gpt-5.1-codex-max",
        "GPT-5.1 Codex Max",
        "openai",
        "gpt-5.1-codex-max",
        "gpt-5.1-codex-max",
        _CODEX_MAX_THINKING,
        "high",
    ),
    CatalogModel(
        "deepseek-v3.2",
        "DeepSeek V3.2",
        "openrouter",
        "deepseek/deepseek-v3.2",
        "deepseek/deepseek-v3.2",
        _OPEN_THINKING,
        "high",
        "deepseek/deepseek-v3.2",
    ),
    CatalogModel(
        "glm-4.6", "GLM 4.6", "openrouter", "z-ai/glm-4.6", "zai/glm-4.6", _OPEN_THINKING, "high", "z-ai/glm-4.6"
    ),
    # Not in the pinned price map: listed as unpriced, so its calls are priced only by OpenRouter's usage.cost.
    CatalogModel(
        "kimi-k2-thinking",
        "Kimi K2 Thinking",
        "openrouter",
        "moonshotai/kimi-k2-thinking",
        "moonshot/kimi-k2-thinking",
        _OPEN_THINKING,
        "high",
        "moonshotai/kimi-k2-thinking",
    ),
)


@cache
def _by_name() -> dict[str, CatalogModel]:
    names: dict[str, CatalogModel] = {}
    for model in CATALOG:
        for name in (model.id, model.upstream_model, model.openrouter_model, *model.aliases):
            if name:
                names.setdefault(name, model)
    return names


def catalog_models() -> tuple[CatalogModel, ...]:
    """Every model trials may use, in display order."""
    return CATALOG


def catalog_model(model_id: str) -> CatalogModel | None:
    """The catalog entry with this id (exact; names agents send are matched by `resolve_requested`)."""
    return next((m for m in CATALOG if m.id == model_id), None)


def resolve_requested(name: str) -> CatalogModel | None:
    """The catalog model an agent's requested name means: its id, upstream name, OpenRouter name or a
    LiteLLM-style `provider/` prefixed form (`anthropic/claude-sonnet-4-5`)."""
    by_name = _by_name()
    if name in by_name:
        return by_name[name]
    _, _, bare = name.partition("/")
    return by_name.get(bare) if bare else None


def price_map_path() -> str:
    """The bundled LiteLLM price map, located without importing litellm (importing it fetches from GitHub)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed; its bundled price map is where list prices come from")
    return os.path.join(next(iter(spec.submodule_search_locations)), "model_prices_and_context_window_backup.json")


@cache
def price_map() -> dict[str, dict[str, Any]]:
    with open(price_map_path(), "rb") as fh:
        data: dict[str, dict[str, Any]] = json.load(fh)
    return data


@cache
def price_map_revision() -> str:
    """A short digest of the price map in use, stored on each ledger row so a price can be traced later."""
    with open(price_map_path(), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:12]
