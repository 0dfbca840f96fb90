"""Export tasks as one .tar.gz: manifest.json + tasks/<id>.tar.gz, each holding `harbor-task/` as Harbor runs it
(`harbor run -p harbor-task`). Exports contain the hidden tests and the reference solution, unencrypted."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from apps.tasks.models import Task
from selfbench import harbor_adapter

EXPORT_FORMAT = "selfbench-tasks/1"


def _task_archive(task: Task) -> bytes:
    assert task.version is not None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        root = task.version.path
        for path in sorted(root.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=f"harbor-task/{path.relative_to(root).as_posix()}")
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_file():
                with path.open("rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    return buf.getvalue()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(timezone.now().timestamp())
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def export_tasks(*, tasks: list[Task], dest: Path) -> Path:
    """Write the export of `tasks` (each with a verified version) to dest; the first task per PR wins."""
    seen: dict[tuple[str, int | None, str], int] = {}
    entries: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz") as tar:
        for task in tasks:
            if task.version is None:
                continue
            key = (task.source_repository, task.pr_number, task.head_sha)
            if key in seen:
                dropped.append({"taskId": task.pk, "duplicateOf": seen[key]})
                continue
            seen[key] = task.pk
            data = _task_archive(task)
            name = f"tasks/{task.pk}.tar.gz"
            _add_bytes(tar, name, data)
            entries.append(
                {
                    "taskId": task.pk,
                    "archive": name,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "contentHash": task.version.content_hash,
                    "sourceRepository": task.source_repository,
                    "pullRequest": task.pr_number,
                    "sourceCommit": task.base_sha,
                    "headCommit": task.head_sha,
                    "tier": task.tier,
                    "state": task.state,
                    "failToPass": task.version.fail_to_pass,
                    "passToPass": task.version.pass_to_pass,
                }
            )
        manifest = {
            "format": EXPORT_FORMAT,
            "createdAt": timezone.now().isoformat(),
            "selfbenchBuild": getattr(settings, "SELFBENCH_BUILD", "dev"),
            "generationBackend": "heuristic-v1",
            "harborVersion": harbor_adapter.harbor_version(),
            "harborEnvironment": settings.SANDBOX_ENVIRONMENT,
            "sourceCommits": sorted({t["sourceCommit"] for t in entries}),
            "taskIds": [t["taskId"] for t in entries],
            "tasks": entries,
            "droppedDuplicates": dropped,
            "note": "Contains hidden tests and reference solutions, unencrypted. Run one with: "
            "tar -xzf tasks/<id>.tar.gz && harbor run -p harbor-task --agent oracle",
        }
        _add_bytes(tar, "manifest.json", json.dumps(manifest, indent=1).encode())
    return dest
