"""API shapes for comparisons, evaluations and trials (camelCase; shape and limits only, rules live in services)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.gateway.catalog import THINKING_LEVELS
from apps.runs.models import Comparison, Evaluation, Trial
from selfbench.harbor_adapter import HARNESSES

MAX_MODELS = 12
MAX_HARNESSES = 4
MAX_ENVIRONMENTS = 4
MAX_CONFIGURATIONS = 12


class _Strict(serializers.Serializer):  # type: ignore[type-arg]
    """Refuses keys it does not know, so a misspelt field is a listed problem rather than silently ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                errors = {k: ["Unknown field."] for k in unknown}
                try:
                    super().to_internal_value(data)
                except serializers.ValidationError as exc:
                    detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
                    raise serializers.ValidationError({**detail, **errors}) from exc
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class _List(serializers.ListField):
    """A list whose length limit is reported beside its items' problems (DRF would report only the items')."""

    def to_internal_value(self, data: Any) -> Any:
        too_long = isinstance(data, list) and self.max_length is not None and len(data) > self.max_length
        message = f"Ensure this field has no more than {self.max_length} elements."
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if too_long and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, "limit": [message]}) from exc
            raise
        return value


class SubagentInput(_Strict):
    catalogId = serializers.CharField(max_length=100)
    credentialId = serializers.CharField(max_length=64)


