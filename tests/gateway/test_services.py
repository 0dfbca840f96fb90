"""Trial keys and the trial roll-up, on the database (no serving)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from apps.accounts import services as account_services
from apps.gateway import services
from apps.gateway.models import GatewayCall, GatewayKey
from apps.gateway.pricing import Usage
from apps.gateway.services import CallRecord, ModelRoute
from selfbench.errors import InvalidInput
from tests.factories import make_workspace


@pytest.fixture
def creds(workspace, settings):  # type: ignore[no-untyped-def]
    settings.MANAGED_ANTHROPIC_API_KEY = "sk-ant-managed"
    settings.MANAGED_OPENAI_API_KEY = ""
    owner = workspace.memberships.get(role="owner")
    make = account_services.credential_create
    return {
        "anthropic": make(workspace=workspace, by=owner, name="a", kind="anthropic", secret="sk-ant-xxxxxxxxxxxx"),
        "claude": make(
            workspace=workspace, by=owner, name="c", kind="anthropic", auth_kind="sign_in", secret="oauth-xxxxxxxxxxxx"
        ),
        "github": make(workspace=workspace, by=owner, name="g", kind="github", secret="ghp_xxxxxxxxxxxx"),
    }


def test_mint_stores_only_a_hash_and_the_routes(workspace, creds) -> None:  # type: ignore[no-untyped-def]
    key, raw = services.trial_key_mint(
        workspace=workspace,
        subject="trial:1",
        models=[
            ModelRoute("claude-sonnet-4-6", creds["anthropic"]),
            ModelRoute("claude-haiku-4-5", "managed-model", "subagent"),
        ],
        ttl_seconds=3600,
    )
    assert raw.startswith("sbg_") and raw not in key.key_hash and key.prefix == raw[:10]
    assert {(r.model_id, r.role, r.managed) for r in key.routes.all()} == {
        ("claude-sonnet-4-6", "main", False),
        ("claude-haiku-4-5", "subagent", True),
    }
    assert 3590 < (key.expires_at - timezone.now()).total_seconds() <= 3600


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        (lambda c: [ModelRoute("nope-1", c["anthropic"])], "not in the model catalog"),
        (lambda c: [ModelRoute("gpt-5", c["anthropic"])], "cannot serve gpt-5"),
        (lambda c: [ModelRoute("claude-haiku-4-5", c["github"])], "not a model provider"),
        (lambda c: [ModelRoute("gpt-5", "managed-model")], "managed-model is not available for openai"),
        (
            lambda c: [
                ModelRoute("claude-haiku-4-5", c["anthropic"]),
                ModelRoute("claude-haiku-4-5", c["anthropic"], "subagent"),
            ],
            "two different catalog models",
        ),
        (lambda c: [ModelRoute("claude-haiku-4-5", c["anthropic"], "subagent")], "one main model"),
        (lambda c: [], "one main model"),
    ],
)
def test_mint_refuses_routes_that_cannot_work(workspace, creds, routes, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput, match=message):
        services.trial_key_mint(workspace=workspace, subject="trial:x", models=routes(creds), ttl_seconds=60)
    assert not GatewayKey.objects.exists()


def test_mint_refuses_another_workspaces_credential(workspace, creds) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput, match="another workspace"):
        services.trial_key_mint(
            workspace=make_workspace(),
            subject="t",
            models=[ModelRoute("claude-haiku-4-5", creds["anthropic"])],
            ttl_seconds=60,
        )


def test_revoke_revokes_every_live_key_of_the_subject(workspace, creds) -> None:  # type: ignore[no-untyped-def]
    for _ in range(2):
        services.trial_key_mint(
            workspace=workspace,
            subject="trial:r",
            models=[ModelRoute("claude-haiku-4-5", creds["anthropic"])],
            ttl_seconds=60,
        )
    assert services.trial_key_revoke(subject="trial:r") == 2
    assert services.trial_key_revoke(subject="trial:r") == 0


def _record(workspace, subject, **kw):  # type: ignore[no-untyped-def]
    base = dict(
        workspace_id=workspace.pk,
        key_id=None,
        subject=subject,
        role="main",
        catalog_model="claude-sonnet-4-6",
        requested_model="claude-sonnet-4-6",
        wire_format="anthropic_messages",
        stream=True,
        credential_id=None,
        billable=True,
        started_at=timezone.now(),
        served_model="claude-sonnet-4-6-20260101",
        usage=Usage(2000, 800, 200, 0, 100),
    )
    base.update(kw)
    return CallRecord(**base)


def test_trial_usage_sums_priced_calls(workspace) -> None:  # type: ignore[no-untyped-def]
    services.calls_record(
        calls=[
            _record(workspace, "t1"),
            _record(
                workspace,
                "t1",
                role="subagent",
                catalog_model="gpt-5",
                served_model="gpt-5-2025-08-07",
                usage=Usage(10_000, 8000, 0, 0, 2000),
            ),
        ]
    )
    usage = services.trial_usage(subject="t1")
    assert usage.cost_usd == Decimal("0.00549") + Decimal("0.0235") and usage.billed_cost_usd == usage.cost_usd
    assert usage.model_verified and usage.subagent_calls == 1 and usage.calls == 2
    assert (usage.input_tokens, usage.output_tokens) == (12_000, 2100)


def test_one_unpriced_call_makes_the_trial_cost_incomplete(workspace) -> None:  # type: ignore[no-untyped-def]
    services.calls_record(calls=[_record(workspace, "t2"), _record(workspace, "t2", usage=None)])
    usage = services.trial_usage(subject="t2")
    assert usage.cost_usd is None and usage.billed_cost_usd is None and not usage.cost_complete
    assert GatewayCall.objects.filter(subject="t2", cost_usd__isnull=True, cost_source="unpriced").count() == 1


def test_a_sign_in_call_is_priced_but_not_billed(workspace) -> None:  # type: ignore[no-untyped-def]
    services.calls_record(calls=[_record(workspace, "t3"), _record(workspace, "t3", billable=False)])
    usage = services.trial_usage(subject="t3")
    assert usage.cost_usd == 2 * Decimal("0.00549") and usage.billed_cost_usd is None


def test_a_call_served_by_another_model_fails_the_model_check(workspace) -> None:  # type: ignore[no-untyped-def]
    services.calls_record(calls=[_record(workspace, "t4"), _record(workspace, "t4", served_model="claude-haiku-4-5")])
    assert services.trial_usage(subject="t4").model_verified is False


def test_a_trial_with_no_calls_cost_nothing_and_is_unverified(db) -> None:  # type: ignore[no-untyped-def]
    usage = services.trial_usage(subject="none")
    assert usage.cost_usd == Decimal(0) and usage.cost_complete and usage.calls == 0 and not usage.model_verified
