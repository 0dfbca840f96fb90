"""The served gateway's rules: key scoping, upstream failures, disconnects, credentials that never leak,
provider-reported and unknown costs."""

from __future__ import annotations

import json
import socket
import time
from decimal import Decimal

import anthropic
import httpx
import openai
import pytest
from django.utils import timezone

from apps.gateway import services
from apps.gateway.models import GatewayKey

pytestmark = pytest.mark.django_db(transaction=True)


def _openai(gw, key):  # type: ignore[no-untyped-def]
    return openai.OpenAI(base_url=gw.openai_base, api_key=key, max_retries=0)


def _anthropic(gw, key):  # type: ignore[no-untyped-def]
    return anthropic.Anthropic(base_url=gw.anthropic_base, api_key=key, max_retries=0)


def test_a_key_refuses_other_models_with_403_in_each_providers_format(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("gpt-5")
    with pytest.raises(openai.PermissionDeniedError) as exc:
        _openai(gw, key).chat.completions.create(model="gpt-5.1", messages=[{"role": "user", "content": "hi"}])
    assert "serves only gpt-5" in str(exc.value) and "gpt-5.1" in str(exc.value)

    _, claude_key = gw.mint("claude-sonnet-4-6")
    with pytest.raises(anthropic.PermissionDeniedError) as aexc:
        _anthropic(gw, claude_key).messages.create(
            model="claude-opus-4-6", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    assert aexc.value.body["error"]["type"] == "permission_error"  # type: ignore[index]
    row = gw.rows(subject)[0]
    assert (row.status, row.http_status, row.cost_source, row.cost_usd) == ("refused", 403, "none", Decimal(0))
    assert len(gw.upstream.requests) == 0 or gw.upstream.requests[-1].body.get("model") != "gpt-5.1"


def test_expired_revoked_and_unknown_keys_get_401(gw) -> None:  # type: ignore[no-untyped-def]
    _, expired = gw.mint("gpt-5")
    GatewayKey.objects.all().update(expires_at=timezone.now())
    for key in (expired, "sbg_not-a-key", "sk-whatever"):
        with pytest.raises(openai.AuthenticationError):
            _openai(gw, key).chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "hi"}])

    subject, revoked = gw.mint("claude-haiku-4-5")
    client = _anthropic(gw, revoked)
    client.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert services.trial_key_revoke(subject=subject) == 1
    with pytest.raises(anthropic.AuthenticationError) as exc:
        client.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert "revoked" in str(exc.value)


def test_the_client_auth_never_reaches_upstream(gw) -> None:  # type: ignore[no-untyped-def]
    _, key = gw.mint("gpt-5")
    httpx.post(
        f"{gw.openai_base}/chat/completions",
        headers={"authorization": f"Bearer {key}", "x-api-key": key, "cookie": f"s={key}", "openai-beta": "x"},
        json={"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]},
    ).raise_for_status()
    seen = gw.upstream.requests[-1].headers
    assert seen["authorization"] == "Bearer sk-upstream-openai-0000000000"
    assert "x-api-key" not in seen and "cookie" not in seen
    assert not any(key in value for value in seen.values())
    assert seen["openai-beta"] == "x"  # request semantics pass; identity does not

    _, akey = gw.mint("claude-haiku-4-5")
    _anthropic(gw, akey).messages.create(
        model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
    )
    seen = gw.upstream.requests[-1].headers
    assert seen["x-api-key"] == "sk-ant-upstream-0000000000"
    assert "authorization" not in seen and seen["anthropic-version"]  # the SDK's version header passes through


def test_managed_model_uses_the_deployments_key(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("gpt-5-mini", "managed")
    _openai(gw, key).chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": "hi"}])
    assert gw.upstream.requests[-1].headers["authorization"] == "Bearer sk-managed-openai-000000"
    row = gw.rows(subject)[0]
    assert row.managed and row.billable and row.cost_source == "list"


def test_upstream_5xx_reaches_the_agent_in_its_format_and_is_recorded(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("claude-haiku-4-5")
    with pytest.raises(anthropic.InternalServerError) as exc:
        _anthropic(gw, key).messages.create(
            model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "@status=529"}]
        )
    assert exc.value.status_code == 529
    assert exc.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    assert len([r for r in gw.upstream.requests if "@status=529" in json.dumps(r.body)]) == 1  # no hidden retry
    row = gw.rows(subject)[0]
    assert (row.status, row.http_status, row.cost_source) == ("upstream_error", 529, "none")
    assert "scripted 529" in row.error

    subject, key = gw.mint("gpt-5")
    with pytest.raises(openai.InternalServerError):
        _openai(gw, key).responses.create(model="gpt-5", input="@status=500", stream=True)
    assert gw.rows(subject)[0].http_status == 500


def test_upstream_timeout_is_504_and_cost_unknown(gw, settings) -> None:  # type: ignore[no-untyped-def]
    settings.GATEWAY_UPSTREAM_READ_TIMEOUT_SECONDS = 1
    subject, key = gw.mint("gpt-5")
    with pytest.raises(openai.APIStatusError) as exc:
        _openai(gw, key).chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "@hang_ms=2500"}])
    assert exc.value.status_code == 504
    row = gw.rows(subject)[0]
    assert (row.status, row.cost_usd, row.cost_source) == ("upstream_timeout", None, "unpriced")


