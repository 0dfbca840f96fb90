"""Every write to tasks: create, author, gate, review hand-off, approve/reject, recover.

The flow: task_create → (job) task_author → (job per gate) task_run_gate … → in_review → awaiting_approval;
people call task_approve / task_reject. Gate failures reject the task with the gate's reason; infrastructure
errors are retried up to MAX_INFRA_ATTEMPTS per gate, then the task is infrastructure_failed.

A candidate that fails authoring's checks or a gate ends `failed` with the check's or gate's reason (the state graph
of apps.repositories allows `rejected` only from review or approval, i.e. a reviewer's or a person's decision).

Cancelling (task_cancel, or a batch cancel that cancels the task's candidate) stops the trial of the running gate:
its containers are removed, the gate run is recorded `cancelled`, no later gate starts and the task ends `cancelled`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Workspace
from apps.repositories import services as repository_services
from apps.repositories.models import Candidate, CandidateState
from apps.tasks import authoring, checks, gates, jobs, storage
from apps.tasks.models import GATE_ORDER, TASK_TERMINAL, Gate, GateRun, GateStatus, Task, TaskState, TaskVersion
from selfbench import harbor_adapter
from selfbench.errors import Conflict, InvalidInput

logger = logging.getLogger(__name__)

MAX_INFRA_ATTEMPTS = 3


def determinism_runs() -> int:
    return max(1, int(getattr(settings, "TASKS_DETERMINISM_RUNS", 3)))


def cancel_poll_seconds() -> float:
    """How often a running gate looks for a cancel of its task or candidate."""
    return float(getattr(settings, "TASKS_CANCEL_POLL_SECONDS", 2.0))


def cancel_grace_seconds() -> float:
    """How long a cancelled gate waits for its Harbor run to wind down before leaving it to end in the background."""
    return float(getattr(settings, "TASKS_CANCEL_GRACE_SECONDS", 30.0))


# --- state ------------------------------------------------------------------------------------------------------------


def task_set_state(*, task: Task, state: str, reason: str = "") -> Task:
    """Move the task (and its candidate, if any) to `state` with a reason. A cancelled task stays cancelled: a job
    finishing after the cancel changes nothing."""
    if state in TASK_TERMINAL and not reason:
        raise InvalidInput("a terminal state needs a reason")
    with transaction.atomic():
        moved = (
            Task.objects.filter(pk=task.pk)
            .exclude(state=TaskState.CANCELLED)
            .update(state=state, reason=reason, state_changed_at=timezone.now(), updated_at=timezone.now())
        )
        task.refresh_from_db()
        if not moved:
            return task
        if task.candidate_id is not None:
            candidate = Candidate.objects.get(pk=task.candidate_id)
            if candidate.state != state:
                try:
                    repository_services.candidate_set_state(candidate=candidate, state=state, reason=reason)
                except Conflict:
                    logger.warning("candidate %s cannot follow task %s to %s", candidate.pk, task.pk, state)
    return task


def _claim(task: Task, from_state: str, to_state: str) -> bool:
    """Idempotent job start: only one worker moves the task out of `from_state`."""
    return Task.objects.filter(pk=task.pk, state=from_state).update(state=to_state, updated_at=timezone.now()) == 1


# --- creation ---------------------------------------------------------------------------------------------------------


@transaction.atomic
def task_create(
    *,
    workspace: Workspace,
    source: authoring.PullRequestSource,
    tier_requested: str = "easy",
    candidate: Candidate | None = None,
    heuristic_author: bool = True,
) -> Task:
    """Create a proposed task for one PR and schedule its authoring (the heuristic author's, unless
    `heuristic_author=False`: then the caller, a model-driven author, schedules its own)."""
    if tier_requested not in ("easy", "medium", "hard"):
        raise InvalidInput("tier must be easy, medium or hard")
    task = Task.objects.create(
        workspace=workspace,
        candidate=candidate,
        repository=candidate.batch.repository if candidate else None,
        batch=candidate.batch if candidate else None,
        source_path=str(source.repo_path),
        source_repository=source.repository,
        pr_number=source.number,
        base_sha=source.base_sha,
        head_sha=source.head_sha,
        title=source.title,
        body=source.body,
        tier_requested=tier_requested,
    )
    if heuristic_author:
        transaction.on_commit(lambda: jobs.enqueue_task_author(task.pk))
    return task


def candidate_source(*, candidate: Candidate) -> authoring.PullRequestSource:
    """A candidate's PR as an authoring source: base and head from a checkout of its repository."""
    pr = candidate.pull_request
    repository = candidate.batch.repository
    head = pr.head_sha or pr.merge_sha
    if not head:
        raise InvalidInput(f"PR #{pr.number} has no head or merge commit")
    checkout = repository_services.repository_checkout(repository=repository, sha=head)
    return authoring.PullRequestSource(
        repo_path=checkout,
        base_sha=pr.base_sha,
        head_sha=head,
        title=pr.title,
        body=pr.body,
        number=pr.number,
        repository=repository.full_name or repository.location,
    )


