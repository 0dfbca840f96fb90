"""Model-driven authoring: settings per batch or eval, authoring rounds with their verify calls, review rounds,
evals (a workspace's own task collections) and vibe evals (tasks written from a description)."""

from __future__ import annotations

from django.db import models

from apps.accounts.models import Credential, Workspace

AUTHOR_AGENTS = ("claude-code", "codex", "pi", "terminus-2")
MAX_VERIFY_CALLS = 5
MAX_FAILED_ROUNDS = 3
# Real files attached to a vibe eval, for the page's uploads and the API's base64 items alike. The total fits, base64
# encoded, in the API's JSON body (Django's DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MiB), so the API can reach the limit.
MAX_ATTACHMENTS = 10
MAX_ATTACHMENT_BYTES = 3 * 2**19  # 1.5 MiB, all files together
DEFAULT_SILENCE_SECONDS = 8 * 60


class Reasoning(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class AuthoringSettings(models.Model):
    """Who writes and who reviews a batch's or an eval's tasks, and the stage limits."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="authoring_settings")
    batch = models.OneToOneField(
        "repositories.Batch", null=True, blank=True, on_delete=models.CASCADE, related_name="authoring_settings"
    )
    author_agent = models.CharField(max_length=32, default="terminus-2")
    author_model = models.CharField(max_length=200)
    author_credential = models.ForeignKey(
        Credential, null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="Empty: managed."
    )
    reasoning = models.CharField(max_length=8, choices=Reasoning.choices, default=Reasoning.MEDIUM)
    reviewer_model = models.CharField(max_length=200)
    reviewer_credential = models.ForeignKey(
        Credential, null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="Empty: managed."
    )
    silence_seconds = models.PositiveIntegerField(default=DEFAULT_SILENCE_SECONDS)
    author_wall_clock_seconds = models.PositiveIntegerField(default=4 * 3600)
    review_wall_clock_seconds = models.PositiveIntegerField(default=30 * 60)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(author_model=models.F("reviewer_model")),
                name="authoring_settings_reviewer_differs",
            )
        ]

    def __str__(self) -> str:
        return f"{self.author_agent}/{self.author_model} reviewed by {self.reviewer_model}"


class Eval(models.Model):
    """A workspace's own collection of tasks with no repository behind it. Never released."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="evals")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    settings = models.ForeignKey(AuthoringSettings, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="authoring_eval_unique_name")]

    def __str__(self) -> str:
        return self.name


class VibeEvalKind(models.TextChoices):
    REPOSITORY = "repository", "Repository vibe eval"
    WORKSPACE = "workspace", "Workspace vibe eval"


class VibeEval(models.Model):
    """A task written from a description instead of a PR: at a pinned commit of a repository, or in an eval."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="vibe_evals")
    kind = models.CharField(max_length=16, choices=VibeEvalKind.choices)
    repository = models.ForeignKey(
        "repositories.Repository", null=True, blank=True, on_delete=models.CASCADE, related_name="vibe_evals"
    )
    eval = models.ForeignKey(Eval, null=True, blank=True, on_delete=models.CASCADE, related_name="vibe_evals")
    description = models.TextField()
    ref = models.CharField(max_length=255, blank=True, help_text="What was asked for: a SHA, a branch or HEAD.")
    resolved_sha = models.CharField(max_length=64, blank=True)
    task = models.OneToOneField("tasks.Task", on_delete=models.CASCADE, related_name="vibe_eval")
    settings = models.ForeignKey(AuthoringSettings, on_delete=models.PROTECT, related_name="vibe_evals")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(kind="repository", repository__isnull=False, eval__isnull=True)
                    | models.Q(kind="workspace", repository__isnull=True, eval__isnull=False)
                ),
                name="authoring_vibe_eval_kind_matches",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} vibe eval {self.pk}"


class Attachment(models.Model):
    """A real file attached to a vibe eval's description; the author finds it in its workdir under attachments/."""

    vibe_eval = models.ForeignKey(VibeEval, on_delete=models.CASCADE, related_name="attachments")
    name = models.CharField(max_length=255)
    content = models.BinaryField()
    size = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["vibe_eval", "name"], name="authoring_attachment_unique")]

    def __str__(self) -> str:
        return self.name


class RoundState(models.TextChoices):
    RUNNING = "running", "Running"
    SUBMITTED = "submitted", "Submitted"
    FAILED = "failed", "Failed"


class AuthoringRound(models.Model):
    """One attempt of the authoring agent at a task: a Harbor trial that ends with a submit (or fails)."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="authoring_rounds")
    settings = models.ForeignKey(AuthoringSettings, on_delete=models.PROTECT, related_name="rounds")
    number = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=16, choices=RoundState.choices, default=RoundState.RUNNING)
    reason = models.TextField(blank=True)
    agent = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    feedback = models.TextField(
        blank=True, help_text="The previous review's notes and suggestions, given to the agent."
    )
    trial_name = models.CharField(max_length=200, blank=True)
    verify_calls = models.PositiveSmallIntegerField(default=0)
    submitted_version = models.ForeignKey(
        "tasks.TaskVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    files = models.JSONField(default=dict, blank=True, help_text="The agent's last posted files (path → text).")
    calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_complete = models.BooleanField(default=False)
    last_output_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task_id", "number"]
        constraints = [models.UniqueConstraint(fields=["task", "number"], name="authoring_round_unique_number")]

    def __str__(self) -> str:
        return f"task {self.task_id} round {self.number}: {self.state}"

    @property
    def subject(self) -> str:
        return f"authoring:{self.pk}"


class VerifyCall(models.Model):
    """One `verify` from inside the authoring sandbox and the report it got."""

    round = models.ForeignKey(AuthoringRound, on_delete=models.CASCADE, related_name="verifies")
    number = models.PositiveSmallIntegerField()
    passed = models.BooleanField(default=False)
    report = models.JSONField(default=dict)
    version = models.ForeignKey("tasks.TaskVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round_id", "number"]
        constraints = [models.UniqueConstraint(fields=["round", "number"], name="authoring_verify_unique_number")]

    def __str__(self) -> str:
        return f"verify {self.number} of round {self.round_id}"


class Verdict(models.TextChoices):
    ACCEPT = "accept", "Accept"
    REJECT = "reject", "Reject"
    SEND_BACK = "send_back", "Send back"
    FAILED = "failed", "Review failed"


class ReviewRound(models.Model):
    """The independent reviewer's verdict on one submitted round, with its notes and suggestions (all kept)."""

    round = models.OneToOneField(AuthoringRound, on_delete=models.CASCADE, related_name="review")
    model = models.CharField(max_length=200)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    notes = models.TextField(blank=True)
    suggestions = models.JSONField(default=list, blank=True)
    calls = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_complete = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"review of round {self.round_id}: {self.verdict}"
