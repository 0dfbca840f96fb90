"""End to end on podman: a task authored from a generated repository (apps.tasks, SelfBench's verifier), approved;
a repo ablation whose script removes README.md builds its task version (the file is gone in the built image and the
oracle still passes); then a comparison with the baseline, one harness (extra instructions) and that ablation runs
the task under four configurations: scripted model → gateway (real uvicorn) → terminus-2 → the task in podman.
Nothing of ours is mocked; only the model provider is a double."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ablations import jobs as ablation_jobs
from apps.ablations.models import BuildState, EnvironmentBuild
from apps.harnesses import services as harness_services
from apps.repositories.models import Repository
from apps.runs import jobs as run_jobs
from apps.runs.models import Trial, TrialStatus
from apps.tasks import authoring
from apps.tasks import jobs as task_jobs
from apps.tasks import services as task_services
from apps.tasks.models import Task, TaskState
from selfbench import harbor_adapter
from selfbench.harbor_adapter import AgentSpec
from tests.doubles.terminus_model import TerminusModel
from tests.factories import make_api_key
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401  (fixtures)
from tests.harbor.test_adapter import _require_containers
from tests.tasks.gitrepo import GOOD_IMPL, make_calc_repo

pytestmark = [pytest.mark.containers]

HARNESS_NOTE = "HARNESS-NOTE: before you finish, list the files in /app."
# README.md is gone, the code is there, the script is not, and git shows the agent a clean tree at its base commit.
CHECK_GONE = (
    "test ! -e /app/README.md && test -f /app/calc/core.py && test ! -e /tmp/selfbench-ablation.sh"
    ' && test -z "$(git -C /app status --porcelain)"'
)
# What the scripted model types: the good PR's functions, then a listing of /app.
SOLVE_CALC = [f"cat >> /app/calc/core.py <<'PY'\n{GOOD_IMPL}\nPY\n", "ls -1 /app\n"]


@pytest.fixture(scope="module")
def model() -> Iterator[TerminusModel]:
    # Solve the task, then list /app: the listing shows in each trial's transcript which image it ran in.
    server = TerminusModel(SOLVE_CALC).start()
    yield server
    server.stop()


@pytest.fixture
def live(gw: Gateway, model: TerminusModel, settings: Any, tmp_path: Path) -> Gateway:  # noqa: F811
    _require_containers()
    settings.OPENAI_BASE_URL = model.url
    settings.GATEWAY_PUBLIC_URL = f"{gw.url}/gateway"
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HARBOR_TRIALS_DIR = tmp_path / "media" / "trials"
    settings.RUNS_SANDBOXES = ["podman"]
    return gw


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Ids the services enqueued (the worker would pick them up; the test runs the jobs itself)."""
    ids: dict[str, list[int]] = {"builds": [], "trials": []}
    monkeypatch.setattr(ablation_jobs, "async_task", lambda func, pk, **kw: ids["builds"].append(pk))
    monkeypatch.setattr(run_jobs, "async_task", lambda func, pk, **kw: ids["trials"].append(pk))
    monkeypatch.setattr(task_jobs, "async_task", lambda *a, **kw: None)
    return ids


def _approved_calc_task(workspace: Any, repository: Repository, tmp_path: Path) -> Task:
    """The generated repository's good PR, authored for real (discovery run in podman); its gates are apps.tasks'
    own e2e test's business, so here a person approves it once authoring has verified files."""
    repo, prs = make_calc_repo(tmp_path / "calc")
    pr = prs["good"]
    source = authoring.PullRequestSource(repo, pr.base_sha, pr.head_sha, pr.title, pr.body, pr.number, "acme/calc")
    task = task_services.task_author(task=task_services.task_create(workspace=workspace, source=source))
    assert task.state == TaskState.VERIFYING, task.reason
    Task.objects.filter(pk=task.pk).update(repository=repository)
    task = task_services.task_set_state(task=task, state=TaskState.AWAITING_APPROVAL, reason="verified")
    return task_services.task_approve(task=task, user=None, note="looks right")


def _command(task_dir: Path, name: str, tmp_path: Path) -> int | None:
    outcome = harbor_adapter.run_trial(
        task_dir=task_dir,
        agent=AgentSpec(name="command", options={"command": CHECK_GONE}),
        trial_name=name,
        trials_dir=tmp_path / "checks",
        disable_verifier=True,
    )
    return outcome.agent_exit_code


