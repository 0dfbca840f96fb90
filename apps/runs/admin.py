from django.contrib import admin

from apps.runs.models import Comparison, Evaluation, Trial


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("client_id", "workspace", "status", "sandbox", "created_at")
    list_filter = ("status", "sandbox")
    readonly_fields = ("body", "body_hash")


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("pk", "comparison", "catalog_id", "thinking", "status", "trials_total")
    list_filter = ("status",)


@admin.register(Trial)
class TrialAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("uuid", "evaluation", "task", "agent", "configuration_label", "status", "reward", "cost_usd")
    list_filter = ("status", "agent", "sandbox")
    search_fields = ("uuid",)
    exclude = ("transcript",)
