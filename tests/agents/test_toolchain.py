"""The agents toolchain without containers: capabilities, the sandbox plan (overlay, pins), the gateway relay."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from selfbench import harbor_adapter
from selfbench.harbor_adapter import AgentSpec, TrialSetupError

VERSIONS = {"node": "22.23.5", "claude-code": "2.1.332", "codex": "0.171.0", "pi": "0.85.1", "mini-swe-agent": "2.4.6"}


@pytest.fixture
def toolchain(tmp_path: Path, settings: Any) -> Path:
    """A stand-in agents dir laid out as scripts/containers.sh --agents leaves it (current -> <recipe>)."""
    tree = tmp_path / "agents" / "abc123"
    tree.mkdir(parents=True)
    (tree / "versions.json").write_text(json.dumps(VERSIONS))
    (tmp_path / "agents" / "current").symlink_to("abc123")
    settings.SANDBOX_AGENTS_DIR = str(tmp_path / "agents")
    return tree


def test_capabilities_without_the_toolchain_say_how_to_build_it(tmp_path: Path, settings: Any) -> None:
    settings.SANDBOX_AGENTS_DIR = str(tmp_path / "none")

    caps = harbor_adapter.agent_capabilities("podman")

    assert set(caps) == set(harbor_adapter.HARNESSES)
    assert caps["terminus-2"].runs and caps["terminus-2"].model_calls_from == "worker"
    for agent in harbor_adapter.TOOLCHAIN_AGENTS:
        assert not caps[agent].runs and "scripts/containers.sh --agents" in caps[agent].reason
    assert not caps["muse-code"].runs and "dev.meta.ai" in caps["muse-code"].reason


def test_capabilities_with_the_toolchain_give_the_pinned_versions(toolchain: Path) -> None:
    caps = harbor_adapter.agent_capabilities("podman")

    for agent in harbor_adapter.TOOLCHAIN_AGENTS:
        assert caps[agent].runs and caps[agent].version == VERSIONS[agent]
        assert caps[agent].model_calls_from == "sandbox" and caps[agent].gateway_only_network
    assert not caps["muse-code"].runs


def test_cloud_sandboxes_leave_installs_to_harbor(toolchain: Path) -> None:
    caps = harbor_adapter.agent_capabilities("daytona")

    assert all(c.runs for c in caps.values())
    assert caps["codex"].version is None and "Harbor's own installer" in caps["codex"].reason


def test_plan_pins_the_version_mounts_the_toolchain_and_cuts_the_network(toolchain: Path) -> None:
    spec = AgentSpec(
        name="pi",
        model="openai/gpt-5-mini",
        base_url="http://web:8000/gateway/openai/v1",
        api_key="k",
        skills=("/srv/skills/review",),
    )

    plan = harbor_adapter._sandbox_agent_plan(spec, "podman")
    assert plan is not None
    try:
        assert plan.agent.options["version"] == "0.85.1"
        assert plan.agent.env["BASH_ENV"] == "/opt/agents/env.sh"
        assert plan.import_path == "selfbench.harbor_adapter:PreinstalledPi"
        assert plan.gateway == ("web", 8000)
        main = json.loads(plan.overlay.read_text())["services"]["main"]
        assert main["network_mode"] == "none"
        assert f"{toolchain.resolve()}:/opt/agents:ro" in main["volumes"]
        assert "gateway-relay.js 8000 /run/selfbench-gateway/gateway.sock" in main["command"][2]
        # The URL's host resolves to the sandbox's loopback, where the relay listens; the URL itself is unchanged.
        assert main["extra_hosts"] == ["web:127.0.0.1"]
        assert plan.agent.base_url == spec.base_url
        assert plan.agent.skills == spec.skills  # everything else the caller set is kept
    finally:
        shutil.rmtree(plan.workdir)


def test_plan_refuses_another_version_than_the_pinned_one(toolchain: Path) -> None:
    spec = AgentSpec(name="codex", model="openai/gpt-5-mini", options={"version": "0.1.0"})

    with pytest.raises(TrialSetupError, match=r"pins 0\.171\.0"):
        harbor_adapter._sandbox_agent_plan(spec, "podman")


def test_plan_leaves_other_agents_alone(toolchain: Path) -> None:
    assert harbor_adapter._sandbox_agent_plan(AgentSpec(name="oracle"), "podman") is None
    assert harbor_adapter._sandbox_agent_plan(AgentSpec(name="terminus-2", model="openai/x"), "podman") is None


def test_preinstalled_classes_load_by_import_path() -> None:
    from harbor.agents.installed.pi import Pi
    from harbor.utils.import_path import import_class

    cls = import_class("selfbench.harbor_adapter:PreinstalledPi")

    assert issubclass(cls, Pi) and cls.name() == "pi"


def test_relay_carries_a_connection_to_the_gateway(tmp_path: Path) -> None:
    async def scenario() -> bytes:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            data = await reader.readline()
            writer.write(b"gateway saw " + data)
            await writer.drain()
            writer.close()

        gateway = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = gateway.sockets[0].getsockname()[1]
        socket_path = tmp_path / "gw.sock"
        relay = await harbor_adapter._serve_gateway_relay(socket_path, "127.0.0.1", port)
        assert socket_path.stat().st_mode & 0o777 == 0o666  # a sandbox user that is not root connects too
        try:
            reader, writer = await asyncio.open_unix_connection(str(socket_path))
            writer.write(b"POST /v1/messages\n")
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            return answer
        finally:
            relay.close()
            gateway.close()

    assert asyncio.run(scenario()) == b"gateway saw POST /v1/messages\n"


def test_bad_options_are_reported_before_a_missing_toolchain(tmp_path: Path, settings: Any) -> None:
    settings.SANDBOX_AGENTS_DIR = str(tmp_path / "none")

    with pytest.raises(TrialSetupError, match="warp_speed"):
        harbor_adapter._sandbox_agent_plan(AgentSpec(name="claude-code", options={"warp_speed": True}), "podman")
    with pytest.raises(TrialSetupError, match=r"scripts/containers\.sh --agents"):
        harbor_adapter._sandbox_agent_plan(AgentSpec(name="claude-code"), "podman")
