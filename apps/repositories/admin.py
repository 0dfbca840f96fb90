from django.contrib import admin

from apps.repositories.models import Batch, Candidate, PullRequest, Repository


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "kind", "workspace", "default_branch", "agent_minutes", "created_at")
    list_filter = ("kind",)
    search_fields = ("full_name", "location")


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "repository", "kind", "status", "status_message", "api_calls", "created_at")
    list_filter = ("status", "kind")
    readonly_fields = ("pool", "head_sha", "api_calls", "resume_at", "error")


@admin.register(PullRequest)
class PullRequestAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("number", "title", "repository", "author", "merged_at", "tier_reached", "gate_reason")
    search_fields = ("title", "author")


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "batch", "pull_request", "tier", "state", "reason")
    list_filter = ("state", "tier")
    list_select_related = ("pull_request", "batch")
