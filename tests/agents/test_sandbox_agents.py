"""Agents installed in the sandbox, for real: each pinned CLI from the agents toolchain runs in a podman sandbox
with no network but the relay to the gateway, calls the scripted model through the real gateway with a trial
key, runs the model's shell command, and the verifier scores the task.

Nothing of ours is mocked: only the model provider is a double (tests/agents/agent_model.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from selfbench import harbor_adapter
from selfbench.harbor_adapter import AgentSpec, TrialOutcome, TrialSetupError
from tests.agents.agent_model import SOLVE_COMMAND, SUBMIT_MARKER, AgentModel
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401  (fixtures)
from tests.harbor.tasks import write_task
from tests.harbor.test_adapter import _require_containers


@dataclass(frozen=True)
class Case:
    model_id: str  # catalog model
    api_format: str  # Harbor's ModelApiFormat value, as apps/runs passes it
    anthropic: bool = False
    options: dict[str, Any] = field(default_factory=dict)


# The wire format apps/runs picks for each agent (apps/gateway/catalog.py HARNESS_WIRE_FORMATS).
CASES: dict[str, Case] = {
    "claude-code": Case("claude-sonnet-4-5", "anthropic_messages", anthropic=True),
    "codex": Case("gpt-5-mini", "openai_responses"),
    "pi": Case("gpt-5-mini", "openai_chat_completions", options={"model_api": "openai-completions"}),
    "mini-swe-agent": Case("gpt-5-mini", "openai_chat_completions"),
}


@pytest.fixture(scope="module")
def model() -> Iterator[AgentModel]:
    server = AgentModel().start()
    yield server
    server.stop()


@pytest.fixture
def live(gw: Gateway, model: AgentModel, settings: Any) -> Gateway:  # noqa: F811
    settings.OPENAI_BASE_URL = model.url
    settings.ANTHROPIC_BASE_URL = model.url
    return gw


def _require_toolchain(agent: str) -> None:
    _require_containers()
    caps = harbor_adapter.agent_capabilities("podman")
    if not caps[agent].runs:
        pytest.fail(f"{agent} cannot run here: {caps[agent].reason}")


def _run(live: Gateway, agent: str, tmp_path: Path) -> tuple[TrialOutcome, str, float]:
    case = CASES[agent]
    subject, key = live.mint(case.model_id, subject=f"trial:agents-{agent}-{time.monotonic_ns()}")
    prefix = "anthropic" if case.anthropic else "openai"
    spec = AgentSpec(
        name=agent,
        model=f"{prefix}/{case.model_id}",
        base_url=live.anthropic_base if case.anthropic else live.openai_base,
        api_key=key,
        model_api_format=case.api_format,
        options=dict(case.options),
        timeout_sec=300,
    )
    started = time.monotonic()
    outcome = harbor_adapter.run_trial(
        task_dir=write_task(tmp_path / "task"),
        agent=spec,
        trial_name=f"agents-{agent}",
        trials_dir=tmp_path / "trials",
        environment_type="podman",
    )
    return outcome, subject, time.monotonic() - started


def _command_of(args: dict[str, Any]) -> str:
    value = args.get("cmd", args.get("command", ""))
    return " ".join(value) if isinstance(value, list) else str(value)


@pytest.mark.containers
@pytest.mark.parametrize("agent", list(CASES))
def test_agent_solves_the_task_in_podman_through_the_gateway(
    agent: str, live: Gateway, model: AgentModel, tmp_path: Path
) -> None:
    _require_toolchain(agent)
    calls_before = len(model.tool_calls)

    outcome, subject, elapsed = _run(live, agent, tmp_path)

    log = (outcome.trial_dir / "trial.log").read_text() if (outcome.trial_dir / "trial.log").is_file() else ""
    assert outcome.exception_type is None, f"{outcome.exception_type}: {outcome.exception_message}\n{log[-3000:]}"
    # The agent ran the pinned CLI from the toolchain (no install), and its model calls went through the gateway.
    assert outcome.agent_version == harbor_adapter.agent_capabilities("podman")[agent].version
    rows = live.rows(subject, count=2)
    assert len(rows) >= 2, [r.path for r in rows]
    # The model's shell command ran in the sandbox and fixed the task.
    issued = [_command_of(args) for _, args in model.tool_calls[calls_before:]]
    assert any(SOLVE_COMMAND in command for command in issued), issued
    if agent == "mini-swe-agent":
        assert any(SUBMIT_MARKER in command for command in issued), issued
    assert outcome.reward == 1.0 and outcome.reward_valid, outcome.verifier_output
    print(f"\n{agent} {outcome.agent_version}: reward {outcome.reward}, {len(rows)} gateway calls, {elapsed:.1f} s")


def test_muse_code_is_refused_on_podman_with_the_reason(tmp_path: Path) -> None:
    caps = harbor_adapter.agent_capabilities("podman")
    assert caps["muse-code"].runs is False and "dev.meta.ai" in caps["muse-code"].reason

    with pytest.raises(TrialSetupError, match="muse-code cannot run in a podman sandbox"):
        harbor_adapter.run_trial(
            task_dir=write_task(tmp_path / "task"),
            agent=AgentSpec(name="muse-code", model="openai/gpt-5-mini", base_url="http://127.0.0.1:1/v1"),
            trial_name="agents-muse",
            trials_dir=tmp_path / "trials",
            environment_type="podman",
        )


PROBE = """python3 - <<'PY'
import socket
for host, port in {targets}:
    try:
        socket.create_connection((host, port), 3).close()
        print(f"OPEN {{host}}:{{port}}")
    except OSError as exc:
        print(f"BLOCKED {{host}}:{{port}} {{type(exc).__name__}}")
PY
"""


@pytest.mark.containers
def test_agent_sandbox_reaches_the_gateway_and_nothing_else(live: Gateway, model: AgentModel, tmp_path: Path) -> None:
    _require_toolchain("claude-code")
    gateway_port = int(live.url.rsplit(":", 1)[1])
    targets = [
        ("127.0.0.1", gateway_port),  # the gateway, through the relay: the agent's only way out
        ("127.0.0.1", live.upstream.port),  # a host service on loopback (the upstream double): not the sandbox's
        ("10.88.0.1", gateway_port),  # the host as podman's default bridge sees it
        ("host.containers.internal", gateway_port),
        ("192.0.2.1", 443),  # anything outside
    ]
    model.solve_command = PROBE.format(targets=targets) + SOLVE_COMMAND
    try:
        outcome, _, _ = _run(live, "claude-code", tmp_path)
    finally:
        model.solve_command = SOLVE_COMMAND

    assert outcome.exception_type is None, outcome.exception_message
    # The probe's output came back to the model as the tool result.
    result_text = next(
        block["content"] if isinstance(block["content"], str) else json_text(block["content"])
        for request in reversed(model.requests)
        for message in request.body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )
    assert f"OPEN 127.0.0.1:{gateway_port}" in result_text, result_text
    assert result_text.count("BLOCKED") == 4, result_text
    assert outcome.reward == 1.0
    print("\n" + result_text.strip())


def json_text(content: list[Any]) -> str:
    return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
