"""Tasks built from candidate PRs, their content-addressed versions, and the gate runs that verify them."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models

from apps.accounts.models import Workspace


class TaskState(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    AUTHORING = "authoring", "Authoring"
    VERIFYING = "verifying", "Verifying"
    IN_REVIEW = "in_review", "In review"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    FAILED = "failed", "Failed"
    INFRASTRUCTURE_FAILED = "infrastructure_failed", "Infrastructure failed"
    CANCELLED = "cancelled", "Cancelled"


TASK_TERMINAL = (
    TaskState.APPROVED,
    TaskState.REJECTED,
    TaskState.FAILED,
    TaskState.INFRASTRUCTURE_FAILED,
    TaskState.CANCELLED,
)


class Tier(models.TextChoices):
    EASY = "easy", "Easy"
    MEDIUM = "medium", "Medium"
    HARD = "hard", "Hard"


class Task(models.Model):
    """One candidate PR on its way to an approved benchmark task. `version` is the files it is verified with."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="tasks")
    candidate = models.ForeignKey(
        "repositories.Candidate", null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks"
    )
    repository = models.ForeignKey(
        "repositories.Repository", null=True, blank=True, on_delete=models.CASCADE, related_name="tasks"
    )
    batch = models.ForeignKey(
        "repositories.Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks"
    )
    # The source as primitives, so a task can be built from any git repository (and survives its candidate).
    source_path = models.CharField(max_length=1000, help_text="A git repository holding the base and head commits.")
    source_repository = models.CharField(max_length=200, blank=True)
    pr_number = models.PositiveIntegerField(null=True, blank=True)
    base_sha = models.CharField(max_length=64)
    head_sha = models.CharField(max_length=64)
    title = models.TextField(help_text="Redacted PR title.")
    body = models.TextField(blank=True, help_text="Redacted PR body.")
    tier_requested = models.CharField(max_length=8, choices=Tier.choices, default=Tier.EASY)
    tier = models.CharField(max_length=8, choices=Tier.choices, blank=True)
    state = models.CharField(max_length=24, choices=TaskState.choices, default=TaskState.PROPOSED)
    reason = models.TextField(blank=True, help_text="Why the task is in its state (always set for terminal states).")
    version = models.ForeignKey("tasks.TaskVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    flake_rate = models.FloatField(null=True, blank=True)
    infra_attempts = models.PositiveSmallIntegerField(default=0)
    decision_note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    state_changed_at = models.DateTimeField(auto_now_add=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "state"])]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(state__in=[s.value for s in TASK_TERMINAL]) | ~models.Q(reason=""),
                name="tasks_task_terminal_has_reason",
            )
        ]

    def __str__(self) -> str:
        return f"task {self.pk}: {self.title[:60]}"

    @property
    def is_terminal(self) -> bool:
        return self.state in TASK_TERMINAL


class TaskVersion(models.Model):
    """Immutable files of a task: a Harbor task directory stored under MEDIA_ROOT/tasks/<content_hash>."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="versions")
    content_hash = models.CharField(max_length=64)
    definition = models.JSONField(default=dict)
    fail_to_pass = models.JSONField(default=list)
    pass_to_pass = models.JSONField(default=list)
    verified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["task", "content_hash"], name="tasks_version_unique_hash")]

    def __str__(self) -> str:
        return f"{self.task_id}@{self.content_hash[:12]}"

    @property
    def path(self) -> Path:
        return Path(settings.MEDIA_ROOT) / "tasks" / self.content_hash


class Gate(models.TextChoices):
    DISCOVERY = "discovery", "Discovery"
    BUILD = "build", "Build"
    SMOKE = "smoke", "Smoke"
    NOP = "nop", "Nop"
    ORACLE = "oracle", "Oracle"
    DETERMINISM = "determinism", "Determinism"


GATE_ORDER = [Gate.BUILD, Gate.SMOKE, Gate.NOP, Gate.ORACLE, Gate.DETERMINISM]


class GateStatus(models.TextChoices):
    RUNNING = "running", "Running"
    PASSED = "passed", "Passed"
    FAILED = "failed", "Failed"
    INFRASTRUCTURE_ERROR = "infrastructure_error", "Infrastructure error"
    # Its task was cancelled while the gate ran: the trial was stopped, so the gate says nothing about the task.
    CANCELLED = "cancelled", "Cancelled"


class GateRun(models.Model):
    """One attempt at one gate (or the authoring discovery run) in a real container, with its log."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="gate_runs")
    version = models.ForeignKey(TaskVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="gate_runs")
    gate = models.CharField(max_length=16, choices=Gate.choices)
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=24, choices=GateStatus.choices, default=GateStatus.RUNNING)
    reason = models.TextField(blank=True)
    trial_name = models.CharField(max_length=200, blank=True)
    reward = models.FloatField(null=True, blank=True)
    runs = models.PositiveSmallIntegerField(default=1)
    flake_rate = models.FloatField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    log = models.TextField(blank=True)
    duration_sec = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started_at", "pk"]

    def __str__(self) -> str:
        return f"{self.gate} #{self.attempt}: {self.status}"
