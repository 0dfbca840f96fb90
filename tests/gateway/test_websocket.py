"""A WebSocket handshake (codex tries one before HTTP) is refused cleanly, with no error raised."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from selfbench.asgi import application


def test_websocket_handshake_is_refused_cleanly() -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/gateway/openai/v1/responses", "headers": []}
    # A thread of its own: an earlier test in this worker (Playwright's sync API) may have a loop running here.
    runner = threading.Thread(target=lambda: asyncio.run(application(scope, receive, send)))
    runner.start()
    runner.join(10)
    assert sent == [{"type": "websocket.close", "code": 1008}]
