"""Saved harnesses: what a workspace changes about one agent (skills, instructions, options, a subagent model)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.accounts.models import Credential, Workspace


class Agent(models.TextChoices):
    PI = "pi", "Pi"
    CODEX = "codex", "Codex"
    CLAUDE_CODE = "claude-code", "Claude Code"
    MINI_SWE_AGENT = "mini-swe-agent", "mini-swe-agent"
    TERMINUS_2 = "terminus-2", "Terminus 2"
    MUSE_CODE = "muse-code", "Muse Code"


# Agents that install a skills/ folder, that take instructions in their system prompt, and that run subagents.
SKILL_AGENTS = (Agent.CLAUDE_CODE, Agent.CODEX, Agent.PI)
SYSTEM_PROMPT_AGENTS = (Agent.CLAUDE_CODE, Agent.CODEX)
SUBAGENT_AGENTS = (Agent.CLAUDE_CODE, Agent.CODEX)


class Harness(models.Model):
    """One agent, changed. `fingerprint` is its configuration identity: the same changes, the same fingerprint."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="harnesses")
    name = models.CharField(max_length=100)
    agent = models.CharField(max_length=32, choices=Agent.choices)
    skills = models.JSONField(default=list, blank=True, help_text="Normalized skill sources: org/repo[@ref] or a URL.")
    instructions = models.TextField(blank=True)
    options = models.JSONField(default=dict, blank=True, help_text="The agent's Harbor options (validated).")
    subagent_catalog_id = models.CharField(max_length=100, blank=True)
    subagent_credential = models.ForeignKey(
        Credential,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Left empty: the first of the workspace's credentials that can serve the subagent model.",
    )
    subagent_managed = models.BooleanField(default=False, help_text="`managed-model`: the deployment's own keys pay.")
    subagent_prompt = models.TextField(blank=True, help_text='Added to the system prompt; "" tells the agent nothing.')
    fingerprint = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="harnesses_harness_unique_name"),
            models.CheckConstraint(
                condition=models.Q(subagent_catalog_id="") | models.Q(agent__in=["claude-code", "codex"]),
                name="harnesses_harness_subagent_agents",
            ),
        ]
        indexes = [models.Index(fields=["workspace", "fingerprint"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent})"

    @property
    def has_subagent(self) -> bool:
        return bool(self.subagent_catalog_id)

    @property
    def instructions_in_system_prompt(self) -> bool:
        return self.agent in SYSTEM_PROMPT_AGENTS
