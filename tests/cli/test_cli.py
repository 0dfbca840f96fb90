"""self-bench against a live server: grants (create, --wait, status, list, cancel) and exports (create, download)."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from apps.results import jobs, registry
from apps.results.models import TaskExport
from apps.tasks import storage
from selfbench import cli
from tests.harbor.tasks import write_task
from tests.results.factories import make_repository, make_task
from tests.results.test_registry import write_layout


@pytest.fixture(autouse=True)
def _media(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")


@pytest.fixture
def env(transactional_db, live_server, workspace, write_key, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SELFBENCH_API_URL", live_server.url)
    monkeypatch.setenv("SELFBENCH_API_TOKEN", write_key)
    monkeypatch.setenv("SELFBENCH_WORKSPACE", workspace.slug)
    return workspace


@pytest.fixture
def task(env, tmp_path):  # type: ignore[no-untyped-def]
    digest, _ = storage.store(storage.read_tree(write_task(tmp_path / "t")))
    t = make_task(repository=make_repository(workspace=env))
    t.version.content_hash = digest
    t.version.save()
    return t


def run(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Grant build jobs enqueued by the server (not run): grant ids."""
    ids: list[int] = []
    monkeypatch.setattr(jobs, "async_task", lambda func, grant_id, **kw: ids.append(grant_id))
    return ids


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch, enqueued: list[int]) -> list[float]:
    """The CLI's pauses between polls; the first one runs the enqueued build jobs, as the worker would meanwhile."""
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 1:
            for grant_id in enqueued:
                jobs.grant_build(grant_id)

    monkeypatch.setattr(cli, "sleep", pause)
    return pauses


def test_grant_create_returns_at_once_then_status_list_cancel(capsys, task, enqueued) -> None:  # type: ignore[no-untyped-def]
    digests = write_layout(task.version.content_hash)
    code, out, _ = run(capsys, "--json", "grant", "create", "--task", str(task.pk), "--ttl", "2h", "--note", "acme")
    assert code == 0
    grant = json.loads(out)
    assert grant["username"] == "selfbench" and grant["password"] and grant["status"] == "building"
    assert grant["images"][0]["digest"] is None and grant["pull"] == []
    code, out, _ = run(capsys, "status", grant["id"])
    assert code == 0 and "building" in out and "(building)" in out
    jobs.grant_build(enqueued[0])
    code, out, _ = run(capsys, "status", grant["id"])
    assert code == 0 and "active" in out and f"/selfbench/task-{task.pk}@{digests['manifest']}" in out
    code, out, _ = run(capsys, "grant", "list")
    assert grant["id"] in out and grant["password"] not in out
    code, out, _ = run(capsys, "cancel", grant["id"])
    assert code == 0 and "cancelled" in out
    code, _, err = run(capsys, "grant", "cancel", grant["id"])
    assert code == 1 and "409" in err


def test_grant_create_wait_polls_until_ready(capsys, task, worker) -> None:  # type: ignore[no-untyped-def]
    digests = write_layout(task.version.content_hash)
    code, out, _ = run(capsys, "grant", "create", "--task", str(task.pk), "--wait", "--interval", "0.01")
    assert code == 0 and len(worker) == 1  # polled once while building, then saw it ready
    credentials, _, ready = out.partition("waiting for the images to be built…")
    assert "building" in credentials and "password: " in credentials  # shown before the wait, whatever happens
    assert "active" in ready and f"/selfbench/task-{task.pk}@{digests['manifest']}" in ready


def test_grant_create_wait_as_json_prints_the_ready_grant_with_its_password(capsys, task, worker) -> None:  # type: ignore[no-untyped-def]
    digests = write_layout(task.version.content_hash)
    code, out, _ = run(capsys, "--json", "grant", "create", "--task", str(task.pk), "--wait", "--interval", "0.01")
    grant = json.loads(out)
    assert code == 0 and grant["status"] == "active" and grant["password"]
    assert grant["pull"] == [f"{grant['registry']}/selfbench/task-{task.pk}@{digests['manifest']}"]


def test_grant_create_wait_reports_a_failed_build(capsys, task, worker, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def podman(*args: str, timeout: int) -> None:
        raise registry.ImageError("podman build failed: no space left on device")

    monkeypatch.setattr(registry, "_podman", podman)
    code, out, err = run(capsys, "grant", "create", "--task", str(task.pk), "--wait", "--interval", "0.01")
    assert code == 1 and "password: " in out
    assert f"failed: task {task.pk}: podman build failed: no space left on device" in err


def test_grant_status_wait_gives_up_after_the_timeout(capsys, task, enqueued, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cli, "sleep", lambda seconds: None)
    code, out, _ = run(capsys, "--json", "grant", "create", "--task", str(task.pk))
    grant_id = json.loads(out)["id"]
    code, out, err = run(capsys, "grant", "status", grant_id, "--wait", "--timeout", "0")
    assert code == 1 and "building" in out
    assert f"still building after 0 s; wait again with: self-bench grant status {grant_id} --wait" in err


def test_export_then_download_verifies_and_writes_create_only(capsys, task, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(capsys, "--json", "export", "create", "--task", str(task.pk))
    assert code == 0 and "hidden tests and reference solutions, unencrypted" in err
    export = json.loads(out)
    dest = tmp_path / "out" / "tasks.tar.gz"
    code, out, err = run(capsys, "download", export["id"], "-o", str(dest))
    assert code == 0 and "verified" in out and "unencrypted" in err
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == export["sha256"]
    with tarfile.open(dest) as tar:
        assert "manifest.json" in tar.getnames()
    before = dest.read_bytes()
    code, _, err = run(capsys, "download", export["id"], "-o", str(dest))
    assert code == 1 and "create-only" in err and dest.read_bytes() == before


def test_download_refuses_an_archive_whose_hash_does_not_match(capsys, task, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(capsys, "--json", "export", "create", "--task", str(task.pk))
    export = json.loads(out)
    TaskExport.objects.filter(uuid=export["id"]).update(sha256="0" * 64)
    dest = tmp_path / "bad.tar.gz"
    code, _, err = run(capsys, "download", export["id"], "-o", str(dest))
    assert code == 1 and "SHA-256 mismatch" in err
    assert not dest.exists() and list(tmp_path.glob(".bad.tar.gz.*")) == []


def test_cli_needs_a_token_and_a_workspace(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SELFBENCH_API_TOKEN", raising=False)
    code, _, err = run(capsys, "--workspace", "x", "list")
    assert code == 1 and "SELFBENCH_API_TOKEN" in err
    monkeypatch.setenv("SELFBENCH_API_TOKEN", "sbk_x")
    monkeypatch.delenv("SELFBENCH_WORKSPACE", raising=False)
    code, _, err = run(capsys, "list")
    assert code == 1 and "SELFBENCH_WORKSPACE" in err


def test_ttl_parsing() -> None:
    assert [cli.parse_ttl(v) for v in ("90", "45m", "3h", "2d")] == [90, 2700, 10800, 172800]
