"""Releases (append-only public snapshots of a repository's baseline results), task exports and registry grants."""

from __future__ import annotations

import uuid

from django.conf import settings as django_settings
from django.db import models
from django.utils import timezone

from apps.accounts.models import Workspace
from apps.repositories.models import Repository

RELEASE_SCHEMA_VERSION = 1


class Release(models.Model):
    """One publish of a repository's baseline results. Rows are never changed: a withdrawal is its own row, and each
    line (workspace × GitHub repository) shows its newest release that is not withdrawn. `document` is exactly what
    the public API serves (nothing else about the workspace is ever read by it)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="releases")
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="releases")
    github_id = models.BigIntegerField(null=True, blank=True, help_text="The line's key with the workspace.")
    full_name = models.CharField(max_length=200, help_text="owner/name when published.")
    settings = models.JSONField(default=list, help_text="Configuration ids chosen (baseline only).")
    declined = models.JSONField(default=list, help_text="Candidates offered and not chosen (not pre-ticked next time).")
    task_ids = models.JSONField(
        default=list, help_text="Every approved task all chosen configurations have a result for."
    )
    head = models.CharField(max_length=64, blank=True)
    fingerprint = models.CharField(max_length=64, help_text="The preview's fingerprint the publish was made against.")
    content_hash = models.CharField(max_length=64, help_text="Hash of what is public: same hash = unchanged.")
    publish_tasks = models.BooleanField(default=False)
    publish_results_by_task = models.BooleanField(default=False)
    document = models.JSONField(help_text="The public release document.")
    published_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["full_name", "-created_at"]),
            models.Index(fields=["repository", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"release {self.pk} of {self.full_name}"


class ReleaseWithdrawal(models.Model):
    """Withdraws one release (the release row itself stays as it was)."""

    release = models.OneToOneField(Release, on_delete=models.CASCADE, related_name="withdrawal")
    withdrawn_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"withdrawal of release {self.release_id}"


class TaskExport(models.Model):
    """An archive of tasks (with hidden tests and reference solutions, unencrypted) and its SHA-256, announced
    before download so the client can verify what it receives."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="task_exports")
    repository = models.ForeignKey(Repository, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    task_ids = models.JSONField(default=list)
    path = models.CharField(max_length=1000)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"export {self.uuid}"


class GrantState(models.TextChoices):
    """Where a grant's images are: being built and saved (the job), all saved with their digests, or not."""

    BUILDING = "building"
    READY = "ready"
    FAILED = "failed"


class RegistryGrant(models.Model):
    """Lets one holder pull specific task images by digest until `expires_at` (HMAC-signed token; cancellable).
    Created `building`; the build job saves the images and sets every digest and `ready` in one write, so a grant
    is never half ready. Only a ready grant pulls anything."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="registry_grants")
    images = models.JSONField(
        default=list,
        help_text='[{taskId, repository, versionId, contentHash, digest}]: the images it may pull ("" digest until'
        " ready).",
    )
    state = models.CharField(max_length=16, choices=GrantState.choices, default=GrantState.BUILDING)
    failure_reason = models.TextField(blank=True)
    build_attempts = models.PositiveIntegerField(default=0)
    build_started_at = models.DateTimeField(
        null=True, blank=True, help_text="When the current build claim was taken (a claim this old is lost)."
    )
    ready_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cancelled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=models.Q(state__in=GrantState.values), name="results_grant_state_valid"),
            models.CheckConstraint(
                condition=~models.Q(state=GrantState.READY) | models.Q(ready_at__isnull=False),
                name="results_grant_ready_has_ready_at",
            ),
            models.CheckConstraint(
                condition=~models.Q(state=GrantState.FAILED) | ~models.Q(failure_reason=""),
                name="results_grant_failed_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"grant {self.uuid}"

    @property
    def status(self) -> str:
        """cancelled, failed, expired, building, or active (ready and usable now)."""
        if self.cancelled_at is not None:
            return "cancelled"
        if self.state == GrantState.FAILED:
            return "failed"
        if self.expires_at <= timezone.now():
            return "expired"
        return "building" if self.state == GrantState.BUILDING else "active"


class LatestResult(models.Model):
    """Cache of the scoring rule: per workspace × configuration × task, the latest scored trial's numbers and whether
    the latest graded trial was unpriced. Rebuilt per task by `queries.refresh` from the trials themselves; a
    database trigger on runs_trial marks changed tasks in DirtyTask. Plain integer ids: it is a cache, not a source."""

    workspace_id = models.BigIntegerField()
    model = models.CharField(max_length=100)
    thinking = models.CharField(max_length=16)
    agent = models.CharField(max_length=32)
    configuration_key = models.CharField(max_length=200)
    task_id = models.BigIntegerField()
    label = models.CharField(max_length=300)
    harness_id = models.CharField(max_length=64)
    environment_id = models.CharField(max_length=64)
    trial_id = models.BigIntegerField(null=True, help_text="The latest scored trial; NULL when none is scored.")
    passed = models.BooleanField(null=True)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True)
    input_tokens = models.BigIntegerField(null=True)
    cached_input_tokens = models.BigIntegerField(null=True)
    cache_write_tokens = models.BigIntegerField(null=True)
    output_tokens = models.BigIntegerField(null=True)
    reasoning_tokens = models.BigIntegerField(null=True)
    seconds = models.FloatField(null=True)
    unpriced = models.BooleanField(help_text="The latest graded trial has no complete cost.")

    class Meta:
        indexes = [models.Index(fields=["workspace_id", "task_id"])]

    def __str__(self) -> str:
        return f"{self.model}|{self.agent}|{self.thinking}|{self.configuration_key} on task {self.task_id}"


class DirtyTask(models.Model):
    """A task whose trials changed since its LatestResult rows were built (written by the runs_trial trigger)."""

    workspace_id = models.BigIntegerField()
    task_id = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace_id", "task_id"], name="results_dirty_unique_task")]

    def __str__(self) -> str:
        return f"dirty task {self.task_id}"
