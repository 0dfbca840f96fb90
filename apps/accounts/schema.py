"""OpenAPI description of the API key authentication (loaded by AccountsConfig.ready)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "apps.accounts.auth.ApiKeyAuthentication"
    name = ["ApiKeyBearer", "ApiKeyHeader"]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, Any]]:
        return [
            {"type": "http", "scheme": "bearer", "description": "An `sbk_…` API key."},
            {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "An `sbk_…` API key."},
        ]
