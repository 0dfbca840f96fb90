"""Every write to saved harnesses, and the two reads runs need: a harness's frozen snapshot and its fingerprint.

Rules (each a clear InvalidInput / Conflict): the agent is one of the six harnesses; skills have a valid shape and
only claude-code, codex and pi load them; options pass the agent's Harbor option model and never route the model
around the gateway; a subagent model is for claude-code and codex only, is a catalog model, and its credential goes
through the gateway (no custom endpoint), defaulting to the first of the workspace's that can serve it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction

from apps.accounts.models import MODEL_CREDENTIAL_KINDS, Credential, CredentialKind, Workspace
from apps.gateway import services as gateway_services
from apps.gateway.catalog import catalog_model
from apps.harnesses import skills as skill_sources
from apps.harnesses.models import SKILL_AGENTS, SUBAGENT_AGENTS, Agent, Harness
from selfbench import harbor_adapter
from selfbench.errors import Conflict, InvalidInput

MANAGED = "managed-model"
DEFAULT_DELEGATION_PROMPT = (
    "Delegate a meaningful part of each task to subagents: they run on another model through the same gateway."
)
# Options SelfBench sets itself: the model's route (always the gateway) and how it is spoken to.
RESERVED_OPTIONS = {
    "base_url": "the model is always reached through SelfBench's gateway",
    "api_base": "the model is always reached through SelfBench's gateway",
    "model_api": "SelfBench picks the wire format the gateway serves for the model",
    "session_id": "SelfBench names each trial's session",
}
_UNSET: Any = object()


@dataclass(frozen=True)
class SubagentInput:
    catalog_id: str
    credential: Credential | None
    managed: bool
    prompt: str


# --- identity -------------------------------------------------------------------------------------------------------


def normalize_instructions(text: str) -> str:
    return "\n".join(line.rstrip() for line in (text or "").replace("\r\n", "\n").split("\n")).strip()


def fingerprint(
    *,
    agent: str,
    skills: list[str],
    instructions: str,
    options: dict[str, Any],
    subagent_catalog_id: str = "",
    subagent_prompt: str = "",
) -> str:
    """The configuration identity: a hash of what the harness changes. Its name and the credential that pays for
    its subagent model are not changes, so harnesses that differ only there are one configuration."""
    changes = {
        "agent": agent,
        "skills": sorted(skills),
        "instructions": normalize_instructions(instructions),
        "options": options,
        "subagent": {"catalogId": subagent_catalog_id, "prompt": subagent_prompt} if subagent_catalog_id else None,
    }
    canonical = json.dumps(changes, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def harness_fingerprint(harness: Harness) -> str:
    return fingerprint(
        agent=harness.agent,
        skills=list(harness.skills),
        instructions=harness.instructions,
        options=dict(harness.options),
        subagent_catalog_id=harness.subagent_catalog_id,
        subagent_prompt=harness.subagent_prompt,
    )


# --- validation -----------------------------------------------------------------------------------------------------


def _check_agent(agent: str) -> None:
    if agent not in Agent.values:
        raise InvalidInput(f"agent: {agent!r} is not one of {', '.join(Agent.values)}", errors={"agent": [agent]})


def _check_skills(agent: str, raw: list[str]) -> list[str]:
    if not isinstance(raw, list):
        raise InvalidInput("skills: a list of org/repo, org/repo@ref or git URLs")
    normalized = skill_sources.normalize(raw)
    if normalized and agent not in SKILL_AGENTS:
        raise InvalidInput(
            f"skills: {agent} does not load skills; only claude-code, codex and pi do",
            errors={"skills": [f"{agent} does not load skills"]},
        )
    return normalized


def _check_options(agent: str, options: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(options, dict):
        raise InvalidInput("options: an object of the agent's Harbor options")
    problems = [f"{key}: {why}" for key, why in RESERVED_OPTIONS.items() if key in options]
    if agent == Agent.CLAUDE_CODE and options.get("permission_mode", "bypassPermissions") != "bypassPermissions":
        problems.append("permission_mode: Claude Code always runs with its permission checks bypassed")
    if not problems:
        problems = harbor_adapter.validate_agent_options(agent, options)
    if problems:
        raise InvalidInput(f"options for {agent}: " + "; ".join(problems), errors={"options": problems})
    return dict(options)


def default_subagent_credential(*, workspace: Workspace, catalog_id: str) -> Credential | str | None:
    """'Left out, the first of the workspace's that can': the oldest model credential (never a custom endpoint,
    which the gateway cannot route a catalog model through) that serves the model; else managed-model if this
    deployment has it; else None."""
    model = catalog_model(catalog_id)
    if model is None:
        return None
    for credential in Credential.objects.filter(workspace=workspace).order_by("pk"):
        if (
            credential.kind in MODEL_CREDENTIAL_KINDS
            and credential.kind != CredentialKind.CUSTOM
            and model.served_by(credential.kind)
        ):
            return credential
    return MANAGED if gateway_services.managed_secret(model.provider) else None


def _check_subagent(*, workspace: Workspace, agent: str, raw: dict[str, Any] | None) -> SubagentInput | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw.get("catalogId"):
        raise InvalidInput("subagent: {catalogId, credentialId?, prompt?}")
    if agent not in SUBAGENT_AGENTS:
        raise InvalidInput(
            f"subagent: subagent models run on claude-code and codex only, not {agent}",
            errors={"subagent": [f"{agent} runs no subagent model"]},
        )
    catalog_id = str(raw["catalogId"])
    model = catalog_model(catalog_id)
    if model is None:
        raise InvalidInput(f"subagent.catalogId: {catalog_id!r} is not in the model catalog")
    raw_credential = raw.get("credentialId")
    credential: Credential | None = None
    managed = False
    if raw_credential in (None, ""):
        if default_subagent_credential(workspace=workspace, catalog_id=model.id) is None:
            raise InvalidInput(
                f"subagent.credentialId: no credential of this workspace can serve {model.id} through the gateway; "
                "add one or name it"
            )
    elif str(raw_credential) == MANAGED:
        if not gateway_services.managed_secret(model.provider):
            raise InvalidInput(f"subagent.credentialId: managed-model is not available for {model.provider} models")
        managed = True
    else:
        credential = Credential.objects.filter(workspace=workspace, pk=_int(raw_credential)).first()
        if credential is None:
            raise InvalidInput(f"subagent.credentialId: {raw_credential!r} is not a credential of this workspace")
        if credential.kind == CredentialKind.CUSTOM:
            raise InvalidInput(
                f"subagent.credentialId: {credential.name!r} is a custom endpoint; a subagent model is called "
                "through SelfBench's gateway with a provider credential"
            )
        if credential.kind not in MODEL_CREDENTIAL_KINDS:
            raise InvalidInput(f"subagent.credentialId: {credential.name!r} is not a model credential")
        if not model.served_by(credential.kind):
            raise InvalidInput(
                f"subagent.credentialId: {credential.name!r} ({credential.kind}) cannot serve {model.id}"
            )
    prompt = raw.get("prompt", None)
    if prompt is not None and not isinstance(prompt, str):
        raise InvalidInput('subagent.prompt: text, or "" to tell the agent nothing')
    return SubagentInput(
        catalog_id=model.id,
        credential=credential,
        managed=managed,
        prompt=DEFAULT_DELEGATION_PROMPT if prompt is None else prompt,
    )


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _check_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidInput("name: 1 to 100 characters")
    return name


# --- writes ---------------------------------------------------------------------------------------------------------


def _apply(harness: Harness, *, workspace: Workspace, subagent: dict[str, Any] | None) -> None:
    """Validate the harness's fields in place (name, agent, skills, options, subagent) and set its fingerprint."""
    harness.name = _check_name(harness.name)
    _check_agent(harness.agent)
    harness.skills = _check_skills(harness.agent, list(harness.skills or []))
    harness.options = _check_options(harness.agent, harness.options if harness.options is not None else {})
    harness.instructions = normalize_instructions(harness.instructions)
    sub = _check_subagent(workspace=workspace, agent=harness.agent, raw=subagent)
    harness.subagent_catalog_id = sub.catalog_id if sub else ""
    harness.subagent_credential = sub.credential if sub else None
    harness.subagent_managed = sub.managed if sub else False
    harness.subagent_prompt = sub.prompt if sub else ""
    harness.fingerprint = harness_fingerprint(harness)


