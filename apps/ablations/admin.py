from django.contrib import admin

from apps.ablations.models import Environment, EnvironmentBuild


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "repository", "workspace", "updated_at")
    search_fields = ("name", "workspace__slug")


@admin.register(EnvironmentBuild)
class EnvironmentBuildAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("environment", "task", "state", "attempts", "updated_at")
    list_filter = ("state",)
    readonly_fields = ("log", "details", "created_at", "updated_at")
