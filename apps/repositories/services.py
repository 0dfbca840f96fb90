"""Writes for repositories, batches and candidates: the single entry point for the API, pages and jobs."""

from __future__ import annotations

import base64
import fcntl
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.models import Credential, CredentialKind, Workspace
from apps.repositories import jobs
from apps.repositories.analysis import Analysis
from apps.repositories.models import (
    BATCH_ACTIVE,
    CANDIDATE_TERMINAL,
    CANDIDATE_TRANSITIONS,
    Batch,
    BatchKind,
    BatchStatus,
    Candidate,
    CandidateState,
    PullRequest,
    Repository,
    RepositoryKind,
)
from apps.repositories.sources import (
    AuthFailed,
    GitHubSource,
    LocalGitSource,
    PullInfo,
    PullSource,
    RateLimited,
    RepoNotFound,
    SourceError,
    Unavailable,
    git,
    local_path,
)
from selfbench.errors import Conflict, DomainError, InvalidInput, NotFound
from selfbench.redaction import redact_report

FULL_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
MAX_BATCH_CANDIDATES = 300
MAX_ADD_PRS = 100


class UpstreamUnavailable(DomainError):
    """GitHub could not be reached (or rate-limited us) while checking a request; nothing was saved."""

    status = 502
    code = "upstream_unavailable"


# --- repositories ---------------------------------------------------------------------------------------------------


def source_for(repository: Repository) -> PullSource:
    """The PR source of `repository`: the GitHub API with its token, or its local git directory."""
    if repository.kind == RepositoryKind.GITHUB:
        if repository.credential is None:
            raise InvalidInput(f"{repository.full_name} has no GitHub credential")
        return GitHubSource(full_name=repository.full_name, token=repository.credential.secret)
    return LocalGitSource(location=repository.location, default_branch=repository.default_branch)


def _github_credential(workspace: Workspace, credential_id: int | None) -> Credential:
    if credential_id is None:
        raise InvalidInput("a GitHub repository needs credentialId (a workspace credential of kind github)")
    credential = Credential.objects.filter(pk=credential_id, workspace=workspace).first()
    if credential is None:
        raise InvalidInput(f"credential {credential_id} does not exist in this workspace")
    if credential.kind != CredentialKind.GITHUB:
        raise InvalidInput(f"credential {credential.name!r} is a {credential.kind} credential, not github")
    return credential


def repository_create(
    *,
    workspace: Workspace,
    kind: str,
    full_name: str = "",
    credential_id: int | None = None,
    location: str = "",
    default_branch: str = "",
    agent_minutes: int = 30,
) -> Repository:
    """Connect a repository. GitHub: the token and the repository are checked at once, and nothing is saved unless
    both work. Local: the path (or file:// URL) must be a git repository."""
    _check_agent_minutes(agent_minutes)
    if kind == RepositoryKind.GITHUB:
        return _create_github(
            workspace=workspace,
            full_name=full_name.strip(),
            credential=_github_credential(workspace, credential_id),
            default_branch=default_branch,
            agent_minutes=agent_minutes,
        )
    if kind == RepositoryKind.LOCAL:
        return _create_local(
            workspace=workspace, location=location.strip(), default_branch=default_branch, agent_minutes=agent_minutes
        )
    raise InvalidInput(f"kind must be one of {', '.join(RepositoryKind.values)}")


