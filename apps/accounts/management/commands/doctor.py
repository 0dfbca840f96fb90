"""`manage.py doctor`: is this installation able to run SelfBench? Each problem comes with its fix."""

from __future__ import annotations

import platform
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

import django
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from selfbench import harbor_adapter

Level = Literal["ok", "warn", "FAIL"]
PINNED_HARBOR = "0.25.0"
SETUP_FIX = "run `bash scripts/containers.sh` (as root)"


@dataclass(frozen=True)
class Check:
    """One line of the report. FAIL lines make the command exit non-zero."""

    name: str
    level: Level
    detail: str
    fix: str = ""


def _run(argv: list[str], timeout: float = 20) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc)
    return proc.returncode, (proc.stdout or proc.stderr).strip()


def check_runtime() -> list[Check]:
    """Python and Django versions (the project needs Python >= 3.12 for Harbor)."""
    python = platform.python_version()
    py_ok = tuple(int(p) for p in python.split(".")[:2]) >= (3, 12)
    return [
        Check(
            "python",
            "ok" if py_ok else "FAIL",
            python,
            "" if py_ok else "use Python 3.12+ (python3.12 -m venv .venv)",
        ),
        Check("django", "ok", django.get_version()),
    ]


def check_database() -> list[Check]:
    """Database vendor and unapplied migrations."""
    try:
        connection.ensure_connection()
        vendor = connection.vendor
        server = connection.display_name
        if vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SHOW server_version")
                row = cursor.fetchone()
                server = f"PostgreSQL {row[0] if row else '?'}"
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        fix = "check DATABASE_URL and that the server runs"
        return [Check("database", "FAIL", f"cannot connect: {exc}".strip(), fix)]
    checks = [Check("database", "ok", f"{vendor} ({server}), {connection.settings_dict.get('NAME')}")]
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5]) + (" ..." if len(plan) > 5 else "")
        checks.append(Check("migrations", "FAIL", f"{len(plan)} unapplied: {names}", "run `python manage.py migrate`"))
    else:
        checks.append(Check("migrations", "ok", "all applied"))
    return checks


def check_worker(*, probe_seconds: float | None) -> list[Check]:
    """django-q2 cluster heartbeat: cluster stats, the queue, the last finished job, optionally a probe job.

    Cluster stats live in Django's cache, which other processes only see with a shared cache (Redis,
    database); with the per-process default the ORM broker's tables are the evidence.
    """
    from django_q.models import OrmQ, Task
    from django_q.status import Stat

    fix = "start the worker: `python manage.py qcluster` (bash scripts/run starts it)"
    checks: list[Check] = []
    try:
        stats = Stat.get_all()
    except Exception as exc:  # a broken cache must not break the report
        stats = []
        checks.append(Check("worker stats", "warn", f"cluster stats unavailable: {exc}"))
    for stat in stats:
        checks.append(
            Check(
                "worker",
                "ok",
                f"cluster {stat.cluster_id} on {stat.host}: {stat.status}, {len(stat.workers)} workers, "
                f"up {int(stat.uptime())}s",
            )
        )
    try:
        queued = OrmQ.objects.count() if settings.Q_CLUSTER.get("orm") else None
        last = Task.objects.order_by("-stopped").values_list("stopped", "func").first()
    except DatabaseError as exc:
        unreadable = Check("worker", "FAIL", f"django-q2 tables unreadable: {exc}", "run `python manage.py migrate`")
        return [*checks, unreadable]
    parts = []
    if queued is not None:
        parts.append(f"{queued} queued in the ORM broker")
    if last is not None:
        ago = timezone.now() - last[0]
        parts.append(f"last job finished {_ago(ago)} ago ({last[1]})")
    else:
        parts.append("no job has finished yet")
    probe = _probe_worker(probe_seconds, fix) if probe_seconds is not None else None
    if stats:
        checks.append(Check("queue", "ok", "; ".join(parts)))
    elif probe is not None and probe.level == "ok":
        checks.append(Check("worker", "ok", "answered the probe; " + "; ".join(parts)))
    else:
        # Not a failure by default: doctor also runs during setup, before the worker starts.
        checks.append(Check("worker", "warn", "no cluster heartbeat seen; " + "; ".join(parts), fix))
    if probe is not None:
        checks.append(probe)
    return checks


def _probe_worker(seconds: float, fix: str) -> Check:
    """Enqueue a trivial job and wait for a worker to finish it: proof of a live cluster."""
    from django_q.tasks import async_task, result

    started = time.monotonic()
    task_id = async_task("math.floor", 2.5, task_name=f"doctor-probe-{int(time.time())}", group="doctor")
    answer = result(task_id, wait=int(seconds * 1000))
    if answer == 2:  # floor(2.5)
        return Check("worker probe", "ok", f"a worker ran a probe job in {time.monotonic() - started:.1f}s")
    # Leave no probe behind in the ORM broker for a worker that starts later.
    from django_q.models import OrmQ

    for queued in OrmQ.objects.all():
        if queued.task_id() == task_id:
            queued.delete()
    return Check("worker probe", "FAIL", f"no worker finished a probe job within {seconds:.0f}s", fix)