def _save(harness: Harness) -> Harness:
    try:
        with transaction.atomic():
            harness.save()
    except IntegrityError as exc:
        raise Conflict(f"a harness named {harness.name!r} already exists in this workspace") from exc
    return harness


def harness_create(
    *,
    workspace: Workspace,
    name: str,
    agent: str,
    skills: list[str] | None = None,
    instructions: str = "",
    options: dict[str, Any] | None = None,
    subagent: dict[str, Any] | None = None,
    created_by: User | AnonymousUser | None = None,
) -> Harness:
    """Save a harness for the workspace after checking every rule; its fingerprint is its configuration identity."""
    harness = Harness(
        workspace=workspace,
        name=name,
        agent=agent,
        skills=skills or [],
        instructions=instructions or "",
        options=options if options is not None else {},
        created_by=created_by if isinstance(created_by, User) else None,
    )
    _apply(harness, workspace=workspace, subagent=subagent)
    return _save(harness)


def subagent_choice(harness: Harness) -> dict[str, Any] | None:
    """The harness's subagent as the API shows and takes it (credentialId null: the default credential)."""
    if not harness.subagent_catalog_id:
        return None
    credential: str | None = None
    if harness.subagent_managed:
        credential = MANAGED
    elif harness.subagent_credential_id is not None:
        credential = str(harness.subagent_credential_id)
    return {"catalogId": harness.subagent_catalog_id, "credentialId": credential, "prompt": harness.subagent_prompt}


