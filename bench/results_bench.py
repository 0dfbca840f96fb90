"""Results bench: scoring over 1,000,000 trials on PostgreSQL, and the query count of the results API.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sb_results_bench DEBUG=1 \
        .venv/bin/python bench/results_bench.py [--tasks 5000] [--runs 17] [--repeat 7] [--rebuild] [--json out.json]

Migrates the database it is pointed at (use a scratch one: the bench adds a workspace and a million rows and keeps
them, so a second run with the same shape reuses them), then loads one repository with `--tasks` approved tasks and
12 configurations (4 models × baseline / a saved harness / a repo ablation), each attempting every task `--runs`
times (one comparison per run: 12 × 5,000 × 17 = 1,020,000 trials), via COPY. About 3% of trials are not scored
(failed, unverified model, or no cost) so every rule is exercised. Then it times the one-off rebuild of the scoring
cache (every task is new after a bulk load), `queries.configuration_results` for the repository (`--repeat` times,
nothing changed), a read right after one more trial lands (its task is rebuilt), the paired comparison, per-task
reliability and a model filter, and counts the queries of `GET /api/w/<slug>/results?repository=…`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "selfbench.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from apps.accounts import services as account_services  # noqa: E402
from apps.accounts.models import Workspace  # noqa: E402
from apps.repositories.models import Repository, RepositoryKind  # noqa: E402
from apps.results import queries  # noqa: E402
from apps.results.models import DirtyTask  # noqa: E402
from apps.runs.models import Comparison, Evaluation, Trial  # noqa: E402
from apps.tasks.models import Task, TaskState, TaskVersion  # noqa: E402

MODELS = [
    ("gpt-5", 0.62, "0.40"),
    ("gpt-5-mini", 0.48, "0.06"),
    ("claude-sonnet-4-5", 0.66, "0.55"),
    ("qwen3", 0.35, "0.02"),
]
CONFIGS = [
    ("baseline", "Baseline", "", ""),
    ("harness:bench0001", "Strict", "1", ""),
    ("environment:9", "No AGENTS.md", "", "9"),
]
COLUMNS = [
    "uuid", "workspace_id", "evaluation_id", "task_id", "task_version_id", "task_dir", "agent", "harness_id",
    "environment_id", "configuration_key", "configuration_label", "sandbox", "spec", "attempt", "status", "reward",
    "reward_valid", "failure_cause", "exception_type", "exception_message", "started_at", "finished_at", "timings",
    "calls", "input_tokens", "output_tokens", "cost_usd", "cost_complete", "model_verified", "subagent_calls",
    "network_policy", "trial_dir", "transcript", "trajectory_path", "created_at", "updated_at", "worker",
]  # fmt: skip


def load(slug: str, n_tasks: int, runs: int) -> tuple[Workspace, Repository, int]:
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is not None:
        repository = Repository.objects.get(workspace=workspace)
        count = Trial.objects.filter(workspace=workspace).count()
        if count >= n_tasks * runs * len(MODELS) * len(CONFIGS):  # earlier runs each add one trial
            print(f"reusing {count:,} trials in workspace {slug}")
            return workspace, repository, count
        sys.exit(f"workspace {slug} holds {count:,} trials of another shape; use another --slug or a fresh database")
    from django.contrib.auth import get_user_model

    owner = get_user_model().objects.create_user(username=f"{slug}-owner-{uuid.uuid4().hex[:6]}", password="x" * 20)
    workspace = account_services.workspace_create(slug=slug, name="Results bench", owner=owner)
    repository = Repository.objects.create(
        workspace=workspace, kind=RepositoryKind.GITHUB, full_name="bench/big", github_id=424242, location="-"
    )
    started = time.monotonic()
    tasks = Task.objects.bulk_create(
        [
            Task(
                workspace=workspace, repository=repository, source_path="-", source_repository="bench/big",
                pr_number=i + 1, base_sha="a" * 40, head_sha="b" * 40, title=f"PR {i + 1}", tier="easy",
                state=TaskState.APPROVED, reason="approved",
            )
            for i in range(n_tasks)
        ],
        batch_size=2000,
    )  # fmt: skip
    versions = TaskVersion.objects.bulk_create(
        [TaskVersion(task=t, content_hash=f"{t.pk:064x}") for t in tasks], batch_size=2000
    )
    for t, v in zip(tasks, versions, strict=True):
        t.version = v
    Task.objects.bulk_update(tasks, ["version"], batch_size=2000)
    evaluations: list[tuple[int, int]] = []  # (evaluation id, model index) per run
    for _run in range(runs):
        comparison = Comparison.objects.create(
            workspace=workspace, client_id=uuid.uuid4(), body={}, body_hash="bench", sandbox="podman"
        )
        for m, (model, _, _) in enumerate(MODELS):
            e = Evaluation.objects.create(
                workspace=workspace, comparison=comparison, position=m, catalog_id=model, managed=True, thinking="high"
            )
            evaluations.append((e.pk, m))
    rng = random.Random(7)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    total = 0
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg 3
        with raw.copy(f"COPY {Trial._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for i, (evaluation_id, m) in enumerate(evaluations):
                run = i // len(MODELS)
                _, skill, price = MODELS[m]
                for key, label, harness, environment in CONFIGS:
                    bonus = 0.04 if harness else (-0.05 if environment else 0.0)
                    for t, v in zip(tasks, versions, strict=True):
                        r = rng.random()
                        finished = t0 + timedelta(minutes=run * 600, seconds=rng.randrange(30000))
                        verified = r > 0.01
                        priced = r < 0.99 or r > 0.995
                        status = "failed" if 0.985 < r < 0.99 else "completed"
                        passed = rng.random() < skill + bonus
                        copy.write_row(
                            (
                                uuid.uuid4(), workspace.pk, evaluation_id, t.pk, v.pk, "-", "terminus-2", harness,
                                environment, key, label, "podman", "{}", 1, status,
                                (1.0 if passed else 0.0) if status == "completed" else None,
                                status == "completed", "", "", "", finished - timedelta(seconds=rng.randrange(60, 900)),
                                finished, "{}", 12, rng.randrange(5000, 90000), rng.randrange(500, 9000),
                                price if priced else None, priced, verified, 0, "", "", "", "", finished, finished, "",
                            )
                        )  # fmt: skip
                        total += 1
    cursor = connection.cursor()
    cursor.execute(f"ANALYZE {Trial._meta.db_table}")
    print(f"loaded {total:,} trials, {n_tasks:,} tasks in {time.monotonic() - started:.1f} s")
    return workspace, repository, total


def timed(fn: object, repeat: int) -> tuple[list[float], object]:
    samples: list[float] = []
    out: object = None
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    return samples, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=17)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--slug", default="results-bench")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--rebuild", action="store_true", help="mark every task changed first (time a cold rebuild)")
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        sys.exit("point DATABASE_URL at PostgreSQL")
    call_command("migrate", verbosity=0)
    workspace, repository, total = load(args.slug, args.tasks, args.runs)
    counted = queries.repository_tasks(repository)

    if args.rebuild:
        DirtyTask.objects.bulk_create(
            [DirtyTask(workspace_id=workspace.pk, task_id=t) for t in counted.tasks.values_list("pk", flat=True)],
            ignore_conflicts=True,
        )
    started = time.perf_counter()
    rebuilt = queries.refresh(workspace.pk)
    cold_ms = (time.perf_counter() - started) * 1000
    samples, res = timed(lambda: queries.configuration_results(counted=counted), args.repeat)
    results: queries.Results = res  # type: ignore[assignment]
    # One more trial lands on one task: the next read rebuilds that task only.
    template = Trial.objects.filter(workspace=workspace).order_by("-pk").first()
    assert template is not None
    template.pk, template.uuid = None, uuid.uuid4()
    source = Evaluation.objects.get(pk=template.evaluation_id)
    rerun = Comparison.objects.create(
        workspace=workspace, client_id=uuid.uuid4(), body={}, body_hash="b", sandbox="podman"
    )
    template.evaluation = Evaluation.objects.create(
        workspace=workspace, comparison=rerun, position=0, catalog_id=source.catalog_id, managed=True, thinking="high"
    )
    template.save(force_insert=True)
    changed_ms, _ = timed(lambda: queries.configuration_results(counted=counted), 1)
    a, b = results.configurations[0].id, results.configurations[1].id
    paired_ms, paired = timed(lambda: queries.paired(counted=counted, a=a, b=b), 3)
    rel_ms, rel = timed(lambda: queries.reliability(counted=counted, configuration=a), 3)
    filtered_ms, _ = timed(
        lambda: queries.configuration_results(counted=counted, filters=queries.Filters(model="gpt-5")), 3
    )

    key = account_services.api_key_create(workspace=workspace, name="bench", scope="read", created_by=None).raw
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    url = f"/api/w/{workspace.slug}/results?repository={repository.pk}"
    client.get(url)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    api_queries = len(ctx.captured_queries)
    figures = {
        "trials": total,
        "tasks": args.tasks,
        "configurations": len(results.configurations),
        "coldRebuild": {"tasks": rebuilt, "ms": cold_ms},
        "resultsMs": {"median": statistics.median(samples), "min": min(samples), "max": max(samples)},
        "afterOneNewTrialMs": changed_ms[0],
        "filteredByModelMs": statistics.median(filtered_ms),
        "pairedMs": statistics.median(paired_ms),
        "reliabilityMs": statistics.median(rel_ms),
        "apiStatus": response.status_code,
        "apiQueries": api_queries,
        "apiQueryList": [q["sql"][:90] for q in ctx.captured_queries],
    }
    print(f"trials {total:,} · tasks {args.tasks:,} · configurations {len(results.configurations)}")
    print(
        f"results of one repository: median {figures['resultsMs']['median']:.0f} ms "  # type: ignore[index]
        f"(min {min(samples):.0f}, max {max(samples):.0f}; goal < 300 ms; nothing changed since the last read)"
    )
    print(f"cold rebuild of the scoring cache ({rebuilt:,} changed tasks): {cold_ms:.0f} ms (once, after loading)")
    print(f"results after one new trial (rebuilds its task, then reads): {changed_ms[0]:.0f} ms")
    print(f"filtered to one model: {figures['filteredByModelMs']:.0f} ms")
    print(f"paired {a} vs {b}: {figures['pairedMs']:.0f} ms → {paired}")
    print(f"reliability of {a}: {figures['reliabilityMs']:.0f} ms, {rel.flaky_tasks} flaky of {len(rel.tasks)}")  # type: ignore[attr-defined]
    print(f"GET {url}: {response.status_code}, {api_queries} queries")
    for q in figures["apiQueryList"]:  # type: ignore[attr-defined]
        print(f"   {q}")
    for c in results.configurations[:3]:
        print(f"   {c.id}: {c.passed}/{c.tasks} cost/task {c.cost_per_task_usd} unpriced {c.unpriced_tasks}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