def task_create_for_candidate(*, candidate: Candidate, heuristic_author: bool = True) -> Task:
    """Create the task of a repositories candidate (and schedule the heuristic author unless told not to)."""
    return task_create(
        workspace=candidate.batch.repository.workspace,
        source=candidate_source(candidate=candidate),
        tier_requested=candidate.tier or "easy",
        candidate=candidate,
        heuristic_author=heuristic_author,
    )


# --- authoring --------------------------------------------------------------------------------------------------------


def _source(task: Task) -> authoring.PullRequestSource:
    return authoring.PullRequestSource(
        repo_path=Path(task.source_path),
        base_sha=task.base_sha,
        head_sha=task.head_sha,
        title=task.title,
        body=task.body,
        number=task.pr_number,
        repository=task.source_repository,
    )


def _record(task: Task, gate: str, attempt: int, result: gates.GateResult, version: TaskVersion | None) -> GateRun:
    return GateRun.objects.create(
        task=task,
        version=version,
        gate=gate,
        attempt=attempt,
        status=result.status,
        reason=result.reason,
        trial_name=result.trial_name,
        reward=result.reward,
        runs=result.runs,
        flake_rate=result.flake_rate,
        details=result.details,
        log=result.log,
        duration_sec=round(result.duration_sec, 3),
        finished_at=timezone.now(),
    )


def _attempts(task: Task, gate: str, version: TaskVersion | None) -> int:
    return GateRun.objects.filter(task=task, gate=gate, version=version).count()


def task_author(*, task: Task) -> Task:
    """Author the task: split the PR, static checks, discovery run, final files stored as a new version; then
    schedule the build gate. Rejects with the reasons when a check fails."""
    if _stopped(task):
        return task
    if not _claim(task, TaskState.PROPOSED, TaskState.AUTHORING):
        task.refresh_from_db()
        if task.state != TaskState.AUTHORING:
            return task
    task = task_set_state(task=task, state=TaskState.AUTHORING, reason="")
    try:
        draft = authoring.draft(
            source=_source(task), tier_requested=task.tier_requested, base_image=settings.BASE_IMAGE
        )
    except Exception as exc:
        logger.exception("authoring task %s failed", task.pk)
        return task_set_state(task=task, state=TaskState.FAILED, reason=f"authoring failed: {exc}")
    if draft.reasons:
        return task_set_state(task=task, state=TaskState.FAILED, reason="static checks: " + "; ".join(draft.reasons))
    _, draft_dir = storage.store(draft.files, kind="task-drafts")
    result: gates.GateResult | None = None
    for _ in range(MAX_INFRA_ATTEMPTS):
        attempt = _attempts(task, Gate.DISCOVERY, None) + 1
        if attempt > MAX_INFRA_ATTEMPTS:
            break
        result = _attempt(task, None, Gate.DISCOVERY, attempt, lambda name: gates.run_discovery(draft_dir, name))
        if result is None:
            task.refresh_from_db()
            return task
        if result.status != gates.INFRA:
            break
    if result is None or result.status == gates.INFRA:
        return task_set_state(
            task=task,
            state=TaskState.INFRASTRUCTURE_FAILED,
            reason=f"discovery run failed {MAX_INFRA_ATTEMPTS} times: {result.reason if result else 'no attempt'}",
        )
    if result.status != gates.PASSED:
        return task_set_state(task=task, state=TaskState.FAILED, reason=f"discovery: {result.reason}")
    files, definition = authoring.finalize(
        draft=draft, before=result.details.get("before", {}), after=result.details.get("after", {})
    )
    reasons = checks.check_tier(
        tier=draft.tier, fail_to_pass=definition["failToPass"], pass_to_pass=definition["passToPass"]
    )
    digest, task_dir = storage.store(files)
    findings = harbor_adapter.lint_task(task_dir)
    reasons += [f"harbor lint: {f}" for f in findings]
    with transaction.atomic():
        version, _ = TaskVersion.objects.get_or_create(
            task=task,
            content_hash=digest,
            defaults={
                "definition": definition,
                "fail_to_pass": definition["failToPass"],
                "pass_to_pass": definition["passToPass"],
            },
        )
        Task.objects.filter(pk=task.pk).update(version=version, tier=draft.tier or "")
        task = Task.objects.select_for_update().get(pk=task.pk)
        if task.state != TaskState.AUTHORING:  # cancelled meanwhile
            return task
        if reasons:
            return task_set_state(task=task, state=TaskState.FAILED, reason="static checks: " + "; ".join(reasons))
        task = task_set_state(task=task, state=TaskState.VERIFYING, reason="")
        transaction.on_commit(lambda: jobs.enqueue_task_gate(task.pk, str(Gate.BUILD)))
    return task


