"""Every write to comparisons, evaluations and trials: start, resume, cancel, delete, dispatch, execute, reap.

Flow: comparison_start → (on commit) trials_dispatch → one job per trial → trial_execute (claims with a conditional
update, holds a lease it renews by heartbeat) → trials_dispatch again. trials_reap re-runs or fails trials whose
worker died and re-dispatches jobs that never started.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, JSONField, Q
from django.utils import timezone

from apps.accounts.models import Workspace
from apps.gateway import services as gateway_services
from apps.runs import execution, jobs, planning, sandboxes
from apps.runs.configurations import Configuration
from apps.runs.models import (
    TRIAL_ACTIVE,
    Comparison,
    ComparisonStatus,
    Evaluation,
    EvaluationStatus,
    Trial,
    TrialStatus,
)
from selfbench.errors import Conflict

logger = logging.getLogger(__name__)


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def lease_seconds() -> int:
    """How long a running trial's claim lasts without a heartbeat."""
    return _setting("RUNS_LEASE_SECONDS", 120)


def heartbeat_seconds() -> float:
    return float(getattr(settings, "RUNS_HEARTBEAT_SECONDS", max(1.0, lease_seconds() / 4)))


def max_attempts() -> int:
    """How many times a trial runs when its worker dies (an infrastructure failure), before it fails."""
    return _setting("RUNS_MAX_ATTEMPTS", 2)


def trial_timeout_seconds() -> int:
    """Each Harbor invocation's limit (two hours, as SelfBench documents)."""
    return _setting("RUNS_TRIAL_TIMEOUT_SECONDS", 2 * 3600)


def workspace_limit() -> int:
    """How many trials of one workspace run at once."""
    return _setting("RUNS_WORKSPACE_CONCURRENCY", 4)


# --- start ------------------------------------------------------------------------------------------------------------


def body_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _existing(workspace: Workspace, client_id: str, digest: str) -> Comparison | None:
    comparison = Comparison.objects.filter(workspace=workspace, client_id=client_id).first()
    if comparison is not None and comparison.body_hash != digest:
        raise Conflict(f"comparison {client_id} was started with a different body; use a new id")
    return comparison


def comparison_start(
    *, workspace: Workspace, body: dict[str, Any], created_by: User | AnonymousUser | None
) -> Comparison:
    """Start a comparison from a normalized body: one evaluation per model row, one queued trial per task × agent ×
    configuration, and the first jobs dispatched on commit. The same id and body returns the same comparison;
    the same id with another body is a Conflict. A failure part-way is kept in `submission_error` for resume."""
    digest = body_hash(body)
    existing = _existing(workspace, body["id"], digest)
    if existing is not None:
        return existing
    plan = planning.plan_comparison(workspace=workspace, body=body)
    try:
        with transaction.atomic():
            comparison = Comparison.objects.create(
                workspace=workspace,
                client_id=body["id"],
                body=body,
                body_hash=digest,
                sandbox=body["sandbox"],
                sandbox_credential=plan.sandbox_credential,
                judge_credential=plan.judge_credential,
                skip_completed=body["skipCompleted"],
                baseline=body["baseline"],
                task_ids=[t.pk for t in plan.tasks],
                created_by=created_by if isinstance(created_by, User) else None,
            )
            Evaluation.objects.bulk_create(
                Evaluation(
                    workspace=workspace,
                    comparison=comparison,
                    position=row.position,
                    catalog_id=row.model.id,
                    credential=row.credential,
                    managed=row.credential is None,
                    thinking=row.thinking,
                    harnesses=row.harnesses,
                    row_harness_id=row.row_harness.id if row.row_harness else "",
                    subagent=row.subagent,
                )
                for row in plan.evaluations
            )
    except IntegrityError:
        # A concurrent identical POST won the unique (workspace, client_id): answer with its comparison.
        again = _existing(workspace, body["id"], digest)
        if again is None:
            raise
        return again
    return _submit(comparison, plan)


