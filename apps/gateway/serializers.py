from __future__ import annotations

from rest_framework import serializers


class PricesOutput(serializers.Serializer):  # type: ignore[type-arg]
    """List prices in USD per million tokens (null where the price map has none)."""

    inputPerMTok = serializers.FloatField(allow_null=True)
    outputPerMTok = serializers.FloatField(allow_null=True)
    cacheReadPerMTok = serializers.FloatField(allow_null=True)
    cacheWritePerMTok = serializers.FloatField(allow_null=True)


class CatalogModelOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.CharField()
    name = serializers.CharField()
    provider = serializers.CharField()
    wireFormats = serializers.ListField(child=serializers.CharField())
    harnesses = serializers.ListField(child=serializers.CharField())
    thinkingLevels = serializers.ListField(child=serializers.CharField())
    defaultThinking = serializers.CharField()
    priced = serializers.BooleanField(help_text="False when the price map has no list price: calls cost NULL.")
    prices = PricesOutput(allow_null=True)
