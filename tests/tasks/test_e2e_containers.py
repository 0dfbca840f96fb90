"""End to end on real podman through Harbor: three PRs of a generated repository → one verified task and two
rejections (oracle, determinism) with reasons; the exported task runs with Harbor's oracle straight from the archive."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from apps.tasks import authoring, export, services
from apps.tasks.models import GATE_ORDER, GateStatus, Task, TaskState
from selfbench import harbor_adapter
from tests.tasks.gitrepo import make_calc_repo

pytestmark = [pytest.mark.containers, pytest.mark.django_db(transaction=True)]


def drive(task: Task) -> Task:
    """What the job chain does, in order, in this process."""
    task = services.task_author(task=task)
    for gate in GATE_ORDER:
        if task.state != TaskState.VERIFYING:
            break
        task = services.task_run_gate(task=task, gate=str(gate))
    task.refresh_from_db()
    return task


def test_three_prs_give_one_verified_task_and_two_rejections(workspace, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HARBOR_TRIALS_DIR = tmp_path / "trials"
    settings.TASKS_DETERMINISM_RUNS = 3
    repo, prs = make_calc_repo(tmp_path)
    tasks = {}
    for kind, pr in prs.items():
        source = authoring.PullRequestSource(repo, pr.base_sha, pr.head_sha, pr.title, pr.body, pr.number, "acme/calc")
        tasks[kind] = drive(services.task_create(workspace=workspace, source=source, tier_requested="easy"))

    good, bad, flaky = tasks["good"], tasks["bad_gold"], tasks["flaky"]
    assert good.state == TaskState.AWAITING_APPROVAL, good.reason
    assert [r.gate for r in good.gate_runs.exclude(gate="discovery")] == [str(g) for g in GATE_ORDER]
    assert all(r.status == GateStatus.PASSED and r.duration_sec and r.log for r in good.gate_runs.all())
    assert good.flake_rate == 0.0

    assert bad.state == TaskState.FAILED
    assert bad.reason.startswith("oracle gate: the reference patch does not make the selected tests pass")
    assert "tests/test_power.py::test_power" in bad.reason

    assert flaky.state == TaskState.FAILED
    assert flaky.reason.startswith("determinism gate: passed 1 of 3 runs")
    assert "test_cache_warms_once" in flaky.reason
    assert flaky.gate_runs.get(gate="determinism").flake_rate == pytest.approx(2 / 3)

    # The approved task exported and run by Harbor's oracle straight from the archive.
    good = services.task_approve(task=good, user=None, note="looks right")
    archive = export.export_tasks(tasks=[good], dest=tmp_path / "export.tar.gz")
    out = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    manifest = json.loads((out / "manifest.json").read_text())
    (entry,) = manifest["tasks"]
    with tarfile.open(out / entry["archive"]) as tar:
        tar.extractall(out / "task", filter="data")
    outcome = harbor_adapter.run_trial(
        task_dir=out / "task" / "harbor-task",
        agent=harbor_adapter.AgentSpec(name="oracle"),
        trial_name="exported-oracle",
    )
    assert outcome.reward == 1.0, outcome.exception_message
