"""A scripted model that answers terminus-2 in its JSON format with the commands that solve a task.

It is the scripted upstream (tests/doubles/llm_upstream.py) with one change: Chat Completions replies carry
terminus-2's JSON. The first turn sends `commands` and claims the task complete; terminus-2 then asks "Are you
sure…?", and the second turn confirms. Usage blocks and `@directives` work as in the upstream.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from aiohttp import web

from tests.doubles.llm_upstream import UpstreamServer

# Writes the fixed greeting for tests/harbor/tasks.py's task.
SOLVE_GREETING = [
    "cat > /app/greeting.py <<'PY'\ndef greet():\n    return 'hello, world'\nPY\n",
    "python3 -c 'import sys; sys.path.insert(0, \"/app\"); import greeting; print(greeting.greet())'\n",
]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class TerminusModel(UpstreamServer):
    """Answers every Chat Completions call with terminus-2 JSON: solve commands, then the completion confirmation."""

    def __init__(self, commands: list[str] | None = None, *, hang_first_ms: float = 0) -> None:
        super().__init__()
        self.commands = commands if commands is not None else SOLVE_GREETING
        self.hang_first_ms = hang_first_ms

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        last = _text(messages[-1]) if messages else ""
        if "Are you sure you want to mark the task as complete" in last:
            return {"analysis": "The fix is in place.", "plan": "Confirm.", "commands": [], "task_complete": True}
        return {
            "analysis": "greet() returns the wrong string.",
            "plan": "Rewrite /app/greeting.py and check it.",
            "commands": [{"keystrokes": c, "duration": 0.5} for c in self.commands],
            "task_complete": True,
        }

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, script = await self._begin(request)
        if self.hang_first_ms and len(self.requests) == 1:
            import asyncio

            await asyncio.sleep(self.hang_first_ms / 1000)
        content = json.dumps(self.reply(body))
        assert not body.get("stream"), "terminus-2 calls without streaming"
        return web.json_response(
            {
                "id": "chatcmpl-" + uuid.uuid4().hex,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": script.served or body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": self._chat_usage(script),
            }
        )