# --- gates ------------------------------------------------------------------------------------------------------------


def _run_one(version: TaskVersion, gate: str, name: str) -> gates.GateResult:
    if gate == Gate.BUILD:
        return gates.run_build(version.path, name)
    if gate == Gate.SMOKE:
        return gates.run_smoke(version.path, name)
    if gate == Gate.NOP:
        return gates.run_nop(version.path, name, fail_to_pass=version.fail_to_pass, pass_to_pass=version.pass_to_pass)
    if gate == Gate.ORACLE:
        return gates.run_oracle(version.path, name)
    return gates.run_oracle(version.path, name, runs=determinism_runs())


def task_run_gate(*, task: Task, gate: str) -> Task:
    """Run one gate of the task's current version (retrying infrastructure errors), record each attempt, and
    schedule the next gate, reject the task, or mark it infrastructure_failed."""
    if gate not in GATE_ORDER:
        raise InvalidInput(f"unknown gate {gate}")
    if _stopped(task):
        return task
    version = task.version
    if task.state != TaskState.VERIFYING or version is None:
        return task
    if GateRun.objects.filter(task=task, version=version, gate=gate, status=GateStatus.PASSED).exists():
        return _advance(task, version, gate)
    while True:
        attempt = _attempts(task, gate, version) + 1
        if attempt > MAX_INFRA_ATTEMPTS:
            last = GateRun.objects.filter(task=task, version=version, gate=gate).last()
            reason = f"{gate} gate: infrastructure failed {MAX_INFRA_ATTEMPTS} times: {last.reason if last else ''}"
            return task_set_state(task=task, state=TaskState.INFRASTRUCTURE_FAILED, reason=reason)
        result = _attempt(task, version, gate, attempt, lambda name: _run_one(version, gate, name))
        if result is None:
            task.refresh_from_db()
            return task
        Task.objects.filter(pk=task.pk).update(infra_attempts=attempt if result.status == gates.INFRA else 0)
        if result.status == gates.INFRA:
            continue
        if gate == Gate.DETERMINISM:
            Task.objects.filter(pk=task.pk).update(flake_rate=result.flake_rate or 0.0)
        if result.status == gates.FAILED:
            return task_set_state(task=task, state=TaskState.FAILED, reason=f"{gate} gate: {result.reason}")
        return _advance(task, version, gate)


def _attempt(
    task: Task, version: TaskVersion | None, gate: str, attempt: int, run: Callable[[str], gates.GateResult]
) -> gates.GateResult | None:
    """One attempt at a gate: its row, the trial watched for a cancel, the result. None when the task was cancelled
    (the row then stays `cancelled`)."""
    name = gates.trial_name(task.pk, gate, attempt)
    # A running row with its trial name first: a worker killed mid-gate leaves evidence for task_recover_stale, and
    # a cancel finds the trial's containers by that name.
    row = GateRun.objects.create(task=task, version=version, gate=gate, attempt=attempt, trial_name=name)
    result = _run_watched(task, name, lambda: run(name))
    if result is None:
        return None
    recorded = GateRun.objects.filter(pk=row.pk, status=GateStatus.RUNNING).update(
        status=result.status,
        reason=result.reason,
        trial_name=result.trial_name or name,
        reward=result.reward,
        runs=result.runs,
        flake_rate=result.flake_rate,
        details=result.details,
        log=result.log,
        duration_sec=round(result.duration_sec, 3),
        finished_at=timezone.now(),
    )
    return result if recorded else None


