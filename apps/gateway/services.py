"""Gateway writes and the trial roll-up: mint and revoke trial keys, record calls, sum a trial's usage.

Later apps know a trial here only as an opaque `subject` string ("trial:<uuid>", "authoring:<id>").
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Literal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from apps.accounts.models import MODEL_CREDENTIAL_KINDS, AuthKind, Credential, Workspace
from apps.gateway import keyring
from apps.gateway.catalog import catalog_model, price_map_revision, resolve_requested
from apps.gateway.models import CallStatus, CostSource, GatewayCall, GatewayKey, GatewayKeyRoute, Role
from apps.gateway.pricing import Usage, call_cost
from selfbench.errors import InvalidInput

MANAGED: Literal["managed-model"] = "managed-model"


@dataclass(frozen=True)
class ModelRoute:
    """A model a trial key serves: catalog id, who pays (a workspace Credential or `managed-model`), and role."""

    model_id: str
    credential: Credential | Literal["managed-model"]
    role: str = Role.MAIN


@dataclass(frozen=True)
class TrialUsage:
    """A subject's roll-up over its ledger rows. `cost_usd` is None (incomplete) if any call is unpriced."""

    cost_usd: Decimal | None
    billed_cost_usd: Decimal | None
    cost_complete: bool
    input_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    output_tokens: int
    reasoning_tokens: int
    model_verified: bool
    subagent_calls: int
    calls: int


@dataclass
class CallRecord:
    """What the serving path saw of one call; turned into a ledger row (and priced) off the hot path."""

    workspace_id: int
    key_id: int | None
    subject: str
    role: str
    catalog_model: str
    requested_model: str
    wire_format: str
    stream: bool
    credential_id: int | None
    billable: bool
    started_at: datetime
    status: str = CallStatus.OK
    http_status: int | None = None
    error: str = ""
    served_model: str = ""
    served_provider: str = ""
    generation_id: str = ""
    usage: Usage | None = None
    latency_ms: float | None = None
    ttfb_ms: float | None = None
    overhead_ms: float | None = None


def managed_secret(provider: str) -> str:
    """The deployment's own key for `provider` ("" when that managed model is not available)."""
    return {
        "openai": settings.MANAGED_OPENAI_API_KEY,
        "anthropic": settings.MANAGED_ANTHROPIC_API_KEY,
        "openrouter": settings.MANAGED_OPENROUTER_API_KEY,
    }.get(provider, "")


def base_urls() -> dict[str, str]:
    """Base URLs to hand agents: OpenAI clients append /chat/completions or /responses to a base ending in /v1;
    claude-code appends /v1/messages to ANTHROPIC_BASE_URL."""
    root = settings.GATEWAY_PUBLIC_URL.rstrip("/")
    return {"openai": f"{root}/openai/v1", "anthropic": f"{root}/anthropic"}


def _check_routes(*, workspace: Workspace, models: list[ModelRoute]) -> None:
    problems: list[str] = []
    mains = [m for m in models if m.role == Role.MAIN]
    subs = [m for m in models if m.role == Role.SUBAGENT]
    if len(mains) != 1 or len(subs) > 1 or len(models) != len(mains) + len(subs):
        problems.append("a trial key serves one main model and at most one subagent model")
    if len({m.model_id for m in models}) != len(models):
        problems.append("the main and subagent models must be two different catalog models")
    for route in models:
        model = catalog_model(route.model_id)
        if model is None:
            problems.append(f"{route.model_id!r} is not in the model catalog")
            continue
        if route.credential == MANAGED:
            if not managed_secret(model.provider):
                problems.append(f"managed-model is not available for {model.provider} on this deployment")
            continue
        credential = route.credential
        if credential.workspace_id != workspace.pk:
            problems.append(f"credential {credential.pk} belongs to another workspace")
        elif credential.kind not in MODEL_CREDENTIAL_KINDS:
            problems.append(f"credential {credential.name!r} is a {credential.kind} credential, not a model provider")
        elif not model.served_by(credential.kind):
            problems.append(f"a {credential.kind} credential cannot serve {model.id}")
    if problems:
        raise InvalidInput("; ".join(problems), errors=problems)


@transaction.atomic
def trial_key_mint(
    *, workspace: Workspace, subject: str, models: list[ModelRoute], ttl_seconds: int
) -> tuple[GatewayKey, str]:
    """Mint a key that serves exactly `models` for `subject` until `ttl_seconds` from now (the trial timeout plus
    a margin). Returns the key row and the raw key, which exists only in the caller's hands from here on."""
    if not subject.strip():
        raise InvalidInput("a trial key needs a subject")
    if ttl_seconds <= 0:
        raise InvalidInput("ttl_seconds must be positive")
    _check_routes(workspace=workspace, models=models)
    raw = keyring.KEY_PREFIX + secrets.token_urlsafe(32)
    key = GatewayKey.objects.create(
        workspace=workspace,
        subject=subject,
        prefix=raw[:10],
        key_hash=keyring.hash_key(raw),
        expires_at=timezone.now() + timedelta(seconds=ttl_seconds),
    )
    GatewayKeyRoute.objects.bulk_create(
        GatewayKeyRoute(
            key=key,
            model_id=route.model_id,
            role=route.role,
            credential=None if route.credential == MANAGED else route.credential,
            managed=route.credential == MANAGED,
        )
        for route in models
    )
    return key, raw