def comparison_resume(*, comparison: Comparison) -> Comparison:
    """Submit what a failed submission left out, reusing the same evaluations; a no-op once submitted."""
    if comparison.status == ComparisonStatus.CANCELLED:
        raise Conflict("a cancelled comparison cannot be resumed")
    if comparison.status != ComparisonStatus.SUBMITTING and not comparison.submission_error:
        return comparison
    body = dict(comparison.body)
    # Resume runs the tasks resolved at start, even if more were approved since.
    if body.get("tasks") is None:
        body["tasks"] = [{"runId": b, "taskId": t} for t, b in _batches(comparison.task_ids)]
    plan = planning.plan_comparison(workspace=comparison.workspace, body=body)
    return _submit(comparison, plan)


def _batches(task_ids: list[int]) -> list[tuple[int, int | None]]:
    from apps.tasks.models import Task

    batch_of = dict(Task.objects.filter(pk__in=task_ids).values_list("pk", "batch_id"))
    return [(t, batch_of.get(t)) for t in task_ids if t in batch_of]


def _scored_pairs(comparison: Comparison) -> set[tuple[int, str, str, str, str]]:
    """(task, model, thinking, agent, configuration) pairs that already have a scored result in this workspace."""
    rows = Trial.objects.filter(
        workspace_id=comparison.workspace_id,
        task_id__in=comparison.task_ids,
        status=TrialStatus.COMPLETED,
        model_verified=True,
        reward__isnull=False,
        cost_usd__isnull=False,
    ).values_list("task_id", "evaluation__catalog_id", "evaluation__thinking", "agent", "configuration_key")
    return set(rows)


def _submit(comparison: Comparison, plan: planning.Plan) -> Comparison:
    """Insert every trial the comparison still lacks and mark it running, in one transaction: a failure leaves no
    trial of this submission behind, only `submission_error` for a resume."""
    skip = _scored_pairs(comparison) if comparison.skip_completed else set()
    try:
        with transaction.atomic():
            settled = _trials_submit(comparison, plan, skip)
            Comparison.objects.filter(pk=comparison.pk).exclude(status=ComparisonStatus.CANCELLED).update(
                status=ComparisonStatus.RUNNING, submission_error="", updated_at=timezone.now()
            )
            if not settled:
                transaction.on_commit(lambda: comparison_refresh(comparison_id=comparison.pk))
            transaction.on_commit(_dispatch_after_commit)
    except Exception as exc:
        logger.exception("comparison %s: submission failed", comparison.client_id)
        Comparison.objects.filter(pk=comparison.pk).update(
            submission_error=f"{type(exc).__name__}: {exc}"[:2000], updated_at=timezone.now()
        )
    comparison.refresh_from_db()
    return comparison


# Trials to insert: evaluation id, agent, configuration, and (task id, task version id, task directory) per task.
_NewTrials = tuple[int, str, Configuration, list[tuple[int, int, str]]]


def _trials_submit(comparison: Comparison, plan: planning.Plan, skip: set[tuple[int, str, str, str, str]]) -> bool:
    """Insert the trials the comparison lacks. True when no status can change from it: every evaluation got new
    trials and had none before, so each stays queued with work to do (the refresh after commit is then skipped)."""
    # Lock the comparison: concurrent resumes of one comparison insert its missing trials one at a time.
    list(Comparison.objects.select_for_update().filter(pk=comparison.pk).values_list("pk"))
    evaluations = {e.position: e for e in comparison.evaluations.all()}
    existing: dict[int, set[tuple[int, str, str]]] = {e.pk: set() for e in evaluations.values()}
    for evaluation_id, task_id, agent, key in Trial.objects.filter(evaluation__comparison=comparison).values_list(
        "evaluation_id", "task_id", "agent", "configuration_key"
    ):
        existing[evaluation_id].add((task_id, agent, key))
    new: list[_NewTrials] = []
    now = timezone.now()
    base = planning.task_runs(plan.tasks)
    for row in plan.evaluations:
        evaluation = evaluations[row.position]
        have = existing[evaluation.pk]
        total = len(have)
        for group in planning.row_trial_groups(row, base):
            agent, key = group.agent, group.configuration.key
            tasks = group.tasks
            if have or skip:
                tasks = [
                    t
                    for t in tasks
                    # A resume inserts only what a failed submission left out.
                    if (t[0], agent, key) not in have and (t[0], row.model.id, row.thinking, agent, key) not in skip
                ]
            new.append((evaluation.pk, agent, group.configuration, tasks))
            total += len(tasks)
        evaluation.trials_total = total
        evaluation.updated_at = now
    _trials_insert(new, workspace_id=comparison.workspace_id, sandbox=comparison.sandbox)
    Evaluation.objects.bulk_update(evaluations.values(), ["trials_total", "updated_at"])
    return not any(existing.values()) and all(
        e.trials_total > 0 and e.status == EvaluationStatus.QUEUED for e in evaluations.values()
    )


