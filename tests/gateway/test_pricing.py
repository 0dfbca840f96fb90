"""Cost arithmetic: a hand-computed table, then litellm.cost_per_token as a second opinion (litellm is imported
only here, in tests; the product reads its price map as JSON)."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest

from apps.gateway.catalog import catalog_model, catalog_models, price_map
from apps.gateway.pricing import Usage, call_cost, list_cost

# (model key, usage, hand-computed USD)
HAND_TABLE = [
    # Anthropic, normalised: input 1000 uncached + 200 cache writes + 800 cache reads, 100 out.
    ("claude-sonnet-4-5", Usage(2000, 800, 200, 0, 100), "0.00549"),  # 1000·3e-6 + 200·3.75e-6 + 800·3e-7 + 100·1.5e-5
    ("claude-opus-4-6", Usage(2000, 800, 200, 0, 100), "0.009150"),  # 1000·5e-6 + 200·6.25e-6 + 800·5e-7 + 100·2.5e-5
    # A 1-hour cache write: 150 of the 200 at 6e-6 (sonnet), 50 at 3.75e-6: 0.003+0.0001875+0.0009+0.00024+0.0015.
    ("claude-sonnet-4-5", Usage(2000, 800, 200, 150, 100), "0.0058275"),
    ("claude-haiku-4-5", Usage(10_000, 0, 0, 0, 1000), "0.015"),  # 10000·1e-6 + 1000·5e-6
    # OpenAI: prompt includes cached; reasoning is inside output.
    ("gpt-5", Usage(10_000, 8000, 0, 0, 2000, 500), "0.0235"),  # 2000·1.25e-6 + 8000·1.25e-7 + 2000·1e-5
    ("gpt-5-mini", Usage(1_000_000, 0, 0, 0, 0), "0.25"),
    ("gpt-5", Usage(10_000, 8000, 0, 0, 2000, service_tier="priority"), "0.047"),  # doubled priority prices
    ("deepseek/deepseek-v3.2", Usage(1000, 500, 0, 0, 1000), "0.000554"),  # 500·2.8e-7 + 500·2.8e-8 + 1000·4e-7
    # Above the 200k-token context tier every dimension switches price (gemini-2.5-pro).
    ("gemini-2.5-pro", Usage(300_000, 0, 0, 0, 1000), "0.765"),  # 300000·2.5e-6 + 1000·1.5e-5
]


@pytest.mark.parametrize(("key", "usage", "expected"), HAND_TABLE)
def test_list_cost_matches_the_hand_computed_table(key: str, usage: Usage, expected: str) -> None:
    assert list_cost(usage, price_map()[key]) == Decimal(expected)


def test_an_unpriceable_dimension_makes_the_cost_unknown_not_smaller() -> None:
    # gpt-5 has no cache-write price: a call that wrote to the cache cannot be priced.
    assert list_cost(Usage(1000, 0, 100, 0, 10), price_map()["gpt-5"]) is None
    assert list_cost(Usage(1000, 0, 0, 0, 10), None) is None
    assert list_cost(Usage(100, 200, 0, 0, 10), price_map()["gpt-5"]) is None  # inconsistent counts


def test_provider_cost_wins_then_list_then_unpriced() -> None:
    entry = price_map()["gpt-5"]
    assert call_cost(Usage(10, provider_cost=Decimal("0.5")), entry) == (Decimal("0.5"), "provider")
    assert call_cost(Usage(1_000_000), entry) == (Decimal("1.25"), "list")
    assert call_cost(Usage(1_000_000), None) == (None, "unpriced")
    assert call_cost(None, entry) == (None, "unpriced")


def test_the_catalog_lists_unpriced_models_as_such() -> None:
    kimi = catalog_model("kimi-k2-thinking")
    assert kimi is not None and kimi.price is None
    priced = [m.id for m in catalog_models() if m.price is not None]
    assert "claude-sonnet-4-6" in priced and "gpt-5.1-codex" in priced


def test_the_gateway_does_not_import_litellm() -> None:
    import subprocess
    import sys

    code = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE','selfbench.settings'); django.setup();"
        "import selfbench.asgi; from apps.gateway.catalog import price_map; price_map();"
        "print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "DEBUG": "1"})
    assert out.stdout.strip() == "False", out.stderr


@pytest.fixture(scope="module")
def litellm():  # type: ignore[no-untyped-def]
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # the bundled map, no fetch from GitHub
    import litellm as lib

    return lib


PARITY = [
    ("claude-sonnet-4-5", 1000, 800, 200, 100),
    ("claude-opus-4-6", 52_000, 40_000, 10_000, 3000),
    ("claude-haiku-4-5", 5000, 0, 0, 700),
    ("gpt-5", 10_000, 8000, 0, 2000),
    ("gpt-5-mini", 123_456, 100_000, 0, 9876),
    ("gpt-5.1-codex", 80_000, 64_000, 0, 4000),
    ("gpt-5.1-codex-max", 1000, 0, 0, 1000),
    ("deepseek/deepseek-v3.2", 30_000, 20_000, 0, 1500),
    ("zai/glm-4.6", 30_000, 10_000, 0, 1500),
    ("gemini-2.5-pro", 250_000, 0, 0, 2000),
]


@pytest.mark.parametrize(("key", "uncached", "cache_read", "cache_write", "output"), PARITY)
def test_list_cost_agrees_with_litellm_cost_per_token(  # type: ignore[no-untyped-def]
    litellm, key: str, uncached: int, cache_read: int, cache_write: int, output: int
) -> None:
    prompt = uncached + cache_read + cache_write
    ours = list_cost(Usage(prompt, cache_read, cache_write, 0, output), price_map()[key])
    kwargs = {"cache_read_input_tokens": cache_read} if cache_read else {}
    if cache_write:
        kwargs["cache_creation_input_tokens"] = cache_write
    inp, out = litellm.cost_per_token(model=key, prompt_tokens=prompt, completion_tokens=output, **kwargs)
    assert ours is not None
    assert float(ours) == pytest.approx(inp + out, rel=1e-9, abs=1e-12)