def test_an_ablation_builds_its_task_and_a_comparison_runs_four_configurations(
    live: Gateway, queued: dict[str, list[int]], tmp_path: Path
) -> None:
    workspace = live.workspace
    repository = Repository.objects.create(workspace=workspace, kind="local", location=str(tmp_path / "repo"))
    task = _approved_calc_task(workspace, repository, tmp_path)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(workspace=workspace).raw}")
    base = f"/api/w/{workspace.slug}"

    # 1. The ablation, through the API; its one build runs as the worker would run it.
    r = client.post(
        f"{base}/repositories/{repository.pk}/environments",
        {"name": "No README", "script": "rm -f README.md"},
        format="json",
    )
    assert r.status_code == 201, r.json()
    environment_id = r.json()["id"]
    assert len(queued["builds"]) == 1
    started = time.monotonic()
    ablation_jobs.environment_build(queued["builds"][0])
    build_seconds = time.monotonic() - started
    build = EnvironmentBuild.objects.get(pk=queued["builds"][0])
    assert build.state == BuildState.READY, (build.reason, build.log[-3000:])
    assert build.details["oracle"]["status"] == "passed"  # the reference solution still passes
    status = client.get(f"{base}/environments/{environment_id}/tasks").json()
    assert [(s["taskId"], s["state"]) for s in status] == [(task.pk, "ready")]
    built = build.version
    assert built is not None and built.pk != task.version_id

    # The file is gone in the built image (and the script with it), and still there in the task's own image.
    assert _command(built.path, "ablation-check-built", tmp_path) == 0
    assert _command(task.version.path, "ablation-check-base", tmp_path) == 1  # type: ignore[union-attr]

    # 2. A comparison: baseline + one harness (extra instructions) + that ablation → four configurations.
    harness = harness_services.harness_create(
        workspace=workspace, name="Lists files", agent="terminus-2", instructions=HARNESS_NOTE
    )
    body = {
        "id": "7a2d2c1e-5b0e-4f5a-9c7e-1d2e3f4a5b6c",
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
        "harnesses": [str(harness.pk)],
        "environments": [str(environment_id)],
    }
    r = client.post(f"{base}/evaluations/comparisons", body, format="json")
    assert r.status_code == 202, r.json()
    trials = {t.configuration_label: t for t in Trial.objects.filter(evaluation__comparison__client_id=body["id"])}
    assert sorted(trials) == ["Baseline", "Lists files", "Lists files · No README", "No README"]
    # Dispatch respects the sandbox's limits: run what is enqueued until every trial ran.
    started = time.monotonic()
    done: set[int] = set()
    while len(done) < 4:
        pending = [pk for pk in queued["trials"] if pk not in done]
        assert pending, "no trial was dispatched"
        for pk in pending:
            run_jobs.trial_execute(pk)
            done.add(pk)
    trial_seconds = time.monotonic() - started

    for label, trial in trials.items():
        trial.refresh_from_db()
        assert trial.status == TrialStatus.COMPLETED, (label, trial.exception_type, trial.exception_message)
        assert trial.reward == 1.0, label
        with_harness = label.startswith("Lists files")
        in_ablation = label.endswith("No README")
        # The changed instruction is in the trial's record: the prompt terminus-2 sent, in its transcript.
        assert (HARNESS_NOTE in trial.transcript) is with_harness, label
        assert (trial.spec["harness"] is not None) is with_harness, label
        # The changed image is in the trial's record: its task version and directory, and the listing of /app.
        assert (trial.task_version_id == built.pk) is in_ablation, label
        assert (trial.task_dir == str(built.path)) is in_ablation, label
        dockerfile = (Path(trial.task_dir) / "environment" / "Dockerfile").read_text()
        assert ("bash -e /tmp/selfbench-ablation.sh" in dockerfile) is in_ablation, label
        assert "calc" in trial.transcript, label
        assert ("README.md" in trial.transcript) is not in_ablation, label
    print(f"\nablation build + oracle: {build_seconds:.1f} s; four terminus-2 trials: {trial_seconds:.1f} s")