def _uuid4_texts(n: int) -> list[str]:
    """n random (version 4) UUIDs as text, without building uuid.UUIDs (a third of the insert's Python time)."""
    h = os.urandom(16 * n).hex()
    return [
        f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-4{h[i + 13 : i + 16]}-{'89ab'[int(h[i + 16], 16) & 3]}"
        f"{h[i + 17 : i + 20]}-{h[i + 20 : i + 32]}"
        for i in range(0, 32 * n, 32)
    ]


# Columns COPY sends per trial; the shared part of a row is formatted once per evaluation × agent × configuration.
_PER_TRIAL = ("uuid", "task_id", "task_version_id", "task_dir")
_PER_GROUP = (
    "evaluation_id",
    "agent",
    "harness_id",
    "environment_id",
    "configuration_key",
    "configuration_label",
    "spec",
)
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(field: Any, value: Any) -> str:
    """One value in COPY's text format."""
    if value is None:
        return "\\N"
    if isinstance(field, JSONField):
        value = json.dumps(value)
    elif isinstance(value, bool):
        return "t" if value else "f"
    elif isinstance(value, datetime):
        return value.isoformat()
    return str(value).translate(_COPY_ESCAPES)


def _trial_values(config: Configuration, agent: str, evaluation_id: int) -> dict[str, Any]:
    return {
        "evaluation_id": evaluation_id,
        "agent": agent,
        "harness_id": config.harness.id if config.harness else "",
        "environment_id": config.environment.id if config.environment else "",
        "configuration_key": config.key,
        "configuration_label": config.label,
        "spec": execution.frozen_spec(config),
    }


def _trials_insert(new: list[_NewTrials], *, workspace_id: int, sandbox: str) -> None:
    """Insert new trials with one PostgreSQL COPY (else bulk_create).

    Per trial only its uuid, task and directory vary; everything else is the same for a whole evaluation × agent ×
    configuration, so each row joins a few strings formatted once (bulk_create, or psycopg's write_row, would
    adapt each of the ~45 values of each of 24,000 rows in Python).
    """
    if not any(tasks for *_, tasks in new):
        return
    common = {"workspace_id": workspace_id, "sandbox": sandbox}
    if connection.vendor != "postgresql":
        Trial.objects.bulk_create(
            [
                Trial(
                    **common,
                    **_trial_values(config, agent, evaluation_id),
                    task_id=task_id,
                    task_version_id=version_id,
                    task_dir=task_dir,
                )
                for evaluation_id, agent, config, tasks in new
                for task_id, version_id, task_dir in tasks
            ],
            batch_size=2000,
        )
        return
    now = timezone.now()
    by_name = {f.attname: f for f in Trial._meta.concrete_fields if not f.primary_key}
    shared = [n for n in by_name if n not in _PER_TRIAL and n not in _PER_GROUP]
    constants: list[str] = []
    for name in shared:
        field = by_name[name]
        if name in common:
            value = common[name]
        elif name in ("created_at", "updated_at"):
            value = now
        else:
            value = field.get_default()
        constants.append(_copy_text(field, value))
    uuids = iter(_uuid4_texts(sum(len(tasks) for *_, tasks in new)))
    heads: dict[int, list[str]] = {}  # the per-task part of a row, by task list (groups share lists)
    columns = [by_name[n].column for n in (*_PER_TRIAL, *_PER_GROUP, *shared)]
    table = connection.ops.quote_name(Trial._meta.db_table)
    sql = f"COPY {table} ({', '.join(connection.ops.quote_name(str(c)) for c in columns)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for evaluation_id, agent, config, tasks in new:
            values = _trial_values(config, agent, evaluation_id)
            tail = "\t".join([*(_copy_text(by_name[n], values[n]) for n in _PER_GROUP), *constants]) + "\n"
            head = heads.get(id(tasks))
            if head is None:
                head = heads[id(tasks)] = [f"\t{t}\t{v}\t{_copy_text(None, d)}\t" for t, v, d in tasks]
            # One write per group: the server inserts a group while the next one is formatted.
            copy.write("".join([f"{next(uuids)}{h}{tail}" for h in head]))


