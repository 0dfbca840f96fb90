"""Approved tasks for comparisons: real task files (content-addressed), approved through apps.tasks' own service."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from apps.accounts import services as account_services
from apps.accounts.models import Credential, Workspace
from apps.tasks import services as task_services
from apps.tasks import storage
from apps.tasks.models import Task, TaskState, TaskVersion
from tests.harbor.tasks import write_task

_seq = itertools.count(1)


def greeting_files(tmp: Path) -> dict[str, bytes]:
    """The one-file Harbor task of tests/harbor/tasks.py (FROM the local base image), as stored task files."""
    root = write_task(tmp / f"task-{next(_seq)}")
    return storage.read_tree(root)


def make_approved_task(*, workspace: Workspace, files: dict[str, bytes], batch: Any = None, **overrides: Any) -> Task:
    """A task verified by the gates and awaiting approval, then approved by apps.tasks' own service."""
    n = next(_seq)
    digest, _ = storage.store(files)
    task = Task.objects.create(
        workspace=workspace,
        batch=batch,
        source_path="/nonexistent",
        base_sha="a" * 40,
        head_sha="b" * 40,
        title=overrides.pop("title", f"Fix the greeting {n}"),
        tier="easy",
        state=TaskState.AWAITING_APPROVAL,
        **overrides,
    )
    version = TaskVersion.objects.create(task=task, content_hash=digest)
    Task.objects.filter(pk=task.pk).update(version=version)
    task.refresh_from_db()
    return task_services.task_approve(task=task, user=None, note="looks right")


def make_task(*, workspace: Workspace, files: dict[str, bytes], state: str = TaskState.IN_REVIEW) -> Task:
    digest, _ = storage.store(files)
    task = Task.objects.create(
        workspace=workspace,
        source_path="/nonexistent",
        base_sha="a" * 40,
        head_sha="b" * 40,
        title="Not yet approved",
        state=state,
    )
    version = TaskVersion.objects.create(task=task, content_hash=digest)
    Task.objects.filter(pk=task.pk).update(version=version)
    task.refresh_from_db()
    return task


def make_credential(*, workspace: Workspace, kind: str, secret: str = "", base_url: str = "") -> Credential:
    owner = workspace.memberships.get(role="owner")
    return account_services.credential_create(
        workspace=workspace,
        by=owner,
        name=f"{kind} key {next(_seq)}",
        kind=kind,
        secret=secret or f"sk-test-{kind}-{'0' * 24}",
        base_url=base_url,
    )
