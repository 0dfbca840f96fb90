"""The DRF exception handler: DomainError → its status with a message, in one place."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from selfbench.errors import DomainError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        body: dict[str, Any] = {"error": exc.code, "detail": exc.message}
        if exc.errors:
            body["errors"] = exc.errors
        return Response(body, status=exc.status)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" not in response.data:
        # Validation errors: keep the field map and add one readable line that lists every problem.
        response.data = {"error": "invalid", "detail": summarise_errors(response.data), "errors": response.data}
    elif response is not None and isinstance(response.data, list):
        response.data = {
            "error": "invalid",
            "detail": "; ".join(str(x) for x in response.data),
            "errors": response.data,
        }
    return response


def summarise_errors(errors: Any, prefix: str = "") -> str:
    parts: list[str] = []
    if isinstance(errors, dict):
        for key, value in errors.items():
            parts.append(summarise_errors(value, f"{prefix}{key}." if key != "non_field_errors" else prefix))
    elif isinstance(errors, list):
        for i, value in enumerate(errors):
            if isinstance(value, (dict, list)):
                parts.append(summarise_errors(value, f"{prefix}{i}."))
            else:
                parts.append(f"{prefix.rstrip('.')}: {value}" if prefix else str(value))
    else:
        parts.append(f"{prefix.rstrip('.')}: {errors}" if prefix else str(errors))
    return "; ".join(p for p in parts if p)