def trial_key_revoke(*, subject: str) -> int:
    """Revoke every live key of `subject` (the trial ended). Returns how many were revoked."""
    keys = GatewayKey.objects.filter(subject=subject, revoked_at__isnull=True)
    hashes = list(keys.values_list("key_hash", flat=True))
    count = keys.update(revoked_at=timezone.now())
    keyring.forget(hashes)
    return count


_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


def served_model_matches(*, catalog_id: str, served_model: str) -> bool | None:
    """Whether the response's model is the catalog model (date-stamped ids like gpt-5-2025-08-07 match gpt-5).
    None when nothing reported a model (the call was not served)."""
    if not served_model:
        return None
    model = resolve_requested(served_model) or resolve_requested(_DATE_SUFFIX.sub("", served_model))
    return model is not None and model.id == catalog_id


def _ledger_row(record: CallRecord) -> GatewayCall:
    usage = record.usage
    model = catalog_model(record.catalog_model)
    if record.status == CallStatus.OK or (record.status == CallStatus.UPSTREAM_ERROR and usage is not None):
        cost, source = call_cost(usage, model.price if model else None)
    elif record.status in (CallStatus.REFUSED, CallStatus.UPSTREAM_UNREACHABLE) or (
        record.status == CallStatus.UPSTREAM_ERROR and (record.http_status or 0) >= 400
    ):
        # Nothing reached a model, or the provider answered an error before generating: there is nothing to pay.
        cost, source = Decimal(0), CostSource.NONE
    else:
        # A disconnect or timeout mid-generation: the provider may bill for work we never saw the usage of.
        cost, source = None, CostSource.UNPRICED
    complete = usage is not None and record.status == CallStatus.OK
    return GatewayCall(
        workspace_id=record.workspace_id,
        key_id=record.key_id,
        subject=record.subject,
        role=record.role,
        catalog_model=record.catalog_model,
        requested_model=record.requested_model[:200],
        served_model=record.served_model[:200],
        served_provider=record.served_provider[:100],
        model_verified=served_model_matches(catalog_id=record.catalog_model, served_model=record.served_model),
        wire_format=record.wire_format,
        stream=record.stream,
        status=record.status,
        http_status=record.http_status,
        error=record.error[:500],
        usage_complete=complete,
        input_tokens=usage.input_tokens if usage else None,
        cached_input_tokens=usage.cached_input_tokens if usage else None,
        cache_write_tokens=usage.cache_write_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        reasoning_tokens=usage.reasoning_tokens if usage else None,
        cost_usd=cost,
        cost_source=source,
        price_map_revision=price_map_revision() if source == CostSource.LIST else "",
        credential_id=record.credential_id,
        managed=record.credential_id is None,
        billable=record.billable,
        generation_id=record.generation_id[:200],
        latency_ms=record.latency_ms,
        ttfb_ms=record.ttfb_ms,
        overhead_ms=record.overhead_ms,
        started_at=record.started_at,
    )


def calls_record(*, calls: list[CallRecord]) -> list[GatewayCall]:
    """Write one priced ledger row per call (the gateway's writer thread batches them)."""
    return GatewayCall.objects.bulk_create([_ledger_row(c) for c in calls])


def trial_usage(*, subject: str) -> TrialUsage:
    """Roll up `subject`'s calls: tokens summed; cost None if any call is unpriced; billed cost only when every
    credential used is an API key; model verified only when every served call was served by its own model."""
    rows = GatewayCall.objects.filter(subject=subject)
    agg = rows.aggregate(
        calls=Count("id"),
        unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
        unbillable=Count("id", filter=Q(billable=False)),
        unverified=Count("id", filter=Q(model_verified=False)),
        verified=Count("id", filter=Q(model_verified=True)),
        subagent_calls=Count("id", filter=Q(role=Role.SUBAGENT) & ~Q(status=CallStatus.REFUSED)),
        cost=Sum("cost_usd"),
        input_tokens=Sum("input_tokens"),
        cached_input_tokens=Sum("cached_input_tokens"),
        cache_write_tokens=Sum("cache_write_tokens"),
        output_tokens=Sum("output_tokens"),
        reasoning_tokens=Sum("reasoning_tokens"),
    )
    sign_in_routes = GatewayKeyRoute.objects.filter(key__subject=subject, credential__auth_kind=AuthKind.SIGN_IN)
    complete = agg["unpriced"] == 0
    cost = (agg["cost"] or Decimal(0)) if complete else None
    billed = cost if cost is not None and agg["unbillable"] == 0 and not sign_in_routes.exists() else None
    return TrialUsage(
        cost_usd=cost,
        billed_cost_usd=billed,
        cost_complete=complete,
        input_tokens=agg["input_tokens"] or 0,
        cached_input_tokens=agg["cached_input_tokens"] or 0,
        cache_write_tokens=agg["cache_write_tokens"] or 0,
        output_tokens=agg["output_tokens"] or 0,
        reasoning_tokens=agg["reasoning_tokens"] or 0,
        model_verified=agg["unverified"] == 0 and agg["verified"] > 0,
        subagent_calls=agg["subagent_calls"],
        calls=agg["calls"],
    )
