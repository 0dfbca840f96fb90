"""Evaluate bench: (1) starting a 12 models × 4 harnesses × 500 tasks comparison — validate, persist, enqueue — on
PostgreSQL (goal < 2 s); (2) the scheduler's overhead per trial against a bare Harbor trial of the same task.

    createdb -h 127.0.0.1 -U postgres sb_runs_bench
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sb_runs_bench DEBUG=1 .venv/bin/python bench/evaluate_bench.py

(1) goes through the API's own path (serializer → services.comparison_start), with the dispatcher's on-commit
enqueue into the ORM broker. (2) runs the same terminus-2 trial twice on real podman, through the real gateway
(uvicorn in a thread) and the scripted terminus-2 model: once bare through selfbench.harbor_adapter.run_trial with a
key minted by hand, once as the worker runs it (jobs.trial_execute: claim, key, heartbeat, Harbor, ledger roll-up,
artifacts, dispatch). Options: --starts N, --tasks N, --skip-trials.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "selfbench.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from apps.accounts import services as account_services  # noqa: E402
from apps.accounts.models import Credential, Workspace  # noqa: E402
from apps.gateway.catalog import catalog_models  # noqa: E402
from apps.runs import jobs, services  # noqa: E402
from apps.runs.models import Trial  # noqa: E402
from apps.runs.serializers import ComparisonStartInput  # noqa: E402
from apps.tasks import storage  # noqa: E402
from apps.tasks.models import Task, TaskState, TaskVersion  # noqa: E402


def _workspace(n_tasks: int, tmp: Path) -> tuple[Workspace, dict[str, Credential], list[Task]]:
    from django.contrib.auth import get_user_model

    from tests.runs.factories import greeting_files

    tag = uuid.uuid4().hex[:8]
    user = get_user_model().objects.create_user(username=f"bench-{tag}", password="x" * 20)
    workspace = account_services.workspace_create(slug=f"bench-{tag}", name="Bench", owner=user)
    owner = workspace.memberships.get(role="owner")
    creds = {
        kind: account_services.credential_create(
            workspace=workspace, by=owner, name=kind, kind=kind, secret=f"sk-bench-{kind}-{'0' * 30}"
        )
        for kind in ("openai", "anthropic", "openrouter")
    }
    digest, _ = storage.store(greeting_files(tmp))
    tasks = Task.objects.bulk_create(
        Task(
            workspace=workspace,
            source_path="/bench",
            base_sha="a" * 40,
            head_sha="b" * 40,
            title=f"Bench task {i}",
            state=TaskState.APPROVED,
            reason="approved for the bench",
        )
        for i in range(n_tasks)
    )
    versions = TaskVersion.objects.bulk_create(TaskVersion(task=t, content_hash=digest) for t in tasks)
    for t, v in zip(tasks, versions, strict=True):
        t.version = v
    Task.objects.bulk_update(tasks, ["version"], batch_size=1000)
    return workspace, creds, tasks


def _body(creds: dict[str, Credential], tasks: list[Task]) -> dict[str, Any]:
    models = []
    for model in catalog_models()[:12]:
        credential = creds[model.provider]
        models.append({"catalogId": model.id, "credentialId": credential.pk, "harnesses": list(model.harnesses)[:4]})
    assert len(models) == 12 and all(len(m["harnesses"]) == 4 for m in models), models
    return {
        "id": str(uuid.uuid4()),
        "models": models,
        "sandbox": "podman",
        "tasks": [{"runId": None, "taskId": t.pk} for t in tasks],
    }


def bench_start(n_starts: int, n_tasks: int) -> dict[str, Any]:
    times: list[float] = []
    loads: list[float] = []  # the 1-minute load average at each start
    trials = 0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(n_starts):
            workspace, creds, tasks = _workspace(n_tasks, Path(tmp))
            body = _body(creds, tasks)
            loads.append(os.getloadavg()[0])
            started = time.perf_counter()
            s = ComparisonStartInput(data=body)
            s.is_valid(raise_exception=True)
            comparison = services.comparison_start(workspace=workspace, body=s.validated_data, created_by=None)
            elapsed = time.perf_counter() - started
            assert not comparison.submission_error, comparison.submission_error
            trials = Trial.objects.filter(evaluation__comparison=comparison).count()
            times.append(elapsed)
            # Leave the queue as it was: these trials are not meant to run.
            Trial.objects.filter(evaluation__comparison=comparison).update(status="cancelled")
            from django_q.models import OrmQ

            OrmQ.objects.all().delete()
    return {
        "trials_per_comparison": trials,
        "start_seconds": [round(t, 3) for t in times],
        "start_median_seconds": round(statistics.median(times), 3),
        "load_average_1m": [round(x, 1) for x in loads],
        "goal_seconds": 2.0,
    }


def bench_trial_overhead() -> dict[str, Any]:
    from apps.gateway import services as gateway_services
    from selfbench import harbor_adapter
    from selfbench.asgi import application
    from selfbench.harbor_adapter import AgentSpec
    from tests.doubles.terminus_model import TerminusModel
    from tests.gateway.conftest import _ServerThread

    model = TerminusModel().start()
    gateway = _ServerThread(application)
    gateway.start()
    settings.OPENAI_BASE_URL = model.url
    settings.GATEWAY_PUBLIC_URL = f"http://127.0.0.1:{gateway.port}/gateway"
    tmp = Path(tempfile.mkdtemp(prefix="evaluate-bench-"))
    settings.HARBOR_TRIALS_DIR = tmp / "trials"
    try:
        workspace, creds, tasks = _workspace(1, tmp)
        task = tasks[0]
        assert task.version is not None
        # Bare: the adapter alone, with a key minted by hand and the same network overlay.
        from apps.runs import network

        plan = network.network_plan(sandbox_id="podman", agent="terminus-2")
        _, raw = gateway_services.trial_key_mint(
            workspace=workspace,
            subject=f"bench:{uuid.uuid4()}",
            models=[gateway_services.ModelRoute("gpt-5-mini", creds["openai"])],
            ttl_seconds=3600,
        )
        urls = gateway_services.base_urls()
        started = time.perf_counter()
        bare = harbor_adapter.run_trial(
            task_dir=task.version.path,
            agent=AgentSpec(
                name="terminus-2",
                model="openai/gpt-5-mini",
                base_url=urls["openai"],
                api_key=raw,
                model_api_format="openai_chat_completions",
                options={"reasoning_effort": "high"},
            ),
            trial_name=f"bench-bare-{uuid.uuid4().hex[:8]}",
            environment_type="podman",
            environment_kwargs=dict(plan.environment_kwargs),
        )
        bare_seconds = time.perf_counter() - started
        assert bare.reward == 1.0, (bare.exception_type, bare.exception_message)

        # Scheduled: the worker's path for the same task and agent.
        enqueued: list[int] = []
        real_async = jobs.async_task
        jobs.async_task = lambda func, trial_id, **kw: enqueued.append(trial_id)  # type: ignore[assignment]
        try:
            body = {
                "id": str(uuid.uuid4()),
                "models": [
                    {"catalogId": "gpt-5-mini", "credentialId": creds["openai"].pk, "harnesses": ["terminus-2"]}
                ],
                "sandbox": "podman",
                "tasks": [{"runId": None, "taskId": task.pk}],
            }
            s = ComparisonStartInput(data=body)
            s.is_valid(raise_exception=True)
            services.comparison_start(workspace=workspace, body=s.validated_data, created_by=None)
        finally:
            jobs.async_task = real_async  # type: ignore[assignment]
        in_harbor: list[float] = []
        real_run = harbor_adapter.run_trial

        def timed(**kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return real_run(**kwargs)
            finally:
                in_harbor.append(time.perf_counter() - t0)

        harbor_adapter.run_trial = timed  # type: ignore[assignment]
        try:
            started = time.perf_counter()
            jobs.trial_execute(enqueued[0])
            scheduled_seconds = time.perf_counter() - started
        finally:
            harbor_adapter.run_trial = real_run  # type: ignore[assignment]
        trial = Trial.objects.get(pk=enqueued[0])
        assert trial.reward == 1.0, (trial.exception_type, trial.exception_message)
        overhead = scheduled_seconds - in_harbor[0]
        return {
            "bare_trial_seconds": round(bare_seconds, 2),
            "scheduled_trial_seconds": round(scheduled_seconds, 2),
            "scheduled_in_harbor_seconds": round(in_harbor[0], 2),
            "scheduler_overhead_seconds": round(overhead, 3),
            "ratio_scheduled_to_bare": round(scheduled_seconds / bare_seconds, 3),
            "scheduled_trial": {"reward": trial.reward, "cost_usd": str(trial.cost_usd), "calls": trial.calls},
        }
    finally:
        gateway.stop()
        model.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--skip-trials", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    assert connection.vendor == "postgresql", "run the bench on PostgreSQL (DATABASE_URL=postgres://…)"
    call_command("migrate", verbosity=0)
    with tempfile.TemporaryDirectory() as media:
        settings.MEDIA_ROOT = Path(media)
        report: dict[str, Any] = {"start": bench_start(args.starts, args.tasks)}
        print(json.dumps(report, indent=2), flush=True)
        if not args.skip_trials:
            report["trial"] = bench_trial_overhead()
            print(json.dumps(report["trial"], indent=2), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
