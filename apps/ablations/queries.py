"""Reads of repo ablations shared by the API, the pages and apps.runs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from apps.ablations import building, services
from apps.ablations.models import BuildState, Environment, EnvironmentBuild
from apps.accounts.models import Workspace
from apps.tasks.models import Task


def environments_of(workspace: Workspace) -> QuerySet[Environment]:
    return Environment.objects.filter(workspace=workspace).select_related("repository")


def environment_get(*, workspace: Workspace, environment_id: int | str) -> Environment | None:
    try:
        pk = int(environment_id)
    except (TypeError, ValueError):
        return None
    return environments_of(workspace).filter(pk=pk).first()


@dataclass
class TaskBuildStatus:
    """One approved task's build in one environment; `state` is a BuildState, or `missing` / `stale`."""

    task: Task
    state: str
    reason: str
    build: EnvironmentBuild | None
    updated_at: datetime | None


def build_status(environment: Environment) -> list[TaskBuildStatus]:
    """Each approved task of the environment's repository with its build state there (missing when never built,
    stale when built from an older task version or script), then builds of tasks no longer approved."""
    script_hash = building.script_hash(environment.script)
    builds = {b.task_id: b for b in EnvironmentBuild.objects.filter(environment=environment).select_related("task")}
    rows: list[TaskBuildStatus] = []
    for task in services.approved_tasks(environment):
        build = builds.pop(task.pk, None)
        if build is None:
            rows.append(TaskBuildStatus(task, "missing", "not built yet", None, None))
        elif not services.build_is_current(build, task, script_hash) and build.state != BuildState.BUILDING:
            rows.append(TaskBuildStatus(task, "stale", "built from an older task version or script", build, None))
        else:
            rows.append(TaskBuildStatus(task, build.state, build.reason, build, build.updated_at))
    for build in builds.values():
        rows.append(
            TaskBuildStatus(
                build.task, build.state, build.reason or "the task is no longer approved", build, build.updated_at
            )
        )
    return rows


def build_counts(environments: list[Environment]) -> dict[int, dict[str, int]]:
    """Per environment: how many approved tasks are ready, pending, building, failed, or missing (incl. stale)."""
    out: dict[int, dict[str, int]] = {}
    for environment in environments:
        counts: Counter[str] = Counter()
        for row in build_status(environment):
            if row.task.state != "approved":
                continue
            counts["missing" if row.state == "stale" else row.state] += 1
        out[environment.pk] = {k: counts.get(k, 0) for k in ("ready", "pending", "building", "failed", "missing")}
    return out


def environment_snapshots(*, workspace: Workspace, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Frozen snapshots (services.environment_snapshot) of the workspace's environments with these ids, keyed by the
    id as given; ids that are not this workspace's environments are simply absent."""
    wanted: dict[int, str] = {}
    for raw in ids:
        try:
            wanted[int(raw)] = str(raw)
        except (TypeError, ValueError):
            continue
    rows = environments_of(workspace).filter(pk__in=list(wanted))
    return {wanted[e.pk]: services.environment_snapshot(e) for e in rows}
