"""Every write to repo ablations ("environments") and their per-task builds; and the snapshot runs read.

environment_create / environment_update (a changed script rebuilds every task) → environment_build_missing creates or
resets a build per approved task that has none, failed, or is stale, and enqueues one job each → (job)
environment_build_run builds that task's version in the environment and checks it (image build, then the oracle).
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.ablations import building, jobs
from apps.ablations.models import BuildState, Environment, EnvironmentBuild
from apps.repositories.models import Repository
from apps.tasks import gates, storage
from apps.tasks import services as task_services
from apps.tasks.models import Task, TaskState
from selfbench.errors import Conflict, InvalidInput

logger = logging.getLogger(__name__)

MAX_INFRA_ATTEMPTS = 3
MAX_SCRIPT_CHARS = 20_000
LOG_CAP = 60_000
_UNSET: Any = object()


def stale_after() -> timedelta:
    """A build still `building` this long after it started lost its worker; Build Missing Tasks takes it again."""
    return timedelta(seconds=int(getattr(settings, "ABLATIONS_BUILD_STALE_SECONDS", 3 * 3600)))


def _check_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidInput("name: 1 to 100 characters")
    return name


def _check_script(script: str) -> str:
    normalized = building.normalize_script(script)
    if not normalized.strip():
        raise InvalidInput("script: say what to run in /app (e.g. `rm -f AGENTS.md`)")
    if len(normalized) > MAX_SCRIPT_CHARS:
        raise InvalidInput(f"script: at most {MAX_SCRIPT_CHARS} characters")
    return normalized.rstrip("\n")


def _save(environment: Environment) -> Environment:
    try:
        with transaction.atomic():
            environment.save()
    except IntegrityError as exc:
        raise Conflict(f"this repository already has an environment named {environment.name!r}") from exc
    return environment


@transaction.atomic
def environment_create(
    *, repository: Repository, name: str, script: str, created_by: User | AnonymousUser | None = None
) -> Environment:
    """Create a repo ablation of the repository and schedule a build of each of its approved tasks."""
    environment = _save(
        Environment(
            workspace_id=repository.workspace_id,
            repository=repository,
            name=_check_name(name),
            script=_check_script(script),
            created_by=created_by if isinstance(created_by, User) else None,
        )
    )
    environment_build_missing(environment=environment)
    return environment


@transaction.atomic
def environment_update(*, environment: Environment, name: str = _UNSET, script: str = _UNSET) -> Environment:
    """Rename it or change its script. A changed script makes every build stale: all are built again. Runs already
    made keep the task versions they ran (content-addressed, never removed)."""
    if name is not _UNSET:
        environment.name = _check_name(name)
    changed = False
    if script is not _UNSET:
        script = _check_script(script)
        changed = script != environment.script
        environment.script = script
    _save(environment)
    if changed:
        environment_build_missing(environment=environment)
    return environment


def environment_delete(*, environment: Environment) -> None:
    """Delete the environment and its build records. Trials keep their task directories and versions."""
    environment.delete()


# --- builds ---------------------------------------------------------------------------------------------------------


def approved_tasks(environment: Environment) -> list[Task]:
    return list(
        Task.objects.filter(
            repository_id=environment.repository_id, state=TaskState.APPROVED, version__isnull=False
        ).order_by("pk")
    )


def build_is_current(build: EnvironmentBuild, task: Task, script_hash: str) -> bool:
    """Built (or being built) from the task's current version with the environment's current script."""
    return build.base_version_id == task.version_id and build.script_hash == script_hash


@transaction.atomic
def environment_build_missing(*, environment: Environment) -> list[EnvironmentBuild]:
    """Build Missing Tasks: a pending build (one job each, after commit) for every approved task with no build, a
    failed one, a stale one (another task version or script), or one whose worker was lost. Ready and running builds
    are left alone, so calling it twice enqueues nothing new."""
    environment = Environment.objects.select_for_update().get(pk=environment.pk)
    script_hash = building.script_hash(environment.script)
    existing = {b.task_id: b for b in EnvironmentBuild.objects.filter(environment=environment)}
    lost_before = timezone.now() - stale_after()
    queued: list[EnvironmentBuild] = []
    for task in approved_tasks(environment):
        build = existing.get(task.pk)
        if build is not None and build_is_current(build, task, script_hash):
            if build.state == BuildState.READY:
                continue
            if build.state == BuildState.BUILDING and (build.started_at or timezone.now()) > lost_before:
                continue
            if build.state == BuildState.PENDING:
                queued.append(build)  # enqueue again: its job may have been lost; a second one is a no-op
                continue
        fields: dict[str, Any] = {
            "base_version_id": task.version_id,
            "version": None,
            "script_hash": script_hash,
            "state": BuildState.PENDING,
            "reason": "",
            "log": "",
            "details": {},
            "started_at": None,
            "finished_at": None,
        }
        if build is None:
            build = EnvironmentBuild.objects.create(environment=environment, task=task, **fields)
        else:
            for key, value in fields.items():
                setattr(build, key, value)
            build.attempts = 0
            build.save()
        queued.append(build)
    ids = [b.pk for b in queued]

    def enqueue() -> None:
        for pk in ids:
            jobs.enqueue_environment_build(pk)

    transaction.on_commit(enqueue)
    return queued


def _finish(build: EnvironmentBuild, *, state: str, reason: str, log: str = "", **extra: Any) -> EnvironmentBuild:
    EnvironmentBuild.objects.filter(pk=build.pk).update(
        state=state, reason=reason, log=log[-LOG_CAP:], finished_at=timezone.now(), updated_at=timezone.now(), **extra
    )
    build.refresh_from_db()
    return build


def _gate(run: Any, task_dir: Path, label: str, build: EnvironmentBuild) -> gates.GateResult:
    """One gate through apps.tasks (infrastructure errors retried), named for the environment and the task."""
    result: gates.GateResult | None = None
    for attempt in range(1, MAX_INFRA_ATTEMPTS + 1):
        name = f"env{build.environment_id}-task{build.task_id}-{label}-{attempt}-{uuid.uuid4().hex[:8]}"
        result = run(task_dir, name)
        if result.status != gates.INFRA:
            break
    assert result is not None
    return result


def environment_build_run(*, build: EnvironmentBuild) -> EnvironmentBuild:
    """Build one task in its environment: store the changed files as a task version (apps.tasks), build its image
    and run the oracle on it through the Harbor adapter; ready, or failed with the reason."""
    claimed = EnvironmentBuild.objects.filter(pk=build.pk, state=BuildState.PENDING).update(
        state=BuildState.BUILDING,
        started_at=timezone.now(),
        attempts=F("attempts") + 1,
        updated_at=timezone.now(),
    )
    build.refresh_from_db()
    if claimed != 1:
        return build
    environment = build.environment
    task = build.task
    base = task.version
    if task.state != TaskState.APPROVED or base is None or base.pk != build.base_version_id:
        return _finish(build, state=BuildState.FAILED, reason="the task is no longer approved at this version")
    started = time.monotonic()
    try:
        files = building.ablate(storage.read_tree(base.path), name=environment.name, script=environment.script)
    except (building.AblationError, OSError) as exc:
        return _finish(build, state=BuildState.FAILED, reason=str(exc))
    version = task_services.task_version_derive(task=task, base=base, files=files)
    EnvironmentBuild.objects.filter(pk=build.pk).update(version=version)
    details: dict[str, Any] = {"taskDir": str(version.path)}
    logs: list[str] = []
    for label, run in (("build", gates.run_build), ("oracle", gates.run_oracle)):
        result = _gate(run, version.path, label, build)
        details[label] = {"status": result.status, "reason": result.reason, "trialName": result.trial_name}
        logs.append(f"=== {label}: {result.status}: {result.reason}\n{result.log}")
        if result.status != gates.PASSED:
            infra = f"infrastructure failed {MAX_INFRA_ATTEMPTS} times: " if result.status == gates.INFRA else ""
            details["seconds"] = round(time.monotonic() - started, 1)
            return _finish(
                build,
                state=BuildState.FAILED,
                reason=f"{label} gate: {infra}{result.reason}"[:2000],
                log="\n".join(logs),
                details=details,
            )
    details["seconds"] = round(time.monotonic() - started, 1)
    return _finish(
        build,
        state=BuildState.READY,
        reason="the image builds with the script and the oracle passes",
        log="\n".join(logs),
        details=details,
    )


# --- reads runs need ------------------------------------------------------------------------------------------------


def ready_versions(environment: Environment) -> dict[int, Any]:
    """Each approved task's version built in the environment, by task id, when it is ready and current (tasks it
    has not built, failed, or built from an older task version or script are absent)."""
    script_hash = building.script_hash(environment.script)
    rows = (
        EnvironmentBuild.objects.filter(environment=environment, state=BuildState.READY, script_hash=script_hash)
        .filter(Q(task__state=TaskState.APPROVED), base_version_id=F("task__version_id"))
        .select_related("version")
    )
    return {b.task_id: b.version for b in rows if b.version is not None}


def environment_snapshot(environment: Environment) -> dict[str, Any]:
    """The environment frozen for a run: its script and, per task id, the ready task version and its directory;
    plus the approved tasks it does not have ready, with why (runs leave those out and say which)."""
    ready = ready_versions(environment)
    states = {
        b.task_id: (b.state, b.reason)
        for b in EnvironmentBuild.objects.filter(environment=environment).only("task_id", "state", "reason")
    }
    missing: dict[str, str] = {}
    for task in approved_tasks(environment):
        if task.pk not in ready:
            state, reason = states.get(task.pk, ("missing", "not built yet: Build Missing Tasks builds it"))
            if state == BuildState.READY:
                state, reason = "stale", "built from an older task version or script"
            missing[str(task.pk)] = f"{state}: {reason}" if reason else state
    return {
        "id": str(environment.pk),
        "name": environment.name,
        "repositoryId": environment.repository_id,
        "script": environment.script,
        "taskVersions": {str(tid): v.pk for tid, v in ready.items()},
        "taskDirs": {str(tid): str(v.path) for tid, v in ready.items()},
        "notReady": missing,
    }
