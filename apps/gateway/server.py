"""The gateway as a bare ASGI app: selfbench/asgi.py sends every `/gateway/` request here, past Django's
middleware stack (sync middleware under ASGI costs a thread hop per request; notes §5.4).

Routes (the wire format is the path; which upstream serves it is the key's route for the requested model):
  POST /gateway/openai/v1/chat/completions   OpenAI Chat Completions   (OPENAI_BASE_URL = …/gateway/openai/v1)
  POST /gateway/openai/v1/responses          OpenAI Responses
  POST /gateway/anthropic/v1/messages        Anthropic Messages        (ANTHROPIC_BASE_URL = …/gateway/anthropic)
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp
from django.conf import settings
from django.utils import timezone

from apps.gateway import keyring
from apps.gateway.catalog import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    PROVIDER_WIRE_FORMATS,
    resolve_requested,
)
from apps.gateway.ledger import writer
from apps.gateway.models import CallStatus
from apps.gateway.services import CallRecord, managed_secret
from apps.gateway.wire import TRACKERS, Tracker, error_body, error_event

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

ROUTES: dict[str, str] = {
    "/gateway/openai/v1/chat/completions": OPENAI_CHAT,
    "/gateway/openai/v1/responses": OPENAI_RESPONSES,
    "/gateway/anthropic/v1/messages": ANTHROPIC_MESSAGES,
}
UPSTREAM_PATHS = {
    OPENAI_CHAT: "/chat/completions",
    OPENAI_RESPONSES: "/responses",
    ANTHROPIC_MESSAGES: "/messages",
}
# Client headers that carry request semantics, not identity. Everything else the client sent (Authorization,
# x-api-key, cookies, …) stays here: only the route's credential goes upstream.
FORWARDED_REQUEST_HEADERS = {b"anthropic-version", b"anthropic-beta", b"openai-beta", b"accept"}
FORWARDED_RESPONSE_PREFIXES = (
    b"x-request-id",
    b"request-id",
    b"openai-",
    b"anthropic-",
    b"x-ratelimit-",
    b"retry-after",
)


def _upstream_base(kind: str, base_url: str) -> str:
    """The upstream's versioned API root, ending in /v1."""
    if kind == "custom":
        root = base_url.rstrip("/")
        return root if root.endswith("/v1") else root + "/v1"
    configured = {
        "openai": settings.OPENAI_BASE_URL,
        "anthropic": settings.ANTHROPIC_BASE_URL,
        "openrouter": settings.OPENROUTER_BASE_URL,
    }[kind]
    return configured.rstrip("/") + "/v1"


def _auth_headers(route: keyring.RouteGrant) -> dict[str, str]:
    secret = route.secret or managed_secret(route.model.provider)
    if route.kind == "anthropic" and route.auth_kind == "api_key":
        return {"x-api-key": secret}
    headers = {"authorization": f"Bearer {secret}"}
    if route.kind == "anthropic":
        # A Claude sign-in token authenticates as OAuth, which Anthropic gates behind this beta flag.
        headers["anthropic-beta"] = "oauth-2025-04-20"
    return headers


def _client_key(headers: list[tuple[bytes, bytes]]) -> str:
    bearer = ""
    for name, value in headers:
        if name == b"x-api-key":
            return value.decode("latin-1").strip()
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            bearer = value[7:].decode("latin-1").strip()
    return bearer


class _Call:
    """Mutable state of one call shared by the relay and the disconnect watcher."""

    __slots__ = ("disconnected", "done", "started", "task")

    def __init__(self) -> None:
        self.disconnected = False
        self.done = False
        self.started = False
        self.task: asyncio.Task[Any] | None = asyncio.current_task()


