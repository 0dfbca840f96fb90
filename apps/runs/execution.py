"""One trial through Harbor: the gateway key, the agent's settings, the sandbox's network, and what is stored after.

`run` is called by services.trial_execute with a claimed trial; it never writes trial rows itself.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apps.gateway import services as gateway_services
from apps.gateway.catalog import (
    ANTHROPIC_MESSAGES,
    HARNESS_WIRE_FORMATS,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    PROVIDER_WIRE_FORMATS,
    catalog_model,
)
from apps.gateway.models import Role
from apps.runs import network
from apps.runs.configurations import Configuration
from apps.runs.models import Trial, TrialArtifact, TrialStatus
from selfbench import harbor_adapter
from selfbench.harbor_adapter import AgentSpec, TrialOutcome
from selfbench.redaction import redact

logger = logging.getLogger(__name__)

ARTIFACT_CAP_BYTES = 1024 * 1024  # each text artifact (SelfBench: 1 MiB)
ARTIFACTS_TOTAL_CAP_BYTES = 4 * 1024 * 1024  # per trial (4 MiB)
TRANSCRIPT_CAP_CHARS = 256 * 1024
DEFAULT_DELEGATION_PROMPT = (
    "Delegate a meaningful part of each task to subagents: they run on another model through the same gateway."
)

# `thinking` → each agent's reasoning option (None: leave the option out, the agent's own default).
_THINKING: dict[str, dict[str, str | None]] = {
    "claude-code": {"off": None, "minimal": "low"},
    "codex": {"off": "none"},
    "pi": {},
    "mini-swe-agent": {"off": None},
    "terminus-2": {"off": "none"},
    "muse-code": {"off": "minimal", "max": "ultra"},
}


def reasoning_option(agent: str, thinking: str) -> str | None:
    """The value of the agent's `reasoning_effort` option for a comparison's `thinking` level."""
    mapping = _THINKING.get(agent, {})
    return mapping[thinking] if thinking in mapping else thinking


def wire_format(agent: str, model_id: str, credential_kind: str | None) -> str:
    """The first wire format the agent speaks that the upstream behind the model serves."""
    model = catalog_model(model_id)
    assert model is not None
    served = PROVIDER_WIRE_FORMATS.get(credential_kind or model.provider, ())
    for fmt in HARNESS_WIRE_FORMATS[agent]:
        if fmt in served:
            return fmt
    raise harbor_adapter.TrialSetupError(f"{agent} cannot reach {model_id}: no shared wire format")


def frozen_spec(config: Configuration) -> dict[str, Any]:
    """What a configuration changes, frozen into the trial (editing a saved harness later changes no trial)."""
    return {
        "harness": config.harness.as_spec() if config.harness else None,
        "environment": {"id": config.environment.id, "name": config.environment.name} if config.environment else None,
        "subagent": None
        if config.subagent is None
        else {
            "catalogId": config.subagent.catalog_id,
            "credentialId": config.subagent.credential_id,
            "prompt": config.subagent.prompt,
        },
    }


# Our wire format names → Harbor's ModelApiFormat values.
_HARBOR_FORMAT = {
    OPENAI_CHAT: "openai_chat_completions",
    OPENAI_RESPONSES: "openai_responses",
    ANTHROPIC_MESSAGES: "anthropic_messages",
}


def _model_name(fmt: str, model_id: str) -> str:
    return f"anthropic/{model_id}" if fmt == ANTHROPIC_MESSAGES else f"openai/{model_id}"


def agent_spec(trial: Trial, raw_key: str) -> tuple[AgentSpec, list[str]]:
    """The Harbor agent for this trial, pointed at the gateway with its key; and instructions to append."""
    evaluation = trial.evaluation
    credential_kind = evaluation.credential.kind if evaluation.credential is not None else None
    fmt = wire_format(trial.agent, evaluation.catalog_id, credential_kind)
    urls = gateway_services.base_urls()
    base_url = urls["anthropic"] if fmt == ANTHROPIC_MESSAGES else urls["openai"]
    harness = trial.spec.get("harness") or {}
    subagent = trial.spec.get("subagent")
    options: dict[str, Any] = dict(harness.get("options") or {})
    env: dict[str, str] = {}
    extra_instructions: list[str] = []
    effort = reasoning_option(trial.agent, evaluation.thinking)
    if effort is not None:
        options.setdefault("reasoning_effort", effort)
    if trial.agent == "pi":
        options.setdefault(
            "model_api",
            {OPENAI_CHAT: "openai-completions", OPENAI_RESPONSES: "openai-responses"}.get(fmt, "anthropic-messages"),
        )
    if trial.agent == "terminus-2":
        options.setdefault("session_id", str(trial.uuid))
        # Its recorder (asciinema) would be installed with apt or pip in a sandbox that has no network: a wait
        # that always fails. The trajectory is the transcript.
        options.setdefault("record_terminal_session", False)
    skill_dirs: tuple[str, ...] = ()
    if harness.get("skills"):
        from apps.harnesses import skills

        try:
            skill_dirs = tuple(str(f.path) for f in skills.fetch_all(list(harness["skills"])))
        except skills.SkillFetchError as exc:
            raise harbor_adapter.TrialSetupError(f"harness skills: {exc}") from exc

    system_parts: list[str] = []
    if harness.get("instructions"):
        if harness.get("instructionsInSystemPrompt") and trial.agent in ("claude-code", "codex"):
            system_parts.append(harness["instructions"])
        else:
            extra_instructions.append(harness["instructions"])
    if subagent is not None:
        prompt = subagent.get("prompt")
        prompt = DEFAULT_DELEGATION_PROMPT if prompt is None else prompt
        if prompt:
            system_parts.append(prompt)
        if trial.agent == "claude-code":
            # Harbor defaults every Claude Code tier to the main model behind a custom base URL; subagents get theirs.
            for tier in ("SONNET", "OPUS", "HAIKU"):
                env[f"ANTHROPIC_DEFAULT_{tier}_MODEL"] = subagent["catalogId"]
            env["CLAUDE_CODE_SUBAGENT_MODEL"] = subagent["catalogId"]
    if system_parts:
        text = "\n\n".join(system_parts)
        if trial.agent == "claude-code":
            options["append_system_prompt"] = "\n\n".join(filter(None, [options.get("append_system_prompt"), text]))
        elif trial.agent == "codex":
            config = dict(options.get("config") or {})
            config["developer_instructions"] = "\n\n".join(filter(None, [config.get("developer_instructions"), text]))
            options["config"] = config
    spec = AgentSpec(
        name=trial.agent,
        model=_model_name(fmt, evaluation.catalog_id),
        base_url=base_url,
        api_key=raw_key,
        model_api_format=_HARBOR_FORMAT[fmt],
        options=options,
        env=env,
        timeout_sec=None,
        skills=skill_dirs,
    )
    return spec, extra_instructions


@dataclass
class RunResult:
    status: str
    outcome: TrialOutcome | None
    error_type: str = ""
    error: str = ""
    network_enforced: bool | None = None
    network_policy: str = ""
    raw_key: str = ""


def failed_result(exc: BaseException) -> RunResult:
    return RunResult(status=TrialStatus.FAILED, outcome=None, error_type=type(exc).__name__, error=str(exc)[:4000])


def _routes(trial: Trial) -> list[gateway_services.ModelRoute]:
    evaluation = trial.evaluation
    main = evaluation.credential if evaluation.credential is not None else gateway_services.MANAGED
    routes = [gateway_services.ModelRoute(evaluation.catalog_id, main)]
    subagent = trial.spec.get("subagent")
    if subagent is not None:
        from apps.accounts.models import Credential

        credential_id = str(subagent["credentialId"])
        sub_credential = (
            gateway_services.MANAGED
            if credential_id == gateway_services.MANAGED
            else Credential.objects.get(pk=int(credential_id), workspace_id=trial.workspace_id)
        )
        routes.append(gateway_services.ModelRoute(subagent["catalogId"], sub_credential, role=Role.SUBAGENT))
    return routes


def run(trial: Trial, *, ttl_seconds: int) -> RunResult:
    """Mint the trial's key, run Harbor in the trial's sandbox, and say how it ended (the key is revoked by the
    caller). A trial is completed when the verifier gave a reward Harbor counts as valid; otherwise failed."""
    _, raw_key = gateway_services.trial_key_mint(
        workspace=trial.workspace, subject=trial.subject, models=_routes(trial), ttl_seconds=ttl_seconds
    )
    plan = network.network_plan(sandbox_id=trial.sandbox, agent=trial.agent)
    try:
        spec, extra_instructions = agent_spec(trial, raw_key)
        outcome = harbor_adapter.run_trial(
            task_dir=Path(trial.task_dir),
            agent=spec,
            trial_name=trial.harbor_name,
            environment_type=trial.sandbox,
            environment_kwargs=dict(plan.environment_kwargs),
            extra_instructions=extra_instructions,
        )
    except Exception as exc:
        result = failed_result(exc)
        result.network_enforced, result.network_policy, result.raw_key = plan.enforced, plan.policy, raw_key
        return result
    completed = outcome.reward is not None and (outcome.exception_type is None or outcome.reward_valid)
    return RunResult(
        status=TrialStatus.COMPLETED if completed else TrialStatus.FAILED,
        outcome=outcome,
        network_enforced=plan.enforced,
        network_policy=plan.policy,
        raw_key=raw_key,
    )


def settled_usage(subject: str, *, settle_seconds: float = 0.5, timeout: float = 10.0) -> gateway_services.TrialUsage:
    """The gateway's roll-up once its ledger writer has caught up (rows land just after each response ends)."""
    deadline = time.monotonic() + timeout
    usage = gateway_services.trial_usage(subject=subject)
    while time.monotonic() < deadline:
        time.sleep(settle_seconds)
        again = gateway_services.trial_usage(subject=subject)
        if again.calls == usage.calls:
            return again
        usage = again
    return usage


