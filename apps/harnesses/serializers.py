"""API shapes for saved harnesses (camelCase; shape only: the rules live in services)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.harnesses import services
from apps.harnesses.models import Agent, Harness


class _Strict(serializers.Serializer):  # type: ignore[type-arg]
    """Refuses keys it does not know, so a misspelt field is reported rather than silently ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({k: ["Unknown field."] for k in unknown})
        return super().to_internal_value(data)


class SubagentInput(_Strict):
    catalogId = serializers.CharField(max_length=100)
    credentialId = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    prompt = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)


class HarnessCreateInput(_Strict):
    name = serializers.CharField(max_length=100)
    agent = serializers.ChoiceField(choices=Agent.choices)
    skills = serializers.ListField(child=serializers.CharField(max_length=500), required=False, max_length=20)
    instructions = serializers.CharField(required=False, allow_blank=True, max_length=20_000, trim_whitespace=False)
    options = serializers.DictField(required=False)
    subagent = SubagentInput(required=False, allow_null=True)

    def to_service(self) -> dict[str, Any]:
        data = dict(self.validated_data)
        if data.get("subagent") is not None:
            data["subagent"] = dict(data["subagent"])
        return data


class HarnessUpdateInput(HarnessCreateInput):
    name = serializers.CharField(max_length=100, required=False)
    agent = serializers.ChoiceField(choices=Agent.choices, required=False)


class SubagentOutput(serializers.Serializer):  # type: ignore[type-arg]
    catalogId = serializers.CharField()
    credentialId = serializers.CharField(allow_null=True, help_text="null: the first of the workspace's that can.")
    prompt = serializers.CharField()


class HarnessOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    name = serializers.CharField()
    agent = serializers.CharField()
    skills = serializers.ListField(child=serializers.CharField())
    instructions = serializers.CharField()
    instructionsInSystemPrompt = serializers.BooleanField(source="instructions_in_system_prompt")
    options = serializers.DictField()
    subagent = serializers.SerializerMethodField()
    fingerprint = serializers.CharField(help_text="The configuration identity: same changes, same fingerprint.")
    sameConfigurationAs = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    @extend_schema_field(SubagentOutput(allow_null=True))
    def get_subagent(self, harness: Harness) -> dict[str, Any] | None:
        return services.subagent_choice(harness)

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_sameConfigurationAs(self, harness: Harness) -> list[int]:
        same: dict[int, list[int]] = self.context.get("same", {})
        return same.get(harness.pk, [])
