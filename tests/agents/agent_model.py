"""A scripted model that drives agents installed in the sandbox (claude-code, codex, pi, mini-swe-agent) to solve
the greeting task (tests/harbor/tasks.py) with a real tool call, in each agent's own wire format.

It is the scripted upstream (tests/doubles/llm_upstream.py) answering the agent's own request:
- while no tool result is in the conversation: call the agent's shell tool (found by name in the request's
  `tools`) with the command that fixes /app/greeting.py;
- mini-swe-agent ends only when it runs `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`: once its first command
  has a result, that is the next tool call;
- then a final text answer.
Requests that offer no shell tool (claude-code's side calls, e.g. titles) get a short text. Chat Completions,
Responses and Anthropic Messages, streamed or not, with the upstream's usage blocks.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from aiohttp import web

from tests.doubles.llm_upstream import UpstreamServer, _sse

SOLVE_COMMAND = "printf 'def greet():\\n    return \"hello, world\"\\n' > /app/greeting.py && cat /app/greeting.py"
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FINAL_TEXT = "Done: greet() in /app/greeting.py now returns 'hello, world'."
_SHELL_TOOL_NAMES = ("bash", "Bash", "exec_command", "shell_command", "shell")


def _tool_name_and_schema(tool: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(name, JSON schema) of a tool in any of the three formats."""
    if isinstance(tool.get("function"), dict):  # Chat Completions
        fn = tool["function"]
        return str(fn.get("name", "")), fn.get("parameters") or {}
    return str(tool.get("name", "")), tool.get("parameters") or tool.get("input_schema") or {}


def shell_call(tools: list[dict[str, Any]], command: str) -> tuple[str, dict[str, Any]] | None:
    """The agent's shell tool and the arguments that run `command` with it, or None when it offers none."""
    offered = {name: schema for name, schema in map(_tool_name_and_schema, tools)}
    for name in _SHELL_TOOL_NAMES:
        if name not in offered:
            continue
        props = offered[name].get("properties") or {}
        if "cmd" in props:
            return name, {"cmd": command}
        if (props.get("command") or {}).get("type") == "array":
            return name, {"command": ["bash", "-lc", command]}
        return name, {"command": command}
    return None


