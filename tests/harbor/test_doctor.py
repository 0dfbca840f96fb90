"""`manage.py doctor` against the real database, a real qcluster and real podman."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django_q.models import OrmQ

from tests.harbor.test_adapter import _require_containers

ROOT = Path(__file__).resolve().parents[2]


def _doctor(*args: str) -> tuple[str, CommandError | None]:
    """Run doctor; return its report with runs of spaces collapsed (column widths vary) and the error."""
    out = StringIO()
    error: CommandError | None = None
    try:
        call_command("doctor", *args, stdout=out, no_color=True)
    except CommandError as exc:
        error = exc
    return re.sub(r" +", " ", out.getvalue()), error


@pytest.mark.django_db
def test_doctor_reports_versions_database_worker_and_harbor() -> None:
    output, error = _doctor("--skip-containers")

    assert error is None, output
    assert "ok python" in output and "ok django" in output
    assert "postgresql" in output and "ok migrations all applied" in output
    # No worker runs in this test: that is a warning with the fix, not a failure.
    assert "warn worker" in output and "fix: start the worker" in output
    assert "ok harbor 0.25.0" in output
    assert output.rstrip().endswith("everything required is in place")


@pytest.mark.containers
@pytest.mark.django_db
def test_doctor_checks_podman_compose_and_the_base_image() -> None:
    _require_containers()

    output, error = _doctor()

    assert error is None, output
    assert "runtime runc" in output
    assert "podman-compose version 1.6" in output
    assert "ok base image" in output


@pytest.mark.containers
@pytest.mark.django_db
def test_doctor_fails_with_the_fix_when_the_base_image_is_missing(settings: object) -> None:
    _require_containers()
    settings.BASE_IMAGE = "localhost/selfbench-missing:none"  # type: ignore[attr-defined]

    output, error = _doctor()

    assert error is not None and "base image" in str(error)
    assert "FAIL base image" in output
    assert "localhost/selfbench-missing:none is missing" in output
    assert "fix: run `bash scripts/containers.sh`" in output


@pytest.mark.django_db(transaction=True)
def test_doctor_worker_probe_fails_without_a_worker() -> None:
    output, error = _doctor("--skip-containers", "--probe-worker", "1")

    assert error is not None and "worker probe" in str(error)
    assert "FAIL worker probe no worker finished a probe job within 1s" in output
    assert not OrmQ.objects.exists()  # the unanswered probe was withdrawn


@pytest.fixture
def qcluster(transactional_db: None) -> Iterator[subprocess.Popen[bytes]]:
    """A real django-q2 cluster on the test database (the ORM broker is PostgreSQL itself)."""
    db = connection.settings_dict
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    url = f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{host}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "1", "Q_WORKERS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        # qcluster's graceful stop takes ~15 s of polling; the probe job is long done, so don't wait for it.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_doctor_worker_probe_passes_with_a_running_qcluster(qcluster: subprocess.Popen[bytes]) -> None:
    output, error = _doctor("--skip-containers", "--probe-worker", "60")

    assert error is None, output
    assert "ok worker probe a worker ran a probe job" in output
    assert "ok worker answered the probe" in output