def _run_watched(task: Task, name: str, run: Callable[[], gates.GateResult]) -> gates.GateResult | None:
    """Run a gate's trial in a thread of its own while this one watches the database for a cancel of the task or its
    candidate. On a cancel the trial is stopped (task_cancel records it; see _stop_trial) and the result is None."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = run()
        except BaseException as exc:  # re-raised in this thread
            box["error"] = exc

    runner = threading.Thread(target=target, name=f"gate-{name}", daemon=True)
    runner.start()
    while runner.is_alive():
        runner.join(cancel_poll_seconds())
        reason = _cancel_reason(task) if runner.is_alive() else None
        if reason is not None:
            try:
                task_cancel(task=task, reason=reason)
            except Conflict:  # it ended otherwise meanwhile; the trial is stopped all the same
                pass
            _stop_trial(runner, name)
            return None
    if "error" in box:
        raise box["error"]
    result: gates.GateResult = box["result"]
    return result


def _stop_trial(runner: threading.Thread, name: str) -> None:
    """Remove the cancelled trial's containers until its Harbor run has ended (it may be starting one more, e.g. a
    separate verifier); after cancel_grace_seconds a background thread keeps doing so."""
    harbor_adapter.trial_stop(runner, name, grace_seconds=cancel_grace_seconds(), poll_seconds=cancel_poll_seconds())


def _advance(task: Task, version: TaskVersion, gate: str) -> Task:
    index = GATE_ORDER.index(Gate(gate))
    if index + 1 < len(GATE_ORDER):
        following = str(GATE_ORDER[index + 1])
        transaction.on_commit(lambda: jobs.enqueue_task_gate(task.pk, following))
        return task
    TaskVersion.objects.filter(pk=version.pk).update(verified_at=timezone.now())
    task = task_set_state(task=task, state=TaskState.IN_REVIEW, reason="all five gates passed")
    return task_review_handoff(task=task)


def task_review_handoff(*, task: Task) -> Task:
    """No automatic reviewer is wired in yet (a later issue): hand the verified task to people, saying so."""
    return task_set_state(
        task=task,
        state=TaskState.AWAITING_APPROVAL,
        reason="verified by all five gates; no automatic reviewer is configured, so a person reviews it at approval",
    )


def task_recover_stale(*, older_than: timedelta = timedelta(hours=3)) -> list[Task]:
    """Gate runs left `running` by a killed worker: mark them infrastructure errors and run the gate again
    (task_run_gate counts them as attempts, so a gate that keeps dying ends infrastructure_failed)."""
    cutoff = timezone.now() - older_than
    recovered: list[Task] = []
    for row in GateRun.objects.filter(status=GateStatus.RUNNING, started_at__lt=cutoff).select_related("task"):
        GateRun.objects.filter(pk=row.pk, status=GateStatus.RUNNING).update(
            status=GateStatus.INFRASTRUCTURE_ERROR,
            reason="the worker stopped during this gate",
            finished_at=timezone.now(),
        )
        if row.task.state == TaskState.VERIFYING:
            gate = row.gate
            task_id = row.task_id
            transaction.on_commit(lambda t=task_id, g=gate: jobs.enqueue_task_gate(t, g))  # type: ignore[misc]
            recovered.append(row.task)
    for task in Task.objects.filter(state=TaskState.AUTHORING, updated_at__lt=cutoff):
        recovered.append(task_set_state(task=task, state=TaskState.FAILED, reason="the worker stopped while authoring"))
    return recovered


# --- cancel -----------------------------------------------------------------------------------------------------------


def task_cancel(*, task: Task, reason: str = "cancelled by a person") -> Task:
    """Cancel an unfinished task: it (and its candidate) ends `cancelled` with the reason, its running gate runs are
    recorded `cancelled`, and their trials' containers are removed after commit; the gate job then starts no later
    gate. Cancelling a cancelled task changes nothing; a finished one cannot be cancelled."""
    if not reason.strip():
        raise InvalidInput("a cancel needs a reason")
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        if locked.state == TaskState.CANCELLED:
            return locked
        if locked.is_terminal:
            raise Conflict(f"task {locked.pk} is {locked.state}; only an unfinished task can be cancelled")
        running = GateRun.objects.filter(task=locked, status=GateStatus.RUNNING)
        names = [n for n in running.values_list("trial_name", flat=True) if n]
        running.update(status=GateStatus.CANCELLED, reason=f"cancelled: {reason}", finished_at=timezone.now())
        task = task_set_state(task=locked, state=TaskState.CANCELLED, reason=reason)
        transaction.on_commit(lambda: _remove_containers(names))
    return task


def _remove_containers(names: list[str]) -> None:
    for name in names:
        harbor_adapter.trial_containers_remove(trial_name=name)


def _cancel_reason(task: Task) -> str | None:
    """Why the task's work must stop now: it was cancelled, or its candidate was (a batch cancel cancels only the
    candidates); None when it goes on."""
    state, reason = Task.objects.filter(pk=task.pk).values_list("state", "reason").get()
    if state == TaskState.CANCELLED:
        return str(reason) or "cancelled"
    if task.candidate_id is not None and state not in TASK_TERMINAL:
        candidate = Candidate.objects.filter(pk=task.candidate_id).values_list("state", "reason").first()
        if candidate is not None and candidate[0] == CandidateState.CANCELLED:
            return str(candidate[1]) or "its candidate was cancelled"
    return None


def _stopped(task: Task) -> bool:
    """A job's first look: the task was cancelled (its job does nothing), or its candidate was (the task follows)."""
    reason = _cancel_reason(task)
    if reason is not None:
        try:
            task_cancel(task=task, reason=reason)
        except Conflict:
            pass
    task.refresh_from_db()
    return reason is not None


