"""Model-driven authoring end to end with scripted models through the real gateway: verify, submit, review rounds,
stage limits, vibe evals and the eval release rule. Harbor's run_trial (containers) is scripted in conftest."""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import pytest

from apps.authoring import services
from apps.authoring.models import AuthoringRound, RoundState, Verdict, VerifyCall, VibeEval, VibeEvalKind
from apps.gateway.models import GatewayKey
from apps.repositories.models import Repository, RepositoryKind
from apps.tasks import authoring as task_authoring
from apps.tasks import services as task_services
from apps.tasks.models import GateRun, TaskState
from selfbench.errors import Conflict, InvalidInput
from tests.authoring.conftest import TEST, Harbor, Repo, Sandbox, author_settings, drain, git, silent_agent
from tests.doubles.authoring_models import ReviewerModel
from tests.gateway.conftest import Gateway


def pr_task(gw: Gateway, repo: Repo) -> Any:
    source = task_authoring.PullRequestSource(
        repo_path=repo.path,
        base_sha=repo.base,
        head_sha=repo.head,
        title="Add multiply",
        body="We need multiply.",
        number=7,
        repository="acme/calc",
    )
    return task_services.task_create(workspace=gw.workspace, source=source, heuristic_author=False)


def good_files(repo: Repo) -> dict[str, str]:
    return {
        "instruction.md": "Add `multiply(a, b)` to calc.\n",
        "gold.patch": repo.gold,
        "held_out/tests/test_calc.py": TEST,
    }


def second_verify_passes(repo: Repo) -> Any:
    def step(box: Sandbox) -> None:
        box.ask_model()
        # First try: the held-out test sits in the implementation file the gold patch changes.
        box.write({**good_files(repo), "held_out/tests/test_calc.py": TEST})
        box.write({"gold.patch": repo.gold.replace("calc.py", "tests/test_calc.py")})
        first = box.command("verify")
        assert "VERIFY-RESULT failed" in first and "4 verify calls left" in first, first
        box.ask_model()
        box.write(good_files(repo))
        second = box.command("verify")
        assert "VERIFY-RESULT passed" in second, second
        assert "SUBMIT-OK" in box.command("submit")

    return step


def resubmit(repo: Repo) -> Any:
    def step(box: Sandbox) -> None:
        box.ask_model()
        box.write(good_files(repo))
        assert "VERIFY-RESULT passed" in box.command("verify")
        assert "SUBMIT-OK" in box.command("submit")

    return step


def test_author_passes_verify_on_its_second_call_and_the_reviewer_sends_back_once_then_accepts(
    gw: Gateway, reviewer: ReviewerModel, harbor: Harbor, repo: Repo, enqueued: list[tuple[str, int]]
) -> None:
    reviewer.verdicts = [
        {"verdict": "send_back", "notes": "Say which module.", "suggestions": ["Name calc.py in the instruction"]},
        {"verdict": "accept", "notes": "Public function, clear instruction."},
    ]
    harbor.agents = [second_verify_passes(repo), resubmit(repo)]
    task = pr_task(gw, repo)
    services.authoring_start(task=task, authoring_settings=author_settings(gw))
    drain(enqueued)

    task.refresh_from_db()
    assert task.state == TaskState.AWAITING_APPROVAL, task.reason
    first, second = AuthoringRound.objects.filter(task=task).order_by("number")
    assert first.verify_calls == 2 and first.state == RoundState.SUBMITTED
    assert [v.passed for v in VerifyCall.objects.filter(round=first)] == [False, True]
    assert "share files" in str(VerifyCall.objects.get(round=first, number=1).report)
    assert first.review.verdict == Verdict.SEND_BACK and first.review.suggestions == ["Name calc.py in the instruction"]
    assert "Name calc.py" in second.feedback
    assert second.review.verdict == Verdict.ACCEPT and second.verify_calls == 1
    # The same checks and gates as the heuristic author, each a GateRun; round 2's identical files reused them.
    gates = list(GateRun.objects.filter(task=task).values_list("gate", flat=True))
    assert gates == ["discovery", "build", "smoke", "nop", "oracle", "determinism"]
    assert VerifyCall.objects.get(round=second).report["reused"] is True
    # Model calls went through the gateway: cost recorded per round and per review, keys revoked.
    assert first.calls == 2 and first.cost_usd is not None and first.cost_usd > 0 and first.cost_complete
    assert first.review.calls == 1 and first.review.cost_usd is not None
    assert not GatewayKey.objects.filter(subject__startswith="authoring:", revoked_at__isnull=True).exists()
    assert task.version is not None and task.version.definition["author"] == "model:terminus-2/gpt-5-mini"
    # The reviewer read the task files and the gate report with another model than the author's.
    assert reviewer.reviews[0]["model"] == "gpt-5" and "held-out: tests/test_calc.py" in str(reviewer.reviews[0])
    approved = task_services.task_approve(task=task, user=None, note="ok")
    assert approved.state == TaskState.APPROVED