def test_a_stream_cut_by_the_upstream_is_recorded_unpriced(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("claude-haiku-4-5")
    with pytest.raises(anthropic.APIError):
        with _anthropic(gw, key).messages.stream(
            model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "@chunks=10 @die_after=3"}]
        ) as stream:
            stream.until_done()
    row = gw.rows(subject)[0]
    assert row.status == "upstream_error" and row.cost_usd is None and row.cost_source == "unpriced"


def test_client_disconnect_mid_stream_records_what_was_seen(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("claude-haiku-4-5")
    body = json.dumps(
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 5,
            "stream": True,
            "messages": [{"role": "user", "content": "@chunks=200 @delay_ms=20"}],
        }
    ).encode()
    port = int(gw.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /gateway/anthropic/v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"x-api-key: {key}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        received = b""
        while received.count(b"content_block_delta") < 3:
            received += sock.recv(65536)
    started = time.monotonic()
    row = gw.rows(subject)[0]
    assert time.monotonic() - started < 3  # recorded on disconnect, not after the 4 s the stream would take
    assert row.status == "client_disconnected" and row.usage_complete is False
    assert row.cost_usd is None and row.cost_source == "unpriced"
    assert row.input_tokens == 2000  # message_start's usage was seen and kept
    assert row.served_model == "claude-haiku-4-5" and row.generation_id.startswith("msg_")


def test_openrouter_reported_cost_wins_and_the_serving_provider_is_kept(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("deepseek-v3.2")
    _openai(gw, key).chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": "hi"}])
    sent = gw.upstream.requests[-1]
    assert sent.path == "/api/v1/chat/completions" and sent.body["model"] == "deepseek/deepseek-v3.2"
    row = gw.rows(subject)[0]
    assert (row.cost_usd, row.cost_source, row.served_provider) == (Decimal("0.00123"), "provider", "ScriptedProvider")
    assert row.model_verified is True


def test_a_model_missing_from_the_price_map_has_null_cost_never_zero(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("kimi-k2-thinking")
    _openai(gw, key).chat.completions.create(
        model="kimi-k2-thinking", messages=[{"role": "user", "content": "@cost=none"}], stream=True
    ).close()
    _openai(gw, key).chat.completions.create(model="kimi-k2-thinking", messages=[{"role": "user", "content": "hi"}])
    rows = gw.rows(subject, 2)
    assert {(r.cost_usd, r.cost_source) for r in rows} == {(None, "unpriced"), (Decimal("0.00123"), "provider")}
    usage = services.trial_usage(subject=subject)
    assert usage.cost_usd is None and usage.cost_complete is False and usage.billed_cost_usd is None
    assert usage.calls == 2


def test_a_response_without_usage_is_unpriced(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("gpt-5")
    _openai(gw, key).chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "@nousage=1"}])
    row = gw.rows(subject)[0]
    assert row.cost_usd is None and row.cost_source == "unpriced" and row.usage_complete is False


def test_custom_credential_reaches_its_base_url_and_a_wrong_served_model_is_flagged(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("gpt-5", "custom")
    _openai(gw, key).chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "@served=gpt-4.1"}])
    assert gw.upstream.requests[-1].path == "/custom/v1/chat/completions"
    assert gw.upstream.requests[-1].headers["authorization"] == "Bearer sk-custom-upstream-0000000000"
    row = gw.rows(subject)[0]
    assert row.served_model == "gpt-4.1" and row.model_verified is False
    assert services.trial_usage(subject=subject).model_verified is False


def test_a_wire_format_the_credential_cannot_speak_is_refused(gw) -> None:  # type: ignore[no-untyped-def]
    _, key = gw.mint("claude-haiku-4-5")
    with pytest.raises(openai.BadRequestError) as exc:
        _openai(gw, key).chat.completions.create(model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}])
    assert "does not speak openai_chat" in str(exc.value)


def test_subagent_calls_and_the_trial_roll_up(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("claude-sonnet-4-6", subagent=("deepseek-v3.2", "openrouter"))
    client = _anthropic(gw, key)
    client.messages.create(model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    for _ in range(2):
        client.messages.create(
            model="deepseek-v3.2", max_tokens=5, messages=[{"role": "user", "content": "@cost=0.001"}]
        )
    assert gw.upstream.requests[-1].path == "/api/v1/messages"
    gw.rows(subject, 3)
    usage = services.trial_usage(subject=subject)
    assert usage.calls == 3 and usage.subagent_calls == 2
    assert usage.cost_usd == Decimal("0.00549") + 2 * Decimal("0.001") and usage.cost_complete
    assert usage.billed_cost_usd == usage.cost_usd
    assert usage.model_verified is True
    assert (usage.input_tokens, usage.cached_input_tokens, usage.cache_write_tokens, usage.output_tokens) == (
        6000,
        2400,
        600,
        300,
    )


def test_the_overhead_header_is_set(gw) -> None:  # type: ignore[no-untyped-def]
    _, key = gw.mint("gpt-5")
    reply = httpx.post(
        f"{gw.openai_base}/chat/completions",
        headers={"authorization": f"Bearer {key}"},
        json={"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}], "stream": True},
    )
    assert float(reply.headers["x-gateway-overhead-ms"]) >= 0
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert b'"usage"' not in reply.content.replace(b'"usage":null', b"")  # injected usage chunk stripped
