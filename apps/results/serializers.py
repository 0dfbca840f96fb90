"""Input and output shapes of the results, releases and sharing API (camelCase)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.results.models import RegistryGrant, Release, TaskExport
from apps.results.queries import ConfigurationResult

EXPORT_WARNING = (
    "Exports include tasks, hidden tests and reference solutions, unencrypted. Keep the archive private: "
    "anyone holding it can see the answers."
)

# --- input ----------------------------------------------------------------------------------------------------------


ID_MAX = 2**63 - 1


def _id(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=ID_MAX, **kwargs)


class ResultsInput(serializers.Serializer):  # type: ignore[type-arg]
    repository = _id()
    configuration = serializers.CharField(required=False, max_length=400)
    model = serializers.CharField(required=False, max_length=100)
    agent = serializers.CharField(required=False, max_length=32)
    harness = serializers.CharField(required=False, max_length=64, help_text='A saved harness id, or "none".')
    environment = serializers.CharField(required=False, max_length=64, help_text='An environment id, or "none".')


class PairedInput(serializers.Serializer):  # type: ignore[type-arg]
    repository = _id()
    a = serializers.CharField(max_length=400)
    b = serializers.CharField(max_length=400)


class ReliabilityInput(serializers.Serializer):  # type: ignore[type-arg]
    repository = _id()
    configuration = serializers.CharField(max_length=400)
    flakyOnly = serializers.BooleanField(required=False, default=False)


class PublishInput(serializers.Serializer):  # type: ignore[type-arg]
    settings = serializers.ListField(child=serializers.CharField(max_length=400), allow_empty=False, max_length=100)
    head = serializers.CharField(allow_blank=True, max_length=64)
    fingerprint = serializers.CharField(max_length=64)
    publishTasks = serializers.BooleanField(required=False, default=False)
    publishResultsByTask = serializers.BooleanField(required=False, default=False)


class WithdrawInput(serializers.Serializer):  # type: ignore[type-arg]
    reason = serializers.CharField(required=False, default="", allow_blank=True, max_length=2000)


class ExportInput(serializers.Serializer):  # type: ignore[type-arg]
    repository = _id(required=False)
    tasks = serializers.ListField(child=_id(), required=False, default=list, max_length=5000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("tasks") and attrs.get("repository") is None:
            raise serializers.ValidationError("name a repository or tasks")
        return attrs


class GrantInput(serializers.Serializer):  # type: ignore[type-arg]
    tasks = serializers.ListField(child=_id(), allow_empty=False, max_length=500)
    ttlSeconds = serializers.IntegerField(required=False, min_value=60, max_value=366 * 24 * 3600)
    note = serializers.CharField(required=False, default="", allow_blank=True, max_length=200)


# --- output ---------------------------------------------------------------------------------------------------------


def _money(value: Any) -> str | None:
    return None if value is None else f"{value:.6f}"


def configuration_output(c: ConfigurationResult) -> dict[str, Any]:
    interval = c.interval
    return {
        "id": c.id,
        "model": c.model,
        "agent": c.agent,
        "thinking": c.thinking,
        "configuration": c.configuration_key,
        "label": c.label,
        "baseline": c.is_baseline,
        "harnessId": c.harness_id or None,
        "environmentId": c.environment_id or None,
        "tasks": c.tasks,
        "passed": c.passed,
        "accuracy": c.accuracy,
        "accuracyInterval": None if interval is None else {"low": interval[0], "high": interval[1]},
        "costComplete": c.cost_complete,
        "unpricedTasks": c.unpriced_tasks,
        "costPerTaskUsd": _money(c.cost_per_task_usd),
        "totalCostUsd": _money(c.total_cost_usd),
        "knownCostUsd": _money(c.known_cost_usd),
        "tokens": {
            "input": c.tokens.input,
            "cachedInput": c.tokens.cached_input,
            "cacheWrite": c.tokens.cache_write,
            "output": c.tokens.output,
            "reasoning": c.tokens.reasoning,
            "total": c.tokens.total,
        },
        "agentSeconds": c.agent_seconds,
        "secondsPerTask": c.seconds_per_task,
        "onFrontier": c.on_frontier,
    }


class ReleaseOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    repositoryId = serializers.IntegerField(source="repository_id")
    fullName = serializers.CharField(source="full_name")
    settings = serializers.ListField(child=serializers.CharField())
    declined = serializers.ListField(child=serializers.CharField())
    taskIds = serializers.ListField(source="task_ids", child=serializers.IntegerField())
    head = serializers.CharField()
    fingerprint = serializers.CharField()
    publishTasks = serializers.BooleanField(source="publish_tasks")
    publishResultsByTask = serializers.BooleanField(source="publish_results_by_task")
    withdrawn = serializers.SerializerMethodField()
    document = serializers.JSONField()
    createdAt = serializers.DateTimeField(source="created_at")

    def get_withdrawn(self, obj: Release) -> bool:
        return hasattr(obj, "withdrawal")


class ExportOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.UUIDField(source="uuid")
    taskIds = serializers.ListField(source="task_ids", child=serializers.IntegerField())
    sha256 = serializers.CharField()
    size = serializers.IntegerField()
    warning = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")

    def get_warning(self, obj: TaskExport) -> str:
        return EXPORT_WARNING


class GrantOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.UUIDField(source="uuid")
    images = serializers.SerializerMethodField()
    expiresAt = serializers.DateTimeField(source="expires_at")
    cancelledAt = serializers.DateTimeField(source="cancelled_at", allow_null=True)
    status = serializers.CharField(help_text="building, active (ready and usable), failed, expired or cancelled.")
    state = serializers.CharField(help_text="The images: building, ready (every digest set) or failed.")
    failureReason = serializers.CharField(source="failure_reason")
    readyAt = serializers.DateTimeField(source="ready_at", allow_null=True)
    note = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")

    def get_images(self, obj: RegistryGrant) -> list[dict[str, Any]]:
        return [
            {"taskId": i["taskId"], "repository": i["repository"], "digest": i["digest"] or None} for i in obj.images
        ]