# --- progress -----------------------------------------------------------------------------------------------------


def evaluation_refresh(*, evaluation_id: int) -> None:
    """Recompute an evaluation's status from its trials."""
    counts = Trial.objects.filter(evaluation_id=evaluation_id).aggregate(
        active=Count("id", filter=Q(status__in=TRIAL_ACTIVE)),
        running=Count("id", filter=Q(status=TrialStatus.RUNNING)),
        cancelled=Count("id", filter=Q(status=TrialStatus.CANCELLED)),
        total=Count("id"),
    )
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    if evaluation.status == EvaluationStatus.CANCELLED:
        status = EvaluationStatus.CANCELLED
    elif counts["active"] == 0:
        status = EvaluationStatus.COMPLETED
    elif counts["running"] or counts["active"] < counts["total"]:
        status = EvaluationStatus.RUNNING
    else:
        status = EvaluationStatus.QUEUED
    if status != evaluation.status:
        Evaluation.objects.filter(pk=evaluation_id).update(status=status, updated_at=timezone.now())


def comparison_refresh(*, comparison_id: int) -> None:
    """Recompute a comparison's evaluations and mark it done when no trial is left to run."""
    for evaluation_id in Evaluation.objects.filter(comparison_id=comparison_id).values_list("pk", flat=True):
        evaluation_refresh(evaluation_id=evaluation_id)
    active = Trial.objects.filter(evaluation__comparison_id=comparison_id, status__in=TRIAL_ACTIVE).exists()
    if not active:
        Comparison.objects.filter(pk=comparison_id, status=ComparisonStatus.RUNNING).update(
            status=ComparisonStatus.DONE, updated_at=timezone.now()
        )


# --- cancel and delete --------------------------------------------------------------------------------------------


def _cancel_trials(trials: Any) -> int:
    """Cancel queued and running trials; running ones also lose their containers and gateway key now."""
    running = list(trials.filter(status=TrialStatus.RUNNING).values_list("uuid", "attempt", "sandbox"))
    count: int = trials.filter(status__in=TRIAL_ACTIVE).update(
        status=TrialStatus.CANCELLED, failure_cause="cancelled", finished_at=timezone.now(), updated_at=timezone.now()
    )

    def stop() -> None:
        for trial_uuid, attempt, sandbox_id in running:
            trial = Trial(uuid=trial_uuid, attempt=attempt)
            gateway_services.trial_key_revoke(subject=trial.subject)
            sandboxes.containers_remove(sandbox_id=sandbox_id, trial_name=trial.harbor_name)

    transaction.on_commit(stop)
    return count


@transaction.atomic
def comparison_cancel(*, comparison: Comparison) -> Comparison:
    """Stop every queued and running trial of the comparison; its evaluations and it become cancelled."""
    _cancel_trials(Trial.objects.filter(evaluation__comparison=comparison))
    Evaluation.objects.filter(comparison=comparison).exclude(status=EvaluationStatus.COMPLETED).update(
        status=EvaluationStatus.CANCELLED, updated_at=timezone.now()
    )
    Comparison.objects.filter(pk=comparison.pk).exclude(status=ComparisonStatus.DONE).update(
        status=ComparisonStatus.CANCELLED, updated_at=timezone.now()
    )
    transaction.on_commit(_dispatch_after_commit)
    comparison.refresh_from_db()
    return comparison


@transaction.atomic
def evaluation_cancel(*, evaluation: Evaluation) -> Evaluation:
    """Stop the evaluation's queued and running trials; the rest of its comparison goes on."""
    _cancel_trials(Trial.objects.filter(evaluation=evaluation))
    Evaluation.objects.filter(pk=evaluation.pk).exclude(status=EvaluationStatus.COMPLETED).update(
        status=EvaluationStatus.CANCELLED, updated_at=timezone.now()
    )
    comparison_id = evaluation.comparison_id
    transaction.on_commit(lambda: comparison_refresh(comparison_id=comparison_id))
    transaction.on_commit(_dispatch_after_commit)
    evaluation.refresh_from_db()
    return evaluation


