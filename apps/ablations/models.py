"""Repo ablations ("environments"): a script run in /app as each task's image is built, and each task's build."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.accounts.models import Workspace


class Environment(models.Model):
    """A repository's repo ablation. Every approved task of the repository is built once in it (EnvironmentBuild)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="environments")
    repository = models.ForeignKey("repositories.Repository", on_delete=models.CASCADE, related_name="environments")
    name = models.CharField(max_length=100)
    script = models.TextField(help_text="Run with bash in /app as each task's image is built.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "name"], name="ablations_environment_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class BuildState(models.TextChoices):
    PENDING = "pending", "Pending"
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class EnvironmentBuild(models.Model):
    """One approved task built in one environment: a new task version (same instruction, tests and solution; the
    Dockerfile runs the script), checked by building its image and running the oracle on it."""

    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="builds")
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    base_version = models.ForeignKey(
        "tasks.TaskVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The task's version this build started from.",
    )
    version = models.ForeignKey(
        "tasks.TaskVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The version built in the environment.",
    )
    script_hash = models.CharField(max_length=64, help_text="The script it was built with.")
    state = models.CharField(max_length=16, choices=BuildState.choices, default=BuildState.PENDING)
    reason = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    log = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["environment_id", "task_id"]
        constraints = [
            models.UniqueConstraint(fields=["environment", "task"], name="ablations_build_unique_task"),
            models.CheckConstraint(
                condition=~models.Q(state="failed") | ~models.Q(reason=""), name="ablations_build_failed_has_reason"
            ),
            models.CheckConstraint(
                condition=~models.Q(state="ready") | models.Q(version__isnull=False),
                name="ablations_build_ready_has_version",
            ),
        ]
        indexes = [models.Index(fields=["state", "started_at"])]

    def __str__(self) -> str:
        return f"{self.environment_id}/{self.task_id}: {self.state}"
