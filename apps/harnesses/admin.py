from django.contrib import admin

from apps.harnesses.models import Harness


@admin.register(Harness)
class HarnessAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "agent", "workspace", "subagent_catalog_id", "fingerprint", "updated_at")
    list_filter = ("agent",)
    search_fields = ("name", "workspace__slug", "fingerprint")
    readonly_fields = ("fingerprint", "created_at", "updated_at")
