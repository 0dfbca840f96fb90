"""The three wire formats: reading usage, served model and generation id from bodies and SSE streams, and
writing errors the way each provider does so agents' SDKs raise their usual exceptions.

Stream inspection keeps per-chunk work O(size of the chunk): a relayed region is searched for a few byte
markers and only events carrying one are parsed (notes §5.4: never re-join or re-parse earlier chunks).
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from apps.gateway.catalog import ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_RESPONSES
from apps.gateway.pricing import Usage


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _cost(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def usage_openai_chat(usage: dict[str, Any]) -> Usage:
    """Chat Completions `usage` (also OpenRouter's, with `cost`): prompt_tokens already include cached tokens."""
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=_int(usage.get("prompt_tokens")),
        cached_input_tokens=_int(prompt.get("cached_tokens")),
        cache_write_tokens=_int(prompt.get("cache_write_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        reasoning_tokens=_int(completion.get("reasoning_tokens")),
        provider_cost=_cost(usage.get("cost")),
    )


def usage_openai_responses(usage: dict[str, Any]) -> Usage:
    """Responses `usage`: input_tokens include cached tokens; output_tokens include reasoning."""
    details = usage.get("input_tokens_details") or {}
    out = usage.get("output_tokens_details") or {}
    return Usage(
        input_tokens=_int(usage.get("input_tokens")),
        cached_input_tokens=_int(details.get("cached_tokens")),
        cache_write_tokens=_int(details.get("cache_write_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        reasoning_tokens=_int(out.get("reasoning_tokens")),
        provider_cost=_cost(usage.get("cost")),
    )


def usage_anthropic(usage: dict[str, Any]) -> Usage:
    """Anthropic `usage`: input_tokens exclude cache reads and writes, so they are added back here."""
    cache_read = _int(usage.get("cache_read_input_tokens"))
    cache_write = _int(usage.get("cache_creation_input_tokens"))
    breakdown = usage.get("cache_creation") or {}
    return Usage(
        input_tokens=_int(usage.get("input_tokens")) + cache_read + cache_write,
        cached_input_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_1h_tokens=_int(breakdown.get("ephemeral_1h_input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        provider_cost=_cost(usage.get("cost")),
        service_tier=str(usage.get("service_tier") or ""),
    )


def _event_data(event: bytes) -> dict[str, Any] | None:
    """The JSON of an SSE event's data line(s), or None (comments, [DONE], junk)."""
    parts = [line[5:].strip() for line in event.splitlines() if line.startswith(b"data:")]
    if not parts:
        return None
    raw = b"\n".join(parts)
    if not raw or raw == b"[DONE]":
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


class Tracker:
    """What the gateway learns from one call's response: served model, generation id, usage, upstream error."""

    markers: tuple[bytes, ...] = ()

    def __init__(self, *, strip_usage: bool = False) -> None:
        self.served_model = ""
        self.served_provider = ""
        self.generation_id = ""
        self.usage: Usage | None = None
        self.error = ""
        self.strip_usage = strip_usage
        self._first_seen = False

    def body(self, data: dict[str, Any]) -> None:
        """Read a non-streamed response body."""
        raise NotImplementedError

    def event(self, data: dict[str, Any]) -> bool:
        """Read one parsed SSE event; return False to drop it from what the client receives."""
        raise NotImplementedError

    def feed(self, region: bytes, delimiter: bytes) -> bytes:
        """Inspect a region of whole SSE events; return the bytes to relay (the same object unless an event
        had to be dropped)."""
        if self._first_seen and not any(m in region for m in self.markers):
            return region
        self._first_seen = True
        dropped = False
        kept: list[bytes] = []
        for event in region.split(delimiter):
            if not event:
                continue
            data = _event_data(event)
            if data is not None and not self.event(data):
                dropped = True
                continue
            kept.append(event)
        if not dropped:
            return region
        return b"".join(e + delimiter for e in kept)


class ChatTracker(Tracker):
    markers = (b'"usage":{', b'"usage": {', b'"error":', b'"error": ')

    def _common(self, data: dict[str, Any]) -> None:
        if not self.served_model and isinstance(data.get("model"), str):
            self.served_model = data["model"]
        if not self.generation_id and isinstance(data.get("id"), str):
            self.generation_id = data["id"]
        if not self.served_provider and isinstance(data.get("provider"), str):
            self.served_provider = data["provider"]
        if isinstance(data.get("error"), dict):
            self.error = str(data["error"].get("message") or data["error"])[:500]

    def body(self, data: dict[str, Any]) -> None:
        self._common(data)
        if isinstance(data.get("usage"), dict):
            self.usage = usage_openai_chat(data["usage"])

    def event(self, data: dict[str, Any]) -> bool:
        self._common(data)
        if not isinstance(data.get("usage"), dict):
            return True
        self.usage = usage_openai_chat(data["usage"])
        if not self.strip_usage:
            return True
        # The gateway asked for this usage chunk; clients that did not may index choices[0] unguarded.
        return bool(data.get("choices"))


class ResponsesTracker(Tracker):
    markers = (b"response.completed", b"response.incomplete", b"response.failed", b"event: error")

    def _response(self, response: dict[str, Any]) -> None:
        if isinstance(response.get("model"), str):
            self.served_model = response["model"]
        if isinstance(response.get("id"), str):
            self.generation_id = response["id"]
        if isinstance(response.get("usage"), dict):
            self.usage = usage_openai_responses(response["usage"])
        if isinstance(response.get("error"), dict):
            self.error = str(response["error"].get("message") or response["error"])[:500]

    def body(self, data: dict[str, Any]) -> None:
        self._response(data)

    def event(self, data: dict[str, Any]) -> bool:
        kind = data.get("type")
        if isinstance(data.get("response"), dict):
            self._response(data["response"])
        elif kind == "error":
            self.error = str(data.get("message") or data.get("error") or data)[:500]
        return True


class AnthropicTracker(Tracker):
    markers = (b"message_start", b"message_delta", b"event: error")

    def __init__(self, *, strip_usage: bool = False) -> None:
        super().__init__(strip_usage=strip_usage)
        self._raw_usage: dict[str, Any] = {}

    def _message(self, message: dict[str, Any]) -> None:
        if isinstance(message.get("model"), str):
            self.served_model = message["model"]
        if isinstance(message.get("id"), str):
            self.generation_id = message["id"]
        if isinstance(message.get("provider"), str):
            self.served_provider = message["provider"]

    def _merge(self, usage: dict[str, Any]) -> None:
        # message_delta usage is cumulative: later non-null values replace earlier ones, never add to them.
        self._raw_usage.update({k: v for k, v in usage.items() if v is not None})
        self.usage = usage_anthropic(self._raw_usage)

    def body(self, data: dict[str, Any]) -> None:
        self._message(data)
        if isinstance(data.get("usage"), dict):
            self._merge(data["usage"])
        if data.get("type") == "error" and isinstance(data.get("error"), dict):
            self.error = str(data["error"].get("message") or data["error"])[:500]

    def event(self, data: dict[str, Any]) -> bool:
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self._message(data["message"])
            if isinstance(data["message"].get("usage"), dict):
                self._merge(data["message"]["usage"])
        elif kind == "message_delta" and isinstance(data.get("usage"), dict):
            self._merge(data["usage"])
        elif kind == "error" and isinstance(data.get("error"), dict):
            self.error = str(data["error"].get("message") or data["error"])[:500]
        return True


TRACKERS: dict[str, type[Tracker]] = {
    OPENAI_CHAT: ChatTracker,
    OPENAI_RESPONSES: ResponsesTracker,
    ANTHROPIC_MESSAGES: AnthropicTracker,
}

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    502: "api_error",
    504: "api_error",
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    502: "api_error",
    504: "api_error",
}


def error_body(wire_format: str, status: int, message: str, code: str) -> bytes:
    """An error in the provider's own shape, so the agent's SDK raises its usual exception class."""
    if wire_format == ANTHROPIC_MESSAGES:
        payload: dict[str, Any] = {
            "type": "error",
            "error": {"type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message},
        }
    else:
        payload = {
            "error": {"message": message, "type": _OPENAI_TYPES.get(status, "api_error"), "param": None, "code": code}
        }
    return json.dumps(payload).encode()


def error_event(wire_format: str, message: str) -> bytes:
    """An SSE error event in the provider's shape, for a stream that fails after its headers were sent."""
    if wire_format == ANTHROPIC_MESSAGES:
        error = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"
    if wire_format == OPENAI_RESPONSES:
        data: dict[str, Any] = {"type": "error", "code": "upstream_error", "message": message, "param": None}
        return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"
    chat = {"error": {"message": message, "type": "api_error", "param": None, "code": "upstream_error"}}
    return b"data: " + json.dumps(chat).encode() + b"\n\n"
