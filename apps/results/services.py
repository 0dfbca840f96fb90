"""Writes of the results app: publish and withdraw releases, create task exports, create, build (the job) and cancel
registry grants."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.accounts.models import Workspace
from apps.repositories.models import Repository, RepositoryKind
from apps.results import jobs, registry, releases
from apps.results.models import GrantState, RegistryGrant, Release, ReleaseWithdrawal, TaskExport
from apps.tasks import export
from apps.tasks.models import Task, TaskState, TaskVersion
from selfbench.errors import Conflict, InvalidInput, NotFound


class ReleaseStale(Conflict):
    """The preview the client published against is out of date; `preview` is the fresh one."""

    code = "stale"

    def __init__(self, message: str, *, preview: releases.Preview) -> None:
        super().__init__(message)
        self.preview = preview


def _user(user: AbstractBaseUser | None) -> Any:
    return user if user is not None and user.is_authenticated else None


@transaction.atomic
def release_publish(
    *,
    repository: Repository,
    settings_chosen: list[str],
    head: str,
    fingerprint: str,
    publish_tasks: bool = False,
    publish_results_by_task: bool = False,
    by: AbstractBaseUser | None = None,
) -> tuple[Release, bool]:
    """Publish the chosen baseline configurations of a public GitHub repository. Returns (release, created): an
    identical current release is returned unchanged. Raises ReleaseStale (409) when the preview moved on and
    InvalidInput (400) for a private/local repository, unknown or non-baseline settings, or no shared task."""
    Repository.objects.select_for_update().filter(pk=repository.pk).first()  # one publish per line at a time
    if repository.kind != RepositoryKind.GITHUB or repository.is_private or not repository.full_name:
        raise InvalidInput("only a public GitHub repository can be released")
    fresh = releases.preview(repository)
    if not fresh.counted.releasable:
        raise InvalidInput("these tasks can never be released")
    if head != fresh.head or fingerprint != fresh.fingerprint:
        raise ReleaseStale("the results changed since this preview; review the fresh preview", preview=fresh)
    chosen = list(dict.fromkeys(settings_chosen))
    if not chosen:
        raise InvalidInput("choose at least one configuration")
    unknown = [c for c in chosen if fresh.candidate(c) is None]
    if unknown:
        raise InvalidInput(
            "only baseline configurations with a scored result can be released", errors={"settings": unknown}
        )
    shared = frozenset.intersection(*(c.covered for c in fresh.candidates if c.id in chosen))
    if not shared:
        raise InvalidInput("the chosen configurations share no approved task")
    task_ids = sorted(shared)
    document = releases.release_document(
        repository=repository,
        chosen=chosen,
        task_ids=task_ids,
        counted=fresh.counted,
        publish_tasks=publish_tasks,
        publish_results_by_task=publish_results_by_task,
    )
    digest = releases.content_hash(document)
    if fresh.current is not None and fresh.current.content_hash == digest:
        return fresh.current, False
    release = Release.objects.create(
        workspace=repository.workspace,
        repository=repository,
        github_id=repository.github_id,
        full_name=repository.full_name,
        settings=chosen,
        declined=[c.id for c in fresh.candidates if c.id not in chosen],
        task_ids=task_ids,
        head=fresh.head,
        fingerprint=fresh.fingerprint,
        content_hash=digest,
        publish_tasks=publish_tasks,
        publish_results_by_task=publish_results_by_task,
        document=document,
        published_by=_user(by),
    )
    return release, True


def release_withdraw(*, release: Release, by: AbstractBaseUser | None = None, reason: str = "") -> Release:
    """Withdraw a release: its line falls back to the newest release not withdrawn (or disappears)."""
    if ReleaseWithdrawal.objects.filter(release=release).exists():
        raise Conflict(f"release {release.pk} is already withdrawn")
    ReleaseWithdrawal.objects.create(release=release, withdrawn_by=_user(by), reason=reason)
    return release


def export_create(
    *, workspace: Workspace, task_ids: list[int] | None = None, repository: Repository | None = None, by: Any = None
) -> TaskExport:
    """Write an archive of approved, verified tasks (hidden tests and reference solutions included, unencrypted)
    and record its SHA-256 so a download can be verified."""
    tasks = Task.objects.filter(workspace=workspace, state=TaskState.APPROVED, version__verified_at__isnull=False)
    if repository is not None:
        tasks = tasks.filter(repository=repository)
    if task_ids:
        tasks = tasks.filter(pk__in=task_ids)
        missing = sorted(set(task_ids) - set(tasks.values_list("pk", flat=True)))
        if missing:
            raise InvalidInput(
                "only approved, verified tasks of this workspace can be exported", errors={"tasks": missing}
            )
    rows = list(tasks.select_related("version").order_by("pk"))
    if not rows:
        raise Conflict("nothing to export: no approved, verified task matches")
    record = TaskExport(workspace=workspace, repository=repository, task_ids=[t.pk for t in rows], created_by=_user(by))
    dest = Path(settings.MEDIA_ROOT) / "exports" / f"{record.uuid}.tar.gz"
    export.export_tasks(tasks=rows, dest=dest)
    sha = hashlib.sha256()
    with dest.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
    record.path, record.sha256, record.size = str(dest), sha.hexdigest(), dest.stat().st_size
    record.save()
    return record


def grant_create(
    *, workspace: Workspace, task_ids: list[int], ttl_seconds: int | None = None, note: str = "", by: Any = None
) -> tuple[RegistryGrant, str]:
    """Create a `building` grant for these approved tasks' images (each pinned to the task's current version) that
    expires after the TTL (default REGISTRY_GRANT_TTL_SECONDS), and schedule the build job after commit; nothing is
    built here. Returns the grant and its token (the registry password, shown once; it pulls once the grant is
    ready)."""
    ttl = settings.REGISTRY_GRANT_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    if not 60 <= ttl <= settings.REGISTRY_GRANT_MAX_TTL_SECONDS:
        raise InvalidInput(f"ttlSeconds must lie in 60..{settings.REGISTRY_GRANT_MAX_TTL_SECONDS}")
    ids = list(dict.fromkeys(task_ids))
    if not ids:
        raise InvalidInput("name at least one task")
    tasks = list(
        Task.objects.filter(workspace=workspace, pk__in=ids, state=TaskState.APPROVED, version__isnull=False)
        .select_related("version")
        .order_by("pk")
    )
    missing = sorted(set(ids) - {t.pk for t in tasks})
    if missing:
        raise InvalidInput("only approved tasks of this workspace can be granted", errors={"tasks": missing})
    images = []
    for task in tasks:
        assert task.version is not None
        images.append(
            {
                "taskId": task.pk,
                "repository": registry.repository_name(task.pk),
                "versionId": task.version.pk,
                "contentHash": task.version.content_hash,
                "digest": "",
            }
        )
    grant = RegistryGrant.objects.create(
        workspace=workspace,
        images=images,
        state=GrantState.BUILDING,
        expires_at=timezone.now() + timedelta(seconds=ttl),
        note=note,
        created_by=_user(by),
    )
    transaction.on_commit(lambda: jobs.enqueue_grant_build(grant.pk))
    return grant, registry.sign_grant(grant)


def grant_build(*, grant: RegistryGrant) -> RegistryGrant:
    """The build job's work: build and save each of the grant's task images (a saved image is reused, never built
    again), then set every digest and `ready` in one write, or `failed` with the reason. Safe to retry: a grant that
    is no longer building, or whose build another worker claimed less than REGISTRY_GRANT_BUILD_STALE_SECONDS ago,
    is returned unchanged."""
    claim = timezone.now()
    lost = claim - timedelta(seconds=settings.REGISTRY_GRANT_BUILD_STALE_SECONDS)
    claimed = (
        RegistryGrant.objects.filter(pk=grant.pk, state=GrantState.BUILDING)
        .filter(Q(build_started_at__isnull=True) | Q(build_started_at__lt=lost))
        .update(build_started_at=claim, build_attempts=F("build_attempts") + 1)
    )
    grant.refresh_from_db()
    if claimed != 1:
        return grant
    if grant.cancelled_at is not None:
        return _grant_finish(grant, claim=claim, failure="cancelled before its images were built")
    if grant.expires_at <= claim:
        return _grant_finish(grant, claim=claim, failure="expired before its images were built")
    versions = TaskVersion.objects.in_bulk([img["versionId"] for img in grant.images])
    built: list[dict[str, Any]] = []
    for img in grant.images:
        version = versions.get(img["versionId"])
        try:
            if version is None:
                raise registry.ImageError("its task version no longer exists")
            layout = registry.ensure_layout(version)
        except (registry.ImageError, OSError) as exc:
            return _grant_finish(grant, claim=claim, failure=f"task {img['taskId']}: {exc}")
        except Exception as exc:
            # Recorded before re-raising, so the grant does not stay `building` while django-q2 logs the traceback.
            _grant_finish(grant, claim=claim, failure=f"task {img['taskId']}: internal error: {exc!r}")
            raise
        built.append({**img, "digest": layout.digest})
    return _grant_finish(grant, claim=claim, images=built)


def _grant_finish(
    grant: RegistryGrant, *, claim: datetime, images: list[dict[str, Any]] | None = None, failure: str = ""
) -> RegistryGrant:
    """Ready with these images, or failed with the reason, in one write; only while this build still holds its claim
    (a worker whose claim was taken over changes nothing)."""
    fields: dict[str, Any] = (
        {"state": GrantState.FAILED, "failure_reason": failure[:2000]}
        if failure
        else {"state": GrantState.READY, "images": images, "ready_at": timezone.now(), "failure_reason": ""}
    )
    RegistryGrant.objects.filter(pk=grant.pk, state=GrantState.BUILDING, build_started_at=claim).update(**fields)
    grant.refresh_from_db()
    return grant


def grant_cancel(*, grant: RegistryGrant) -> RegistryGrant:
    """Cancel a grant: its token stops working at once."""
    if grant.cancelled_at is not None:
        raise Conflict(f"grant {grant.uuid} is already cancelled")
    grant.cancelled_at = timezone.now()
    grant.save(update_fields=["cancelled_at"])
    return grant


def grant_lookup(*, workspace: Workspace, grant_id: str) -> RegistryGrant:
    grant = RegistryGrant.objects.filter(workspace=workspace, uuid=grant_id).first()
    if grant is None:
        raise NotFound("no such grant")
    return grant
