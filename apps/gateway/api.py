"""The model catalog over the API (GET {scope}/models)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.gateway import serializers
from apps.gateway.catalog import CatalogModel, catalog_models


def _per_million(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return round(float(value) * 1_000_000, 6) if value is not None else None


def catalog_entry(model: CatalogModel) -> dict[str, Any]:
    """A catalog model as the API shows it (also for the later evaluations/catalog route)."""
    price = model.price
    return {
        "id": model.id,
        "name": model.name,
        "provider": model.provider,
        "wireFormats": list(model.wire_formats),
        "harnesses": list(model.harnesses),
        "thinkingLevels": list(model.thinking_levels),
        "defaultThinking": model.default_thinking,
        "priced": price is not None,
        "prices": None
        if price is None
        else {
            "inputPerMTok": _per_million(price, "input_cost_per_token"),
            "outputPerMTok": _per_million(price, "output_cost_per_token"),
            "cacheReadPerMTok": _per_million(price, "cache_read_input_token_cost"),
            "cacheWritePerMTok": _per_million(price, "cache_creation_input_token_cost"),
        },
    }


class ModelListApi(APIView):
    @extend_schema(responses=serializers.CatalogModelOutput(many=True), operation_id="models_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = [catalog_entry(m) for m in catalog_models()]
        return Response(serializers.CatalogModelOutput(rows, many=True).data)