def _create_github(
    *, workspace: Workspace, full_name: str, credential: Credential, default_branch: str, agent_minutes: int
) -> Repository:
    if not FULL_NAME.match(full_name):
        raise InvalidInput(f"fullName {full_name!r} must look like owner/name")
    if Repository.objects.filter(workspace=workspace, kind=RepositoryKind.GITHUB, full_name__iexact=full_name).exists():
        raise Conflict(f"{full_name} is already connected")
    source = GitHubSource(full_name=full_name, token=credential.secret, retries=1)
    try:
        data = source.repo()
        branch = default_branch or str(data.get("default_branch") or "main")
        # Checking the branch too means a typo in defaultBranch fails now, not in the first batch.
        source.head_sha(branch)
    except AuthFailed as exc:
        raise InvalidInput(f"{exc.message}; update credential {credential.name!r}") from exc
    except RepoNotFound as exc:
        raise InvalidInput(exc.message) from exc
    except (RateLimited, Unavailable) as exc:
        raise UpstreamUnavailable(f"could not check {full_name}: {exc.message}") from exc
    except SourceError as exc:
        raise InvalidInput(exc.message) from exc
    finally:
        source.close()
    try:
        return Repository.objects.create(
            workspace=workspace,
            kind=RepositoryKind.GITHUB,
            full_name=str(data.get("full_name") or full_name),
            github_id=data.get("id"),
            location=str(data.get("clone_url") or f"https://github.com/{full_name}.git"),
            default_branch=branch,
            credential=credential,
            is_private=bool(data.get("private", False)),
            agent_minutes=agent_minutes,
        )
    except IntegrityError as exc:
        raise Conflict(f"{full_name} is already connected") from exc


def _create_local(*, workspace: Workspace, location: str, default_branch: str, agent_minutes: int) -> Repository:
    if not location:
        raise InvalidInput("a local repository needs path (a directory or a file:// URL)")
    if not (location.startswith("file://") or location.startswith("/")):
        raise InvalidInput("path must be absolute or a file:// URL")
    source = LocalGitSource(location=location, default_branch=default_branch or "main")
    try:
        current = source.check()
        branch = default_branch or current
        source.head_sha(branch)
    except SourceError as exc:
        raise InvalidInput(exc.message) from exc
    if Repository.objects.filter(workspace=workspace, kind=RepositoryKind.LOCAL, location=location).exists():
        raise Conflict(f"{location} is already connected")
    try:
        return Repository.objects.create(
            workspace=workspace,
            kind=RepositoryKind.LOCAL,
            location=location,
            default_branch=branch,
            agent_minutes=agent_minutes,
        )
    except IntegrityError as exc:
        raise Conflict(f"{location} is already connected") from exc


def _check_agent_minutes(minutes: int) -> None:
    if not 10 <= minutes <= 90:
        raise InvalidInput("agentMinutes must be between 10 and 90")


def repository_update(
    *,
    repository: Repository,
    agent_minutes: int | None = None,
    default_branch: str | None = None,
    credential_id: int | None = None,
) -> Repository:
    """Change a repository's settings. A new default branch or credential is checked against the source first."""
    fields: list[str] = []
    if agent_minutes is not None:
        _check_agent_minutes(agent_minutes)
        repository.agent_minutes = agent_minutes
        fields.append("agent_minutes")
    if credential_id is not None:
        if repository.kind != RepositoryKind.GITHUB:
            raise InvalidInput("only GitHub repositories use a credential")
        repository.credential = _github_credential(repository.workspace, credential_id)
        fields.append("credential")
    if default_branch is not None and default_branch != repository.default_branch:
        repository.default_branch = default_branch.strip()
        fields.append("default_branch")
    if "credential" in fields or "default_branch" in fields:
        source = source_for(repository)
        try:
            source.head_sha(repository.default_branch)
        except (AuthFailed, RepoNotFound) as exc:
            raise InvalidInput(exc.message) from exc
        except SourceError as exc:
            raise UpstreamUnavailable(exc.message) from exc
    if fields:
        repository.save(update_fields=[*fields, "updated_at"])
    return repository


def repository_delete(*, repository: Repository) -> None:
    """Delete a repository with its batches, PRs and candidates. Refused while a batch is still listing."""
    if repository.batches.filter(status__in=BATCH_ACTIVE).exists():
        raise Conflict("a batch of this repository is still running; cancel it first")
    repository.delete()


# --- batches --------------------------------------------------------------------------------------------------------


