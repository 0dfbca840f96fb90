from __future__ import annotations

from rest_framework import serializers

from apps.accounts.models import AuthKind, CredentialKind, KeyScope, Role


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


class CredentialOutput(serializers.Serializer):  # type: ignore[type-arg]
    """A credential as the API shows it: never the secret, only its last characters."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=CredentialKind.choices)
    authKind = serializers.ChoiceField(source="auth_kind", choices=AuthKind.choices)
    baseUrl = serializers.CharField(source="base_url", allow_blank=True)
    secretHint = serializers.CharField(source="secret_hint")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class CredentialCreateInput(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=CredentialKind.choices)
    authKind = serializers.ChoiceField(choices=AuthKind.choices, default=AuthKind.API_KEY, source="auth_kind")
    secret = serializers.CharField(trim_whitespace=True, write_only=True)
    baseUrl = serializers.URLField(required=False, default="", allow_blank=True, source="base_url")


class CredentialUpdateInput(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(max_length=100, required=False)
    secret = serializers.CharField(required=False, write_only=True)
    baseUrl = serializers.URLField(required=False, allow_blank=True, source="base_url")
