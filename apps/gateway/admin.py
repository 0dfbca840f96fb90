"""Operators' view of trial keys and the call ledger (read-mostly: rows are written by the gateway)."""

from django.contrib import admin

from apps.gateway.models import GatewayCall, GatewayKey, GatewayKeyRoute


class GatewayKeyRouteInline(admin.TabularInline):  # type: ignore[type-arg]
    model = GatewayKeyRoute
    extra = 0
    readonly_fields = ["model_id", "role", "credential", "managed"]
    can_delete = False


@admin.register(GatewayKey)
class GatewayKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["prefix", "subject", "workspace", "expires_at", "revoked_at", "created_at"]
    list_filter = ["revoked_at"]
    search_fields = ["subject", "prefix", "workspace__slug"]
    readonly_fields = ["key_hash", "prefix", "subject", "workspace", "created_at"]
    inlines = [GatewayKeyRouteInline]


@admin.register(GatewayCall)
class GatewayCallAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = [
        "started_at",
        "subject",
        "requested_model",
        "served_model",
        "status",
        "http_status",
        "cost_usd",
        "cost_source",
        "input_tokens",
        "output_tokens",
        "latency_ms",
    ]
    list_filter = ["status", "cost_source", "wire_format", "stream", "model_verified"]
    search_fields = ["subject", "requested_model", "served_model", "generation_id"]
    date_hierarchy = "started_at"

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