def usage_fields(usage: gateway_services.TrialUsage) -> dict[str, Any]:
    return {
        "calls": usage.calls,
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cost_usd": usage.cost_usd,
        "billed_cost_usd": usage.billed_cost_usd,
        "cost_complete": usage.cost_complete,
        "model_verified": usage.model_verified,
        "subagent_calls": usage.subagent_calls,
    }


def _scrub(text: str, raw_key: str) -> str:
    if raw_key:
        text = text.replace(raw_key, "[REDACTED:gateway_key]")
    return redact(text)


def _transcript(trajectory: Path | None, raw_key: str) -> str:
    """A readable transcript from Harbor's ATIF trajectory: one block per step."""
    if trajectory is None or not trajectory.is_file():
        return ""
    try:
        data = json.loads(trajectory.read_text(errors="replace"))
    except ValueError:
        return _scrub(trajectory.read_text(errors="replace")[:TRANSCRIPT_CAP_CHARS], raw_key)
    blocks: list[str] = []
    for step in data.get("steps") or []:
        message = step.get("message")
        if not isinstance(message, str):
            message = json.dumps(message, ensure_ascii=False)
        lines = [f"## {step.get('step_id', '?')} · {step.get('source', '?')}", message or ""]
        for call in step.get("tool_calls") or []:
            lines.append(
                f"→ {call.get('function_name', 'tool')}: {json.dumps(call.get('arguments'), ensure_ascii=False)}"
            )
        observation = step.get("observation")
        if observation:
            lines.append(f"← {json.dumps(observation, ensure_ascii=False)[:4000]}")
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    if len(text) > TRANSCRIPT_CAP_CHARS:
        text = text[:TRANSCRIPT_CAP_CHARS] + f"\n[... {len(text) - TRANSCRIPT_CAP_CHARS} characters cut ...]"
    return _scrub(text, raw_key)