def batch_create(
    *,
    repository: Repository,
    easy: int = 0,
    medium: int = 0,
    hard: int = 0,
    created_by: AbstractBaseUser | AnonymousUser | None = None,
) -> Batch:
    """Start a discovery batch asking for `easy`/`medium`/`hard` candidates (1–300 in all); listing runs as a job."""
    counts = {"easy": easy, "medium": medium, "hard": hard}
    if any(v < 0 for v in counts.values()):
        raise InvalidInput("candidateCounts must not be negative")
    total = sum(counts.values())
    if not 1 <= total <= MAX_BATCH_CANDIDATES:
        raise InvalidInput(f"candidateCounts must add up to 1–{MAX_BATCH_CANDIDATES} (got {total})")
    batch = Batch.objects.create(
        repository=repository,
        kind=BatchKind.DISCOVERY,
        requested_easy=easy,
        requested_medium=medium,
        requested_hard=hard,
        created_by=created_by if isinstance(created_by, User) else None,
    )
    transaction.on_commit(lambda: jobs.enqueue_batch_run(batch.pk))
    return batch


def batch_add_prs(
    *, repository: Repository, numbers: list[int], created_by: AbstractBaseUser | AnonymousUser | None = None
) -> Batch:
    """Start an add-PRs batch: each chosen merged PR becomes a candidate directly, skipping discovery."""
    clean = list(dict.fromkeys(numbers))
    if not clean:
        raise InvalidInput("prs must list at least one PR number")
    if len(clean) > MAX_ADD_PRS:
        raise InvalidInput(f"at most {MAX_ADD_PRS} PRs at once")
    if any(n <= 0 for n in clean):
        raise InvalidInput("PR numbers are positive integers")
    batch = Batch.objects.create(
        repository=repository,
        kind=BatchKind.ADD_PRS,
        requested_prs=clean,
        created_by=created_by if isinstance(created_by, User) else None,
    )
    transaction.on_commit(lambda: jobs.enqueue_batch_run(batch.pk))
    return batch


@transaction.atomic
def batch_cancel(*, batch: Batch) -> Batch:
    """Cancel a batch: its job stops at the next PR, and candidates not yet finished become cancelled."""
    now = timezone.now()
    locked = Batch.objects.select_for_update().get(pk=batch.pk)
    if locked.cancelled_at is not None:
        return locked
    if locked.status in BATCH_ACTIVE:
        locked.status = BatchStatus.CANCELLED
        locked.status_message = "cancelled before discovery finished"
        locked.finished_at = now
    locked.cancelled_at = now
    locked.save(update_fields=["status", "status_message", "finished_at", "cancelled_at", "updated_at"])
    locked.candidates.exclude(state__in=CANDIDATE_TERMINAL).update(
        state=CandidateState.CANCELLED, reason="batch cancelled", state_changed_at=now, updated_at=now
    )
    return locked


# --- candidates -----------------------------------------------------------------------------------------------------


@transaction.atomic
def candidate_set_state(*, candidate: Candidate, state: str, reason: str = "") -> Candidate:
    """Move a candidate to `state` (with a reason), if the pipeline allows that step. Later apps call this."""
    if state not in CandidateState.values:
        raise InvalidInput(f"state must be one of {', '.join(CandidateState.values)}")
    locked = Candidate.objects.select_for_update().get(pk=candidate.pk)
    if locked.state == state:
        if reason and reason != locked.reason:
            locked.reason = reason
            locked.save(update_fields=["reason", "updated_at"])
        return locked
    allowed = CANDIDATE_TRANSITIONS.get(locked.state, frozenset())
    if state not in allowed:
        raise Conflict(f"candidate {locked.pk} is {locked.state}; it cannot move to {state}")
    locked.state = state
    locked.reason = reason
    locked.state_changed_at = timezone.now()
    locked.save(update_fields=["state", "reason", "state_changed_at", "updated_at"])
    return locked


# --- provenance and discovery (called by jobs) ----------------------------------------------------------------------


def pull_request_record(*, repository: Repository, info: PullInfo) -> PullRequest:
    """Save (or refresh) a merged PR's provenance record with its title and body redacted."""
    title = redact_report(info.title)
    body = redact_report(info.body)
    record, _ = PullRequest.objects.update_or_create(
        repository=repository,
        number=info.number,
        defaults={
            "title": title.text,
            "body": body.text,
            "redactions": title.kinds + body.kinds,
            "author": info.author,
            "url": info.url,
            "merged_at": info.merged_at,
            "base_sha": info.base_sha,
            "head_sha": info.head_sha,
            "merge_sha": info.merge_sha,
        },
    )
    return record


