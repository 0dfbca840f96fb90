"""A WebSocket handshake (codex tries one before HTTP) is refused cleanly, with no error raised."""

from __future__ import annotations

import asyncio
from typing import Any

from selfbench.asgi import application


def test_websocket_handshake_is_refused_cleanly() -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/gateway/openai/v1/responses", "headers": []}
    asyncio.run(application(scope, receive, send))
    assert sent == [{"type": "websocket.close", "code": 1008}]
