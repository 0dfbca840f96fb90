"""Every write of model-driven authoring: settings, rounds (run, verify, submit), reviews, evals and vibe evals.

Flow: authoring_start → (job) round_run: a Harbor trial whose agent calls `verify` (round_verify: the heuristic
author's checks and the five gates) and `submit` (round_submit) → (job) review_run: the independent reviewer →
accept: awaiting approval; reject / send back / a failed round: the next round, until three rounds failed.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from apps.accounts.models import Credential, Workspace
from apps.authoring import jobs, review, sandbox
from apps.authoring.models import (
    AUTHOR_AGENTS,
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    MAX_FAILED_ROUNDS,
    MAX_VERIFY_CALLS,
    Attachment,
    AuthoringRound,
    AuthoringSettings,
    Eval,
    ReviewRound,
    RoundState,
    Verdict,
    VerifyCall,
    VibeEval,
    VibeEvalKind,
)
from apps.gateway import keyring
from apps.gateway import services as gateway_services
from apps.gateway.catalog import catalog_model
from apps.gateway.models import GatewayCall, GatewayKey
from apps.repositories import services as repository_services
from apps.repositories import sources
from apps.repositories.models import Batch, Candidate, CandidateState, Repository, RepositoryKind
from apps.runs import execution, sandboxes
from apps.tasks import authoring as task_authoring
from apps.tasks import patches
from apps.tasks import services as task_services
from apps.tasks.models import Task, TaskState
from selfbench import harbor_adapter
from selfbench.errors import Conflict, InvalidInput, NotFound

logger = logging.getLogger(__name__)
WALL_CLOCK_BACKSTOP_SECONDS = 60


def poll_seconds() -> float:
    return float(getattr(django_settings, "AUTHORING_POLL_SECONDS", 5.0))


# --- settings ---------------------------------------------------------------------------------------------------------


def _credential(workspace: Workspace, credential_id: int | None) -> Credential | None:
    if credential_id is None:
        return None
    credential = Credential.objects.filter(pk=credential_id, workspace=workspace).first()
    if credential is None:
        raise InvalidInput(f"credential {credential_id} is not a credential of this workspace")
    return credential


def settings_save(
    *,
    workspace: Workspace,
    batch: Batch | None = None,
    author_agent: str,
    author_model: str,
    author_credential_id: int | None,
    reasoning: str = "medium",
    reviewer_model: str,
    reviewer_credential_id: int | None,
    silence_seconds: int | None = None,
    author_wall_clock_seconds: int | None = None,
    review_wall_clock_seconds: int | None = None,
) -> AuthoringSettings:
    """Create or replace the authoring settings (a batch's, when given). The reviewer must be another model, and
    the author agent must run in this deployment's sandbox."""
    problems: list[str] = []
    if author_agent not in AUTHOR_AGENTS:
        problems.append(f"the author agent must be one of {', '.join(AUTHOR_AGENTS)}")
    else:
        capability = harbor_adapter.agent_capabilities().get(author_agent)
        if capability is None or not capability.runs:
            problems.append(f"{author_agent} cannot author here: {capability.reason if capability else 'unknown'}")
    for model in (author_model, reviewer_model):
        if catalog_model(model) is None:
            problems.append(f"{model!r} is not in the model catalog")
    if author_model == reviewer_model:
        problems.append("the reviewer's model must differ from the author's")
    if reasoning not in ("low", "medium", "high"):
        problems.append("reasoning must be low, medium or high")
    if silence_seconds is not None and silence_seconds < 1:
        problems.append("silenceSeconds must be at least 1")
    if problems:
        raise InvalidInput("; ".join(problems), errors=problems)
    values: dict[str, Any] = {
        "author_agent": author_agent,
        "author_model": author_model,
        "author_credential": _credential(workspace, author_credential_id),
        "reasoning": reasoning,
        "reviewer_model": reviewer_model,
        "reviewer_credential": _credential(workspace, reviewer_credential_id),
    }
    for name, value in (
        ("silence_seconds", silence_seconds),
        ("author_wall_clock_seconds", author_wall_clock_seconds),
        ("review_wall_clock_seconds", review_wall_clock_seconds),
    ):
        if value is not None:
            values[name] = value
    if batch is not None:
        if batch.repository.workspace_id != workspace.pk:
            raise NotFound("no such batch")
        found, _ = AuthoringSettings.objects.update_or_create(workspace=workspace, batch=batch, defaults=values)
        return found
    return AuthoringSettings.objects.create(workspace=workspace, **values)


def runnable_author_agents() -> list[tuple[str, str]]:
    """The author agents this deployment's sandbox can run, with why (for choosing one)."""
    capabilities = harbor_adapter.agent_capabilities()
    return [
        (name, capabilities[name].reason) for name in AUTHOR_AGENTS if name in capabilities and capabilities[name].runs
    ]


# --- starting authoring -----------------------------------------------------------------------------------------------


def _new_round(task: Task, authoring_settings: AuthoringSettings, feedback: str = "") -> AuthoringRound:
    number = (AuthoringRound.objects.filter(task=task).aggregate(n=Max("number"))["n"] or 0) + 1
    row = AuthoringRound.objects.create(
        task=task,
        settings=authoring_settings,
        number=number,
        agent=authoring_settings.author_agent,
        model=authoring_settings.author_model,
        feedback=feedback,
    )
    transaction.on_commit(lambda: jobs.enqueue_round(row.pk))
    return row


@transaction.atomic
def authoring_start(*, task: Task, authoring_settings: AuthoringSettings) -> AuthoringRound:
    """Start the model-driven authoring of a proposed task: its first round (scheduled)."""
    if task.state != TaskState.PROPOSED or task.authoring_rounds.exists():
        raise Conflict(f"task {task.pk} is {task.state}; only a proposed task can start authoring")
    task_services.task_set_state(task=task, state=TaskState.AUTHORING)
    return _new_round(task, authoring_settings)


def candidate_author(*, candidate: Candidate) -> AuthoringRound:
    """A batch candidate authored by its batch's agent instead of the heuristic author."""
    authoring_settings = AuthoringSettings.objects.filter(batch_id=candidate.batch_id).first()
    if authoring_settings is None:
        raise Conflict("the batch has no authoring settings")
    with transaction.atomic():
        task = task_services.task_create_for_candidate(candidate=candidate, heuristic_author=False)
        return authoring_start(task=task, authoring_settings=authoring_settings)


def candidates_start(*, batch_id: int | None = None) -> int:
    """Start authoring every proposed candidate that has no task yet: by its batch's authoring agent when the batch
    has authoring settings, else by the heuristic author. Safe to run concurrently (each candidate row is locked and
    skipped by a second runner); returns how many were started."""
    started = 0
    pending = Candidate.objects.filter(state=CandidateState.PROPOSED, tasks__isnull=True)
    if batch_id is not None:
        pending = pending.filter(batch_id=batch_id)
    for candidate_id in list(pending.values_list("pk", flat=True)):
        with transaction.atomic():
            candidate = (
                Candidate.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("batch__repository__workspace", "pull_request")
                .filter(pk=candidate_id, state=CandidateState.PROPOSED, tasks__isnull=True)
                .first()
            )
            if candidate is None:
                continue
            if AuthoringSettings.objects.filter(batch_id=candidate.batch_id).exists():
                candidate_author(candidate=candidate)
            else:
                task_services.task_create_for_candidate(candidate=candidate)
            started += 1
    return started


# --- evals and vibe evals ---------------------------------------------------------------------------------------------


def eval_create(*, workspace: Workspace, name: str, description: str = "") -> Eval:
    """A workspace collection of its own tasks, with no repository."""
    if not name.strip():
        raise InvalidInput("an eval needs a name")
    if Eval.objects.filter(workspace=workspace, name=name.strip()).exists():
        raise Conflict(f"an eval named {name!r} exists")
    return Eval.objects.create(workspace=workspace, name=name.strip(), description=description)


def eval_release(*, eval: Eval) -> None:
    """Evals are never released: their tasks have no repository to publish with."""
    raise Conflict(f"eval {eval.name!r} is a workspace collection and is never released")


def release_guard(*, tasks: list[Task]) -> None:
    """Refuse a release that would include a workspace vibe eval's task (for the results release service)."""
    ids = [t.pk for t in tasks]
    held = VibeEval.objects.filter(task_id__in=ids, kind=VibeEvalKind.WORKSPACE).values_list("task_id", flat=True)
    if held:
        raise Conflict(f"tasks {sorted(held)} belong to an eval, and evals are never released")


_SHA = re.compile(r"[0-9a-f]{40}")


def resolve_ref(*, repository: Repository, ref: str) -> str:
    """The commit a SHA, a branch or HEAD names now (a vibe eval is pinned to it)."""
    ref = (ref or "HEAD").strip()
    if _SHA.fullmatch(ref):
        return ref
    source = (
        str(sources.local_path(repository.location)) if repository.kind == RepositoryKind.LOCAL else repository.location
    )
    wanted = "HEAD" if ref == "HEAD" else f"refs/heads/{ref}"
    listed = subprocess.run(
        ["git", "ls-remote", source, wanted], capture_output=True, text=True, timeout=120, check=False
    )
    for line in listed.stdout.splitlines():
        sha, _, name = line.partition("\t")
        if name == wanted and _SHA.fullmatch(sha):
            return sha
    if re.fullmatch(r"[0-9a-f]{7,39}", ref):
        checkout = repository_services.repository_checkout(repository=repository, sha=ref)
        return patches.git(checkout, "rev-parse", ref).strip()
    raise InvalidInput(f"{ref!r} is not a commit, branch or HEAD of {repository}")


def _title(description: str) -> str:
    first = description.strip().splitlines()[0] if description.strip() else "Vibe eval"
    return first.lstrip("# ")[:200]


def attachments_check(*, sizes: dict[str, int]) -> None:
    """Refuse attachments a vibe eval cannot take: names that are not plain file names, more than MAX_ATTACHMENTS
    files, or more than MAX_ATTACHMENT_BYTES in all. Takes sizes, so the page checks uploads before reading them."""
    for name in sizes:
        if "/" in name or "\\" in name or name.startswith(".") or not name:
            raise InvalidInput(f"attachment name {name!r} must be a plain file name")
    if len(sizes) > MAX_ATTACHMENTS:
        raise InvalidInput(f"a vibe eval takes at most {MAX_ATTACHMENTS} attachments, not {len(sizes)}")
    total = sum(sizes.values())
    if total > MAX_ATTACHMENT_BYTES:
        raise InvalidInput(
            f"attachments may have at most {MAX_ATTACHMENT_BYTES / 2**20:g} MiB in all; these have {total} bytes"
        )


@transaction.atomic
def vibe_eval_create(
    *,
    workspace: Workspace,
    description: str,
    authoring_settings: AuthoringSettings,
    repository: Repository | None = None,
    ref: str = "HEAD",
    eval: Eval | None = None,
    attachments: dict[str, bytes] | None = None,
) -> VibeEval:
    """A task written from a description: at a repository commit (pinned to the SHA `ref` resolves to), or in an
    eval (no repository). Starts its authoring like any candidate's."""
    if not description.strip():
        raise InvalidInput("a vibe eval needs a description")
    if (repository is None) == (eval is None):
        raise InvalidInput("a vibe eval belongs to a repository or to an eval")
    if authoring_settings.workspace_id != workspace.pk:
        raise NotFound("no such authoring settings")
    attachments = attachments or {}
    attachments_check(sizes={name: len(data) for name, data in attachments.items()})
    if repository is not None:
        if repository.workspace_id != workspace.pk:
            raise NotFound("no such repository")
        sha = resolve_ref(repository=repository, ref=ref)
        checkout = repository_services.repository_checkout(repository=repository, sha=sha)
        source = task_authoring.PullRequestSource(
            repo_path=checkout,
            base_sha=sha,
            head_sha=sha,
            title=_title(description),
            body=description,
            repository=repository.full_name or repository.location,
        )
    else:
        assert eval is not None
        if eval.workspace_id != workspace.pk:
            raise NotFound("no such eval")
        sha = ""
        source = task_authoring.PullRequestSource(
            repo_path=Path(""),
            base_sha="",
            head_sha=uuid.uuid4().hex[:12],
            title=_title(description),
            body=description,
            repository=f"eval/{eval.name}",
        )
    task = task_services.task_create(workspace=workspace, source=source, heuristic_author=False)
    if repository is not None:
        Task.objects.filter(pk=task.pk).update(repository=repository)
        task.refresh_from_db()
    vibe = VibeEval.objects.create(
        workspace=workspace,
        kind=VibeEvalKind.REPOSITORY if repository is not None else VibeEvalKind.WORKSPACE,
        repository=repository,
        eval=eval,
        description=description,
        ref=ref if repository is not None else "",
        resolved_sha=sha,
        task=task,
        settings=authoring_settings,
    )
    Attachment.objects.bulk_create(
        Attachment(vibe_eval=vibe, name=name, content=data, size=len(data)) for name, data in attachments.items()
    )
    authoring_start(task=task, authoring_settings=authoring_settings)
    return vibe


# --- a round ----------------------------------------------------------------------------------------------------------


def _vibe(task: Task) -> VibeEval | None:
    return VibeEval.objects.filter(task=task).first()


def _brief(row: AuthoringRound) -> tuple[sandbox.Brief, bytes, dict[str, bytes]]:
    task = row.task
    vibe = _vibe(task)
    attachments = {a.name: bytes(a.content) for a in vibe.attachments.all()} if vibe else {}
    base_image = django_settings.BASE_IMAGE
    if vibe is not None and vibe.kind == VibeEvalKind.WORKSPACE:
        templates = task_authoring.starting_templates(base_image=base_image, tree=[])
        kind, diff, base_tar = "workspace", "", sandbox.empty_tar()
    else:
        repo = Path(task.source_path)
        tree = patches.git(repo, "ls-tree", "-r", "--name-only", task.base_sha).splitlines()
        templates = task_authoring.starting_templates(base_image=base_image, tree=tree)
        base_tar = patches.git_bytes(repo, "archive", "--format=tar", task.base_sha)
        if vibe is None:
            kind = "pr"
            diff = patches.pr_diff(repo=repo, base_sha=task.base_sha, head_sha=task.head_sha)
        else:
            kind, diff = "repository", ""
    if row.feedback and row.files:
        # Sent back: the agent continues from the files it submitted.
        templates.update({k: v.encode() for k, v in row.files.items()})
    brief = sandbox.Brief(kind, task.title, task.body, diff, row.feedback, attachments, MAX_VERIFY_CALLS)
    return brief, base_tar, templates


def _agent_spec(row: AuthoringRound, raw_key: str) -> harbor_adapter.AgentSpec:
    s = row.settings
    credential_kind = s.author_credential.kind if s.author_credential is not None else None
    fmt = execution.wire_format(row.agent, row.model, credential_kind)
    urls = gateway_services.base_urls()
    options: dict[str, Any] = {}
    effort = execution.reasoning_option(row.agent, s.reasoning)
    if effort is not None:
        options["reasoning_effort"] = effort
    if row.agent == "pi":
        options["model_api"] = {"openai_chat": "openai-completions", "openai_responses": "openai-responses"}.get(
            fmt, "anthropic-messages"
        )
    if row.agent == "terminus-2":
        options["session_id"] = row.subject
        options["record_terminal_session"] = False
    return harbor_adapter.AgentSpec(
        name=row.agent,
        model=execution._model_name(fmt, row.model),
        base_url=urls["anthropic"] if fmt == "anthropic_messages" else urls["openai"],
        api_key=raw_key,
        model_api_format=execution._HARBOR_FORMAT[fmt],
        options=options,
        timeout_sec=float(s.author_wall_clock_seconds + WALL_CLOCK_BACKSTOP_SECONDS),
    )


def _activity(row: AuthoringRound) -> tuple[int, bool]:
    """(model calls so far, a verify in progress): the watchdog's view of the agent's output."""
    calls = GatewayCall.objects.filter(subject=row.subject).count()
    busy = VerifyCall.objects.filter(round=row, report={}).exists()
    return calls, busy


def _watch(row: AuthoringRound, thread: threading.Thread, *, engine: str) -> str:
    """Wait for the trial, stopping it on silence or the wall-clock cap. Returns why it was stopped ('' if not).

    Silence is counted from when the sandbox is up: building and starting it is not the agent falling silent (the
    wall-clock cap still covers it)."""
    s = row.settings
    started = last_output = time.monotonic()
    seen = _activity(row)[0]
    up = False
    while thread.is_alive():
        thread.join(poll_seconds())
        now = time.monotonic()
        if not up:
            up = sandboxes.containers_running(sandbox_id=engine, trial_name=row.trial_name) is not False
            if not up:
                last_output = now
        calls, busy = _activity(row)
        if calls != seen or busy:
            seen, last_output = calls, now
            AuthoringRound.objects.filter(pk=row.pk).update(last_output_at=timezone.now())
        if now - last_output > s.silence_seconds:
            return f"no output for {s.silence_seconds} s; stopped"
        if now - started > s.author_wall_clock_seconds:
            return f"the authoring stage passed its wall-clock cap of {s.author_wall_clock_seconds} s; stopped"
    return ""


def round_run(*, round_id: int) -> AuthoringRound:
    """Run one authoring round: mint its gateway key, run the agent's Harbor trial with `verify` and `submit`
    available, stop it on silence or the wall-clock cap, store its cost; then schedule the review or the next
    round."""
    row = AuthoringRound.objects.select_related("task", "settings__author_credential").get(pk=round_id)
    if row.state != RoundState.RUNNING or row.trial_name:
        return row
    name = f"authoring{row.pk}-{uuid.uuid4().hex[:8]}"
    AuthoringRound.objects.filter(pk=row.pk).update(trial_name=name)
    row.trial_name = name
    s = row.settings
    route = gateway_services.ModelRoute(s.author_model, s.author_credential or gateway_services.MANAGED)
    _, raw_key = gateway_services.trial_key_mint(
        workspace=row.task.workspace, subject=row.subject, models=[route], ttl_seconds=s.author_wall_clock_seconds + 600
    )
    engine = django_settings.SANDBOX_ENVIRONMENT
    relay: sandbox.Relay | None = None
    stopped = ""
    error = ""
    try:
        if engine not in sandbox.SUPPORTED_ENGINES:
            raise harbor_adapter.TrialSetupError(f"authoring runs in a podman or docker sandbox here, not {engine}")
        brief, base_tar, templates = _brief(row)
        files = sandbox.task_files(
            # Harbor's own agent timeout is a backstop a minute past the cap; the watchdog stops the round at the cap.
            brief=brief,
            base_tar=base_tar,
            templates=templates,
            wall_clock=s.author_wall_clock_seconds + WALL_CLOCK_BACKSTOP_SECONDS,
            name=name,
        )
        from apps.tasks import storage

        _, task_dir = storage.store(files, kind="authoring-tasks")
        relay = sandbox.Relay(raw_key=raw_key).start()
        overlay = relay.overlay(no_network=row.agent == "terminus-2")
        spec = _agent_spec(row, raw_key)
        outcome: dict[str, Any] = {}

        def trial() -> None:
            try:
                outcome["value"] = harbor_adapter.run_trial(
                    task_dir=task_dir,
                    agent=spec,
                    trial_name=name,
                    environment_type=engine,
                    environment_kwargs={"extra_docker_compose": [overlay]},
                    disable_verifier=True,
                )
            except Exception as exc:  # reported as the round's failure
                outcome["error"] = f"{type(exc).__name__}: {exc}"

        thread = threading.Thread(target=trial, daemon=True, name=f"authoring-{row.pk}")
        thread.start()
        stopped = _watch(row, thread, engine=engine)
        if stopped:
            gateway_services.trial_key_revoke(subject=row.subject)
            # The relay's directory holds the compose overlay Harbor's teardown reads: stop it once the run ended.
            stopping, relay = relay, None
            harbor_adapter.trial_stop(
                thread,
                name,
                environment_type=engine,
                grace_seconds=task_services.cancel_grace_seconds(),
                on_ended=stopping.stop if stopping is not None else None,
            )
        error = str(outcome.get("error", ""))
        result = outcome.get("value")
        if result is not None and result.exception_type and not error:
            error = f"{result.exception_type}: {(result.exception_message or '')[:1000]}"
    except Exception as exc:
        logger.exception("authoring round %s failed", row.pk)
        error = f"{type(exc).__name__}: {exc}"
    finally:
        gateway_services.trial_key_revoke(subject=row.subject)
        if relay is not None:
            relay.stop()
    usage = execution.settled_usage(row.subject, settle_seconds=min(0.5, poll_seconds()))
    AuthoringRound.objects.filter(pk=row.pk).update(
        calls=usage.calls,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        cost_complete=usage.cost_complete,
    )
    row.refresh_from_db()
    if row.state == RoundState.SUBMITTED:
        return row
    reason = stopped or (f"the agent ended without submit ({error})" if error else "the agent ended without submit")
    return _round_failed(row, reason)


def _round_failed(row: AuthoringRound, reason: str) -> AuthoringRound:
    with transaction.atomic():
        updated = AuthoringRound.objects.filter(pk=row.pk, state=RoundState.RUNNING).update(
            state=RoundState.FAILED, reason=reason, finished_at=timezone.now()
        )
        row.refresh_from_db()
        if updated:
            _next_round_or_reject(row, feedback=f"The previous round failed: {reason}")
    return row


def _failed_rounds(task: Task) -> list[AuthoringRound]:
    rounds = AuthoringRound.objects.filter(task=task).select_related("review")
    return [
        r
        for r in rounds
        if r.state == RoundState.FAILED or (hasattr(r, "review") and r.review.verdict != Verdict.ACCEPT)
    ]


def _next_round_or_reject(row: AuthoringRound, *, feedback: str) -> None:
    task = Task.objects.get(pk=row.task_id)
    failed = _failed_rounds(task)
    if len(failed) >= MAX_FAILED_ROUNDS:
        summary = "; ".join(f"round {r.number}: {r.reason or r.review.notes}"[:300] for r in failed)
        if task.state == TaskState.AUTHORING:
            # The candidate graph allows `rejected` only from review: the failed rounds are what is reviewed here.
            task = task_services.task_set_state(task=task, state=TaskState.IN_REVIEW, reason="three failed rounds")
        task_services.task_set_state(
            task=task, state=TaskState.REJECTED, reason=f"{MAX_FAILED_ROUNDS} failed rounds: {summary}"
        )
        return
    if task.state != TaskState.AUTHORING:
        task = task_services.task_set_state(task=task, state=TaskState.AUTHORING, reason=f"round {row.number + 1}")
    _new_round(task, row.settings, feedback=feedback)


# --- verify and submit (called from inside the sandbox) ---------------------------------------------------------------


def round_for_key(*, raw_key: str) -> AuthoringRound:
    """The running round a sandbox's gateway key belongs to (live keys of `authoring:<id>` subjects only)."""
    key = GatewayKey.objects.filter(
        key_hash=keyring.hash_key(raw_key), revoked_at__isnull=True, expires_at__gt=timezone.now()
    ).first()
    if key is None or not key.subject.startswith("authoring:"):
        raise NotFound("no live authoring key")
    row = AuthoringRound.objects.select_related("task", "settings").filter(pk=int(key.subject.split(":")[1])).first()
    if row is None:
        raise NotFound("no live authoring key")
    return row


def decode_files(payload: Any) -> dict[str, bytes]:
    if not isinstance(payload, dict) or not isinstance(payload.get("files"), dict):
        raise InvalidInput("the body must be {files: {path: base64}}")
    files: dict[str, bytes] = {}
    for path, data in payload["files"].items():
        try:
            files[str(path)] = base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput(f"{path}: not base64") from exc
    return files


def _draft(row: AuthoringRound, files: dict[str, bytes]) -> tuple[task_authoring.Draft, bool]:
    task = row.task
    vibe = _vibe(task)
    workspace_eval = vibe is not None and vibe.kind == VibeEvalKind.WORKSPACE
    base_tree = (
        {
            p[len(task_authoring.START_PREFIX) :]: d
            for p, d in files.items()
            if p.startswith(task_authoring.START_PREFIX)
        }
        if workspace_eval
        else None
    )
    source = task_services._source(task)
    authored = {p: d for p, d in files.items() if not p.startswith(task_authoring.START_PREFIX)}
    draft = task_authoring.draft_from_files(
        source=source,
        authored=authored,
        tier_requested=task.tier_requested,
        author=f"model:{row.agent}/{row.model}",
        base_tree=base_tree,
        tier_rules=vibe is None,
    )
    if workspace_eval and not base_tree:
        draft.reasons.append("a workspace vibe eval needs starting files under start/")
    return draft, vibe is None


def _text(report: dict[str, Any], left: int) -> str:
    lines = [f"VERIFY-RESULT {'passed' if report['passed'] else 'failed'}"]
    lines += [f"  {c['check']}: {c['status']} - {c['reason']}" for c in report["checks"]]
    lines.append(f"{left} verify calls left in this round." + (" Run `submit` now." if report["passed"] else ""))
    return "\n".join(lines)


def round_verify(*, row: AuthoringRound, files: dict[str, bytes]) -> tuple[VerifyCall, str]:
    """One `verify`: the same static checks and gates as the heuristic author, on the agent's current files."""
    with transaction.atomic():
        locked = AuthoringRound.objects.select_for_update().get(pk=row.pk)
        if locked.state != RoundState.RUNNING:
            raise Conflict(f"round {locked.number} is {locked.state}")
        if locked.verify_calls >= MAX_VERIFY_CALLS:
            raise Conflict(f"this round has used its {MAX_VERIFY_CALLS} verify calls; run `submit`")
        number = locked.verify_calls + 1
        AuthoringRound.objects.filter(pk=row.pk).update(
            verify_calls=number,
            last_output_at=timezone.now(),
            files={p: d.decode("utf-8", "replace") for p, d in files.items()},
        )
        call = VerifyCall.objects.create(round=row, number=number)
    try:
        draft, tier_rules = _draft(row, files)
        verified = task_services.task_verify_draft(
            task=row.task, draft=draft, tier_rules=tier_rules, author=f"model:{row.agent}/{row.model}"
        )
        report = verified.as_dict()
    except Exception as exc:  # the agent hears about it; the round goes on
        logger.exception("verify %s of round %s failed", number, row.pk)
        verified = None
        report = {"passed": False, "checks": [{"check": "verify", "status": "error", "reason": str(exc)[:2000]}]}
    VerifyCall.objects.filter(pk=call.pk).update(
        passed=report["passed"], report=report, version=verified.version if verified else None
    )
    AuthoringRound.objects.filter(pk=row.pk).update(last_output_at=timezone.now())
    call.refresh_from_db()
    return call, _text(report, MAX_VERIFY_CALLS - number)


def round_submit(*, row: AuthoringRound, files: dict[str, bytes]) -> AuthoringRound:
    """End the round with files that passed one of its verify calls; the task goes to the independent reviewer."""
    draft, _ = _draft(row, files)
    from apps.tasks import storage

    draft_hash = storage.content_hash(draft.files)
    passed = (
        VerifyCall.objects.filter(round=row, passed=True, version__definition__draftHash=draft_hash)
        .select_related("version")
        .last()
    )
    if passed is None or passed.version is None:
        raise Conflict("submit the files a verify call passed (run verify on these files first)")
    with transaction.atomic():
        if not AuthoringRound.objects.filter(pk=row.pk, state=RoundState.RUNNING).update(
            state=RoundState.SUBMITTED,
            submitted_version=passed.version,
            finished_at=timezone.now(),
            reason=f"submitted after {row.verify_calls} verify calls",
        ):
            raise Conflict("the round is over")
        task = task_services.task_use_version(task=row.task, version=passed.version, tier=draft.tier)
        task_services.task_set_state(task=task, state=TaskState.IN_REVIEW, reason="submitted; in independent review")
        transaction.on_commit(lambda: jobs.enqueue_review(row.pk))
    row.refresh_from_db()
    return row


# --- review -----------------------------------------------------------------------------------------------------------


def review_run(*, round_id: int) -> ReviewRound:
    """The independent reviewer on a submitted round: a fresh model call through the gateway with its own key."""
    row = AuthoringRound.objects.select_related("task", "settings__reviewer_credential", "submitted_version").get(
        pk=round_id
    )
    existing = ReviewRound.objects.filter(round=row).first()
    if existing is not None:
        return existing
    s = row.settings
    version = row.submitted_version
    assert version is not None
    subject = f"review:{row.pk}"
    route = gateway_services.ModelRoute(s.reviewer_model, s.reviewer_credential or gateway_services.MANAGED)
    _, raw_key = gateway_services.trial_key_mint(
        workspace=row.task.workspace, subject=subject, models=[route], ttl_seconds=s.review_wall_clock_seconds + 60
    )
    shown: dict[str, str] = {}
    for name in review.READ_FILES:
        path = version.path / name
        if path.is_file():
            shown[name] = path.read_text(errors="replace")
    for path in sorted((version.path / "tests" / "held_out").rglob("*")):
        if path.is_file():
            shown[f"held-out: {path.relative_to(version.path / 'tests' / 'held_out')}"] = path.read_text(
                errors="replace"
            )
    last = VerifyCall.objects.filter(round=row, version=version, passed=True).last()
    text = review.prompt(files=shown, report=last.report if last else {}, definition=version.definition)
    try:
        answer = review.ask(
            model_id=s.reviewer_model,
            raw_key=raw_key,
            text=text,
            silence_seconds=s.silence_seconds,
            wall_clock_seconds=s.review_wall_clock_seconds,
        )
    except review.ReviewStopped as exc:
        answer = review.ReviewAnswer(Verdict.FAILED, str(exc))
    finally:
        gateway_services.trial_key_revoke(subject=subject)
    usage = execution.settled_usage(subject, settle_seconds=min(0.5, poll_seconds()))
    return review_record(row=row, answer=answer, usage=usage)


@transaction.atomic
def review_record(*, row: AuthoringRound, answer: review.ReviewAnswer, usage: Any) -> ReviewRound:
    """Keep the verdict and notes; accept → awaiting approval; otherwise the next round or, after three failed
    rounds, the candidate is rejected (nothing is backfilled)."""
    result = ReviewRound.objects.create(
        round=row,
        model=row.settings.reviewer_model,
        verdict=answer.verdict,
        notes=answer.notes,
        suggestions=answer.suggestions,
        calls=usage.calls,
        cost_usd=usage.cost_usd,
        cost_complete=usage.cost_complete,
    )
    task = Task.objects.get(pk=row.task_id)
    if answer.verdict == Verdict.ACCEPT:
        task_services.task_set_state(
            task=task, state=TaskState.AWAITING_APPROVAL, reason=f"accepted by the reviewer: {answer.notes}"[:2000]
        )
        return result
    feedback = f"Verdict: {answer.verdict}. {answer.notes}\n" + "\n".join(f"- {s}" for s in answer.suggestions)
    row.refresh_from_db()
    if answer.verdict == Verdict.REJECT:
        # A rejected task starts over from the source; a task sent back continues from its files.
        AuthoringRound.objects.filter(pk=row.pk).update(files={})
        row.files = {}
    _next_round_or_reject(row, feedback=feedback)
    return result


# --- a batch with its authoring settings ------------------------------------------------------------------------------


@transaction.atomic
def batch_create_with_authoring(
    *,
    repository: Repository,
    easy: int = 0,
    medium: int = 0,
    hard: int = 0,
    created_by: Any = None,
    author_agent: str = "terminus-2",
    author_model: str | None = None,
    author_credential_id: int | None = None,
    reasoning: str = "medium",
    reviewer_model: str | None = None,
    reviewer_credential_id: int | None = None,
) -> Batch:
    """Start a discovery batch and, when an author model is given, its authoring settings, in one transaction: a
    rule error in either leaves nothing behind. The batch's listing job is scheduled on commit (by batch_create)."""
    if (author_model is None) != (reviewer_model is None):
        raise InvalidInput("choose both an author model and a reviewer model, or neither")
    batch = repository_services.batch_create(
        repository=repository, easy=easy, medium=medium, hard=hard, created_by=created_by
    )
    if author_model is not None and reviewer_model is not None:
        settings_save(
            workspace=repository.workspace,
            batch=batch,
            author_agent=author_agent,
            author_model=author_model,
            author_credential_id=author_credential_id,
            reasoning=reasoning,
            reviewer_model=reviewer_model,
            reviewer_credential_id=reviewer_credential_id,
        )
    return batch


@transaction.atomic
def vibe_eval_author(
    *,
    workspace: Workspace,
    description: str,
    author_agent: str,
    author_model: str,
    author_credential_id: int | None,
    reasoning: str = "medium",
    reviewer_model: str,
    reviewer_credential_id: int | None,
    silence_seconds: int | None = None,
    author_wall_clock_seconds: int | None = None,
    review_wall_clock_seconds: int | None = None,
    repository: Repository | None = None,
    ref: str = "HEAD",
    eval: Eval | None = None,
    attachments: dict[str, bytes] | None = None,
) -> VibeEval:
    """A vibe eval and the authoring settings it is written with, in one transaction (nothing is kept on a rule
    error); its first authoring round is scheduled on commit. The page and the API both call this."""
    authoring_settings = settings_save(
        workspace=workspace,
        author_agent=author_agent,
        author_model=author_model,
        author_credential_id=author_credential_id,
        reasoning=reasoning,
        reviewer_model=reviewer_model,
        reviewer_credential_id=reviewer_credential_id,
        silence_seconds=silence_seconds,
        author_wall_clock_seconds=author_wall_clock_seconds,
        review_wall_clock_seconds=review_wall_clock_seconds,
    )
    return vibe_eval_create(
        workspace=workspace,
        description=description,
        authoring_settings=authoring_settings,
        repository=repository,
        ref=ref,
        eval=eval,
        attachments=attachments,
    )
