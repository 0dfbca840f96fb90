"""Tasks API: list with filters, detail with files and gate runs, approve/reject, export."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from django.utils import timezone

from apps.tasks import storage
from apps.tasks.models import GateRun, GateStatus, Task, TaskState, TaskVersion
from tests.factories import make_workspace
from tests.tasks.test_services import make_task

pytestmark = pytest.mark.django_db


def url(workspace, tail: str) -> str:  # type: ignore[no-untyped-def]
    return f"/api/w/{workspace.slug}/{tail}"


def verified(workspace, tmp_path: Path, **kw) -> Task:  # type: ignore[no-untyped-def]
    task = make_task(workspace, state=TaskState.AWAITING_APPROVAL, **kw)
    digest, _ = storage.store(
        {
            "task.toml": b'schema_version = "1.4"\n',
            "instruction.md": b"Add multiply\n",
            "tests/test.sh": b"#!/bin/bash\n",
        }
    )
    version = TaskVersion.objects.create(
        task=task, content_hash=digest, fail_to_pass=["t::a"], pass_to_pass=[], verified_at=timezone.now()
    )
    Task.objects.filter(pk=task.pk).update(version=version)
    GateRun.objects.create(task=task, version=version, gate="oracle", status=GateStatus.PASSED, log="SB-REWARD 1.0")
    task.refresh_from_db()
    return task


def test_list_filters_by_state_and_tier(api, workspace, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    verified(workspace, tmp_path)
    make_task(workspace, state=TaskState.REJECTED, reason="oracle gate: no", tier="medium")
    make_task(make_workspace(), state=TaskState.REJECTED, reason="other workspace")
    assert len(api.get(url(workspace, "tasks")).json()) == 2
    rows = api.get(url(workspace, "tasks"), {"state": "rejected"}).json()
    assert [r["reason"] for r in rows] == ["oracle gate: no"] and rows[0]["tier"] == "medium"
    assert api.get(url(workspace, "tasks"), {"tier": "hard"}).json() == []
    assert api.get(url(workspace, "tasks"), {"state": "nonsense"}).status_code == 400


def test_detail_has_files_and_gate_runs_with_logs(api, workspace, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    task = verified(workspace, tmp_path)
    body = api.get(url(workspace, f"tasks/{task.pk}")).json()
    assert body["state"] == "awaiting_approval" and body["failToPass"] == ["t::a"]
    assert {f["path"] for f in body["files"]} == {"task.toml", "instruction.md", "tests/test.sh"}
    assert body["gateRuns"][0]["gate"] == "oracle" and body["gateRuns"][0]["log"] == "SB-REWARD 1.0"


def test_approve_and_reject_with_a_note(api, workspace, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    task = verified(workspace, tmp_path)
    assert api.post(url(workspace, f"tasks/{task.pk}/reject"), {}, format="json").status_code == 400
    r = api.post(url(workspace, f"tasks/{task.pk}/approve"), {"note": "good"}, format="json")
    assert r.status_code == 200 and r.json()["state"] == "approved" and r.json()["decisionNote"] == "good"
    assert api.post(url(workspace, f"tasks/{task.pk}/approve"), {}, format="json").status_code == 409
    r = api.post(url(workspace, f"tasks/{task.pk}/reject"), {"note": "changed my mind"}, format="json")
    assert r.json()["state"] == "rejected" and r.json()["reason"] == "rejected by a person: changed my mind"


def test_read_key_cannot_approve(read_key, workspace, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    settings.MEDIA_ROOT = tmp_path
    task = verified(workspace, tmp_path)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {read_key}")
    assert client.post(url(workspace, f"tasks/{task.pk}/approve"), {}, format="json").status_code == 403


def test_export_has_a_manifest_with_checksums(api, workspace, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import hashlib

    settings.MEDIA_ROOT = tmp_path
    task = verified(workspace, tmp_path)
    r = api.get(url(workspace, f"tasks/{task.pk}/export"))
    assert r.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(b"".join(r.streaming_content))) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        (entry,) = manifest["tasks"]
        inner = tar.extractfile(entry["archive"]).read()  # type: ignore[union-attr]
    assert manifest["taskIds"] == [task.pk] and entry["sourceCommit"] == "a" * 40
    assert hashlib.sha256(inner).hexdigest() == entry["sha256"]
    with tarfile.open(fileobj=io.BytesIO(inner)) as tar:
        assert "harbor-task/task.toml" in tar.getnames()
    # Only approved tasks go into a repository export.
    assert api.get(url(workspace, "tasks/export")).status_code == 409