def test_a_candidate_rejected_three_times_ends_rejected_without_backfill(
    gw: Gateway, reviewer: ReviewerModel, harbor: Harbor, repo: Repo, enqueued: list[tuple[str, int]]
) -> None:
    reviewer.verdicts = [{"verdict": "reject", "notes": f"pins internals {i}"} for i in range(3)]
    harbor.agents = [resubmit(repo) for _ in range(3)]
    task = pr_task(gw, repo)
    services.authoring_start(task=task, authoring_settings=author_settings(gw))
    drain(enqueued)
    task.refresh_from_db()
    assert task.state == TaskState.REJECTED and task.reason.startswith("3 failed rounds")
    rounds = AuthoringRound.objects.filter(task=task).order_by("number")
    assert [r.review.verdict for r in rounds] == ["reject"] * 3 and [r.review.notes for r in rounds][
        2
    ] == "pins internals 2"
    assert harbor.agents == [] and enqueued == []


def test_an_author_that_falls_silent_is_stopped_and_the_round_fails(
    gw: Gateway, reviewer: ReviewerModel, harbor: Harbor, repo: Repo, enqueued: list[tuple[str, int]]
) -> None:
    stop = threading.Event()
    harbor.agents = [silent_agent(stop)]
    task = pr_task(gw, repo)
    services.authoring_start(task=task, authoring_settings=author_settings(gw, silence_seconds=1))
    _, round_id = enqueued.pop(0)
    services.round_run(round_id=round_id)
    stop.set()
    row = AuthoringRound.objects.get(pk=round_id)
    assert row.state == RoundState.FAILED and row.reason == "no output for 1 s; stopped"
    assert set(harbor.removed) == {row.trial_name}
    assert not GatewayKey.objects.filter(subject=row.subject, revoked_at__isnull=True).exists()
    # A failed round is one of the three: the next round is scheduled with the reason.
    assert enqueued and AuthoringRound.objects.get(task=task, number=2).feedback.endswith("no output for 1 s; stopped")


def test_settings_need_a_reviewer_model_other_than_the_authors(gw: Gateway) -> None:
    with pytest.raises(InvalidInput, match="reviewer's model must differ"):
        services.settings_save(
            workspace=gw.workspace,
            author_agent="terminus-2",
            author_model="gpt-5",
            author_credential_id=None,
            reviewer_model="gpt-5",
            reviewer_credential_id=None,
        )


def test_a_repository_vibe_eval_goes_from_description_to_an_approved_task(
    gw: Gateway, reviewer: ReviewerModel, harbor: Harbor, repo: Repo, enqueued: list[tuple[str, int]]
) -> None:
    git(repo.path, "checkout", "-q", "-b", "feature", repo.base)
    repository = Repository.objects.create(workspace=gw.workspace, kind=RepositoryKind.LOCAL, location=str(repo.path))

    def author(box: Sandbox) -> None:
        assert (box.workdir / "context" / "attachments" / "trace.txt").read_text() == "agent forgot multiply"
        resubmit(repo)(box)

    harbor.agents = [author]
    vibe = services.vibe_eval_create(
        workspace=gw.workspace,
        description="The agent never added multiply; a careful person adds it with a test.",
        authoring_settings=author_settings(gw),
        repository=repository,
        ref="feature",
        attachments={"trace.txt": b"agent forgot multiply"},
    )
    assert vibe.resolved_sha == repo.base and vibe.kind == VibeEvalKind.REPOSITORY
    drain(enqueued)
    task = vibe.task
    task.refresh_from_db()
    assert task.state == TaskState.AWAITING_APPROVAL and task.repository_id == repository.pk
    assert task_services.task_approve(task=task, user=None).state == TaskState.APPROVED
    services.release_guard(tasks=[task])  # released with its repository: no objection


WS_TEST = "import json\n\n\ndef test_report():\n    assert json.load(open('/app/report.json'))['total'] == 3\n"
WS_GOLD = "diff --git a/report.py b/report.py\n--- a/report.py\n+++ b/report.py\n@@ -1 +1 @@\n-TOTAL = 0\n+TOTAL = 3\n"