# --- people -----------------------------------------------------------------------------------------------------------


def task_approve(*, task: Task, user: AbstractBaseUser | None, note: str = "") -> Task:
    """A person approves a verified task; only approved tasks are evaluated."""
    if task.state != TaskState.AWAITING_APPROVAL:
        raise Conflict(f"task {task.pk} is {task.state}; only a task awaiting approval can be approved")
    task = task_set_state(task=task, state=TaskState.APPROVED, reason=note or "approved")
    return _decided(task, user, note)


def task_reject(*, task: Task, user: AbstractBaseUser | None, note: str) -> Task:
    """A person rejects a task awaiting approval (or takes back an approval), with a note."""
    if not note.strip():
        raise InvalidInput("a rejection needs a note")
    if task.state not in (TaskState.AWAITING_APPROVAL, TaskState.APPROVED):
        raise Conflict(f"task {task.pk} is {task.state}; only a task awaiting approval or approved can be rejected")
    task = task_set_state(task=task, state=TaskState.REJECTED, reason=f"rejected by a person: {note}")
    return _decided(task, user, note)


def _decided(task: Task, user: AbstractBaseUser | None, note: str) -> Task:
    Task.objects.filter(pk=task.pk).update(
        decision_note=note,
        decided_by=user if user is not None and user.is_authenticated else None,
        decided_at=timezone.now(),
    )
    task.refresh_from_db()
    return task


def version_files(version: TaskVersion) -> list[dict[str, Any]]:
    """The version's files for the detail view (text inline, binaries by size)."""
    out: list[dict[str, Any]] = []
    root = version.path
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        text: str | None
        try:
            text = data.decode() if len(data) <= 200_000 and not rel.endswith(".tar") else None
        except UnicodeDecodeError:
            text = None
        out.append({"path": rel, "size": len(data), "content": text})
    return out


def definition_json(version: TaskVersion) -> str:
    return json.dumps(version.definition, indent=1, sort_keys=True)


def task_version_derive(*, task: Task, base: TaskVersion, files: storage.TaskFiles) -> TaskVersion:
    """Store changed files of `task` as another of its versions (content-addressed), keeping `base`'s definition and
    selected tests. The task's own version does not change (repo ablations build their task versions this way)."""
    digest, _ = storage.store(files)
    version, _ = TaskVersion.objects.get_or_create(
        task=task,
        content_hash=digest,
        defaults={
            "definition": base.definition,
            "fail_to_pass": base.fail_to_pass,
            "pass_to_pass": base.pass_to_pass,
        },
    )
    return version


# --- verify (model-driven authors) ------------------------------------------------------------------------------------


@dataclass
class VerifyReport:
    """What `verify` tells an author: each check in order with its status and reason; the version it verified."""

    passed: bool
    checks: list[dict[str, str]]
    version: TaskVersion | None = None
    reused: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "reused": self.reused,
            "contentHash": self.version.content_hash if self.version else None,
            "checks": self.checks,
        }


def _with_retries(task: Task, gate: str, version: TaskVersion | None, run: Any) -> gates.GateResult:
    result: gates.GateResult | None = None
    for attempt in range(1, MAX_INFRA_ATTEMPTS + 1):
        result = run(attempt)
        _record(task, gate, attempt, result, version)
        if result.status != gates.INFRA:
            break
    assert result is not None
    return result


