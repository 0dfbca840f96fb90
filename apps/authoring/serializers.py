"""Input/output shapes of the authoring API (camelCase, as the spec's JSON)."""

from __future__ import annotations

from rest_framework import serializers


class SettingsInput(serializers.Serializer):  # type: ignore[type-arg]
    authorAgent = serializers.CharField(default="terminus-2")
    authorModel = serializers.CharField()
    authorCredentialId = serializers.IntegerField(required=False, allow_null=True, default=None)
    reasoning = serializers.ChoiceField(choices=["low", "medium", "high"], default="medium")
    reviewerModel = serializers.CharField()
    reviewerCredentialId = serializers.IntegerField(required=False, allow_null=True, default=None)
    silenceSeconds = serializers.IntegerField(required=False, min_value=1)
    authorWallClockSeconds = serializers.IntegerField(required=False, min_value=60)
    reviewWallClockSeconds = serializers.IntegerField(required=False, min_value=10)


class SettingsOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    batchId = serializers.IntegerField(source="batch_id", allow_null=True)
    authorAgent = serializers.CharField(source="author_agent")
    authorModel = serializers.CharField(source="author_model")
    authorCredentialId = serializers.IntegerField(source="author_credential_id", allow_null=True)
    reasoning = serializers.CharField()
    reviewerModel = serializers.CharField(source="reviewer_model")
    reviewerCredentialId = serializers.IntegerField(source="reviewer_credential_id", allow_null=True)
    silenceSeconds = serializers.IntegerField(source="silence_seconds")
    authorWallClockSeconds = serializers.IntegerField(source="author_wall_clock_seconds")
    reviewWallClockSeconds = serializers.IntegerField(source="review_wall_clock_seconds")


class EvalInput(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")


class EvalOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")


class AttachmentInput(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=255)
    contentBase64 = serializers.CharField()


class VibeEvalInput(serializers.Serializer):  # type: ignore[type-arg]
    description = serializers.CharField()
    settings = SettingsInput()
    ref = serializers.CharField(required=False, default="HEAD")
    attachments = AttachmentInput(many=True, required=False, default=list)


class VibeEvalOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    kind = serializers.CharField()
    repositoryId = serializers.IntegerField(source="repository_id", allow_null=True)
    evalId = serializers.IntegerField(source="eval_id", allow_null=True)
    description = serializers.CharField()
    ref = serializers.CharField()
    resolvedSha = serializers.CharField(source="resolved_sha")
    taskId = serializers.IntegerField(source="task_id")
    taskState = serializers.CharField(source="task.state")
    attachments = serializers.SerializerMethodField()

    def get_attachments(self, obj: object) -> list[dict[str, object]]:
        return [{"name": a.name, "size": a.size} for a in obj.attachments.all()]  # type: ignore[attr-defined]


class ReviewOutput(serializers.Serializer):  # type: ignore[type-arg]
    model = serializers.CharField()
    verdict = serializers.CharField()
    notes = serializers.CharField()
    suggestions = serializers.ListField(child=serializers.CharField())
    costUsd = serializers.DecimalField(source="cost_usd", max_digits=12, decimal_places=6, allow_null=True)


class VerifyOutput(serializers.Serializer):  # type: ignore[type-arg]
    number = serializers.IntegerField()
    passed = serializers.BooleanField()
    report = serializers.JSONField()


class RoundOutput(serializers.Serializer):  # type: ignore[type-arg]
    number = serializers.IntegerField()
    state = serializers.CharField()
    reason = serializers.CharField()
    agent = serializers.CharField()
    model = serializers.CharField()
    feedback = serializers.CharField()
    verifyCalls = VerifyOutput(source="verifies.all", many=True)
    calls = serializers.IntegerField()
    costUsd = serializers.DecimalField(source="cost_usd", max_digits=12, decimal_places=6, allow_null=True)
    costComplete = serializers.BooleanField(source="cost_complete")
    startedAt = serializers.DateTimeField(source="started_at")
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    review = serializers.SerializerMethodField()

    def get_review(self, obj: object) -> dict[str, object] | None:
        review = getattr(obj, "review", None)
        return dict(ReviewOutput(review).data) if review is not None else None
