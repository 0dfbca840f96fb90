"""API shapes for repo ablations ("environments") and their builds (camelCase; shape only)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.ablations.models import Environment
from apps.ablations.queries import TaskBuildStatus


class _Strict(serializers.Serializer):  # type: ignore[type-arg]
    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({k: ["Unknown field."] for k in unknown})
        return super().to_internal_value(data)


class EnvironmentCreateInput(_Strict):
    name = serializers.CharField(max_length=100)
    script = serializers.CharField(max_length=20_000, trim_whitespace=False)


class EnvironmentUpdateInput(_Strict):
    name = serializers.CharField(max_length=100, required=False)
    script = serializers.CharField(max_length=20_000, required=False, trim_whitespace=False)


class BuildCounts(serializers.Serializer):  # type: ignore[type-arg]
    ready = serializers.IntegerField()
    pending = serializers.IntegerField()
    building = serializers.IntegerField()
    failed = serializers.IntegerField()
    missing = serializers.IntegerField()


class EnvironmentOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    repositoryId = serializers.IntegerField(source="repository_id")
    name = serializers.CharField()
    script = serializers.CharField()
    tasks = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    @extend_schema_field(BuildCounts)
    def get_tasks(self, environment: Environment) -> dict[str, int]:
        counts: dict[int, dict[str, int]] = self.context.get("counts", {})
        return counts.get(environment.pk, {})


class TaskBuildOutput(serializers.Serializer):  # type: ignore[type-arg]
    taskId = serializers.IntegerField(source="task.pk")
    title = serializers.CharField(source="task.title")
    state = serializers.CharField(help_text="pending, building, ready, failed; missing (never built) or stale.")
    reason = serializers.CharField()
    taskVersionId = serializers.SerializerMethodField()
    baseVersionId = serializers.SerializerMethodField()
    attempts = serializers.SerializerMethodField()
    updatedAt = serializers.DateTimeField(source="updated_at", allow_null=True)

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_taskVersionId(self, row: TaskBuildStatus) -> int | None:
        return row.build.version_id if row.build is not None else None

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_baseVersionId(self, row: TaskBuildStatus) -> int | None:
        return row.build.base_version_id if row.build is not None else None

    @extend_schema_field(serializers.IntegerField())
    def get_attempts(self, row: TaskBuildStatus) -> int:
        return row.build.attempts if row.build is not None else 0


class BuildMissingOutput(serializers.Serializer):  # type: ignore[type-arg]
    queued = serializers.ListField(child=serializers.IntegerField(), help_text="Task ids whose build was queued.")
