"""GET {scope}/models: the catalog with list prices; unpriced models say so."""

from __future__ import annotations


def test_models_lists_the_catalog_with_prices(api, workspace) -> None:  # type: ignore[no-untyped-def]
    reply = api.get(f"/api/w/{workspace.slug}/models")
    assert reply.status_code == 200
    models = {m["id"]: m for m in reply.json()}
    sonnet = models["claude-sonnet-4-6"]
    assert sonnet["provider"] == "anthropic" and sonnet["wireFormats"] == ["anthropic_messages"]
    assert "claude-code" in sonnet["harnesses"] and "codex" not in sonnet["harnesses"]
    assert sonnet["prices"] == {
        "inputPerMTok": 3.0,
        "outputPerMTok": 15.0,
        "cacheReadPerMTok": 0.3,
        "cacheWritePerMTok": 3.75,
    }
    assert "codex" in models["gpt-5.1-codex"]["harnesses"]
    assert models["kimi-k2-thinking"]["priced"] is False and models["kimi-k2-thinking"]["prices"] is None


def test_models_needs_auth(client, workspace) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/api/w/{workspace.slug}/models").status_code in (401, 403)
