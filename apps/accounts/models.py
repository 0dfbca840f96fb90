"""Workspaces, who belongs to them, and the API keys that act for them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from selfbench.crypto import EncryptedTextField


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"

    @property
    def is_admin(self) -> bool:
        return self.role in (Role.OWNER, Role.ADMIN)


class KeyScope(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Write"


class ApiKey(models.Model):
    """An API key `sbk_…`. Only its SHA-256 is stored; the key itself is shown once at creation."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise a key in lists.")
    key_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=KeyScope.choices, default=KeyScope.WRITE)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name}, {self.scope})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class CredentialKind(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    ANTHROPIC = "anthropic", "Anthropic"
    OPENROUTER = "openrouter", "OpenRouter"
    CUSTOM = "custom", "Custom (OpenAI-compatible)"
    GITHUB = "github", "GitHub token"
    E2B = "e2b", "E2B"
    MODAL = "modal", "Modal"
    DAYTONA = "daytona", "Daytona"


MODEL_CREDENTIAL_KINDS = (
    CredentialKind.OPENAI,
    CredentialKind.ANTHROPIC,
    CredentialKind.OPENROUTER,
    CredentialKind.CUSTOM,
)
SANDBOX_CREDENTIAL_KINDS = (CredentialKind.E2B, CredentialKind.MODAL, CredentialKind.DAYTONA)


class AuthKind(models.TextChoices):
    API_KEY = "api_key", "API key"
    SIGN_IN = "sign_in", "Sign-in"


class Credential(models.Model):
    """A workspace secret (model provider, GitHub or sandbox).

    Encrypted at rest; never returned, logged or given to agents.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="credentials")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=CredentialKind.choices)
    auth_kind = models.CharField(max_length=16, choices=AuthKind.choices, default=AuthKind.API_KEY)
    secret = EncryptedTextField()
    base_url = models.URLField(blank=True, help_text="Custom kind: the OpenAI-compatible base URL.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="credential_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def secret_hint(self) -> str:
        """The last four characters, so people can tell keys apart without seeing them."""
        return f"…{self.secret[-4:]}" if len(self.secret) >= 12 else "…"
