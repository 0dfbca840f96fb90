"""End to end: scripted model → gateway (real uvicorn) → terminus-2 (loop in this worker) → a task in podman.

The comparison is started through the API; its trial jobs are run the way the worker runs them (jobs.trial_execute
with the id the dispatcher enqueued). Nothing of ours is mocked: only the model provider is a double.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.runs import jobs, services
from apps.runs.models import Comparison, Trial, TrialArtifact, TrialStatus
from tests.doubles.terminus_model import TerminusModel
from tests.factories import make_api_key
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401  (fixtures)
from tests.harbor.test_adapter import _require_containers
from tests.runs.factories import greeting_files, make_approved_task

pytestmark = [pytest.mark.containers]


@pytest.fixture(scope="module")
def model() -> Iterator[TerminusModel]:
    server = TerminusModel().start()
    yield server
    server.stop()


@pytest.fixture
def live(gw: Gateway, model: TerminusModel, settings: Any) -> Gateway:  # noqa: F811
    _require_containers()
    settings.OPENAI_BASE_URL = model.url
    settings.GATEWAY_PUBLIC_URL = f"{gw.url}/gateway"
    return gw


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Trial ids the dispatcher enqueued (the worker would pick them up; the test runs them itself)."""
    ids: list[int] = []
    monkeypatch.setattr(jobs, "async_task", lambda func, trial_id, **kw: ids.append(trial_id))
    return ids


def _client(gateway: Gateway) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(workspace=gateway.workspace).raw}")
    return client


def test_terminus_2_solves_a_task_in_podman_through_the_gateway(
    live: Gateway, model: TerminusModel, enqueued: list[int], tmp_path: Path
) -> None:
    task = make_approved_task(workspace=live.workspace, files=greeting_files(tmp_path))
    client = _client(live)
    base = f"/api/w/{live.workspace.slug}/evaluations"
    body = {
        "id": "6f1c1f8e-8a9e-4c43-9f0e-3b7f7c1d2a11",
        "models": [
            {
                "catalogId": "gpt-5-mini",
                "credentialId": live.credentials["openai"].pk,
                "harnesses": ["terminus-2"],
                "thinking": "low",
            }
        ],
        "sandbox": "podman",
        "tasks": [{"runId": task.batch_id, "taskId": task.pk}],
    }
    r = client.post(f"{base}/comparisons", body, format="json")
    assert r.status_code == 202, r.json()
    assert len(enqueued) == 1

    started = time.monotonic()
    jobs.trial_execute(enqueued[0])
    elapsed = time.monotonic() - started

    trial = Trial.objects.get(pk=enqueued[0])
    assert trial.status == TrialStatus.COMPLETED, (trial.exception_type, trial.exception_message)
    assert trial.reward == 1.0 and trial.reward_valid
    assert trial.calls == 2  # the commands, then the confirmation
    assert trial.model_verified is True
    assert trial.cost_usd is not None and trial.cost_usd > Decimal(0) and trial.cost_complete
    assert trial.billed_cost_usd == trial.cost_usd  # an API key credential is billed
    assert trial.input_tokens == 2 * 1200 and trial.output_tokens == 2 * 100 and trial.cached_input_tokens == 1600
    assert trial.network_enforced is True and trial.network_policy.startswith("none")
    assert "greeting.py" in trial.transcript
    assert trial.trajectory_path.endswith("agent/trajectory.json")
    assert TrialArtifact.objects.filter(trial=trial, name="agent/trajectory.json").exists()
    assert TrialArtifact.objects.filter(trial=trial, name="verifier/test-stdout.txt").exists()
    # The model got terminus-2's prompt, through the gateway, with the low effort asked for.
    assert model.requests[0].body["model"] == "gpt-5-mini"
    assert model.requests[0].body.get("reasoning_effort") == "low"
    # The key died with the trial.
    from apps.gateway.models import GatewayKey

    assert not GatewayKey.objects.filter(subject=trial.subject, revoked_at__isnull=True).exists()

    progress = client.get(f"{base}/comparisons/{body['id']}").json()
    assert progress["status"] == "done" and progress["progress"]["finished"] is True
    assert progress["progress"]["completed"] == 1
    detail = client.get(f"{base}/{trial.evaluation_id}").json()
    shown = detail["trials"][0]
    assert shown["reward"] == 1.0 and shown["modelVerified"] is True and shown["scored"] is True
    assert Decimal(shown["costUsd"]) == trial.cost_usd and shown["tokenUsage"]["output"] == 200
    name = next(a["name"] for a in shown["artifacts"] if a["name"].endswith("verifier/test-stdout.txt"))
    text = client.get(f"{base}/{trial.evaluation_id}/artifacts", {"name": name}).content.decode()
    assert "1 passed" in text
    assert detail["status"] == "completed"
    print(f"\nterminus-2 trial end to end: {elapsed:.1f} s; cost ${trial.cost_usd}")
    assert Comparison.objects.get().status == "done"


