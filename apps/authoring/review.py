"""The independent reviewer: one fresh, read-only model call through the gateway (never the author's model).

It reads the task's files and the gate report and answers accept, reject or send back, following the spec's
anti-coupling rule. Pure of the database: services mint the key and record the verdict.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from apps.gateway import services as gateway_services
from apps.gateway.catalog import catalog_model

SYSTEM = """\
You are an independent reviewer of a coding-agent benchmark task. You did not write it and you change nothing.
Accept only if all hold: the instruction asks for the change clearly without revealing the tests; the held-out
tests exercise a public API, command, persistence boundary or extension seam; they do not import the reference
patch's private helpers or pin internal SQL, query counts, private schemas, telemetry layout, incidental error
wording or UI composition; the tests would accept any reasonable correct solution; the environment is the
project's own. Reject a task that cannot be fixed (the change is not testable through a public boundary, or the
description is not a real problem). Otherwise send it back with concrete suggestions.
Answer with one JSON object only: {"verdict": "accept" | "reject" | "send_back", "notes": "...",
"suggestions": ["...", ...]}"""

READ_FILES = ("instruction.md", "gold.patch", "test.patch", "environment/Dockerfile", "smoke.sh", "tests/run-tests.sh")
FILE_CAP = 40_000
VERDICTS = ("accept", "reject", "send_back")


class ReviewStopped(Exception):
    """The reviewer produced no answer in time (silence or the wall-clock cap)."""


@dataclass
class ReviewAnswer:
    verdict: str
    notes: str
    suggestions: list[str] = field(default_factory=list)


def prompt(*, files: dict[str, str], report: dict[str, Any], definition: dict[str, Any]) -> str:
    parts = ["# Task files"]
    for name, text in files.items():
        parts.append(f"## {name}\n```\n{text[:FILE_CAP]}\n```")
    parts.append("# Gate report\n```json\n" + json.dumps(report, indent=1)[:FILE_CAP] + "\n```")
    selected = {k: definition.get(k) for k in ("failToPass", "passToPass", "tier", "heldOut")}
    parts.append("# Selected tests\n```json\n" + json.dumps(selected, indent=1) + "\n```")
    return "\n\n".join(parts)


def parse(text: str) -> ReviewAnswer:
    """The verdict from the model's text (the first JSON object in it); an unreadable answer is a failed review."""
    match = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("verdict") not in VERDICTS:
        return ReviewAnswer("failed", f"the reviewer's answer has no verdict: {text[:500]}")
    suggestions = [str(s) for s in data.get("suggestions") or [] if str(s).strip()]
    return ReviewAnswer(str(data["verdict"]), str(data.get("notes") or ""), suggestions)


def _request(model_id: str, raw_key: str, text: str) -> urllib.request.Request:
    model = catalog_model(model_id)
    urls = gateway_services.base_urls()
    if model is not None and model.provider == "anthropic":
        url = f"{urls['anthropic']}/v1/messages"
        body: dict[str, Any] = {
            "model": model_id,
            "max_tokens": 4096,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": text}],
        }
        headers = {"x-api-key": raw_key, "anthropic-version": "2023-06-01"}
    else:
        url = f"{urls['openai']}/chat/completions"
        body = {
            "model": model_id,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}],
        }
        headers = {"Authorization": f"Bearer {raw_key}"}
    headers["Content-Type"] = "application/json"
    # The URL is the gateway's own (http or https from settings), never user input.
    return urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")  # noqa: S310


def _answer_text(data: dict[str, Any]) -> str:
    if "choices" in data:
        return str((data["choices"][0].get("message") or {}).get("content") or "")
    return "".join(str(block.get("text", "")) for block in data.get("content") or [] if isinstance(block, dict))


def ask(*, model_id: str, raw_key: str, text: str, silence_seconds: float, wall_clock_seconds: float) -> ReviewAnswer:
    """One call through the gateway. No bytes for `silence_seconds` or no answer in `wall_clock_seconds` stops it."""
    result: dict[str, Any] = {}

    def call() -> None:
        try:
            request = _request(model_id, raw_key, text)
            with urllib.request.urlopen(request, timeout=silence_seconds) as response:  # noqa: S310
                result["data"] = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            result["error"] = f"the gateway answered {exc.code}: {exc.read()[:300]!r}"
        except TimeoutError:
            result["error"] = f"no output for {silence_seconds:g} s; stopped"
        except (OSError, ValueError) as exc:
            result["error"] = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=call, daemon=True, name="reviewer")
    thread.start()
    thread.join(wall_clock_seconds)
    if thread.is_alive():
        raise ReviewStopped(f"no verdict within the wall-clock cap of {wall_clock_seconds:g} s; stopped")
    if "error" in result:
        raise ReviewStopped(result["error"])
    return parse(_answer_text(result["data"]))
