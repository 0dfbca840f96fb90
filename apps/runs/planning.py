"""A comparison's rules and matrix: check a normalized start body against the workspace, then list its trials.

`plan_comparison` reads (credentials, tasks, harness and environment snapshots) and never writes; it collects every
problem before raising one InvalidInput, so a client fixes its body in one round trip.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from apps.accounts.models import MODEL_CREDENTIAL_KINDS, Credential, Workspace
from apps.gateway import services as gateway_services
from apps.gateway.catalog import HARNESS_WIRE_FORMATS, PROVIDER_WIRE_FORMATS, CatalogModel, catalog_model
from apps.runs import configurations, sandboxes
from apps.runs.configurations import (
    Configuration,
    EnvironmentSnapshot,
    HarnessSnapshot,
    SubagentChoice,
)
from apps.runs.serializers import MAX_CONFIGURATIONS
from apps.tasks.models import Task, TaskState
from selfbench.errors import InvalidInput
from selfbench.harbor_adapter import HARNESSES

MANAGED = "managed-model"
SUBAGENT_AGENTS = ("claude-code", "codex")


@dataclass
class TrialGroup:
    """The trials of one evaluation that share an agent and a configuration: one per (task id, task version id,
    task directory) in `tasks`."""

    agent: str
    configuration: Configuration
    tasks: list[tuple[int, int, str]]


@dataclass
class PlannedEvaluation:
    position: int
    model: CatalogModel
    credential: Credential | None  # None = managed-model
    thinking: str
    harnesses: list[str]
    row_harness: HarnessSnapshot | None
    subagent: dict[str, Any] | None
    configurations: list[Configuration] = field(default_factory=list)


@dataclass
class Plan:
    evaluations: list[PlannedEvaluation]
    tasks: list[Task]
    sandbox_credential: Credential | None
    judge_credential: Credential | None


def _credential(
    value: str | None, *, credentials: dict[str, Credential], where: str, problems: list[str]
) -> Credential | None:
    if value is None or value == MANAGED:
        return None
    credential = credentials.get(str(value))
    if credential is None:
        problems.append(f"{where}: credential {value!r} is not a credential of this workspace")
    return credential


def _wire_formats(model: CatalogModel, credential: Credential | None) -> tuple[str, ...]:
    """What the upstream behind this model row speaks (a custom endpoint speaks only OpenAI's formats)."""
    kind = credential.kind if credential is not None else model.provider
    return PROVIDER_WIRE_FORMATS.get(kind, ())


def _check_model_credential(
    model: CatalogModel, credential: Credential | None, raw: str, where: str, problems: list[str]
) -> None:
    if raw == MANAGED:
        if not gateway_services.managed_secret(model.provider):
            problems.append(f"{where}: managed-model is not available for {model.provider} models on this deployment")
        return
    if credential is None:
        return
    if credential.kind not in MODEL_CREDENTIAL_KINDS:
        problems.append(f"{where}: credential {credential.name!r} is a {credential.kind} credential, not a model one")
    elif not model.served_by(credential.kind):
        problems.append(f"{where}: a {credential.kind} credential cannot serve {model.id}")


def _subagent(
    raw: dict[str, Any] | SubagentChoice | None,
    *,
    orchestrator: CatalogModel | None,
    credentials: dict[str, Credential],
    where: str,
    problems: list[str],
) -> SubagentChoice | None:
    if raw is None:
        return None
    choice = raw if isinstance(raw, SubagentChoice) else SubagentChoice(raw["catalogId"], str(raw["credentialId"]))
    model = catalog_model(choice.catalog_id)
    if model is None:
        problems.append(f"{where}: subagent model {choice.catalog_id!r} is not in the catalog")
        return choice
    if orchestrator is not None and orchestrator.id == model.id:
        problems.append(f"{where}: the subagent model must be another catalog model than {orchestrator.id}")
    credential = _credential(choice.credential_id, credentials=credentials, where=where, problems=problems)
    _check_model_credential(model, credential, choice.credential_id, f"{where} (subagent)", problems)
    return choice


def _default_subagent_credential(model_id: str, credentials: dict[str, Credential]) -> str | None:
    """'Left out, the first of the workspace's that can': the first model credential that serves the model."""
    model = catalog_model(model_id)
    if model is None:
        return None
    for credential in sorted(credentials.values(), key=lambda c: c.pk):
        # Never a custom endpoint: a subagent model goes through the gateway with a provider credential.
        if (
            credential.kind in MODEL_CREDENTIAL_KINDS
            and credential.kind != "custom"
            and model.served_by(credential.kind)
        ):
            return str(credential.pk)
    return MANAGED if gateway_services.managed_secret(model.provider) else None


def _inline_harness(index: int, condition: dict[str, Any]) -> HarnessSnapshot:
    sub = condition.get("subagent")
    return HarnessSnapshot(
        id=f"inline-{index}",
        name=condition.get("name") or f"{condition['agent']} (changed)",
        agent=condition["agent"],
        options=dict(condition.get("options") or {}),
        skills=tuple(condition.get("skills") or ()),
        instructions=condition.get("instructions") or "",
        subagent=SubagentChoice(sub["catalogId"], str(sub["credentialId"])) if sub else None,
    )


def _saved_pairs(
    body: dict[str, Any],
    harnesses: dict[str, HarnessSnapshot],
    environments: dict[str, EnvironmentSnapshot],
    problems: list[str],
) -> list[tuple[HarnessSnapshot | None, EnvironmentSnapshot | None]]:
    """The configurations besides the baseline, as (harness, environment) pairs, from either form of the body."""
    pairs: list[tuple[HarnessSnapshot | None, EnvironmentSnapshot | None]] = []
    if body.get("conditions") is not None:
        if body["harnesses"] or body["environments"]:
            problems.append("conditions: use either `conditions` or `harnesses`/`environments`, not both")
        for i, condition in enumerate(body["conditions"]):
            harness: HarnessSnapshot | None = None
            if condition.get("saved"):
                harness = harnesses.get(str(condition["saved"]))
                if harness is None:
                    problems.append(f"conditions.{i}.saved: no saved harness {condition['saved']!r} in this workspace")
                    continue
            elif condition.get("agent"):
                harness = _inline_harness(i, condition)
            environment = None
            if condition.get("environment"):
                environment = environments.get(str(condition["environment"]))
                if environment is None:
                    problems.append(f"conditions.{i}.environment: no environment {condition['environment']!r}")
                    continue
            if harness is None and environment is None:
                problems.append(f"conditions.{i}: name a saved harness, an environment, or the changes")
                continue
            pairs.append((harness, environment))
        return pairs
    for hid in body["harnesses"]:
        if hid in harnesses:
            pairs.append((harnesses[hid], None))
    for eid in body["environments"]:
        if eid in environments:
            pairs.append((None, environments[eid]))
    for hid in body["harnesses"]:
        for eid in body["environments"]:
            if hid in harnesses and eid in environments:
                pairs.append((harnesses[hid], environments[eid]))
    extra = len(body["harnesses"]) + len(body["environments"]) + len(body["harnesses"]) * len(body["environments"])
    if extra > MAX_CONFIGURATIONS:
        problems.append(
            f"harnesses × environments: {len(body['harnesses'])} harnesses and {len(body['environments'])} "
            f"environments make {extra} configurations besides the baseline; at most {MAX_CONFIGURATIONS}"
        )
    return pairs


def _tasks(body: dict[str, Any], workspace: Workspace, problems: list[str]) -> list[Task]:
    approved = Task.objects.filter(workspace=workspace, state=TaskState.APPROVED, version__isnull=False).select_related(
        "version"
    )
    if body.get("tasks") is None:
        tasks = list(approved.order_by("pk"))
        if not tasks:
            problems.append("tasks: this workspace has no approved tasks")
        return tasks
    wanted = {ref["taskId"]: ref["runId"] for ref in body["tasks"]}
    found = {t.pk: t for t in Task.objects.filter(workspace=workspace, pk__in=list(wanted)).select_related("version")}
    tasks = []
    for i, (task_id, run_id) in enumerate(wanted.items()):
        task = found.get(task_id)
        if task is None:
            problems.append(f"tasks.{i}: task {task_id} is not a task of this workspace")
        elif task.state != TaskState.APPROVED or task.version_id is None:
            problems.append(f"tasks.{i}: task {task_id} is {task.state}, not approved")
        elif task.batch_id != run_id:
            problems.append(f"tasks.{i}: task {task_id} belongs to run {task.batch_id}, not {run_id}")
        else:
            tasks.append(task)
    return tasks


def plan_comparison(*, workspace: Workspace, body: dict[str, Any]) -> Plan:
    """Check every rule of the spec against this workspace and build the matrix; raise InvalidInput listing all."""
    problems: list[str] = []
    credentials = {str(c.pk): c for c in Credential.objects.filter(workspace=workspace)}

    box = sandboxes.sandbox(body["sandbox"])
    sandbox_credential = _credential(
        body.get("sandboxCredentialId"), credentials=credentials, where="sandboxCredentialId", problems=problems
    )
    if box is None or not box.available:
        known = ", ".join(sandboxes.sandbox_ids_enabled())
        problems.append(f"sandbox: {body['sandbox']!r} is not a sandbox this deployment runs (available: {known})")
    elif box.credential_kind is None and body.get("sandboxCredentialId") not in (None, ""):
        problems.append(f"sandboxCredentialId: the {box.id} sandbox runs on this deployment and takes no credential")
    elif box.credential_kind is not None:
        if body.get("sandboxCredentialId") in (None, ""):
            problems.append(f"sandboxCredentialId: the {box.id} sandbox needs a {box.credential_kind} credential")
        elif sandbox_credential is not None and sandbox_credential.kind != box.credential_kind:
            problems.append(
                f"sandboxCredentialId: {sandbox_credential.name!r} is not a {box.credential_kind} credential"
            )
    judge = _credential(
        body.get("judgeCredentialId"), credentials=credentials, where="judgeCredentialId", problems=problems
    )
    if judge is not None and judge.kind not in MODEL_CREDENTIAL_KINDS:
        problems.append(f"judgeCredentialId: {judge.name!r} is not a model credential")

    harness_ids = sorted(
        {*body["harnesses"], *(str(m["harness"]) for m in body["models"] if m.get("harness"))}
        | {str(c["saved"]) for c in body.get("conditions") or [] if c.get("saved")}
    )
    env_ids = sorted(
        {*body["environments"], *(str(c["environment"]) for c in body.get("conditions") or [] if c.get("environment"))}
    )
    harnesses = configurations.load_harnesses(workspace=workspace, ids=harness_ids) if harness_ids else {}
    environments = configurations.load_environments(workspace=workspace, ids=env_ids) if env_ids else {}
    for hid in body["harnesses"]:
        if hid not in harnesses:
            problems.append(f"harnesses: no saved harness {hid!r} in this workspace")
    for eid in body["environments"]:
        if eid not in environments:
            problems.append(f"environments: no environment {eid!r} in this workspace")
    pairs = _saved_pairs(body, harnesses, environments, problems)
    if not body["baseline"] and not pairs:
        problems.append("baseline: `baseline: false` leaves nothing to run without harnesses or environments")

    rows: list[PlannedEvaluation] = []
    for i, row in enumerate(body["models"]):
        where = f"models.{i}"
        model = catalog_model(row["catalogId"])
        if model is None:
            problems.append(f"{where}.catalogId: {row['catalogId']!r} is not in the model catalog")
        credential = _credential(
            row["credentialId"], credentials=credentials, where=f"{where}.credentialId", problems=problems
        )
        if model is None:
            continue
        _check_model_credential(model, credential, str(row["credentialId"]), f"{where}.credentialId", problems)
        formats = _wire_formats(model, credential)
        for agent in row["harnesses"]:
            if not set(HARNESS_WIRE_FORMATS[agent]) & set(formats):
                problems.append(
                    f"{where}.harnesses: {agent} speaks {'/'.join(HARNESS_WIRE_FORMATS[agent])}; "
                    f"{model.id} is served here over {'/'.join(formats) or 'nothing'}"
                )
        thinking = row.get("thinking") or model.default_thinking
        if thinking not in model.thinking_levels:
            problems.append(f"{where}.thinking: {model.id} takes {', '.join(model.thinking_levels)}; not {thinking!r}")
        row_harness: HarnessSnapshot | None = None
        if row.get("harness"):
            row_harness = harnesses.get(str(row["harness"]))
            if row_harness is None:
                problems.append(f"{where}.harness: no saved harness {row['harness']!r} in this workspace")
            elif row_harness.agent not in row["harnesses"]:
                problems.append(f"{where}.harness: its agent is {row_harness.agent}, which this row does not run")
        legacy = _subagent(
            row.get("subagent"),
            orchestrator=model,
            credentials=credentials,
            where=f"{where}.subagent",
            problems=problems,
        )
        if legacy is not None and not set(row["harnesses"]) & set(SUBAGENT_AGENTS):
            problems.append(f"{where}.subagent: subagent models run on claude-code or codex only")
        rows.append(
            PlannedEvaluation(
                position=i,
                model=model,
                credential=credential,
                thinking=thinking,
                harnesses=list(row["harnesses"]),
                row_harness=row_harness,
                subagent=dict(row["subagent"]) if row.get("subagent") else None,
            )
        )

    # A harness runs only on its agent, and is refused when no picked model runs on it.
    picked_agents = {agent for row in body["models"] for agent in row["harnesses"]}
    for harness, _ in pairs:
        if harness is None:
            continue
        if harness.agent not in HARNESSES:
            problems.append(f"harness {harness.name!r}: unknown agent {harness.agent!r}")
        elif harness.agent not in picked_agents:
            problems.append(f"harness {harness.name!r} runs on {harness.agent}, which no picked model runs on")
        if harness.subagent is not None:
            if harness.agent not in SUBAGENT_AGENTS:
                problems.append(f"harness {harness.name!r}: subagent models run on claude-code or codex only")
            sub = harness.subagent
            if not sub.credential_id:
                default = _default_subagent_credential(sub.catalog_id, credentials)
                if default is None:
                    problems.append(
                        f"harness {harness.name!r}: no credential of this workspace serves {sub.catalog_id}"
                    )
            else:
                _subagent(
                    sub,
                    orchestrator=None,
                    credentials=credentials,
                    where=f"harness {harness.name!r}",
                    problems=problems,
                )

    tasks = _tasks(body, workspace, problems)
    if problems:
        raise InvalidInput(f"{len(problems)} problem(s) with this comparison", errors=problems)

    for planned in rows:
        legacy_sub = (
            SubagentChoice(planned.subagent["catalogId"], str(planned.subagent["credentialId"]))
            if planned.subagent
            else None
        )
        planned.configurations = _row_configurations(planned, legacy_sub, pairs, body["baseline"], credentials)
    return Plan(evaluations=rows, tasks=tasks, sandbox_credential=sandbox_credential, judge_credential=judge)


def _with_default_subagent(harness: HarnessSnapshot, credentials: dict[str, Credential]) -> HarnessSnapshot:
    if harness.subagent is None or harness.subagent.credential_id:
        return harness
    default = _default_subagent_credential(harness.subagent.catalog_id, credentials) or ""
    sub = SubagentChoice(harness.subagent.catalog_id, default, harness.subagent.prompt)
    return dataclasses.replace(harness, subagent=sub)


def _row_configurations(
    row: PlannedEvaluation,
    legacy_sub: SubagentChoice | None,
    pairs: list[tuple[HarnessSnapshot | None, EnvironmentSnapshot | None]],
    baseline: bool,
    credentials: dict[str, Credential],
) -> list[Configuration]:
    """Each (agent-agnostic) configuration the row runs. The row's own harness stands in for its agent as it is."""
    found: dict[str, Configuration] = {}
    candidates: list[tuple[HarnessSnapshot | None, EnvironmentSnapshot | None]] = []
    if baseline:
        candidates.append((row.row_harness, None))
    for harness, environment in pairs:
        candidates.append((harness if harness is not None else row.row_harness, environment))
    for harness, environment in candidates:
        if harness is not None:
            harness = _with_default_subagent(harness, credentials)
            # The harness skips a model that is its own subagent model.
            if harness.subagent is not None and harness.subagent.catalog_id == row.model.id:
                continue
        config = configurations.configuration(harness=harness, environment=environment, legacy_subagent=legacy_sub)
        found.setdefault(config.key, config)
    return list(found.values())


def task_runs(tasks: list[Task]) -> list[tuple[int, int, str]]:
    """Each task as a trial runs it as it is: (task id, task version id, task directory). Computed once per
    comparison and shared by its groups, not once per trial (24,000 paths for a large comparison)."""
    return [(t.pk, t.version.pk, str(t.version.path)) for t in tasks if t.version is not None]


def row_trial_groups(row: PlannedEvaluation, base: list[tuple[int, int, str]]) -> list[TrialGroup]:
    """The trials of one evaluation, grouped by agent × configuration: every task of `base` (see task_runs) on each
    of its agents in each configuration that applies (a configuration's environment runs only the tasks it built)."""
    groups: list[TrialGroup] = []
    built: dict[str, list[tuple[int, int, str]]] = {}
    for config in row.configurations:
        for agent in row.harnesses:
            applied = config
            if config.harness is not None and config.harness.agent != agent:
                continue  # a harness runs only on its agent
            if config.subagent is not None and agent not in SUBAGENT_AGENTS:
                if config.harness is not None:
                    continue
                # A legacy per-row subagent applies to the agents that can delegate; others run as they are.
                applied = configurations.configuration(harness=None, environment=config.environment)
            environment = applied.environment
            if environment is None:
                groups.append(TrialGroup(agent, applied, base))
                continue
            if environment.id not in built:
                built[environment.id] = [
                    (task_id, environment.task_versions.get(task_id, version_id), str(environment.task_dirs[task_id]))
                    for task_id, version_id, _ in base
                    if task_id in environment.task_dirs  # the environment has not built the others: left out
                ]
            groups.append(TrialGroup(agent, applied, built[environment.id]))
    return groups
