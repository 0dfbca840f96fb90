"""Repositories, the batches that mine their merged PRs, the PRs' provenance records and the candidates they become."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.lookups import Range

from apps.accounts.models import Credential, Workspace


class RepositoryKind(models.TextChoices):
    GITHUB = "github", "GitHub"
    LOCAL = "local", "Local git repository"


class Repository(models.Model):
    """A repository whose merged PRs become tasks: a GitHub `owner/name` (with a token) or a local path / file URL."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="repositories")
    kind = models.CharField(max_length=16, choices=RepositoryKind.choices)
    full_name = models.CharField(max_length=200, blank=True, help_text="GitHub owner/name.")
    github_id = models.BigIntegerField(null=True, blank=True)
    location = models.CharField(
        max_length=1000, blank=True, help_text="Local kind: a path or file:// URL. GitHub kind: the HTTPS clone URL."
    )
    default_branch = models.CharField(max_length=255, default="main")
    credential = models.ForeignKey(
        Credential, null=True, blank=True, on_delete=models.PROTECT, related_name="repositories"
    )
    is_private = models.BooleanField(default=False)
    agent_minutes = models.PositiveSmallIntegerField(
        default=30, validators=[MinValueValidator(10), MaxValueValidator(90)]
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["full_name", "location"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "full_name"],
                condition=models.Q(kind="github"),
                name="repository_unique_github_name",
            ),
            models.UniqueConstraint(
                fields=["workspace", "location"],
                condition=models.Q(kind="local"),
                name="repository_unique_local_location",
            ),
            models.CheckConstraint(
                condition=models.Q(agent_minutes__gte=10, agent_minutes__lte=90), name="repository_agent_minutes_range"
            ),
            models.CheckConstraint(
                condition=~models.Q(kind="github") | ~models.Q(full_name=""), name="repository_github_has_name"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        return self.full_name or self.location


class BatchKind(models.TextChoices):
    DISCOVERY = "discovery", "Discovery (counts per tier)"
    ADD_PRS = "add_prs", "Add PRs (chosen PR numbers)"


class BatchStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    LISTING = "listing", "Listing merged PRs"
    DISCOVERING = "discovering", "Analysing the pool"
    WAITING = "waiting", "Waiting for GitHub's rate limit"
    PROPOSED = "proposed", "Candidates proposed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


BATCH_ACTIVE = (BatchStatus.QUEUED, BatchStatus.LISTING, BatchStatus.DISCOVERING, BatchStatus.WAITING)
BATCH_TERMINAL = (BatchStatus.PROPOSED, BatchStatus.FAILED, BatchStatus.CANCELLED)


class Batch(models.Model):
    """One pass over a repository's merged PRs, pinned to its default branch head, that proposes candidates."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="batches")
    kind = models.CharField(max_length=16, choices=BatchKind.choices, default=BatchKind.DISCOVERY)
    requested_easy = models.PositiveSmallIntegerField(default=0)
    requested_medium = models.PositiveSmallIntegerField(default=0)
    requested_hard = models.PositiveSmallIntegerField(default=0)
    # Add-PRs: the numbers asked for, in order.
    requested_prs = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=BatchStatus.choices, default=BatchStatus.QUEUED)
    status_message = models.CharField(max_length=500, blank=True)
    head_sha = models.CharField(max_length=64, blank=True)
    listed_count = models.PositiveIntegerField(default=0)
    # The PR numbers discovery analyses, newest first: saved once so a resumed job works on the same pool.
    pool = models.JSONField(default=list, blank=True)
    # Per-number reasons for chosen PRs that could not be taken (add-PRs: not found, not merged…).
    unavailable = models.JSONField(default=dict, blank=True)
    api_calls = models.PositiveIntegerField(default=0)
    resume_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "batches"
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(kind="discovery")
                | models.Q(
                    Range(
                        models.F("requested_easy") + models.F("requested_medium") + models.F("requested_hard"), (1, 300)
                    )
                ),
                name="batch_discovery_counts_1_300",
            )
        ]

    def __str__(self) -> str:
        return f"batch {self.pk} of {self.repository}"

    @property
    def requested(self) -> dict[str, int]:
        return {"easy": self.requested_easy, "medium": self.requested_medium, "hard": self.requested_hard}

    @property
    def requested_total(self) -> int:
        return self.requested_easy + self.requested_medium + self.requested_hard

    @property
    def is_active(self) -> bool:
        return self.status in BATCH_ACTIVE


class PullRequest(models.Model):
    """A merged PR's provenance record: its exact title and body (credentials redacted), who and what it changed."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="pull_requests")
    number = models.PositiveIntegerField()
    title = models.TextField()
    body = models.TextField(blank=True)
    redactions = models.JSONField(default=list, blank=True, help_text="Kinds of credentials removed from title/body.")
    author = models.CharField(max_length=200, blank=True)
    url = models.URLField(max_length=500, blank=True)
    merged_at = models.DateTimeField()
    base_sha = models.CharField(max_length=64)
    head_sha = models.CharField(max_length=64, blank=True)
    merge_sha = models.CharField(max_length=64, blank=True)
    # Filled by analysis (null until the PR is analysed; only PRs in some batch's pool ever are).
    analysed_at = models.DateTimeField(null=True, blank=True)
    changed_files = models.PositiveIntegerField(default=0)
    additions = models.PositiveIntegerField(default=0)
    deletions = models.PositiveIntegerField(default=0)
    implementation_lines = models.PositiveIntegerField(default=0)
    implementation_paths = models.JSONField(default=list, blank=True)
    test_paths = models.JSONField(default=list, blank=True)
    tier_reached = models.CharField(max_length=8, blank=True)
    gate_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-merged_at", "-number"]
        constraints = [models.UniqueConstraint(fields=["repository", "number"], name="pull_request_unique_number")]

    def __str__(self) -> str:
        return f"#{self.number} {self.title[:60]}"


class CandidateState(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    AUTHORING = "authoring", "Authoring"
    VERIFYING = "verifying", "Verifying"
    IN_REVIEW = "in_review", "In review"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    FAILED = "failed", "Failed"
    INFRASTRUCTURE_FAILED = "infrastructure_failed", "Infrastructure failed"
    SKIPPED = "skipped", "Skipped"
    CANCELLED = "cancelled", "Cancelled"


CANDIDATE_TERMINAL = (
    CandidateState.APPROVED,
    CandidateState.REJECTED,
    CandidateState.FAILED,
    CandidateState.INFRASTRUCTURE_FAILED,
    CandidateState.SKIPPED,
    CandidateState.CANCELLED,
)

# Stages a candidate still moves through after discovery (the workers push it on); every other state is settled:
# a person decides (awaiting approval) or it has ended. A batch page polls while any candidate is in one of these.
CANDIDATE_MOVING = (
    CandidateState.PROPOSED,
    CandidateState.AUTHORING,
    CandidateState.VERIFYING,
    CandidateState.IN_REVIEW,
)
# The pipeline a batch page always counts, zeros included; the other states are listed when they occur.
CANDIDATE_PIPELINE = (*CANDIDATE_MOVING, CandidateState.AWAITING_APPROVAL, CandidateState.APPROVED)

# Which stage may follow which. Review can send a task back to authoring, and verify failures loop to authoring.
CANDIDATE_TRANSITIONS: dict[str, frozenset[str]] = {
    CandidateState.PROPOSED: frozenset({"authoring", "skipped", "failed", "infrastructure_failed", "cancelled"}),
    CandidateState.AUTHORING: frozenset({"verifying", "in_review", "failed", "infrastructure_failed", "cancelled"}),
    CandidateState.VERIFYING: frozenset({"authoring", "in_review", "failed", "infrastructure_failed", "cancelled"}),
    CandidateState.IN_REVIEW: frozenset(
        {"authoring", "awaiting_approval", "rejected", "failed", "infrastructure_failed", "cancelled"}
    ),
    CandidateState.AWAITING_APPROVAL: frozenset({"approved", "rejected", "cancelled"}),
    # A person can change their mind about an approval; the other terminal states are final.
    CandidateState.APPROVED: frozenset({"rejected"}),
}


class Candidate(models.Model):
    """One PR proposed by a batch at a tier, and its fate (state + reason) as later stages push it forward."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="candidates")
    pull_request = models.ForeignKey(PullRequest, on_delete=models.CASCADE, related_name="candidates")
    tier = models.CharField(max_length=8, blank=True, help_text="easy|medium|hard; blank when skipped below easy.")
    state = models.CharField(max_length=24, choices=CandidateState.choices, default=CandidateState.PROPOSED)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    state_changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch_id", "id"]
        constraints = [
            # Deduplicated by source PR within a batch.
            models.UniqueConstraint(fields=["batch", "pull_request"], name="candidate_unique_pr_per_batch"),
            models.CheckConstraint(
                condition=models.Q(tier__in=["", "easy", "medium", "hard"]), name="candidate_tier_valid"
            ),
        ]
        indexes = [models.Index(fields=["batch", "state"])]

    def __str__(self) -> str:
        return f"candidate {self.pk}: PR #{self.pull_request.number} ({self.tier or '-'}, {self.state})"

    @property
    def is_terminal(self) -> bool:
        return self.state in CANDIDATE_TERMINAL
