"""A scripted model that drives a real terminus-2 authoring agent (in podman) and answers as the reviewer.

It is the reviewer double (authoring_models.py) whose author replies are terminus-2 JSON. The author's turn is
decided by what the terminal last printed, as a model reading the screen would decide it:

- nothing yet: write the first files (``first_files``) and run ``verify``;
- ``verify: sending`` / ``submit: sending`` last: wait for the report;
- ``VERIFY-RESULT failed`` last: write ``files`` and run ``verify`` again;
- ``VERIFY-RESULT passed`` last: run ``submit``;
- ``SUBMIT-OK`` last: mark the task complete (and confirm when terminus-2 asks).

A round started after a send-back (its instruction carries the reviewer's feedback) writes ``files`` at once.
Files are written with ``base64 -d`` so that no shell quoting is involved.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from typing import Any

from aiohttp import web

from tests.doubles.authoring_models import ReviewerModel

MARKERS = ("verify: sending", "submit: sending", "VERIFY-RESULT failed", "VERIFY-RESULT passed", "SUBMIT-OK")
SENT_BACK = "The reviewer sent the previous round back"


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _write(files: dict[str, str], root: str = "/authoring") -> list[str]:
    commands = []
    for rel, text in files.items():
        target = f"{root}/{rel}"
        encoded = base64.b64encode(text.encode()).decode()
        commands.append(f"mkdir -p $(dirname {target}) && echo {encoded} | base64 -d > {target}\n")
    return commands


class AuthoringTerminusModel(ReviewerModel):
    def __init__(self, *, files: dict[str, str], first_files: dict[str, str] | None = None) -> None:
        super().__init__()
        self.files = files
        self.first_files = first_files if first_files is not None else files
        self.author_turns: list[str] = []
        self.hang_seconds = 0.0  # > 0: the author's calls hang that long before answering (a silent agent)
        self._released = threading.Event()  # set by stop(): hanging calls end so the server can shut down

    def stop(self) -> None:
        self._released.set()
        super().stop()

    def decide(self, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        last = _text(messages[-1]) if messages else ""
        if "Are you sure you want to mark the task as complete" in last:
            return "confirm", {"analysis": "Submitted.", "plan": "Confirm.", "commands": [], "task_complete": True}
        seen = "\n".join(_text(m) for m in messages if m.get("role") == "user")
        positions = {marker: seen.rfind(marker) for marker in MARKERS}
        marker = max(positions, key=lambda m: positions[m])
        latest = marker if positions[marker] >= 0 else ""

        def step(commands: list[str], duration: float, done: bool = False) -> dict[str, Any]:
            return {
                "analysis": f"The terminal last showed: {latest or 'the prompt'}.",
                "plan": "Next step of writing the task.",
                "commands": [{"keystrokes": c, "duration": duration} for c in commands],
                "task_complete": done,
            }

        if latest == "":
            first = self.files if SENT_BACK in seen else self.first_files
            return "write+verify", step([*_write(first), "cd /authoring && verify\n"], 5)
        if latest in ("verify: sending", "submit: sending"):
            return "wait", step([""], 15)
        if latest == "VERIFY-RESULT failed":
            return "fix+verify", step([*_write(self.files), "verify\n"], 5)
        if latest == "VERIFY-RESULT passed":
            return "submit", step(["submit\n"], 5)
        return "complete", step([], 1, done=True)

    async def _chat_reply(self, body: dict[str, Any], script: Any) -> web.Response:
        if self.hang_seconds:
            self.author_turns.append("hang")
            deadline = time.monotonic() + self.hang_seconds
            while time.monotonic() < deadline and not self._released.is_set():
                await asyncio.sleep(0.1)
        turn, reply = self.decide(body.get("messages") or [])
        self.author_turns.append(turn)
        return self._json(body, script, json.dumps(reply))
