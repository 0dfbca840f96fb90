"""Scripted upstream models for authoring: a reviewer that answers verdicts in order, and plain replies for the
author's calls. The scripted upstream (llm_upstream.py) with one change: a reviewer's Chat Completions call gets
the next verdict JSON of `verdicts`."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from aiohttp import web

from tests.doubles.llm_upstream import UpstreamServer


class ReviewerModel(UpstreamServer):
    def __init__(self, verdicts: list[dict[str, Any]] | None = None) -> None:
        super().__init__()
        self.verdicts = list(verdicts or [])
        self.reviews: list[dict[str, Any]] = []
        self.review_hang_seconds = 0.0  # > 0: a reviewer's call sends nothing for that long

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, script = await self._begin(request)
        system = str((body.get("messages") or [{}])[0].get("content") or "")
        if "independent reviewer" not in system:
            return await self._chat_reply(body, script)
        self.reviews.append(body)
        if self.review_hang_seconds:
            await asyncio.sleep(self.review_hang_seconds)
        verdict = self.verdicts.pop(0) if self.verdicts else {"verdict": "accept", "notes": "fine"}
        return self._json(body, script, json.dumps(verdict))

    def _json(self, body: dict[str, Any], script: Any, content: str) -> web.Response:
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

    async def _chat_reply(self, body: dict[str, Any], script: Any) -> web.Response:
        return self._json(body, script, "I will write the task files now.")