def _ago(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}min"
    return f"{seconds // 3600}h"


def check_containers() -> list[Check]:
    """Container engine, runtime, compose frontend and base image for the configured sandbox."""
    sandbox = settings.SANDBOX_ENVIRONMENT
    if sandbox not in ("podman", "docker"):
        return [Check("containers", "ok", f"sandbox '{sandbox}' runs remotely; no local engine needed")]
    if sandbox == "docker":
        code, out = _run(["docker", "version", "--format", "{{.Server.Version}}"])
        if code != 0:
            fix = "install Docker or set SANDBOX_ENVIRONMENT=podman"
            return [Check("docker", "FAIL", f"docker is not usable: {out[:200]}", fix)]
        checks = [Check("docker", "ok", f"server {out}")]
        engine = "docker"
    else:
        if shutil.which("podman") is None:
            return [Check("podman", "FAIL", "podman is not installed", SETUP_FIX)]
        code, version = _run(["podman", "version", "--format", "{{.Client.Version}}"])
        code_info, runtime = _run(["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"])
        if code != 0 or code_info != 0:
            return [Check("podman", "FAIL", f"`podman info` fails: {(runtime or version)[:300]}", SETUP_FIX)]
        # crun fails on these hosts' hybrid cgroups; elsewhere it may work, so only warn.
        runtime_fix = f'set [engine] runtime = "runc" in containers.conf: {SETUP_FIX}'
        checks = [Check("podman", "ok" if runtime == "runc" else "warn", f"{version}, runtime {runtime}", runtime_fix)]
        compose = harbor_adapter.ensure_compose_on_path()
        if compose is None:
            checks.append(Check("podman-compose", "FAIL", "not found on PATH", SETUP_FIX))
        else:
            _, compose_version = _run([compose, "--version"])
            version_line = next((ln for ln in compose_version.splitlines() if "podman-compose" in ln), compose_version)
            checks.append(Check("podman-compose", "ok", f"{version_line.strip()} ({compose})"))
        engine = "podman"
    code, _ = _run([engine, "image", "inspect", "--format", "{{.Id}}", settings.BASE_IMAGE])
    if code == 0:
        checks.append(Check("base image", "ok", settings.BASE_IMAGE))
    else:
        checks.append(Check("base image", "FAIL", f"{settings.BASE_IMAGE} is missing", SETUP_FIX))
    return checks


def check_harbor() -> list[Check]:
    """Installed Harbor version (the adapter is written against the pinned one)."""
    try:
        version = harbor_adapter.harbor_version()
    except Exception as exc:  # PackageNotFoundError and broken metadata alike
        return [Check("harbor", "FAIL", f"not installed ({exc})", "pip install -r requirements.txt")]
    if version != PINNED_HARBOR:
        return [Check("harbor", "FAIL", f"{version}, expected {PINNED_HARBOR}", "pip install -r requirements.txt")]
    return [Check("harbor", "ok", f"{version} (telemetry off, sandbox '{settings.SANDBOX_ENVIRONMENT}')")]


class Command(BaseCommand):
    help = "Check Python, Django, the database, the worker, the container engine and Harbor; exit 1 on a problem."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--probe-worker",
            type=float,
            metavar="SECONDS",
            default=None,
            help="enqueue a probe job and fail unless a worker finishes it within SECONDS",
        )
        parser.add_argument("--skip-containers", action="store_true", help="don't check the container engine")

    def handle(self, *args: Any, **options: Any) -> None:
        checks = [*check_runtime(), *check_database()]
        if not any(c.level == "FAIL" for c in checks if c.name == "database"):
            checks += check_worker(probe_seconds=options["probe_worker"])
        if not options["skip_containers"]:
            checks += check_containers()
        checks += check_harbor()

        width = max(len(c.name) for c in checks)
        for check in checks:
            line = f"{check.level:<4}  {check.name:<{width}}  {check.detail}"
            if check.fix and check.level != "ok":
                line += f"\n      {'':<{width}}  fix: {check.fix}"
            style = {"ok": self.style.SUCCESS, "warn": self.style.WARNING, "FAIL": self.style.ERROR}[check.level]
            self.stdout.write(style(line))
        failed = [c.name for c in checks if c.level == "FAIL"]
        if failed:
            raise CommandError(f"{len(failed)} required check(s) failed: {', '.join(failed)}")
        self.stdout.write("doctor: everything required is in place")
