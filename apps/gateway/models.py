"""Trial keys, the models each key serves, and the ledger: one row per model call through the gateway."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from apps.accounts.models import Credential, Workspace


class Role(models.TextChoices):
    MAIN = "main", "Main model"
    SUBAGENT = "subagent", "Subagent model"


class GatewayKey(models.Model):
    """A short-lived key `sbg_…` for one subject (a trial). Only its SHA-256 is stored."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="gateway_keys")
    subject = models.CharField(max_length=200, db_index=True, help_text="Opaque owner, e.g. trial:<uuid>.")
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.subject})"


class GatewayKeyRoute(models.Model):
    """One model a key may call, and the credential that pays for it (none = the deployment's managed keys)."""

    key = models.ForeignKey(GatewayKey, on_delete=models.CASCADE, related_name="routes")
    model_id = models.CharField(max_length=100, help_text="Catalog model id.")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MAIN)
    # Deleting a credential cuts off the trials using it (their calls then get 403), which is what an admin means.
    credential = models.ForeignKey(Credential, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    managed = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "model_id"], name="gateway_route_unique_model"),
            models.CheckConstraint(
                condition=Q(managed=True, credential__isnull=True) | Q(managed=False, credential__isnull=False),
                name="gateway_route_managed_xor_credential",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_id} ({self.role})"


class CallStatus(models.TextChoices):
    OK = "ok", "OK"
    UPSTREAM_ERROR = "upstream_error", "Upstream answered an error"
    UPSTREAM_TIMEOUT = "upstream_timeout", "Upstream timed out"
    UPSTREAM_UNREACHABLE = "upstream_unreachable", "Upstream unreachable"
    CLIENT_DISCONNECTED = "client_disconnected", "Client disconnected mid-call"
    REFUSED = "refused", "Refused by the gateway"


class CostSource(models.TextChoices):
    PROVIDER = "provider", "Provider-reported"
    LIST = "list", "List price"
    UNPRICED = "unpriced", "Unpriced (cost unknown)"
    NONE = "none", "Nothing billable"


class GatewayCall(models.Model):
    """The ledger: one row per model call, written once when the call ends."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    key = models.ForeignKey(GatewayKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    subject = models.CharField(max_length=200, db_index=True)
    role = models.CharField(max_length=16, choices=Role.choices, blank=True)
    catalog_model = models.CharField(max_length=100, blank=True)
    requested_model = models.CharField(max_length=200)
    served_model = models.CharField(max_length=200, blank=True, help_text="The model the response says served it.")
    served_provider = models.CharField(max_length=100, blank=True, help_text="OpenRouter's upstream provider.")
    model_verified = models.BooleanField(null=True, help_text="Served model matches the key's; null if none served.")
    wire_format = models.CharField(max_length=32)
    stream = models.BooleanField(default=False)
    status = models.CharField(max_length=32, choices=CallStatus.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    usage_complete = models.BooleanField(default=False, help_text="False when the usage block was never seen.")
    input_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="All prompt tokens, cache included.")
    cached_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_write_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="Reasoning included.")
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=18, decimal_places=10, null=True, blank=True)
    cost_source = models.CharField(max_length=16, choices=CostSource.choices)
    price_map_revision = models.CharField(max_length=16, blank=True)
    credential = models.ForeignKey(Credential, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    managed = models.BooleanField(default=False)
    billable = models.BooleanField(default=True, help_text="Paid with an API key (a sign-in is priced, not billed).")
    generation_id = models.CharField(max_length=200, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    ttfb_ms = models.FloatField(null=True, blank=True)
    overhead_ms = models.FloatField(null=True, blank=True, help_text="Gateway self-time before the first byte.")
    started_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            # The rule "never silently zero" as the database sees it: unpriced has no number, the rest have one.
            models.CheckConstraint(
                condition=Q(cost_source="unpriced", cost_usd__isnull=True)
                | (~Q(cost_source="unpriced") & Q(cost_usd__isnull=False)),
                name="gateway_call_cost_matches_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} {self.requested_model} {self.status}"