def result_fields(result: RunResult, usage: gateway_services.TrialUsage) -> dict[str, Any]:
    """The trial's columns after a run (the gateway ledger is the source of cost, tokens and the model check)."""
    fields: dict[str, Any] = {
        **usage_fields(usage),
        "network_enforced": result.network_enforced,
        "network_policy": result.network_policy,
    }
    outcome = result.outcome
    if outcome is None:
        from django.utils import timezone

        fields.update(
            failure_cause="setup_failed",
            exception_type=result.error_type,
            exception_message=_scrub(result.error, result.raw_key),
            finished_at=timezone.now(),
        )
        return fields
    fields.update(
        reward=outcome.reward,
        rewards=outcome.rewards,
        reward_valid=outcome.reward_valid,
        failure_cause=outcome.failure_cause or "",
        exception_type=outcome.exception_type or "",
        exception_message=_scrub(outcome.exception_message or "", result.raw_key)[:8000],
        finished_at=outcome.finished_at,
        timings={k: v for k, v in outcome.timings.items()},
        harbor_cost_usd=outcome.cost_usd,
        trial_dir=str(outcome.trial_dir),
        trajectory_path=str(outcome.trajectory_path or ""),
        transcript=_transcript(outcome.trajectory_path, result.raw_key),
    )
    if outcome.started_at is not None:
        fields["started_at"] = outcome.started_at
    return fields


def _is_text(data: bytes) -> bool:
    return b"\x00" not in data[:8192]


def store_artifacts(trial: Trial, result: RunResult) -> list[TrialArtifact]:
    """Copy the trial's text files (agent logs, trajectory, verifier output, collected artifacts) into the database,
    redacted, each capped at 1 MiB and 4 MiB in all; binary files are skipped."""
    outcome = result.outcome
    if outcome is None or not outcome.trial_dir.is_dir():
        return []
    root = outcome.trial_dir
    files = sorted(p for sub in ("agent", "verifier", "artifacts") for p in (root / sub).rglob("*") if p.is_file())
    budget = ARTIFACTS_TOTAL_CAP_BYTES
    rows: list[TrialArtifact] = []
    for path in files:
        if budget <= 0:
            break
        size = path.stat().st_size
        with path.open("rb") as fh:
            data = fh.read(min(ARTIFACT_CAP_BYTES, budget))
        if not _is_text(data):
            continue
        budget -= len(data)
        rows.append(
            TrialArtifact(
                trial=trial,
                name=str(path.relative_to(root)),
                size=size,
                truncated=len(data) < size,
                content=_scrub(data.decode("utf-8", errors="replace"), result.raw_key),
            )
        )
    TrialArtifact.objects.filter(trial=trial).delete()
    return TrialArtifact.objects.bulk_create(rows)