class GatewayApp:
    def __init__(self) -> None:
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}

    def session(self) -> aiohttp.ClientSession:
        """One upstream client per event loop, created inside it.

        A served process has one loop; a test session can run several servers of this one app (a session-scoped
        fixture imported into several test modules), and a client used from another loop fails every call.
        """
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = self._sessions[loop] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=30),
                # No total timeout: agent calls may stream for many minutes; a silent upstream is what times out.
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=10, sock_read=float(settings.GATEWAY_UPSTREAM_READ_TIMEOUT_SECONDS)
                ),
                auto_decompress=True,
            )
        return session

    async def close(self) -> None:
        session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    async def lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await asyncio.to_thread(writer.flush, 30.0)
                writer.release()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        t0 = time.perf_counter()
        path: str = scope["path"]
        wire = ROUTES.get(path)
        fallback = ANTHROPIC_MESSAGES if path.startswith("/gateway/anthropic/") else OPENAI_CHAT
        if wire is None or scope["method"] != "POST":
            await _reply_error(send, fallback, 404, f"no gateway route {scope['method']} {path}", "not_found", t0)
            return
        body = await _read_body(receive)
        if body is None:
            return
        grant = await keyring.grant_for(_client_key(scope["headers"]))
        if grant is None or not grant.usable(time.time()):
            reason = "revoked" if grant and grant.revoked else "expired" if grant else "not a valid trial key"
            await _reply_error(send, wire, 401, f"gateway key is {reason}", "invalid_api_key", t0)
            return
        try:
            payload = json.loads(body)
            requested = payload["model"]
            if not isinstance(requested, str):
                raise TypeError("model must be a string")
        except (ValueError, KeyError, TypeError) as exc:
            await _reply_error(send, wire, 400, f"request body must be JSON with a model: {exc}", "invalid_body", t0)
            return
        stream = payload.get("stream") is True
        model = resolve_requested(requested)
        route = grant.routes.get(model.id) if model else None
        record = CallRecord(
            workspace_id=grant.workspace_id,
            key_id=grant.key_id,
            subject=grant.subject,
            role=route.role if route else "",
            catalog_model=model.id if model else "",
            requested_model=requested,
            wire_format=wire,
            stream=stream,
            credential_id=route.credential_id if route else None,
            billable=route.billable if route else True,
            started_at=timezone.now(),
        )
        try:
            if route is None:
                allowed = ", ".join(sorted(grant.routes))
                message = f"this trial key serves only {allowed}; it cannot call {requested!r}"
                record.status, record.http_status, record.error = CallStatus.REFUSED, 403, message
                await _reply_error(send, wire, 403, message, "model_not_allowed", t0)
                return
            if wire not in PROVIDER_WIRE_FORMATS[route.kind]:
                message = f"{route.model.id} is served by a {route.kind} credential, which does not speak {wire}"
                record.status, record.http_status, record.error = CallStatus.REFUSED, 400, message
                await _reply_error(send, wire, 400, message, "unsupported_wire_format", t0)
                return
            await self._relay(scope, receive, send, payload, body, route, record, t0)
        finally:
            record.latency_ms = (time.perf_counter() - t0) * 1000
            writer.submit(record)

    async def _relay(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        payload: dict[str, Any],
        body: bytes,
        route: keyring.RouteGrant,
        record: CallRecord,
        t0: float,
    ) -> None:
        changed = False
        upstream_model = route.model.upstream_name(route.kind)
        if payload["model"] != upstream_model:
            payload["model"], changed = upstream_model, True
        strip_usage = False
        if record.stream and record.wire_format == OPENAI_CHAT:
            options = payload.get("stream_options") or {}
            if not options.get("include_usage"):
                # Without it Chat Completions streams carry no usage at all; strip the extra chunk on the way back.
                payload["stream_options"] = {**options, "include_usage": True}
                changed, strip_usage = True, True
        upstream_body = json.dumps(payload).encode() if changed else body

        headers = {"content-type": "application/json", **_auth_headers(route)}
        for name, value in scope["headers"]:
            if name in FORWARDED_REQUEST_HEADERS:
                headers.setdefault(name.decode(), value.decode("latin-1"))
        if route.kind == "anthropic" or record.wire_format == ANTHROPIC_MESSAGES:
            headers.setdefault("anthropic-version", "2023-06-01")
        if record.stream:
            headers["accept-encoding"] = "identity"  # a compressed SSE stream cannot be relayed event by event
        url = _upstream_base(route.kind, route.base_url) + UPSTREAM_PATHS[record.wire_format]

        tracker = TRACKERS[record.wire_format](strip_usage=strip_usage)
        call = _Call()
        watcher = asyncio.create_task(_watch_disconnect(receive, call))
        t_sent = time.perf_counter()
        try:
            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=10, sock_read=float(settings.GATEWAY_UPSTREAM_READ_TIMEOUT_SECONDS)
            )
            async with self.session().post(url, data=upstream_body, headers=headers, timeout=timeout) as resp:
                t_head = time.perf_counter()
                overhead = (t_sent - t0 + time.perf_counter() - t_head) * 1000
                record.http_status = resp.status
                record.overhead_ms = overhead
                out_headers = _response_headers(resp, overhead)
                is_sse = resp.content_type == "text/event-stream"
                if not is_sse:
                    data = await resp.read()
                    record.ttfb_ms = (time.perf_counter() - t0) * 1000
                    _read_body_usage(tracker, data, resp.status)
                    call.started = True
                    await send({"type": "http.response.start", "status": resp.status, "headers": out_headers})
                    call.done = True
                    await send({"type": "http.response.body", "body": data, "more_body": False})
                else:
                    call.started = True
                    await send({"type": "http.response.start", "status": resp.status, "headers": out_headers})
                    await _relay_stream(resp, send, tracker, record, t0)
                    call.done = True
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                record.status = CallStatus.OK if resp.status < 400 and not tracker.error else CallStatus.UPSTREAM_ERROR
                if resp.status >= 400 and not tracker.error:
                    tracker.error = f"upstream HTTP {resp.status}"
        except asyncio.CancelledError:
            if not call.disconnected:
                raise
            # Our own cancellation: the client left. Record what was seen; the cost is unknown (NULL).
            if call.task is not None:
                call.task.uncancel()
            record.status = CallStatus.CLIENT_DISCONNECTED
            tracker.error = tracker.error or "client disconnected before the response ended"
        except aiohttp.ConnectionTimeoutError:
            record.status, record.http_status = CallStatus.UPSTREAM_UNREACHABLE, 502
            tracker.error = "upstream connection timed out"
            await _fail(send, record.wire_format, 502, tracker.error, "upstream_unreachable", t0, call)
        except TimeoutError:
            # The upstream went silent after accepting the call: it may have generated (and billed) tokens.
            record.status, record.http_status = CallStatus.UPSTREAM_TIMEOUT, record.http_status or 504
            tracker.error = "upstream timed out"
            await _fail(send, record.wire_format, 504, tracker.error, "upstream_timeout", t0, call)
        except aiohttp.ClientError as exc:
            reached = record.http_status is not None
            record.status = CallStatus.UPSTREAM_ERROR if reached else CallStatus.UPSTREAM_UNREACHABLE
            record.http_status = record.http_status or 502
            tracker.error = f"upstream connection failed: {exc.__class__.__name__}"
            if reached:
                tracker.usage = None  # a stream cut mid-way: whatever usage was seen is not the whole call
            await _fail(send, record.wire_format, 502, tracker.error, "upstream_unreachable", t0, call)
        finally:
            call.done = True
            watcher.cancel()
            record.served_model = tracker.served_model
            record.served_provider = tracker.served_provider
            record.generation_id = tracker.generation_id
            record.usage = tracker.usage
            record.error = tracker.error