def task_verify_draft(
    *, task: Task, draft: authoring.Draft, tier_rules: bool = True, author: str | None = None
) -> VerifyReport:
    """Verify a model-driven author's draft with the heuristic author's checks and the five gates, inline: static
    checks, discovery, test selection and tier rules, Harbor's lint, then build → smoke → nop → oracle → determinism.
    Each gate attempt is a GateRun of the task. A draft whose version already passed every gate is not run again.
    Leaves the task's state alone (the author's round owns it)."""
    if draft.reasons:
        return VerifyReport(False, [{"check": "static", "status": "failed", "reason": "; ".join(draft.reasons)}])
    checks_done = [{"check": "static", "status": "passed", "reason": "paths, held-out tests and imports are fine"}]
    draft_hash = storage.content_hash(draft.files)
    cached = (
        TaskVersion.objects.filter(task=task, definition__draftHash=draft_hash, verified_at__isnull=False)
        .order_by("-created_at")
        .first()
    )
    if cached is not None:
        runs = {r.gate: r for r in GateRun.objects.filter(version=cached, status=GateStatus.PASSED)}
        checks_done += [
            {"check": str(g), "status": "passed", "reason": runs[g].reason} for g in GATE_ORDER if g in runs
        ]
        return VerifyReport(True, checks_done, cached, reused=True)
    _, draft_dir = storage.store(draft.files, kind="task-drafts")
    found = _with_retries(
        task, Gate.DISCOVERY, None, lambda n: gates.run_discovery(draft_dir, gates.trial_name(task.pk, "discovery", n))
    )
    if found.status != gates.PASSED:
        checks_done.append({"check": "discovery", "status": found.status, "reason": found.reason})
        return VerifyReport(False, checks_done)
    files, definition = authoring.finalize(
        draft=draft, before=found.details.get("before", {}), after=found.details.get("after", {})
    )
    definition["draftHash"] = draft_hash
    if author:
        definition["author"] = author
    reasons = (
        checks.check_tier(tier=draft.tier, fail_to_pass=definition["failToPass"], pass_to_pass=definition["passToPass"])
        if tier_rules
        else ([] if definition["failToPass"] else ["the held-out tests have no fail-to-pass test"])
    )
    digest, task_dir = storage.store(files)
    reasons += [f"harbor lint: {f}" for f in harbor_adapter.lint_task(task_dir)]
    f2p, p2p = definition["failToPass"], definition["passToPass"]
    found_reason = f"{len(f2p)} fail-to-pass, {len(p2p)} pass-to-pass tests"
    if not f2p:
        # Tell the author what the tests did, so it can fix them.
        shown = {
            "on base + tests": found.details.get("before", {}),
            "with the gold patch": found.details.get("after", {}),
        }
        found_reason += "; " + "; ".join(
            f"{when}: " + (", ".join(f"{t} {o}" for t, o in sorted(outcomes.items())[:10]) or "no test ran")
            for when, outcomes in shown.items()
        )
    checks_done.append({"check": "discovery", "status": "passed", "reason": found_reason})
    version, _ = TaskVersion.objects.get_or_create(
        task=task, content_hash=digest, defaults={"definition": definition, "fail_to_pass": f2p, "pass_to_pass": p2p}
    )
    if reasons:
        checks_done.append({"check": "selection", "status": "failed", "reason": "; ".join(reasons)})
        return VerifyReport(False, checks_done, version)
    for gate in GATE_ORDER:
        result = _with_retries(
            task, gate, version, lambda n, g=gate: _run_one(version, g, gates.trial_name(task.pk, g, n))
        )
        checks_done.append({"check": str(gate), "status": result.status, "reason": result.reason})
        if result.status != gates.PASSED:
            return VerifyReport(False, checks_done, version)
        if gate == Gate.DETERMINISM:
            Task.objects.filter(pk=task.pk).update(flake_rate=result.flake_rate or 0.0)
    TaskVersion.objects.filter(pk=version.pk).update(verified_at=timezone.now())
    version.refresh_from_db()
    return VerifyReport(True, checks_done, version)


def task_use_version(*, task: Task, version: TaskVersion, tier: str | None) -> Task:
    """Make a verified version the task's own (a model-driven author submitted it)."""
    if version.task_id != task.pk or version.verified_at is None:
        raise Conflict("only a version of this task that passed every gate can be submitted")
    Task.objects.filter(pk=task.pk).update(version=version, tier=tier or "", updated_at=timezone.now())
    task.refresh_from_db()
    return task
