"""The official openai and anthropic SDKs, pointed at the served gateway, complete calls in every wire format,
streamed and not; the ledger prices each call the same way streamed or not."""

from __future__ import annotations

from decimal import Decimal

import anthropic
import openai
import pytest

from apps.gateway.catalog import catalog_model
from apps.gateway.pricing import Usage, list_cost

pytestmark = pytest.mark.django_db(transaction=True)


def _openai(gw, key):  # type: ignore[no-untyped-def]
    return openai.OpenAI(base_url=gw.openai_base, api_key=key, max_retries=0)


def _anthropic(gw, key):  # type: ignore[no-untyped-def]
    return anthropic.Anthropic(base_url=gw.anthropic_base, api_key=key, max_retries=0)


def test_openai_sdk_chat_completions_streamed_and_not(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("gpt-5")
    client = _openai(gw, key)
    reply = client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "hi @chunks=3"}])
    assert reply.choices[0].message.content == "hello hello hello "
    chunks = list(
        client.chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": "hi @chunks=4"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "tok0 tok1 tok2 tok3 "
    # The client did not ask for usage: the chunk the gateway asked for is not passed on.
    assert all(c.choices for c in chunks)

    rows = gw.rows(subject, 2)
    expected = list_cost(
        Usage(input_tokens=1200, cached_input_tokens=800, output_tokens=100), catalog_model("gpt-5").price
    )
    assert expected == Decimal("0.0016")  # 400·1.25e-6 + 800·1.25e-7 + 100·1e-5
    for row, stream in zip(rows, (False, True), strict=True):
        assert row.stream is stream
        assert row.status == "ok"
        assert (row.input_tokens, row.cached_input_tokens, row.output_tokens) == (1200, 800, 100)
        assert row.cost_usd == expected and row.cost_source == "list"
        assert row.served_model == "gpt-5" and row.model_verified is True
        assert row.generation_id.startswith("chatcmpl-")
        assert row.ttfb_ms is not None and row.latency_ms is not None and row.overhead_ms is not None
    # include_usage was injected upstream for the streamed call only.
    assert gw.upstream.requests[-1].body["stream_options"] == {"include_usage": True}


def test_openai_sdk_streamed_usage_reaches_a_client_that_asked(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("gpt-5")
    chunks = list(
        _openai(gw, key).chat.completions.create(
            model="gpt-5",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 1200
    assert gw.rows(subject)[0].cost_source == "list"


def test_openai_sdk_responses_streamed_and_not(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("gpt-5.1-codex")
    client = _openai(gw, key)
    reply = client.responses.create(model="gpt-5.1-codex", input="hi @chunks=2 @reasoning=30")
    assert reply.output_text == "tok0 tok1 "
    events = list(client.responses.create(model="gpt-5.1-codex", input="hi @chunks=2 @reasoning=30", stream=True))
    assert events[-1].type == "response.completed"
    rows = gw.rows(subject, 2)
    # 400·1.25e-6 + 800·1.25e-7 + 100·1e-5 (reasoning is inside output and priced as output)
    assert [r.cost_usd for r in rows] == [Decimal("0.0016"), Decimal("0.0016")]
    assert [r.reasoning_tokens for r in rows] == [30, 30]
    assert all(r.generation_id.startswith("resp_") and r.model_verified for r in rows)


def test_anthropic_sdk_messages_streamed_and_not(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("claude-sonnet-4-6")
    client = _anthropic(gw, key)
    message = client.messages.create(
        model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "hi @chunks=2"}]
    )
    assert message.content[0].text == "tok0 tok1 "  # type: ignore[union-attr]
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "hi @chunks=3"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "tok0 tok1 tok2 "
    assert final.usage.output_tokens == 100
    rows = gw.rows(subject, 2)
    # Anthropic input 1000 excludes cache: 1000·3e-6 + 200·3.75e-6 + 800·3e-7 + 100·1.5e-5 = 0.00549
    for row in rows:
        assert (row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens) == (
            2000,
            800,
            200,
            100,
        )
        assert row.cost_usd == Decimal("0.00549") and row.cost_source == "list"
        assert row.generation_id.startswith("msg_") and row.model_verified is True


def test_anthropic_streamed_usage_takes_the_cumulative_delta_not_a_sum(gw) -> None:  # type: ignore[no-untyped-def]
    subject, key = gw.mint("claude-haiku-4-5")
    with _anthropic(gw, key).messages.stream(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "@out=250"}]
    ) as stream:
        stream.until_done()
    row = gw.rows(subject)[0]
    # message_start said output_tokens=1, message_delta says 250 (cumulative): 250, not 251.
    assert row.output_tokens == 250