def harness_update(
    *,
    harness: Harness,
    name: str = _UNSET,
    agent: str = _UNSET,
    skills: list[str] = _UNSET,
    instructions: str = _UNSET,
    options: dict[str, Any] = _UNSET,
    subagent: dict[str, Any] | None = _UNSET,
) -> Harness:
    """Change the given fields and check every rule again. Runs that used the harness keep their snapshot."""
    workspace = harness.workspace
    if name is not _UNSET:
        harness.name = name
    if agent is not _UNSET:
        harness.agent = agent
    if skills is not _UNSET:
        harness.skills = skills or []
    if instructions is not _UNSET:
        harness.instructions = instructions or ""
    if options is not _UNSET:
        harness.options = options if options is not None else {}
    current = subagent_choice(harness) if subagent is _UNSET else subagent
    _apply(harness, workspace=workspace, subagent=current)
    return _save(harness)


def harness_delete(*, harness: Harness) -> None:
    """Delete the harness. Trials keep the snapshot they ran with (no row points at the harness), so no run changes."""
    harness.delete()


# --- reads runs need ------------------------------------------------------------------------------------------------


def harness_snapshot(harness: Harness) -> dict[str, Any]:
    """What the harness changes, frozen (a plain dict): runs store it, so editing or deleting the harness later
    changes nothing they ran. The subagent credential is resolved now ('the first of the workspace's that can')."""
    subagent: dict[str, Any] | None = None
    if harness.subagent_catalog_id:
        credential_id: str | None
        defaulted = False
        if harness.subagent_managed:
            credential_id = MANAGED
        elif harness.subagent_credential_id is not None:
            credential_id = str(harness.subagent_credential_id)
        else:
            defaulted = True
            found = default_subagent_credential(workspace=harness.workspace, catalog_id=harness.subagent_catalog_id)
            credential_id = found if isinstance(found, str) or found is None else str(found.pk)
        subagent = {
            "catalogId": harness.subagent_catalog_id,
            "credentialId": credential_id,
            "credentialDefaulted": defaulted,
            "prompt": harness.subagent_prompt,
        }
    return {
        "id": str(harness.pk),
        "name": harness.name,
        "agent": harness.agent,
        "skills": list(harness.skills),
        "instructions": harness.instructions,
        "instructionsInSystemPrompt": harness.instructions_in_system_prompt,
        "options": dict(harness.options),
        "subagent": subagent,
        "fingerprint": harness.fingerprint,
    }