def test_a_workspace_vibe_eval_goes_from_description_to_an_approved_task_and_its_eval_is_never_released(
    gw: Gateway, reviewer: ReviewerModel, harbor: Harbor, api_for: Any, enqueued: list[tuple[str, int]]
) -> None:
    def author(box: Sandbox) -> None:
        box.ask_model()
        box.write(
            {
                "start/report.py": "TOTAL = 0\n",
                "instruction.md": "Write report.json with the total.\n",
                "gold.patch": WS_GOLD,
                "held_out/tests/test_report.py": WS_TEST,
            }
        )
        assert "VERIFY-RESULT passed" in box.command("verify"), box.outputs
        assert "SUBMIT-OK" in box.command("submit")

    harbor.agents = [author]
    client = api_for(gw.workspace)
    created = client.post(f"/api/w/{gw.workspace.slug}/evals", {"name": "cli habits"}, format="json")
    assert created.status_code == 201
    body = {
        "description": "The agent wrote the total to stdout instead of report.json.",
        "settings": {
            "authorModel": "gpt-5-mini",
            "authorCredentialId": gw.credentials["openai"].pk,
            "reviewerModel": "gpt-5",
            "reviewerCredentialId": gw.credentials["openai"].pk,
        },
        "attachments": [{"name": "log.txt", "contentBase64": base64.b64encode(b"total: 3").decode()}],
    }
    r = client.post(f"/api/w/{gw.workspace.slug}/evals/{created.json()['id']}/vibe-evals", body, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["kind"] == "workspace" and r.json()["attachments"] == [{"name": "log.txt", "size": 8}]
    drain(enqueued)
    task = VibeEval.objects.get(pk=r.json()["id"]).task
    assert task.state == TaskState.AWAITING_APPROVAL, task.reason
    assert task.repository_id is None
    assert task_services.task_approve(task=task, user=None).state == TaskState.APPROVED
    rounds = client.get(f"/api/w/{gw.workspace.slug}/tasks/{task.pk}/rounds").json()
    assert rounds[0]["review"]["verdict"] == "accept" and rounds[0]["verifyCalls"][0]["passed"] is True
    refused = client.post(f"/api/w/{gw.workspace.slug}/evals/{created.json()['id']}/release")
    assert refused.status_code == 409
    with pytest.raises(Conflict, match="never released"):
        services.release_guard(tasks=[task])


def test_an_author_that_keeps_working_past_its_wall_clock_cap_is_stopped_and_the_round_fails(
    gw: Gateway, reviewer: ReviewerModel, harbor: Harbor, repo: Repo, enqueued: list[tuple[str, int]]
) -> None:
    stop = threading.Event()

    def busy(box: Sandbox) -> None:  # never silent: a model call every 0.2 s, never a submit
        while not stop.wait(0.2):
            box.ask_model()

    harbor.agents = [busy]
    task = pr_task(gw, repo)
    services.authoring_start(
        task=task, authoring_settings=author_settings(gw, silence_seconds=30, author_wall_clock_seconds=2)
    )
    _, round_id = enqueued.pop(0)
    started = time.monotonic()
    services.round_run(round_id=round_id)
    elapsed = time.monotonic() - started
    stop.set()
    row = AuthoringRound.objects.get(pk=round_id)
    assert row.state == RoundState.FAILED, row.reason
    assert row.reason == "the authoring stage passed its wall-clock cap of 2 s; stopped"
    assert 2 <= elapsed < 10 and row.calls >= 5
    assert set(harbor.removed) == {row.trial_name}


def test_a_reviewer_that_falls_silent_fails_the_review_and_the_round_counts_as_failed(
    gw: Gateway, reviewer: ReviewerModel, harbor: Harbor, repo: Repo, enqueued: list[tuple[str, int]]
) -> None:
    harbor.agents = [resubmit(repo)]
    task = pr_task(gw, repo)
    authoring_settings = author_settings(gw, silence_seconds=1)
    services.authoring_start(task=task, authoring_settings=authoring_settings)
    _, round_id = enqueued.pop(0)
    services.round_run(round_id=round_id)
    assert enqueued == [("apps.authoring.jobs.review_round", round_id)]
    enqueued.clear()
    reviewer.review_hang_seconds = 5  # the reviewer's model sends nothing for 5 s
    review_row = services.review_run(round_id=round_id)
    assert review_row.verdict == Verdict.FAILED and review_row.notes == "no output for 1 s; stopped"
    task.refresh_from_db()
    assert task.state == TaskState.AUTHORING
    assert AuthoringRound.objects.get(task=task, number=2).feedback.startswith("Verdict: failed. no output for 1 s")
