from __future__ import annotations

from rest_framework import serializers

from apps.accounts.models import KeyScope, Role


class WorkspaceOutput(serializers.Serializer):  # type: ignore[type-arg]
    slug = serializers.CharField()
    name = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")


class ApiKeyCreateInput(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=100)
    scope = serializers.ChoiceField(choices=KeyScope.choices, default=KeyScope.WRITE)


class ApiKeyOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    scope = serializers.ChoiceField(choices=KeyScope.choices)
    createdAt = serializers.DateTimeField(source="created_at")
    lastUsedAt = serializers.DateTimeField(source="last_used_at", allow_null=True)
    revokedAt = serializers.DateTimeField(source="revoked_at", allow_null=True)


class ApiKeyIssuedOutput(ApiKeyOutput):
    key = serializers.CharField(help_text="The key itself. Shown this once; only its SHA-256 is stored.")


class MemberOutput(serializers.Serializer):  # type: ignore[type-arg]
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Role.choices)
    createdAt = serializers.DateTimeField(source="created_at")