class AgentModel(UpstreamServer):
    """Answers agents with a shell tool call that solves the greeting task, then a final text."""

    def __init__(self) -> None:
        super().__init__()
        self.tool_calls: list[tuple[str, dict[str, Any]]] = []
        self.solve_command = SOLVE_COMMAND  # a test may run something else first

    # --- turn logic (same for every wire format) -------------------------------------------------------------
    def decide(self, body: dict[str, Any], n_results: int, transcript: str) -> tuple[str, dict[str, Any]] | None:
        """The tool call to answer with, or None for the final text."""
        tools = body.get("tools") or []
        if n_results == 0:
            call = shell_call(tools, self.solve_command)
        elif n_results == 1 and SUBMIT_MARKER in transcript:
            call = shell_call(tools, f"echo {SUBMIT_MARKER}")
        else:
            call = None
        if call is not None:
            self.tool_calls.append(call)
        return call

    # --- Chat Completions (pi, mini-swe-agent) ---------------------------------------------------------------
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, s = await self._begin(request)
        messages = body.get("messages") or []
        n_results = sum(1 for m in messages if m.get("role") == "tool")
        call = self.decide(body, n_results, json.dumps(messages))
        model = body["model"]
        cid = "chatcmpl-" + uuid.uuid4().hex
        created = int(time.time())
        call_id = "call_" + uuid.uuid4().hex[:24]
        message: dict[str, Any] = {"role": "assistant", "content": "Running the fix." if call else FINAL_TEXT}
        if call is not None:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": call[0], "arguments": json.dumps(call[1])}}
            ]
        finish = "tool_calls" if call else "stop"
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": self._chat_usage(s),
                }
            )
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

        events = [chunk({"role": "assistant", "content": ""}), chunk({"content": message["content"]})]
        if call is not None:
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": call[0], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(call[1])}}]}))
        events.append(chunk({}, finish))
        events.append(_sse({**base, "choices": [], "usage": self._chat_usage(s)}))
        events.append(b"data: [DONE]\n\n")
        return await self._stream(request, events, s, 1)

    # --- Responses (codex) -----------------------------------------------------------------------------------
    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body, s = await self._begin(request)
        items = body.get("input") or []
        items = items if isinstance(items, list) else []
        n_results = sum(1 for i in items if str(i.get("type", "")).endswith("_call_output"))
        call = self.decide(body, n_results, json.dumps(items))
        rid = "resp_" + uuid.uuid4().hex
        item: dict[str, Any]
        if call is not None:
            item = {
                "type": "function_call",
                "id": "fc_" + uuid.uuid4().hex,
                "call_id": "call_" + uuid.uuid4().hex[:24],
                "name": call[0],
                "arguments": json.dumps(call[1]),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": "msg_" + uuid.uuid4().hex,
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
            }
        response: dict[str, Any] = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body["model"],
            "output": [item],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": self._responses_usage(s),
        }
        if not body.get("stream"):
            return web.json_response(response)
        seq = iter(range(10_000))
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        added = {**item, "status": "in_progress"}
        if call is not None:
            added["arguments"] = ""
        else:
            added["content"] = []
        events = [
            _sse({"type": "response.created", "response": started, "sequence_number": next(seq)}, "response.created"),
            _sse(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": added,
                    "sequence_number": next(seq),
                },
                "response.output_item.added",
            ),
        ]
        if call is not None:
            events.append(
                _sse(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "delta": item["arguments"],
                        "sequence_number": next(seq),
                    },
                    "response.function_call_arguments.delta",
                )
            )
            events.append(
                _sse(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": item["id"],
                        "output_index": 0,
                        "arguments": item["arguments"],
                        "sequence_number": next(seq),
                    },
                    "response.function_call_arguments.done",
                )
            )
        else:
            events.append(
                _sse(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": FINAL_TEXT,
                        "sequence_number": next(seq),
                    },
                    "response.output_text.delta",
                )
            )
        events.append(
            _sse(
                {"type": "response.output_item.done", "output_index": 0, "item": item, "sequence_number": next(seq)},
                "response.output_item.done",
            )
        )
        events.append(
            _sse(
                {"type": "response.completed", "response": response, "sequence_number": next(seq)}, "response.completed"
            )
        )
        return await self._stream(request, events, s, 2)

    # --- Anthropic Messages (claude-code) --------------------------------------------------------------------
    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body, s = await self._begin(request)
        messages = body.get("messages") or []
        n_results = sum(
            1
            for m in messages
            if isinstance(m.get("content"), list)
            for block in m["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
        call = self.decide(body, n_results, json.dumps(messages))
        u = s.usage
        usage = {
            "input_tokens": u.get("in", 1000),
            "cache_creation_input_tokens": u.get("cw", 200),
            "cache_read_input_tokens": u.get("cached", 800),
            "output_tokens": u.get("out", 100),
        }
        mid = "msg_" + uuid.uuid4().hex
        if call is not None:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex[:24],
                "name": call[0],
                "input": call[1],
            }
        else:
            block = {"type": "text", "text": FINAL_TEXT}
        stop = "tool_use" if call else "end_turn"
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [block],
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        events = [
            _sse(
                {
                    "type": "message_start",
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": body["model"],
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                },
                "message_start",
            )
        ]
        if call is not None:
            events.append(
                _sse(
                    {"type": "content_block_start", "index": 0, "content_block": {**block, "input": {}}},
                    "content_block_start",
                )
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
        else:
            events.append(
                _sse(
                    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                    "content_block_start",
                )
            )
            delta = {"type": "text_delta", "text": FINAL_TEXT}
        events.append(_sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"))
        events.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        events.append(
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
                "message_delta",
            )
        )
        events.append(_sse({"type": "message_stop"}, "message_stop"))
        return await self._stream(request, events, s, 1)
