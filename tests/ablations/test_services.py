"""Repo ablations: rules, Build Missing Tasks (idempotent, one job per build), build states, and the snapshot runs
read. The gates are apps.tasks' own; here their container runs are replaced by results (podman: test_e2e)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from apps.ablations import jobs, queries, services
from apps.ablations.models import BuildState, Environment, EnvironmentBuild
from apps.repositories.models import Repository
from apps.tasks import gates, storage
from apps.tasks import services as task_services
from apps.tasks.models import TaskState, TaskVersion
from selfbench.errors import Conflict, InvalidInput
from tests.ablations.conftest import approved


def _result(status: str, reason: str = "") -> Callable[[Path, str], gates.GateResult]:
    def run(task_dir: Path, name: str) -> gates.GateResult:
        assert (task_dir / "environment" / "selfbench-ablation.sh").is_file()
        return gates.GateResult(status, reason or status, f"log of {name}", 1.0, trial_name=name)

    return run


@pytest.fixture
def gates_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gates, "run_build", _result(gates.PASSED))
    monkeypatch.setattr(gates, "run_oracle", _result(gates.PASSED))


def _create(repository: Repository, django_capture_on_commit_callbacks: Any, **kw: Any) -> Environment:
    kw.setdefault("name", "No AGENTS.md")
    kw.setdefault("script", "rm -f AGENTS.md")
    with django_capture_on_commit_callbacks(execute=True):
        return services.environment_create(repository=repository, **kw)


def _run_all(ids: list[int]) -> None:
    for build_id in ids:
        jobs.environment_build(build_id)


def test_creating_an_environment_queues_a_build_per_approved_task(
    repository: Repository, tmp_path: Path, enqueued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    tasks = [approved(repository, tmp_path) for _ in range(2)]
    task_services.task_reject(task=approved(repository, tmp_path), user=None, note="no")  # not approved: left out
    environment = _create(repository, django_capture_on_commit_callbacks)
    builds = EnvironmentBuild.objects.filter(environment=environment)
    assert sorted(b.task_id for b in builds) == [t.pk for t in tasks]
    assert {b.state for b in builds} == {BuildState.PENDING}
    assert sorted(enqueued) == sorted(b.pk for b in builds)  # one job per build, after commit


def test_environment_rules(
    repository: Repository, django_capture_on_commit_callbacks: Any, enqueued: list[int]
) -> None:
    _create(repository, django_capture_on_commit_callbacks, name="Old pandas")
    with pytest.raises(Conflict, match="already has an environment named 'Old pandas'"):
        _create(repository, django_capture_on_commit_callbacks, name="Old pandas")
    with pytest.raises(InvalidInput, match="script: say what to run"):
        _create(repository, django_capture_on_commit_callbacks, name="empty", script=" \n ")
    with pytest.raises(InvalidInput, match="name"):
        _create(repository, django_capture_on_commit_callbacks, name="")


def test_a_build_makes_a_new_task_version_and_checks_it(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    gates_pass: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    task = approved(repository, tmp_path)
    environment = _create(repository, django_capture_on_commit_callbacks)
    _run_all(enqueued)
    build = EnvironmentBuild.objects.get(environment=environment, task=task)
    assert build.state == BuildState.READY and build.attempts == 1
    assert build.details["build"]["status"] == "passed" and build.details["oracle"]["status"] == "passed"
    task.refresh_from_db()
    assert build.version is not None and build.version.task_id == task.pk and build.version_id != task.version_id
    assert task.version_id == build.base_version_id  # the task's own version is unchanged
    base = storage.read_tree(task.version.path)  # type: ignore[union-attr]
    built = storage.read_tree(build.version.path)
    for name in ("instruction.md", "tests/test.sh", "tests/test_greeting.py", "solution/solve.sh", "task.toml"):
        assert built[name] == base[name]
    assert b"bash -e /tmp/selfbench-ablation.sh" in built["environment/Dockerfile"]
    # A second run of the same job is a no-op (the build was claimed once).
    jobs.environment_build(build.pk)
    assert EnvironmentBuild.objects.get(pk=build.pk).attempts == 1


def test_a_build_that_does_not_build_or_pass_fails_with_the_reason(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    a, b = approved(repository, tmp_path), approved(repository, tmp_path)
    calls: list[str] = []

    def build(task_dir: Path, name: str) -> gates.GateResult:
        calls.append(name)
        if f"task{a.pk}-" in name:
            return gates.GateResult(gates.FAILED, "the image does not build: rm: missing operand", "log", 1.0, name)
        return gates.GateResult(gates.PASSED, "ok", "log", 1.0, name)

    monkeypatch.setattr(gates, "run_build", build)
    monkeypatch.setattr(gates, "run_oracle", _result(gates.FAILED, "the reference patch does not pass: test_greet"))
    environment = _create(repository, django_capture_on_commit_callbacks, script="rm")
    _run_all(enqueued)
    failed = {x.task_id: x for x in EnvironmentBuild.objects.filter(environment=environment)}
    assert failed[a.pk].state == BuildState.FAILED
    assert failed[a.pk].reason == "build gate: the image does not build: rm: missing operand"
    assert failed[b.pk].state == BuildState.FAILED
    assert failed[b.pk].reason == "oracle gate: the reference patch does not pass: test_greet"
    assert services.environment_snapshot(environment)["taskDirs"] == {}


def test_infrastructure_errors_are_retried_then_fail_saying_so(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    approved(repository, tmp_path)
    names: list[str] = []

    def flaky(task_dir: Path, name: str) -> gates.GateResult:
        names.append(name)
        return gates.GateResult(gates.INFRA, "podman: connection refused", "log", 0.1, name)

    monkeypatch.setattr(gates, "run_build", flaky)
    environment = _create(repository, django_capture_on_commit_callbacks)
    _run_all(enqueued)
    build = EnvironmentBuild.objects.get(environment=environment)
    assert len(names) == services.MAX_INFRA_ATTEMPTS
    assert (
        build.state == BuildState.FAILED
        and build.reason == "build gate: infrastructure failed 3 times: podman: connection refused"
    )


def test_build_missing_builds_tasks_approved_since_and_failed_ones_only(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    ok, broken = approved(repository, tmp_path), approved(repository, tmp_path)
    monkeypatch.setattr(gates, "run_oracle", _result(gates.PASSED))
    monkeypatch.setattr(
        gates,
        "run_build",
        lambda d, n: gates.GateResult(gates.FAILED if f"task{broken.pk}-" in n else gates.PASSED, "r", "", 1, n),
    )
    environment = _create(repository, django_capture_on_commit_callbacks)
    _run_all(enqueued)
    enqueued.clear()
    newer = approved(repository, tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        queued = services.environment_build_missing(environment=environment)
    assert sorted(b.task_id for b in queued) == sorted([broken.pk, newer.pk])
    assert len(enqueued) == 2
    states = {row.task.pk: row.state for row in queries.build_status(environment)}
    assert states == {ok.pk: "ready", broken.pk: "pending", newer.pk: "pending"}
    # Idempotent: asking again queues the same pending builds (their jobs claim once) and creates nothing.
    with django_capture_on_commit_callbacks(execute=True):
        again = services.environment_build_missing(environment=environment)
    assert sorted(b.pk for b in again) == sorted(b.pk for b in queued)
    assert EnvironmentBuild.objects.filter(environment=environment).count() == 3
    _run_all(enqueued)
    assert EnvironmentBuild.objects.get(environment=environment, task=newer).state == BuildState.READY
    assert EnvironmentBuild.objects.get(environment=environment, task=newer).attempts == 1


def test_a_lost_build_is_taken_again_and_a_running_one_is_not(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    approved(repository, tmp_path)
    environment = _create(repository, django_capture_on_commit_callbacks)
    build = EnvironmentBuild.objects.get(environment=environment)
    from django.utils import timezone

    EnvironmentBuild.objects.filter(pk=build.pk).update(state=BuildState.BUILDING, started_at=timezone.now())
    assert services.environment_build_missing(environment=environment) == []
    settings.ABLATIONS_BUILD_STALE_SECONDS = 0
    assert [b.pk for b in services.environment_build_missing(environment=environment)] == [build.pk]
    assert EnvironmentBuild.objects.get(pk=build.pk).state == BuildState.PENDING


def test_a_changed_script_rebuilds_every_task_and_old_versions_stay(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    gates_pass: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    task = approved(repository, tmp_path)
    environment = _create(repository, django_capture_on_commit_callbacks)
    _run_all(enqueued)
    old = services.environment_snapshot(environment)
    old_version = EnvironmentBuild.objects.get(environment=environment).version_id
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.environment_update(environment=environment, name="Renamed")
    assert enqueued == []  # a new name builds nothing
    with django_capture_on_commit_callbacks(execute=True):
        services.environment_update(environment=environment, script="rm -f README.md")
    assert len(enqueued) == 1
    snap = services.environment_snapshot(environment)
    assert snap["taskDirs"] == {} and snap["notReady"] == {str(task.pk): "pending"}
    _run_all(enqueued)
    snap = services.environment_snapshot(environment)
    assert snap["taskVersions"][str(task.pk)] != old["taskVersions"][str(task.pk)]
    assert TaskVersion.objects.filter(pk=old_version).exists()
    assert Path(old["taskDirs"][str(task.pk)]).is_dir()  # runs that used it keep their files


def test_the_snapshot_lists_ready_tasks_and_says_why_others_are_left_out(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    gates_pass: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    ready = approved(repository, tmp_path)
    environment = _create(repository, django_capture_on_commit_callbacks)
    _run_all(enqueued)
    later = approved(repository, tmp_path)
    snap = services.environment_snapshot(environment)
    build = EnvironmentBuild.objects.get(environment=environment, task=ready)
    assert snap["id"] == str(environment.pk) and snap["name"] == "No AGENTS.md"
    assert snap["taskVersions"] == {str(ready.pk): build.version_id}
    assert snap["taskDirs"] == {str(ready.pk): str(build.version.path)}  # type: ignore[union-attr]
    assert snap["notReady"] == {str(later.pk): "missing: not built yet: Build Missing Tasks builds it"}
    # A task no longer approved is left out of what runs see.
    from apps.tasks.models import Task

    Task.objects.filter(pk=ready.pk).update(state=TaskState.REJECTED, reason="withdrawn")
    assert services.environment_snapshot(environment)["taskDirs"] == {}


def test_deleting_an_environment_keeps_the_task_versions_it_built(
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    gates_pass: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    approved(repository, tmp_path)
    environment = _create(repository, django_capture_on_commit_callbacks)
    _run_all(enqueued)
    version_id = EnvironmentBuild.objects.get(environment=environment).version_id
    services.environment_delete(environment=environment)
    assert not EnvironmentBuild.objects.exists()
    assert TaskVersion.objects.filter(pk=version_id).exists()
