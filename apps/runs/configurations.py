"""Configurations: the baseline, saved harnesses, environments (repo ablations) and harness × environment.

Saved harnesses and environments belong to apps.harnesses and apps.ablations (issue 7). Comparisons only need a
frozen snapshot of each, read through `load_harnesses` / `load_environments`, which turn those apps' snapshot dicts
(harnesses.services.harness_snapshot, ablations.services.environment_snapshot) into the dataclasses below.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apps.accounts.models import Workspace

BASELINE_KEY = "baseline"
BASELINE_LABEL = "Baseline"


@dataclass(frozen=True)
class SubagentChoice:
    """Another catalog model for the work an orchestrator delegates, and the credential that pays for it."""

    catalog_id: str
    credential_id: str  # a credential id, or "managed-model"
    prompt: str | None = None  # None: the default delegation prompt; "": tell the agent nothing


@dataclass(frozen=True)
class HarnessSnapshot:
    """What a saved harness changes about its one agent, frozen when a comparison starts."""

    id: str
    name: str
    agent: str
    options: dict[str, Any] = field(default_factory=dict)
    skills: tuple[str, ...] = ()
    instructions: str = ""
    instructions_in_system_prompt: bool = False
    subagent: SubagentChoice | None = None
    fingerprint: str = ""  # apps.harnesses' configuration identity of a saved harness

    @property
    def identity(self) -> str:
        """Two harnesses that change the same things are one configuration, whatever they are named."""
        if self.fingerprint:
            return self.fingerprint[:16]
        changes = {
            "agent": self.agent,
            "options": self.options,
            "skills": sorted(self.skills),
            "instructions": self.instructions,
            "system": self.instructions_in_system_prompt,
            "subagent": None
            if self.subagent is None
            else [self.subagent.catalog_id, self.subagent.credential_id, self.subagent.prompt],
        }
        return hashlib.sha256(json.dumps(changes, sort_keys=True).encode()).hexdigest()[:16]

    def as_spec(self) -> dict[str, Any]:
        return {
            "harnessId": self.id,
            "harnessName": self.name,
            "options": self.options,
            "skills": list(self.skills),
            "instructions": self.instructions,
            "instructionsInSystemPrompt": self.instructions_in_system_prompt,
            "subagent": None
            if self.subagent is None
            else {
                "catalogId": self.subagent.catalog_id,
                "credentialId": self.subagent.credential_id,
                "prompt": self.subagent.prompt,
            },
        }


@dataclass(frozen=True)
class EnvironmentSnapshot:
    """A repo ablation: the task directories it built, by task id (tasks it has not built are left out)."""

    id: str
    name: str
    task_dirs: dict[int, Path] = field(default_factory=dict)
    task_versions: dict[int, int] = field(default_factory=dict)  # the task version built there, by task id
    not_ready: dict[int, str] = field(default_factory=dict)  # approved tasks it leaves out, and why


def load_harnesses(*, workspace: Workspace, ids: list[str]) -> dict[str, HarnessSnapshot]:
    """Snapshots of the workspace's saved harnesses with these ids (missing ids are simply absent)."""
    from apps.harnesses import queries

    out: dict[str, HarnessSnapshot] = {}
    for key, snap in queries.harness_snapshots(workspace=workspace, ids=ids).items():
        sub = snap["subagent"]
        out[key] = HarnessSnapshot(
            id=snap["id"],
            name=snap["name"],
            agent=snap["agent"],
            options=dict(snap["options"]),
            skills=tuple(snap["skills"]),
            instructions=snap["instructions"],
            instructions_in_system_prompt=snap["instructionsInSystemPrompt"],
            subagent=None
            if sub is None
            else SubagentChoice(sub["catalogId"], str(sub["credentialId"] or ""), sub["prompt"]),
            fingerprint=snap["fingerprint"],
        )
    return out


def load_environments(*, workspace: Workspace, ids: list[str]) -> dict[str, EnvironmentSnapshot]:
    """Snapshots of the workspace's environments with these ids (missing ids are simply absent)."""
    from apps.ablations import queries

    return {
        key: EnvironmentSnapshot(
            id=snap["id"],
            name=snap["name"],
            task_dirs={int(t): Path(d) for t, d in snap["taskDirs"].items()},
            task_versions={int(t): int(v) for t, v in snap["taskVersions"].items()},
            not_ready={int(t): why for t, why in snap["notReady"].items()},
        )
        for key, snap in queries.environment_snapshots(workspace=workspace, ids=ids).items()
    }


@dataclass(frozen=True)
class Configuration:
    """One column of results: the row's agent changed by at most one harness, on tasks from at most one environment."""

    key: str
    label: str
    harness: HarnessSnapshot | None
    environment: EnvironmentSnapshot | None
    subagent: SubagentChoice | None

    @property
    def is_baseline(self) -> bool:
        return self.harness is None and self.environment is None and self.subagent is None


def configuration(
    *,
    harness: HarnessSnapshot | None,
    environment: EnvironmentSnapshot | None,
    legacy_subagent: SubagentChoice | None = None,
    legacy_subagent_name: str = "",
) -> Configuration:
    """Name and key a configuration (a legacy `models[].subagent` applies when the harness has none)."""
    parts_key: list[str] = []
    parts_label: list[str] = []
    subagent = harness.subagent if harness is not None and harness.subagent is not None else legacy_subagent
    if harness is not None:
        parts_key.append(f"harness:{harness.identity}")
        parts_label.append(harness.name)
    if environment is not None:
        parts_key.append(f"environment:{environment.id}")
        parts_label.append(environment.name)
    if subagent is not None and (harness is None or harness.subagent is None):
        parts_key.append(f"subagent:{subagent.catalog_id}:{subagent.credential_id}")
        parts_label.append(f"subagents on {legacy_subagent_name or subagent.catalog_id}")
    return Configuration(
        key="+".join(parts_key) or BASELINE_KEY,
        label=" · ".join(parts_label) or BASELINE_LABEL,
        harness=harness,
        environment=environment,
        subagent=subagent,
    )
