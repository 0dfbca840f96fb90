"""API shapes for repositories, batches and candidates (camelCase, shape checks only)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.repositories.models import BatchKind, BatchStatus, CandidateState, RepositoryKind


class RepositoryCreateInput(serializers.Serializer):  # type: ignore[type-arg]
    kind = serializers.ChoiceField(choices=RepositoryKind.choices, default=RepositoryKind.GITHUB)
    fullName = serializers.CharField(required=False, default="", allow_blank=True, max_length=200, source="full_name")
    credentialId = serializers.IntegerField(required=False, allow_null=True, default=None, source="credential_id")
    path = serializers.CharField(required=False, default="", allow_blank=True, max_length=1000, source="location")
    defaultBranch = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=255, source="default_branch"
    )
    agentMinutes = serializers.IntegerField(required=False, default=30, source="agent_minutes")


class RepositoryUpdateInput(serializers.Serializer):  # type: ignore[type-arg]
    agentMinutes = serializers.IntegerField(required=False, source="agent_minutes")
    defaultBranch = serializers.CharField(required=False, max_length=255, source="default_branch")
    credentialId = serializers.IntegerField(required=False, source="credential_id")


class RepositoryOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=RepositoryKind.choices)
    name = serializers.CharField()
    fullName = serializers.CharField(source="full_name")
    path = serializers.SerializerMethodField()
    defaultBranch = serializers.CharField(source="default_branch")
    credentialId = serializers.IntegerField(source="credential_id", allow_null=True)
    private = serializers.BooleanField(source="is_private")
    agentMinutes = serializers.IntegerField(source="agent_minutes")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    def get_path(self, obj: Any) -> str:
        return str(obj.location) if obj.kind == RepositoryKind.LOCAL else ""


class CandidateCounts(serializers.Serializer):  # type: ignore[type-arg]
    easy = serializers.IntegerField(min_value=0, max_value=300, default=0)
    medium = serializers.IntegerField(min_value=0, max_value=300, default=0)
    hard = serializers.IntegerField(min_value=0, max_value=300, default=0)


class BatchCreateInput(serializers.Serializer):  # type: ignore[type-arg]
    candidateCounts = CandidateCounts()


class AddPrsInput(serializers.Serializer):  # type: ignore[type-arg]
    prs = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=100)


class BatchOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    repositoryId = serializers.IntegerField(source="repository_id")
    kind = serializers.ChoiceField(choices=BatchKind.choices)
    status = serializers.ChoiceField(choices=BatchStatus.choices)
    statusMessage = serializers.CharField(source="status_message")
    candidateCounts = serializers.DictField(source="requested", child=serializers.IntegerField())
    prs = serializers.ListField(source="requested_prs", child=serializers.IntegerField())
    headSha = serializers.CharField(source="head_sha")
    listedPrs = serializers.IntegerField(source="listed_count")
    poolSize = serializers.SerializerMethodField()
    unavailablePrs = serializers.DictField(source="unavailable", child=serializers.CharField())
    stages = serializers.SerializerMethodField()
    apiCalls = serializers.IntegerField(source="api_calls")
    resumeAt = serializers.DateTimeField(source="resume_at", allow_null=True)
    error = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    cancelledAt = serializers.DateTimeField(source="cancelled_at", allow_null=True)

    def get_poolSize(self, obj: Any) -> int:
        return len(obj.pool)

    def get_stages(self, obj: Any) -> dict[str, int]:
        """Candidates per stage (every stage present, zeros included)."""
        counts: dict[str, int] = getattr(obj, "stage_counts", {})
        return {state: counts.get(state, 0) for state in CandidateState.values}


class CandidateOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    batchId = serializers.IntegerField(source="batch_id")
    pr = serializers.IntegerField(source="pull_request.number")
    title = serializers.CharField(source="pull_request.title")
    body = serializers.CharField(source="pull_request.body")
    author = serializers.CharField(source="pull_request.author")
    url = serializers.CharField(source="pull_request.url")
    mergedAt = serializers.DateTimeField(source="pull_request.merged_at")
    baseSha = serializers.CharField(source="pull_request.base_sha")
    mergeSha = serializers.CharField(source="pull_request.merge_sha")
    implementationLines = serializers.IntegerField(source="pull_request.implementation_lines")
    implementationPaths = serializers.ListField(
        source="pull_request.implementation_paths", child=serializers.CharField()
    )
    testPaths = serializers.ListField(source="pull_request.test_paths", child=serializers.CharField())
    tier = serializers.CharField()
    state = serializers.ChoiceField(choices=CandidateState.choices)
    reason = serializers.CharField()
    updatedAt = serializers.DateTimeField(source="updated_at")