def test_cancel_stops_a_running_trial_and_its_containers(
    live: Gateway, model: TerminusModel, enqueued: list[int], tmp_path: Path, settings: Any
) -> None:
    import threading

    # The model sleeps 10 s before the agent's first command: time to cancel while the sandbox is up.
    model.commands = ["sleep 600\n"]
    settings.RUNS_HEARTBEAT_SECONDS = 1
    task = make_approved_task(workspace=live.workspace, files=greeting_files(tmp_path))
    comparison = services.comparison_start(
        workspace=live.workspace,
        body={
            "id": "0b7d1c8e-1111-4c43-9f0e-3b7f7c1d2a11",
            "models": [
                {
                    "catalogId": "gpt-5-mini",
                    "credentialId": str(live.credentials["openai"].pk),
                    "harnesses": ["terminus-2"],
                }
            ],
            "sandbox": "podman",
            "tasks": [{"runId": None, "taskId": task.pk}],
            "skipCompleted": False,
            "judgeCredentialId": None,
            "sandboxCredentialId": None,
            "harnesses": [],
            "environments": [],
            "baseline": True,
            "conditions": None,
        },
        created_by=None,
    )
    trial_id = enqueued[0]
    worker = threading.Thread(target=jobs.trial_execute, args=(trial_id,))
    started = time.monotonic()
    worker.start()
    deadline = time.monotonic() + 120
    asked = len(model.requests)
    # Cancel once the agent runs: its container is up and the model has been asked for commands.
    while len(model.requests) == asked or not _containers(trial_id):
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.5)
    time.sleep(2)
    services.comparison_cancel(comparison=comparison)
    worker.join(180)
    assert not worker.is_alive()
    trial = Trial.objects.get(pk=trial_id)
    assert trial.status == TrialStatus.CANCELLED
    assert _containers(trial_id) == []
    assert time.monotonic() - started < 150
    model.commands = TerminusModel().commands


def _containers(trial_id: int) -> list[str]:
    import subprocess

    name = Trial.objects.get(pk=trial_id).harbor_name
    out = subprocess.run(
        ["podman", "ps", "-a", "--format", "{{.Names}}", "--filter", f"name={name}"], capture_output=True, text=True
    )
    return out.stdout.split()


PROBE = (
    "python3 -c \"import socket\nfor h, p in [('1.1.1.1', 80), ('10.88.0.1', %d), ('8.8.8.8', 53)]:\n"
    "    s = socket.socket(); s.settimeout(2)\n"
    "    try:\n        s.connect((h, p)); print('NET', h, 'reached')\n"
    "    except OSError as e:\n        print('NET', h, 'blocked', e.errno)\n\"\n"
)


def test_the_agents_sandbox_reaches_no_host(
    live: Gateway, model: TerminusModel, enqueued: list[int], tmp_path: Path
) -> None:
    """terminus-2's sandbox on podman has no network: neither the internet nor the host's gateway port."""
    port = int(live.url.rsplit(":", 1)[1])
    model.commands = [PROBE % port]
    try:
        task = make_approved_task(workspace=live.workspace, files=greeting_files(tmp_path))
        client = _client(live)
        body = {
            "id": "9a7d1c8e-2222-4c43-9f0e-3b7f7c1d2a11",
            "models": [
                {"catalogId": "gpt-5-mini", "credentialId": live.credentials["openai"].pk, "harnesses": ["terminus-2"]}
            ],
            "sandbox": "podman",
            "tasks": [{"runId": None, "taskId": task.pk}],
        }
        assert (
            client.post(f"/api/w/{live.workspace.slug}/evaluations/comparisons", body, format="json").status_code == 202
        )
        jobs.trial_execute(enqueued[0])
    finally:
        model.commands = TerminusModel().commands
    trial = Trial.objects.get(pk=enqueued[0])
    assert trial.network_enforced is True
    assert trial.reward == 0.0  # the probe fixed nothing
    # The agent's model calls still went through the gateway from the worker.
    assert trial.calls == 2 and trial.model_verified
    for host in ("1.1.1.1", "10.88.0.1", "8.8.8.8"):
        assert f"NET {host} blocked" in trial.transcript, trial.transcript[-3000:]
    assert "reached" not in trial.transcript.replace("'reached'", "")