@transaction.atomic
def evaluation_delete(*, evaluation: Evaluation) -> None:
    """Delete an evaluation and its trials (running ones are stopped first)."""
    _cancel_trials(Trial.objects.filter(evaluation=evaluation))
    comparison_id = evaluation.comparison_id
    evaluation.delete()
    transaction.on_commit(lambda: comparison_refresh(comparison_id=comparison_id))


def _enqueue(trial_ids: list[int]) -> None:
    for pk in trial_ids:
        jobs.enqueue_trial_execute(pk)


def _dispatch_after_commit() -> None:
    trials_dispatch()


# --- dispatch -----------------------------------------------------------------------------------------------------

_DISPATCH_LOCK = 0x5E1F_0006  # pg advisory lock: one dispatcher at a time decides who runs next


def trials_dispatch(*, window: int = 500) -> list[int]:
    """Enqueue jobs for queued trials while the workspace and sandbox limits allow; returns the trial ids.

    Jobs are enqueued lazily (a 24,000-trial comparison puts only as many jobs on the queue as may run), and a
    trial is marked dispatched so two dispatchers never enqueue it twice.
    """
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_DISPATCH_LOCK])
        busy = Q(status=TrialStatus.RUNNING) | Q(status=TrialStatus.QUEUED, dispatched_at__isnull=False)
        by_workspace = dict(
            Trial.objects.filter(busy)
            .values_list("workspace_id")
            .annotate(n=Count("id"))
            .values_list("workspace_id", "n")
        )
        by_sandbox = dict(
            Trial.objects.filter(busy).values_list("sandbox").annotate(n=Count("id")).values_list("sandbox", "n")
        )
        # Oldest first. Every candidate has the same status and dispatched_at, so leading the order with them
        # changes nothing but the plan: PostgreSQL reads the candidates from the (status, dispatched_at) index
        # instead of walking the primary key past every finished trial (140 ms behind 96,000 of them, and growing).
        candidates = list(
            Trial.objects.filter(status=TrialStatus.QUEUED, dispatched_at__isnull=True)
            .order_by("status", "dispatched_at", "pk")
            .values_list("pk", "workspace_id", "sandbox")[:window]
        )
        chosen: list[int] = []
        for pk, workspace_id, sandbox_id in candidates:
            if by_workspace.get(workspace_id, 0) >= workspace_limit():
                continue
            if by_sandbox.get(sandbox_id, 0) >= sandboxes.sandbox_limit(sandbox_id):
                continue
            by_workspace[workspace_id] = by_workspace.get(workspace_id, 0) + 1
            by_sandbox[sandbox_id] = by_sandbox.get(sandbox_id, 0) + 1
            chosen.append(pk)
        if chosen:
            Trial.objects.filter(pk__in=chosen).update(dispatched_at=timezone.now())
            transaction.on_commit(lambda: _enqueue(chosen))
    return chosen


# --- execution ----------------------------------------------------------------------------------------------------


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def trial_claim(*, trial_id: int) -> Trial | None:
    """Claim a queued trial for this worker (a conditional update); None when another worker has it or it ended."""
    now = timezone.now()
    claimed = Trial.objects.filter(pk=trial_id, status=TrialStatus.QUEUED).update(
        status=TrialStatus.RUNNING,
        started_at=now,
        heartbeat_at=now,
        lease_expires_at=now + timedelta(seconds=lease_seconds()),
        worker=worker_name(),
        updated_at=now,
    )
    if claimed != 1:
        return None
    trial = Trial.objects.select_related("evaluation__comparison", "evaluation__credential", "workspace").get(
        pk=trial_id
    )
    Evaluation.objects.filter(pk=trial.evaluation_id, status=EvaluationStatus.QUEUED).update(
        status=EvaluationStatus.RUNNING, updated_at=now
    )
    return trial


class _Heartbeat:
    """Renews a running trial's lease; when the trial was cancelled meanwhile, removes its containers."""

    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"heartbeat-{trial.pk}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)

    def _run(self) -> None:
        from django.db import connection as thread_connection

        try:
            while not self.stop.wait(heartbeat_seconds()):
                now = timezone.now()
                renewed = Trial.objects.filter(pk=self.trial.pk, status=TrialStatus.RUNNING).update(
                    heartbeat_at=now, lease_expires_at=now + timedelta(seconds=lease_seconds())
                )
                if renewed == 0:
                    sandboxes.containers_remove(sandbox_id=self.trial.sandbox, trial_name=self.trial.harbor_name)
                    gateway_services.trial_key_revoke(subject=self.trial.subject)
                    return
        finally:
            thread_connection.close()


