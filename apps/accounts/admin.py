from django.contrib import admin

from apps.accounts.models import ApiKey, Credential, Membership, Workspace


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["workspace", "user", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["workspace__slug", "user__username"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["prefix", "name", "workspace", "scope", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["scope", "revoked_at"]
    search_fields = ["name", "prefix", "workspace__slug"]
    readonly_fields = ["key_hash", "prefix", "last_used_at"]


@admin.register(Credential)
class CredentialAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Operators see which credentials exist, never their secrets."""

    list_display = ["name", "workspace", "kind", "auth_kind", "created_at", "updated_at"]
    list_filter = ["kind", "auth_kind"]
    search_fields = ["name", "workspace__slug"]
    exclude = ["secret"]
    readonly_fields = ["secret_hint"]