class ModelChoiceInput(_Strict):
    catalogId = serializers.CharField(max_length=100)
    credentialId = serializers.CharField(max_length=64, help_text="A saved credential's id, or `managed-model`.")
    harnesses = serializers.ListField(
        child=serializers.ChoiceField(choices=HARNESSES), min_length=1, max_length=len(HARNESSES)
    )
    thinking = serializers.ChoiceField(choices=THINKING_LEVELS, required=False, allow_null=True, default=None)
    harness = serializers.CharField(required=False, allow_null=True, default=None, max_length=64)
    subagent = SubagentInput(required=False, allow_null=True, default=None)

    def validate_harnesses(self, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Each harness may appear once.")
        return value


class TaskRefInput(_Strict):
    runId = serializers.IntegerField(allow_null=True, help_text="The batch the task came from.")
    taskId = serializers.IntegerField()


class ConditionInput(_Strict):
    """The older form of a configuration: a saved harness and/or environment, or the changes written out."""

    saved = serializers.CharField(required=False, allow_null=True, default=None, max_length=64)
    environment = serializers.CharField(required=False, allow_null=True, default=None, max_length=64)
    subagentCredentialId = serializers.CharField(required=False, allow_null=True, default=None, max_length=64)
    agent = serializers.ChoiceField(choices=HARNESSES, required=False, allow_null=True, default=None)
    name = serializers.CharField(required=False, allow_null=True, default=None, max_length=200)
    options = serializers.DictField(required=False, default=dict)
    skills = serializers.ListField(child=serializers.CharField(max_length=300), required=False, default=list)
    instructions = serializers.CharField(required=False, allow_blank=True, default="")
    subagent = SubagentInput(required=False, allow_null=True, default=None)


class ComparisonStartInput(_Strict):
    id = serializers.UUIDField(help_text="A UUID you generate; retries with it never start twice.")
    models = _List(child=ModelChoiceInput(), min_length=1, max_length=MAX_MODELS)
    sandbox = serializers.CharField(max_length=64)
    sandboxCredentialId = serializers.CharField(required=False, allow_null=True, default=None, max_length=64)
    tasks = serializers.ListField(child=TaskRefInput(), required=False, allow_null=True, default=None, min_length=1)
    skipCompleted = serializers.BooleanField(required=False, default=False)
    judgeCredentialId = serializers.CharField(required=False, allow_null=True, default=None, max_length=64)
    harnesses = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, default=list, max_length=MAX_HARNESSES
    )
    environments = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, default=list, max_length=MAX_ENVIRONMENTS
    )
    baseline = serializers.BooleanField(required=False, default=True)
    conditions = serializers.ListField(
        child=ConditionInput(), required=False, allow_null=True, default=None, max_length=MAX_CONFIGURATIONS
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        problems: dict[str, list[str]] = {}
        for name in ("harnesses", "environments"):
            if len(set(attrs[name])) != len(attrs[name]):
                problems[name] = ["Each id may appear once."]
        if attrs.get("tasks"):
            ids = [t["taskId"] for t in attrs["tasks"]]
            if len(set(ids)) != len(ids):
                problems["tasks"] = ["Each task may appear once."]
        if problems:
            raise serializers.ValidationError(problems)
        attrs["id"] = str(attrs["id"])
        return attrs


# --- output ---------------------------------------------------------------------------------------------------------


class TrialOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.UUIDField(source="uuid")
    taskId = serializers.IntegerField(source="task_id")
    runId = serializers.IntegerField(source="task.batch_id", allow_null=True)
    taskVersion = serializers.CharField(source="task_version.content_hash")
    agent = serializers.CharField()
    harnessId = serializers.CharField(source="harness_id")
    environmentId = serializers.CharField(source="environment_id")
    configuration = serializers.CharField(source="configuration_key")
    configurationLabel = serializers.CharField(source="configuration_label")
    sandbox = serializers.CharField()
    attempt = serializers.IntegerField()
    status = serializers.CharField()
    reward = serializers.FloatField(allow_null=True)
    scored = serializers.BooleanField(source="is_scored")
    failureCause = serializers.CharField(source="failure_cause")
    exceptionType = serializers.CharField(source="exception_type")
    exceptionMessage = serializers.CharField(source="exception_message")
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    timings = serializers.DictField()
    tokenUsage = serializers.SerializerMethodField()
    costUsd = serializers.DecimalField(source="cost_usd", max_digits=14, decimal_places=8, allow_null=True)
    billedCostUsd = serializers.DecimalField(source="billed_cost_usd", max_digits=14, decimal_places=8, allow_null=True)
    costComplete = serializers.BooleanField(source="cost_complete")
    modelVerified = serializers.BooleanField(source="model_verified")
    subagentCalls = serializers.IntegerField(source="subagent_calls")
    calls = serializers.IntegerField()
    networkEnforced = serializers.BooleanField(source="network_enforced", allow_null=True)
    networkPolicy = serializers.CharField(source="network_policy")
    transcript = serializers.CharField()
    artifacts = serializers.SerializerMethodField()

    def get_tokenUsage(self, obj: Trial) -> dict[str, int | None]:
        return {
            "input": obj.input_tokens,
            "cachedInput": obj.cached_input_tokens,
            "cacheWrite": obj.cache_write_tokens,
            "output": obj.output_tokens,
            "reasoning": obj.reasoning_tokens,
        }

    def get_artifacts(self, obj: Trial) -> list[dict[str, Any]]:
        return [{"name": f"{obj.uuid}/{a.name}", "size": a.size, "truncated": a.truncated} for a in obj.artifacts.all()]


class EvaluationOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    comparisonId = serializers.UUIDField(source="comparison.client_id")
    catalogId = serializers.CharField(source="catalog_id")
    credentialId = serializers.CharField(source="credential_id_public")
    thinking = serializers.CharField()
    harnesses = serializers.ListField(child=serializers.CharField())
    harness = serializers.CharField(source="row_harness_id", allow_blank=True)
    subagent = serializers.JSONField(allow_null=True)
    status = serializers.CharField()
    counts = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")

    def get_counts(self, obj: Evaluation) -> dict[str, int]:
        counts: dict[str, int] = self.context.get("counts", {}).get(obj.pk, {})
        return counts


class EvaluationDetailOutput(EvaluationOutput):
    trials = TrialOutput(many=True)


class ComparisonOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.UUIDField(source="client_id")
    status = serializers.CharField()
    submissionError = serializers.CharField(source="submission_error", allow_null=True)
    sandbox = serializers.CharField()
    baseline = serializers.BooleanField()
    skipCompleted = serializers.BooleanField(source="skip_completed")
    evaluationIds = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    def get_evaluationIds(self, obj: Comparison) -> list[int]:
        return [e.pk for e in obj.evaluations.all()]

    def to_representation(self, instance: Any) -> Any:
        data = super().to_representation(instance)
        data["submissionError"] = instance.submission_error or None
        return data
