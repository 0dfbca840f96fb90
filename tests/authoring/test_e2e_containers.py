"""Model-driven authoring with nothing of ours stood in: a real terminus-2 agent writes a task in a podman sandbox,
its `verify` reaches SelfBench over the relay socket and runs the real static checks and the five gates in podman,
`submit` ends the round, and the independent reviewer (a model call through the gateway) sends it back once and
then accepts it. Only the model provider is a double (tests/doubles/authoring_terminus_model.py).

The jobs are run the way the worker runs them (jobs.authoring_round / jobs.review_round with the ids enqueued).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from apps.authoring import services
from apps.authoring.models import AuthoringRound, RoundState, Verdict, VerifyCall
from apps.gateway.models import GatewayCall, GatewayKey
from apps.tasks import services as task_services
from apps.tasks.models import GateRun, GateStatus, TaskState
from tests.authoring.conftest import TEST, Repo, author_settings, drain
from tests.authoring.test_authoring import good_files, pr_task
from tests.doubles.authoring_terminus_model import AuthoringTerminusModel, _write
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401  (fixtures)
from tests.harbor.test_adapter import _require_containers

pytestmark = [pytest.mark.containers]


@pytest.fixture
def model(repo: Repo, gw: Gateway, settings: Any) -> Iterator[AuthoringTerminusModel]:  # noqa: F811
    _require_containers()
    first = {**good_files(repo), "gold.patch": repo.gold.replace("calc.py", "tests/test_calc.py")}
    server = AuthoringTerminusModel(files=good_files(repo), first_files=first).start()
    settings.OPENAI_BASE_URL = server.url
    settings.GATEWAY_PUBLIC_URL = f"{gw.url}/gateway"
    yield server
    server.stop()


def _containers(name: str) -> str:
    return subprocess.run(
        ["podman", "ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def test_a_terminus_2_author_in_podman_passes_verify_on_its_second_call_and_is_accepted_after_one_send_back(
    gw: Gateway,  # noqa: F811
    model: AuthoringTerminusModel,
    repo: Repo,
    enqueued: list[tuple[str, int]],
) -> None:
    model.verdicts = [
        {"verdict": "send_back", "notes": "Say which module.", "suggestions": ["Name calc.py in the instruction"]},
        {"verdict": "accept", "notes": "Public function, clear instruction."},
    ]
    task = pr_task(gw, repo)
    services.authoring_start(task=task, authoring_settings=author_settings(gw))
    started = time.monotonic()
    drain(enqueued)
    elapsed = time.monotonic() - started

    task.refresh_from_db()
    assert task.state == TaskState.AWAITING_APPROVAL, (task.reason, model.author_turns)
    first, second = AuthoringRound.objects.filter(task=task).order_by("number")

    # Round 1: the first verify failed the static checks (no container started), the second passed the real gates.
    assert first.state == RoundState.SUBMITTED and first.verify_calls == 2, (first.reason, model.author_turns)
    calls = list(VerifyCall.objects.filter(round=first).order_by("number"))
    assert [c.passed for c in calls] == [False, True]
    assert "share files" in str(calls[0].report)
    assert [c["check"] for c in calls[1].report["checks"]] == [
        "static",
        "discovery",
        "build",
        "smoke",
        "nop",
        "oracle",
        "determinism",
    ]
    gate_runs = GateRun.objects.filter(task=task)
    assert sorted(set(gate_runs.values_list("gate", flat=True))) == sorted(
        ["discovery", "build", "smoke", "nop", "oracle", "determinism"]
    )
    # Each gate passed (an infrastructure error is retried; no gate failed on the task itself).
    assert set(gate_runs.filter(status=GateStatus.PASSED).values_list("gate", flat=True)) == set(
        gate_runs.values_list("gate", flat=True)
    )
    assert not gate_runs.filter(status=GateStatus.FAILED).exists()
    assert first.review.verdict == Verdict.SEND_BACK and first.review.suggestions == ["Name calc.py in the instruction"]

    # Round 2 started from the reviewer's feedback; its identical files reused the verified version.
    assert "Name calc.py" in second.feedback
    assert second.state == RoundState.SUBMITTED and second.verify_calls == 1
    assert VerifyCall.objects.get(round=second).report["reused"] is True
    assert second.review.verdict == Verdict.ACCEPT

    # The agent really ran: terminus-2 read the screen and went write → verify → fix → verify → submit → complete.
    turns = model.author_turns
    assert turns[0] == "write+verify" and "fix+verify" in turns and "submit" in turns, turns
    assert turns.index("fix+verify") < turns.index("submit")

    # The task is what the agent wrote, verified by the gates.
    version = task.version
    assert version is not None and version.definition["author"] == "model:terminus-2/gpt-5-mini"
    assert (version.path / "tests" / "held_out" / "tests" / "test_calc.py").read_text() == TEST
    assert "tests/test_calc.py::test_multiply" in version.fail_to_pass

    # Every model call went through the gateway and has a cost: the author's rounds and the reviewer's calls.
    assert first.calls >= 3 and first.cost_usd is not None and first.cost_usd > 0 and first.cost_complete
    assert first.review.calls == 1 and first.review.cost_usd is not None and first.review.cost_usd > 0
    assert GatewayCall.objects.filter(subject=first.subject).count() == first.calls
    assert not GatewayKey.objects.filter(revoked_at__isnull=True).exists()
    # The reviewer is another model than the author, and it read the held-out test and the gate report.
    assert model.reviews[0]["model"] == "gpt-5"
    assert "held-out: tests/test_calc.py" in str(model.reviews[0]) and "determinism" in str(model.reviews[0])

    # No authoring sandbox is left behind.
    assert _containers(first.trial_name) == "" and _containers(second.trial_name) == ""
    assert task_services.task_approve(task=task, user=None, note="ok").state == TaskState.APPROVED
    print(f"\nauthoring end to end in podman: {elapsed:.0f} s, turns {turns}")


def test_a_silent_terminus_2_author_in_podman_is_stopped_and_its_sandbox_removed(
    gw: Gateway,  # noqa: F811
    model: AuthoringTerminusModel,
    repo: Repo,
    enqueued: list[tuple[str, int]],
) -> None:
    model.hang_seconds = 60.0  # the model never answers: the agent prints nothing
    task = pr_task(gw, repo)
    services.authoring_start(task=task, authoring_settings=author_settings(gw, silence_seconds=10))
    _, round_id = enqueued.pop(0)
    started = time.monotonic()
    row = services.round_run(round_id=round_id)
    elapsed = time.monotonic() - started
    assert row.state == RoundState.FAILED and row.reason == "no output for 10 s; stopped", row.reason
    assert elapsed < 100
    assert _containers(row.trial_name) == ""
    assert not GatewayKey.objects.filter(subject=row.subject, revoked_at__isnull=True).exists()
    # A failed round counts as one of the three: the next round is scheduled with the reason.
    assert enqueued and AuthoringRound.objects.get(task=task, number=2).feedback.endswith("no output for 10 s; stopped")


def test_a_claude_code_author_in_podman_reaches_verify_over_the_relay_and_a_round_without_submit_fails(
    gw: Gateway,  # noqa: F811
    repo: Repo,
    enqueued: list[tuple[str, int]],
    settings: Any,
) -> None:
    """claude-code runs installed in the sandbox with no network: its model calls go through the gateway relay and its
    `verify` reaches SelfBench over the authoring socket. It writes files that fail the static checks, reads the
    report, and stops without `submit`, so the round fails with that reason (no gate container is started)."""
    from tests.agents.agent_model import AgentModel
    from tests.agents.test_sandbox_agents import _require_toolchain

    _require_toolchain("claude-code")
    bad = {**good_files(repo), "gold.patch": repo.gold.replace("calc.py", "tests/test_calc.py")}
    server = AgentModel()
    server.solve_command = (
        " && ".join(line.rstrip("\n") for line in _write(bad)) + " && cd /authoring && verify; echo verify-exit=$?"
    )
    server.start()
    try:
        settings.ANTHROPIC_BASE_URL = server.url
        settings.GATEWAY_PUBLIC_URL = f"{gw.url}/gateway"
        authoring_settings = services.settings_save(
            workspace=gw.workspace,
            author_agent="claude-code",
            author_model="claude-opus-4-6",
            author_credential_id=gw.credentials["anthropic"].pk,
            reasoning="low",
            reviewer_model="gpt-5",
            reviewer_credential_id=gw.credentials["openai"].pk,
        )
        task = pr_task(gw, repo)
        services.authoring_start(task=task, authoring_settings=authoring_settings)
        _, round_id = enqueued.pop(0)
        row = services.round_run(round_id=round_id)
    finally:
        server.stop()
    assert row.state == RoundState.FAILED and row.reason.startswith("the agent ended without submit"), row.reason
    call = VerifyCall.objects.get(round=row)
    assert call.passed is False and "share files" in str(call.report)
    # The agent read the report: the tool result it sent back to its model carries it.
    assert any("VERIFY-RESULT failed" in str(r.body) for r in server.requests)
    assert row.calls >= 2 and row.cost_usd is not None and row.cost_complete
    assert not GateRun.objects.filter(task=task).exists()
    assert _containers(row.trial_name) == ""
    assert not GatewayKey.objects.filter(subject=row.subject, revoked_at__isnull=True).exists()
