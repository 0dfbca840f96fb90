"""Comparisons (one client request), their evaluations (one per model row) and trials (one Harbor run each)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.accounts.models import Credential, Workspace


class ComparisonStatus(models.TextChoices):
    SUBMITTING = "submitting", "Submitting"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    CANCELLED = "cancelled", "Cancelled"


class Comparison(models.Model):
    """One `POST …/evaluations/comparisons`: the client's id, the normalized body and its hash (idempotency)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="comparisons")
    client_id = models.UUIDField(help_text="The `id` the client generated; retries with it never start twice.")
    body = models.JSONField(help_text="The normalized request body.")
    body_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=ComparisonStatus.choices, default=ComparisonStatus.SUBMITTING)
    submission_error = models.TextField(blank=True)
    sandbox = models.CharField(max_length=64)
    sandbox_credential = models.ForeignKey(
        Credential, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    judge_credential = models.ForeignKey(Credential, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    skip_completed = models.BooleanField(default=False)
    baseline = models.BooleanField(default=True)
    task_ids = models.JSONField(default=list, help_text="The tasks resolved at start; resume uses these.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["workspace", "client_id"], name="runs_comparison_unique_id")]

    def __str__(self) -> str:
        return f"comparison {self.client_id} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in (ComparisonStatus.DONE, ComparisonStatus.CANCELLED)


class EvaluationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    CANCELLED = "cancelled", "Cancelled"


class Evaluation(models.Model):
    """One model row of a comparison: every task on each of its harnesses (and configurations) as trials."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="evaluations")
    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="evaluations")
    position = models.PositiveSmallIntegerField(help_text="The row's index in the request's `models`.")
    catalog_id = models.CharField(max_length=100)
    credential = models.ForeignKey(Credential, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    managed = models.BooleanField(default=False, help_text="`managed-model`: the deployment's own keys pay.")
    thinking = models.CharField(max_length=16)
    harnesses = models.JSONField(default=list, help_text="Agent names this row runs on.")
    row_harness_id = models.CharField(max_length=64, blank=True, help_text="`models[].harness`, a saved harness.")
    subagent = models.JSONField(null=True, blank=True, help_text="Legacy `models[].subagent`: catalogId, credential.")
    status = models.CharField(max_length=16, choices=EvaluationStatus.choices, default=EvaluationStatus.QUEUED)
    trials_total = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["comparison_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["comparison", "position"], name="runs_evaluation_unique_row"),
            # The target of runs_trial's foreign key (evaluation_id, workspace_id): a trial's workspace is its
            # evaluation's (migration 0003).
            models.UniqueConstraint(fields=["id", "workspace"], name="runs_evaluation_unique_id_workspace"),
            models.CheckConstraint(
                condition=Q(managed=True, credential__isnull=True) | Q(managed=False, credential__isnull=False),
                name="runs_evaluation_managed_xor_credential",
            ),
        ]

    def __str__(self) -> str:
        return f"evaluation {self.pk}: {self.catalog_id}"

    @property
    def credential_id_public(self) -> str:
        return "managed-model" if self.managed else str(self.credential_id)


class TrialStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


TRIAL_TERMINAL = (TrialStatus.COMPLETED, TrialStatus.FAILED, TrialStatus.CANCELLED)
TRIAL_ACTIVE = (TrialStatus.QUEUED, TrialStatus.RUNNING)


class Trial(models.Model):
    """One task × agent × configuration of an evaluation, run as one Harbor trial in a sandbox."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # A comparison inserts tens of thousands of trials at once, and PostgreSQL checks every foreign key of every
    # row. So the database checks two per trial, which imply the rest: (evaluation_id, workspace_id) against
    # runs_evaluation (added in migration 0003; Django can't declare a two-column foreign key) and task_version,
    # whose task is the trial's task. Their own indexes are left out where an index below starts with the column.
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="trials", db_constraint=False, db_index=False
    )
    evaluation = models.ForeignKey(
        Evaluation, on_delete=models.CASCADE, related_name="trials", db_constraint=False, db_index=False
    )
    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="trials", db_constraint=False, db_index=False
    )
    task_version = models.ForeignKey("tasks.TaskVersion", on_delete=models.PROTECT, related_name="+")
    task_dir = models.CharField(max_length=1000, help_text="The Harbor task directory run (an environment's build).")
    agent = models.CharField(max_length=32)
    harness_id = models.CharField(max_length=64, blank=True)
    environment_id = models.CharField(max_length=64, blank=True)
    configuration_key = models.CharField(max_length=200)
    configuration_label = models.CharField(max_length=300)
    sandbox = models.CharField(max_length=64)
    spec = models.JSONField(default=dict, help_text="Frozen harness changes (options, skills, instructions).")
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=16, choices=TrialStatus.choices, default=TrialStatus.QUEUED)
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="When its job was enqueued.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    # Outcome.
    reward = models.FloatField(null=True, blank=True)
    rewards = models.JSONField(null=True, blank=True)
    reward_valid = models.BooleanField(default=False)
    failure_cause = models.CharField(max_length=64, blank=True)
    exception_type = models.CharField(max_length=200, blank=True)
    exception_message = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    # Usage from the gateway ledger (the source of truth); NULL cost = incomplete, never 0.
    calls = models.PositiveIntegerField(default=0)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    cached_input_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    reasoning_tokens = models.BigIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    billed_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    cost_complete = models.BooleanField(default=False)
    model_verified = models.BooleanField(default=False)
    subagent_calls = models.PositiveIntegerField(default=0)
    harbor_cost_usd = models.FloatField(null=True, blank=True, help_text="Harbor's own estimate, a cross-check.")
    network_enforced = models.BooleanField(null=True, blank=True)
    network_policy = models.CharField(max_length=300, blank=True)
    trial_dir = models.CharField(max_length=1000, blank=True)
    transcript = models.TextField(blank=True, help_text="The agent's transcript, redacted and size-capped.")
    trajectory_path = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["evaluation_id", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation", "task", "agent", "configuration_key"], name="runs_trial_unique_pair"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "dispatched_at"]),
            models.Index(fields=["workspace", "status"]),
            models.Index(fields=["task", "agent", "configuration_key"]),
        ]

    def __str__(self) -> str:
        return f"trial {self.uuid} ({self.status})"

    @property
    def subject(self) -> str:
        """The gateway's name for this trial's calls and key."""
        return f"trial:{self.uuid}"

    @property
    def harbor_name(self) -> str:
        return f"sb-trial-{self.uuid.hex[:16]}-{self.attempt}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TRIAL_TERMINAL

    @property
    def is_scored(self) -> bool:
        """Completed, model verified, with a reward and a cost (how-it-works: Results)."""
        return (
            self.status == TrialStatus.COMPLETED
            and self.model_verified
            and self.reward is not None
            and self.cost_usd is not None
        )


class TrialArtifact(models.Model):
    """A text file a trial's agent left (or its transcript), redacted and capped."""

    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=500, help_text="Path relative to the trial directory.")
    size = models.PositiveBigIntegerField(help_text="The file's size on disk in bytes.")
    truncated = models.BooleanField(default=False)
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["trial_id", "name"]
        constraints = [models.UniqueConstraint(fields=["trial", "name"], name="runs_artifact_unique_name")]

    def __str__(self) -> str:
        return self.name
