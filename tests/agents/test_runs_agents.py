"""Agents installed in the sandbox through apps/runs, unchanged: a comparison with claude-code and codex is started
through the API and its trial jobs run as the worker runs them. apps/runs knows no agent specifics beyond the
wire format; the adapter supplies the toolchain, the pins and the gateway relay.
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.runs import jobs
from apps.runs.models import Trial, TrialStatus
from tests.agents.agent_model import AgentModel
from tests.agents.test_sandbox_agents import _require_toolchain, model  # noqa: F401  (fixture)
from tests.factories import make_api_key
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401  (fixtures)
from tests.runs.factories import greeting_files, make_approved_task

pytestmark = [pytest.mark.containers]


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    ids: list[int] = []
    monkeypatch.setattr(jobs, "async_task", lambda func, trial_id, **kw: ids.append(trial_id))
    return ids


@pytest.mark.parametrize(
    ("agent", "catalog_id", "credential"),
    [("claude-code", "claude-sonnet-4-5", "anthropic"), ("codex", "gpt-5-mini", "openai")],
)
def test_comparison_runs_an_installed_agent_end_to_end(
    agent: str,
    catalog_id: str,
    credential: str,
    gw: Gateway,  # noqa: F811
    model: AgentModel,  # noqa: F811
    enqueued: list[int],
    settings: Any,
    tmp_path: Any,
) -> None:
    _require_toolchain(agent)
    settings.OPENAI_BASE_URL = model.url
    settings.ANTHROPIC_BASE_URL = model.url
    settings.GATEWAY_PUBLIC_URL = f"{gw.url}/gateway"
    task = make_approved_task(workspace=gw.workspace, files=greeting_files(tmp_path))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(workspace=gw.workspace).raw}")
    body = {
        "id": "7a2c1f8e-8a9e-4c43-9f0e-3b7f7c1d2a1" + str(len(agent) % 10),
        "models": [
            {
                "catalogId": catalog_id,
                "credentialId": gw.credentials[credential].pk,
                "harnesses": [agent],
                "thinking": "low",
            }
        ],
        "sandbox": "podman",
        "tasks": [{"runId": task.batch_id, "taskId": task.pk}],
    }
    r = client.post(f"/api/w/{gw.workspace.slug}/evaluations/comparisons", body, format="json")
    assert r.status_code == 202, r.json()
    assert len(enqueued) == 1

    jobs.trial_execute(enqueued[0])

    trial = Trial.objects.get(pk=enqueued[0])
    assert trial.status == TrialStatus.COMPLETED, (trial.exception_type, trial.exception_message)
    assert trial.reward == 1.0 and trial.reward_valid
    assert trial.calls >= 2 and trial.model_verified is True
    assert trial.cost_usd is not None and trial.cost_usd > 0
    print(f"\n{agent} through apps/runs: reward {trial.reward}, {trial.calls} calls, ${trial.cost_usd}")
