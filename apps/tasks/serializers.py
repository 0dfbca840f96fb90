"""Task API shapes (camelCase)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.tasks.models import GateStatus, TaskState, Tier


class TaskListInput(serializers.Serializer):  # type: ignore[type-arg]
    state = serializers.ChoiceField(choices=TaskState.choices, required=False)
    tier = serializers.ChoiceField(choices=Tier.choices, required=False)
    repository = serializers.IntegerField(required=False, min_value=1)
    batch = serializers.IntegerField(required=False, min_value=1)


class DecisionInput(serializers.Serializer):  # type: ignore[type-arg]
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)


class RejectInput(serializers.Serializer):  # type: ignore[type-arg]
    note = serializers.CharField(max_length=5000)


class CancelInput(serializers.Serializer):  # type: ignore[type-arg]
    reason = serializers.CharField(required=False, default="cancelled by a person", max_length=2000)


class ExportInput(serializers.Serializer):  # type: ignore[type-arg]
    repository = serializers.IntegerField(required=False, min_value=1)
    tasks = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False)


class TaskOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    title = serializers.CharField()
    state = serializers.ChoiceField(choices=TaskState.choices)
    reason = serializers.CharField()
    tierRequested = serializers.CharField(source="tier_requested")
    tier = serializers.CharField()
    repositoryId = serializers.IntegerField(source="repository_id", allow_null=True)
    batchId = serializers.IntegerField(source="batch_id", allow_null=True)
    candidateId = serializers.IntegerField(source="candidate_id", allow_null=True)
    sourceRepository = serializers.CharField(source="source_repository")
    pullRequest = serializers.IntegerField(source="pr_number", allow_null=True)
    baseSha = serializers.CharField(source="base_sha")
    headSha = serializers.CharField(source="head_sha")
    version = serializers.SerializerMethodField()
    flakeRate = serializers.FloatField(source="flake_rate", allow_null=True)
    decisionNote = serializers.CharField(source="decision_note")
    decidedAt = serializers.DateTimeField(source="decided_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    def get_version(self, obj: Any) -> str | None:
        return obj.version.content_hash if obj.version_id else None


class GateRunOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    gate = serializers.CharField()
    attempt = serializers.IntegerField()
    status = serializers.ChoiceField(choices=GateStatus.choices)
    reason = serializers.CharField()
    version = serializers.SerializerMethodField()
    trialName = serializers.CharField(source="trial_name")
    reward = serializers.FloatField(allow_null=True)
    runs = serializers.IntegerField()
    flakeRate = serializers.FloatField(source="flake_rate", allow_null=True)
    durationSec = serializers.FloatField(source="duration_sec", allow_null=True)
    details = serializers.JSONField()
    log = serializers.CharField()
    startedAt = serializers.DateTimeField(source="started_at")
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)

    def get_version(self, obj: Any) -> str | None:
        return obj.version.content_hash if obj.version_id else None


class TaskFileOutput(serializers.Serializer):  # type: ignore[type-arg]
    path = serializers.CharField()
    size = serializers.IntegerField()
    content = serializers.CharField(allow_null=True)


class TaskDetailOutput(TaskOutput):
    body = serializers.CharField()
    failToPass = serializers.SerializerMethodField()
    passToPass = serializers.SerializerMethodField()
    definition = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()
    gateRuns = GateRunOutput(source="gate_runs", many=True)

    def get_failToPass(self, obj: Any) -> list[str]:
        return list(obj.version.fail_to_pass) if obj.version_id else []

    def get_passToPass(self, obj: Any) -> list[str]:
        return list(obj.version.pass_to_pass) if obj.version_id else []

    def get_definition(self, obj: Any) -> dict[str, Any]:
        return dict(obj.version.definition) if obj.version_id else {}

    def get_files(self, obj: Any) -> list[dict[str, Any]]:
        from apps.tasks import services

        return services.version_files(obj.version) if obj.version_id and obj.version.path.is_dir() else []
