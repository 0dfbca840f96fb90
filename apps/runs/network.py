"""The agent's network: reach only its model's host (the gateway), per sandbox and agent.

terminus-2 runs its model loop in the worker process (Harbor calls LiteLLM from the host), so its sandbox needs no
network at all: on podman a compose overlay sets `network_mode: none` on the main service. Agents installed in the
sandbox call the gateway from inside it: on a local engine (podman, docker) the adapter's `run_trial` gives their
sandbox no network but a relay to the gateway (the adapter's `agent_capabilities` says so per agent); Harbor's own
allowlist would need its egress sidecar image from Docker Hub, which these hosts cannot pull. Elsewhere the limit is
not enforced by SelfBench yet, and each trial records that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

# Agents whose model calls come from the Harbor process, not from inside the sandbox.
HOST_LOOP_AGENTS = ("terminus-2",)

_NO_NETWORK_OVERLAY = "services:\n  main:\n    network_mode: none\n"


@dataclass(frozen=True)
class NetworkPlan:
    enforced: bool
    policy: str
    environment_kwargs: dict[str, Any] = field(default_factory=dict)


def _no_network_overlay() -> Path:
    path = Path(settings.HARBOR_TRIALS_DIR) / "_overlays" / "no-network.yaml"
    if not path.is_file() or path.read_text() != _NO_NETWORK_OVERLAY:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_NO_NETWORK_OVERLAY)
    return path


def network_plan(*, sandbox_id: str, agent: str) -> NetworkPlan:
    """How this trial's agent is held to the gateway, and whether it is held at all."""
    if sandbox_id == "podman" and agent in HOST_LOOP_AGENTS:
        return NetworkPlan(
            True,
            "none: the sandbox has no network (the agent's model calls come from the worker, through the gateway)",
            {"extra_docker_compose": [_no_network_overlay()]},
        )
    from selfbench.harbor_adapter import agent_capabilities

    capability = agent_capabilities(sandbox_id).get(agent)
    if capability is not None and capability.gateway_only_network:
        return NetworkPlan(
            True, "gateway only: the sandbox has no network but a relay to the gateway (held by the adapter)"
        )
    return NetworkPlan(False, f"public: not enforced by SelfBench on {sandbox_id} yet")


def enforced_for(*, sandbox_id: str) -> dict[str, bool]:
    """Per agent: whether the limit holds on this sandbox (the catalog shows it)."""
    from selfbench.harbor_adapter import HARNESSES

    return {agent: network_plan(sandbox_id=sandbox_id, agent=agent).enforced for agent in HARNESSES}
