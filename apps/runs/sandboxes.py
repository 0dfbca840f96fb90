"""Sandboxes trials can run in, whether each can hold the agent's network to the gateway, and their stop switch."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

from selfbench import harbor_adapter

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sandbox:
    """One Harbor environment type. `network` says how the agent's network limit is held (or why it is not)."""

    id: str
    name: str
    credential_kind: str | None  # the workspace credential a cloud sandbox needs; None for local engines
    network_enforced: bool
    network: str

    @property
    def available(self) -> bool:
        return self.id in sandbox_ids_enabled()


# What holds the agent's network to the gateway on each sandbox: see apps/runs/network.py. Harbor's capability table
# says docker, daytona, modal and e2b can hold an allowlist, but SelfBench does not set one there yet.
SANDBOXES: tuple[Sandbox, ...] = (
    Sandbox(
        "podman",
        "Podman (this machine)",
        None,
        False,
        "terminus-2 (model loop in the worker): no network at all, enforced. Agents installed in the sandbox: "
        "not enforced, since Harbor's egress sidecar image cannot be pulled here.",
    ),
    Sandbox("docker", "Docker", None, False, "Not enforced yet (Harbor's egress sidecar could hold an allowlist)."),
    Sandbox("daytona", "Daytona", "daytona", False, "Not enforced yet (Harbor can hold an allowlist there)."),
    Sandbox("modal", "Modal", "modal", False, "Not enforced yet (Harbor can hold an allowlist there)."),
    Sandbox("e2b", "E2B", "e2b", False, "Not enforced yet (Harbor can hold an allowlist there)."),
)


def sandbox_ids_enabled() -> tuple[str, ...]:
    """Sandboxes this deployment runs trials in (RUNS_SANDBOXES; the configured SANDBOX_ENVIRONMENT by default)."""
    enabled = getattr(settings, "RUNS_SANDBOXES", None) or [settings.SANDBOX_ENVIRONMENT]
    return tuple(enabled)


def sandbox(sandbox_id: str) -> Sandbox | None:
    return next((s for s in SANDBOXES if s.id == sandbox_id), None)


def sandbox_limit(sandbox_id: str) -> int:
    """How many trials may run at once in this sandbox type, across workspaces."""
    limits: dict[str, int] = getattr(settings, "RUNS_SANDBOX_CONCURRENCY", {}) or {}
    return int(limits.get(sandbox_id, 2 if sandbox_id in ("podman", "docker") else 16))


def containers_remove(*, sandbox_id: str, trial_name: str) -> int:
    """Remove a trial's containers (a cancel, or a worker that died mid-trial). Returns how many were removed.

    The adapter removes every container named after the trial on a local engine; cloud sandboxes are stopped by the
    worker's own cancellation of the Harbor run instead (0 here).
    """
    removed = harbor_adapter.trial_containers_remove(trial_name=trial_name, environment_type=sandbox_id)
    if removed:
        logger.info("removed %d containers of %s", removed, trial_name)
    return removed


def containers_running(*, sandbox_id: str, trial_name: str) -> bool | None:
    """Whether a trial's sandbox is up (None when this sandbox type cannot be asked from here)."""
    return harbor_adapter.trial_containers_running(trial_name=trial_name, environment_type=sandbox_id)