def trial_execute(*, trial_id: int) -> Trial | None:
    """Run one claimed trial: mint its gateway key, run Harbor in its sandbox, store the outcome and the ledger's
    roll-up, revoke the key, then dispatch the next trials. Returns None when the trial was not ours to run."""
    trial = trial_claim(trial_id=trial_id)
    if trial is None:
        return None
    subject = trial.subject
    try:
        with _Heartbeat(trial):
            result = execution.run(trial, ttl_seconds=trial_timeout_seconds() + 900)
    except Exception as exc:  # the adapter reports trial failures in the outcome; this is our own or setup's
        logger.exception("trial %s failed before Harbor ran it", trial.uuid)
        result = execution.failed_result(exc)
    finally:
        gateway_services.trial_key_revoke(subject=subject)
    usage = execution.settled_usage(subject)
    fields = execution.result_fields(result, usage)
    with transaction.atomic():
        finished = Trial.objects.filter(pk=trial.pk, status=TrialStatus.RUNNING).update(
            **fields, status=result.status, lease_expires_at=None, updated_at=timezone.now()
        )
        if finished == 0:
            # Cancelled meanwhile: keep the cancel, but record what was spent.
            Trial.objects.filter(pk=trial.pk).update(**execution.usage_fields(usage), updated_at=timezone.now())
        else:
            execution.store_artifacts(trial, result)
        comparison_id = trial.evaluation.comparison_id
        transaction.on_commit(lambda: comparison_refresh(comparison_id=comparison_id))
        transaction.on_commit(_dispatch_after_commit)
    trial.refresh_from_db()
    return trial


# --- recovery -----------------------------------------------------------------------------------------------------


def trials_reap(*, now: Any = None) -> dict[str, int]:
    """Recover from dead workers: a running trial whose lease ran out is queued again (its containers removed) or,
    past RUNS_MAX_ATTEMPTS, failed with cause `worker_lost`; a dispatched job that never started is re-dispatched."""
    now = now or timezone.now()
    requeued = failed = redispatched = 0
    for trial in Trial.objects.filter(status=TrialStatus.RUNNING, lease_expires_at__lt=now):
        sandboxes.containers_remove(sandbox_id=trial.sandbox, trial_name=trial.harbor_name)
        gateway_services.trial_key_revoke(subject=trial.subject)
        base = Trial.objects.filter(pk=trial.pk, status=TrialStatus.RUNNING, lease_expires_at__lt=now)
        if trial.attempt < max_attempts():
            requeued += base.update(
                status=TrialStatus.QUEUED,
                attempt=trial.attempt + 1,
                dispatched_at=None,
                lease_expires_at=None,
                worker="",
                exception_message=f"attempt {trial.attempt}: its worker {trial.worker} stopped heartbeating",
                updated_at=now,
            )
        else:
            failed += base.update(
                status=TrialStatus.FAILED,
                failure_cause="worker_lost",
                exception_type="WorkerLost",
                exception_message=f"its worker {trial.worker} stopped heartbeating on attempt {trial.attempt}",
                finished_at=now,
                lease_expires_at=None,
                updated_at=now,
            )
            comparison_refresh(comparison_id=trial.evaluation.comparison_id)
    stale = now - timedelta(seconds=_setting("RUNS_DISPATCH_STALE_SECONDS", 900))
    redispatched = Trial.objects.filter(status=TrialStatus.QUEUED, dispatched_at__lt=stale).update(dispatched_at=None)
    trials_dispatch()
    return {"requeued": requeued, "failed": failed, "redispatched": redispatched}


def trial_wait_terminal(*, trial_id: int, timeout: float) -> Trial:
    """Poll until the trial is terminal (tests and the CLI's wait)."""
    deadline = time.monotonic() + timeout
    while True:
        trial = Trial.objects.get(pk=trial_id)
        if trial.is_terminal or time.monotonic() > deadline:
            return trial
        time.sleep(0.5)