async def _relay_stream(
    resp: aiohttp.ClientResponse, send: Send, tracker: Tracker, record: CallRecord, t0: float
) -> None:
    """Relay SSE event by event as it arrives: only a trailing partial event waits for its next bytes."""
    delimiter = b"\n\n"
    pending = b""
    first = True
    async for chunk in resp.content.iter_any():
        if first:
            record.ttfb_ms = (time.perf_counter() - t0) * 1000
            if b"\r\n\r\n" in chunk:
                delimiter = b"\r\n\r\n"
            first = False
        buf = pending + chunk if pending else chunk
        cut = buf.rfind(delimiter)
        if cut < 0:
            pending = buf
            continue
        cut += len(delimiter)
        region, pending = buf[:cut], buf[cut:]
        out = tracker.feed(region, delimiter)
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
    if pending:
        out = tracker.feed(pending, delimiter)
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})


def _read_body_usage(tracker: Tracker, data: bytes, status: int) -> None:
    try:
        parsed = json.loads(data)
    except ValueError:
        if status >= 400:
            tracker.error = data[:300].decode("utf-8", "replace")
        return
    if isinstance(parsed, dict):
        tracker.body(parsed)
        if status >= 400 and not tracker.error:
            tracker.error = json.dumps(parsed)[:500]


def _response_headers(resp: aiohttp.ClientResponse, overhead_ms: float) -> list[tuple[bytes, bytes]]:
    out = [
        (b"content-type", (resp.headers.get("content-type") or "application/json").encode("latin-1")),
        (b"x-gateway-overhead-ms", f"{overhead_ms:.2f}".encode()),
    ]
    if resp.content_type == "text/event-stream":
        out.append((b"cache-control", b"no-cache"))
        out.append((b"x-accel-buffering", b"no"))
    for name, value in resp.raw_headers:
        if name.lower().startswith(FORWARDED_RESPONSE_PREFIXES):
            out.append((name.lower(), value))
    return out


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _watch_disconnect(receive: Receive, call: _Call) -> None:
    """After the body is read, the next receive() returns only when the client goes away (or the response is
    complete). A departure mid-call cancels the relay so the upstream is closed and the row is written."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not call.done and call.task is not None:
                call.disconnected = True
                call.task.cancel()
            return


async def _fail(send: Send, wire: str, status: int, message: str, code: str, t0: float, call: _Call) -> None:
    """Tell the agent the upstream failed: an error response, or an error event when the stream had started."""
    if not call.started:
        await _reply_error(send, wire, status, message, code, t0, call)
        return
    call.done = True
    await send({"type": "http.response.body", "body": error_event(wire, message), "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _reply_error(
    send: Send, wire: str, status: int, message: str, code: str, t0: float, call: _Call | None = None
) -> None:
    if call is not None:
        call.done = True
    overhead = (time.perf_counter() - t0) * 1000
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"x-gateway-overhead-ms", f"{overhead:.2f}".encode())],
        }
    )
    await send({"type": "http.response.body", "body": error_body(wire, status, message, code), "more_body": False})


application = GatewayApp()
