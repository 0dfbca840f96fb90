"""A scripted upstream LLM server: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages, streamed
and not, with usage blocks (cache reads and writes, reasoning) and OpenRouter's `usage.cost` on `/api/…` paths.

A real HTTP server (aiohttp) on 127.0.0.1 and a random port, run in a thread (`UpstreamServer().start()`) or as
a process (`python -m tests.doubles.llm_upstream`, prints `PORT <n>`). It records every request's path, headers
and body so tests can check what the gateway sent.

Behaviour is scripted from the request itself: `@name=value` directives anywhere in the body (for example in
the user message) set
  chunks, delay_ms     number of content events and the pause between them (streams)
  status               answer this HTTP error status in the provider's format
  in, cached, cw, cw1h, out, reasoning   usage numbers (Anthropic `in` excludes cache, as Anthropic does)
  cost                 report usage.cost (OpenRouter paths report 0.00123 unless told)
  nousage=1            leave the usage block out
  served               the model the response says served the call
  hang_ms              wait before answering (timeouts)
  die_after            drop the connection after that many content events
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_DIRECTIVE = re.compile(rb"@(\w+)=([A-Za-z0-9_.:/\-]+)")


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Script:
    chunks: int = 5
    delay_ms: float = 0
    status: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    cost: str | None = None
    nousage: bool = False
    served: str = ""
    hang_ms: float = 0
    die_after: int = -1


def _script(raw: bytes, openrouter: bool) -> Script:
    s = Script(cost="0.00123" if openrouter else None)
    for name_b, value_b in _DIRECTIVE.findall(raw):
        name, value = name_b.decode(), value_b.decode()
        if name in ("in", "cached", "cw", "cw1h", "out", "reasoning"):
            s.usage[name] = int(value)
        elif name == "chunks":
            s.chunks = int(value)
        elif name == "delay_ms":
            s.delay_ms = float(value)
        elif name == "status":
            s.status = int(value)
        elif name == "cost":
            s.cost = None if value == "none" else value
        elif name == "nousage":
            s.nousage = value == "1"
        elif name == "served":
            s.served = value
        elif name == "hang_ms":
            s.hang_ms = float(value)
        elif name == "die_after":
            s.die_after = int(value)
    return s


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


class UpstreamServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.streams_completed = 0
        self.events_sent = 0

    # --- lifecycle -------------------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{prefix:.*}v1/chat/completions", self._chat)
        app.router.add_post("/{prefix:.*}v1/responses", self._responses)
        app.router.add_post("/{prefix:.*}v1/messages", self._messages)
        return app

    async def serve(self, port: int = 0) -> int:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self.port

    def start(self) -> UpstreamServer:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="llm-upstream", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        runner = self._runner
        if runner is not None:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- shared ----------------------------------------------------------------------------------------------
    async def _begin(self, request: web.Request) -> tuple[dict[str, Any], Script]:
        raw = await request.read()
        body = json.loads(raw)
        self.requests.append(Recorded(request.path, {k.lower(): v for k, v in request.headers.items()}, body))
        if len(self.requests) > 10_000:  # the bench sends many; keep memory flat
            del self.requests[:5_000]
        script = _script(raw, request.path.startswith("/api/"))
        if script.hang_ms:
            await asyncio.sleep(script.hang_ms / 1000)
        return body, script

    async def _stream(
        self, request: web.Request, events: list[bytes], script: Script, n_head: int
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"content-type": "text/event-stream", "x-request-id": "req_" + uuid.uuid4().hex}
        )
        await resp.prepare(request)
        for i, event in enumerate(events):
            if script.die_after >= 0 and i - n_head >= script.die_after:
                assert request.transport is not None
                request.transport.close()
                return resp
            if script.delay_ms and i >= n_head:
                await asyncio.sleep(script.delay_ms / 1000)
            await resp.write(event)
            self.events_sent += 1
        await resp.write_eof()
        self.streams_completed += 1
        return resp

    # --- OpenAI Chat Completions -----------------------------------------------------------------------------
    def _chat_usage(self, s: Script) -> dict[str, Any]:
        u = s.usage
        usage: dict[str, Any] = {
            "prompt_tokens": u.get("in", 1200),
            "completion_tokens": u.get("out", 100),
            "total_tokens": u.get("in", 1200) + u.get("out", 100),
            "prompt_tokens_details": {"cached_tokens": u.get("cached", 800)},
            "completion_tokens_details": {"reasoning_tokens": u.get("reasoning", 0)},
        }
        if "cw" in u:
            usage["prompt_tokens_details"]["cache_write_tokens"] = u["cw"]
        if s.cost is not None:
            usage["cost"] = float(s.cost)
        return usage

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, s = await self._begin(request)
        if s.status:
            return web.json_response(
                {"error": {"message": f"scripted {s.status}", "type": "server_error", "param": None, "code": None}},
                status=s.status,
            )
        model = s.served or body["model"]
        cid = "chatcmpl-" + uuid.uuid4().hex
        created = int(time.time())
        openrouter = request.path.startswith("/api/")
        extra = {"provider": "ScriptedProvider"} if openrouter else {}
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    **extra,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "hello " * s.chunks},
                            "finish_reason": "stop",
                        }
                    ],
                    **({} if s.nousage else {"usage": self._chat_usage(s)}),
                }
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage")) or openrouter
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, **extra}
        events = [
            _sse(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                }
            )
        ]
        for i in range(s.chunks):
            chunk = {**base, "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}]}
            if include_usage:
                chunk["usage"] = None
            events.append(_sse(chunk))
        events.append(_sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        if include_usage and not s.nousage:
            events.append(_sse({**base, "choices": [], "usage": self._chat_usage(s)}))
        events.append(b"data: [DONE]\n\n")
        return await self._stream(request, events, s, 1)

    # --- OpenAI Responses ------------------------------------------------------------------------------------
    def _responses_usage(self, s: Script) -> dict[str, Any]:
        u = s.usage
        usage: dict[str, Any] = {
            "input_tokens": u.get("in", 1200),
            "input_tokens_details": {"cached_tokens": u.get("cached", 800)},
            "output_tokens": u.get("out", 100),
            "output_tokens_details": {"reasoning_tokens": u.get("reasoning", 40)},
            "total_tokens": u.get("in", 1200) + u.get("out", 100),
        }
        if "cw" in u:
            usage["input_tokens_details"]["cache_write_tokens"] = u["cw"]
        if s.cost is not None:
            usage["cost"] = float(s.cost)
        return usage

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body, s = await self._begin(request)
        if s.status:
            return web.json_response(
                {"error": {"message": f"scripted {s.status}", "type": "server_error", "param": None, "code": None}},
                status=s.status,
            )
        model = s.served or body["model"]
        rid = "resp_" + uuid.uuid4().hex
        mid = "msg_" + uuid.uuid4().hex
        text = "".join(f"tok{i} " for i in range(s.chunks))
        message = {
            "type": "message",
            "id": mid,
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        response: dict[str, Any] = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": model,
            "output": [message],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None if s.nousage else self._responses_usage(s),
        }
        if not body.get("stream"):
            return web.json_response(response)
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        seq = iter(range(10_000))
        events = [
            _sse({"type": "response.created", "response": started, "sequence_number": next(seq)}, "response.created"),
            _sse(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**message, "status": "in_progress", "content": []},
                    "sequence_number": next(seq),
                },
                "response.output_item.added",
            ),
        ]
        for i in range(s.chunks):
            events.append(
                _sse(
                    {
                        "type": "response.output_text.delta",
                        "item_id": mid,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": f"tok{i} ",
                        "sequence_number": next(seq),
                    },
                    "response.output_text.delta",
                )
            )
        events.append(
            _sse(
                {"type": "response.output_item.done", "output_index": 0, "item": message, "sequence_number": next(seq)},
                "response.output_item.done",
            )
        )
        events.append(
            _sse(
                {"type": "response.completed", "response": response, "sequence_number": next(seq)}, "response.completed"
            )
        )
        return await self._stream(request, events, s, 2)

    # --- Anthropic Messages ----------------------------------------------------------------------------------
    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body, s = await self._begin(request)
        if s.status:
            kind = "overloaded_error" if s.status == 529 else "api_error"
            return web.json_response(
                {"type": "error", "error": {"type": kind, "message": f"scripted {s.status}"}}, status=s.status
            )
        model = s.served or body["model"]
        u = s.usage
        usage: dict[str, Any] = {
            "input_tokens": u.get("in", 1000),
            "cache_creation_input_tokens": u.get("cw", 200),
            "cache_read_input_tokens": u.get("cached", 800),
            "output_tokens": u.get("out", 100),
        }
        if "cw1h" in u:
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": usage["cache_creation_input_tokens"] - u["cw1h"],
                "ephemeral_1h_input_tokens": u["cw1h"],
            }
        if s.cost is not None:
            usage["cost"] = float(s.cost)
        mid = "msg_" + uuid.uuid4().hex
        text = "".join(f"tok{i} " for i in range(s.chunks))
        if not body.get("stream"):
            message = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                **({} if s.nousage else {"usage": usage}),
            }
            return web.json_response(message)
        start_usage = {**usage, "output_tokens": 1}
        events = [
            _sse(
                {
                    "type": "message_start",
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        **({} if s.nousage else {"usage": start_usage}),
                    },
                },
                "message_start",
            ),
            _sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            ),
            _sse({"type": "ping"}, "ping"),
        ]
        for i in range(s.chunks):
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"tok{i} "}},
                    "content_block_delta",
                )
            )
        events.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        delta: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}}
        if not s.nousage:
            delta["usage"] = {"output_tokens": usage["output_tokens"]}
        events.append(_sse(delta, "message_delta"))
        events.append(_sse({"type": "message_stop"}, "message_stop"))
        return await self._stream(request, events, s, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()

    async def run() -> None:
        server = UpstreamServer()
        port = await server.serve(args.port)
        print(f"PORT {port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    main()