_PROVENANCE_FIELDS = ["title", "body", "redactions", "author", "url", "merged_at", "base_sha", "head_sha", "merge_sha"]


def pull_request_record_many(*, repository: Repository, infos: list[PullInfo]) -> int:
    """Save (or refresh) many provenance records in one statement; what `pull_request_record` does, for a listing."""
    rows = []
    for info in infos:
        title = redact_report(info.title)
        body = redact_report(info.body)
        rows.append(
            PullRequest(
                repository=repository,
                number=info.number,
                title=title.text,
                body=body.text,
                redactions=title.kinds + body.kinds,
                author=info.author,
                url=info.url,
                merged_at=info.merged_at,
                base_sha=info.base_sha,
                head_sha=info.head_sha,
                merge_sha=info.merge_sha,
            )
        )
    # One upsert instead of 2 queries per PR: a 500-PR listing was ~3 s of round trips. Analysis fields are kept.
    PullRequest.objects.bulk_create(
        rows,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["repository", "number"],
        update_fields=[*_PROVENANCE_FIELDS, "updated_at"],
    )
    return len(rows)


def pull_request_analyse(*, pull_request: PullRequest, analysis: Analysis, changed_files: int) -> PullRequest:
    """Store a PR's analysis (lines, paths, tier reached, size-gate reason)."""
    pull_request.analysed_at = timezone.now()
    pull_request.changed_files = changed_files
    pull_request.implementation_lines = analysis.implementation_lines
    pull_request.implementation_paths = list(analysis.implementation_paths)
    pull_request.test_paths = list(analysis.test_paths)
    pull_request.tier_reached = analysis.tier.value if analysis.tier else ""
    pull_request.gate_reason = analysis.gate_reason
    pull_request.save()
    return pull_request


# --- checkouts for the tasks app ------------------------------------------------------------------------------------


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        # One clone per repository at a time, across worker processes.
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _git_auth(repository: Repository) -> list[str]:
    if repository.kind != RepositoryKind.GITHUB or repository.credential is None:
        return []
    # The token goes in a per-command header, never into the clone URL or the repository's config on disk.
    basic = base64.b64encode(f"x-access-token:{repository.credential.secret}".encode()).decode()
    return ["-c", f"http.extraHeader=Authorization: Basic {basic}"]


def repository_checkout(*, repository: Repository, sha: str) -> Path:
    """A working tree of `repository` at `sha` under MEDIA_ROOT/repos, cloned (with the token) on first use.

    The tree is a private clone sharing objects with a cached mirror; it appears complete or not at all."""
    if not re.fullmatch(r"[0-9a-f]{7,64}", sha):
        raise InvalidInput(f"{sha!r} is not a commit SHA")
    root = Path(settings.MEDIA_ROOT) / "repos" / str(repository.pk)
    target = root / "checkouts" / sha
    if (target / ".git").is_dir():
        return target
    source = str(local_path(repository.location)) if repository.kind == RepositoryKind.LOCAL else repository.location
    auth = _git_auth(repository)
    mirror = root / "mirror.git"
    with _lock(root / ".lock"):
        if (target / ".git").is_dir():
            return target
        try:
            if not mirror.is_dir():
                git(root, *auth, "clone", "--bare", "--quiet", source, str(mirror), timeout=1800)
            if not _has_commit(mirror, sha):
                git(mirror, *auth, "fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*", timeout=1800)
            if not _has_commit(mirror, sha):
                git(mirror, *auth, "fetch", "--quiet", "origin", sha, timeout=1800)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{sha[:12]}-", dir=target.parent))
            try:
                git(root, "clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(tmp))
                git(tmp, "checkout", "--quiet", "--detach", sha)
                tmp.rename(target)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        except SourceError as exc:
            raise NotFound(f"cannot check out {sha[:12]} of {repository.name}: {exc.message}") from exc
    return target


def _has_commit(mirror: Path, sha: str) -> bool:
    try:
        git(mirror, "cat-file", "-e", f"{sha}^{{commit}}")
    except SourceError:
        return False
    return True
