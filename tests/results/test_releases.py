"""Releases: preview, publish 201 / 200 unchanged / 409 stale with a fresh preview / 400 invalid, withdraw."""

from __future__ import annotations

import pytest

from apps.repositories.models import Repository, RepositoryKind
from apps.results.models import Release, ReleaseWithdrawal
from apps.tasks.models import Task, TaskVersion
from tests.results.factories import make_repository, make_task

A, B, H = "a|terminus-2|medium", "b|terminus-2|medium", "a|terminus-2|medium|harness:x"


@pytest.fixture
def scored(lab, repo):  # type: ignore[no-untyped-def]
    """Three approved tasks: a scored on all three, b on two; a harness run of a; one task nobody ran."""
    tasks = [make_task(repository=repo) for _ in range(4)]
    for i, task in enumerate(tasks[:3]):
        lab.trial(task, model="a", reward=1.0, cost="0.10")
        if i < 2:
            lab.trial(task, model="b", reward=1.0 if i == 0 else 0.0, cost="0.02")
        lab.trial(task, model="a", key="harness:x", harness_id="1", reward=1.0)
    return tasks


def url(ws, repo, tail=""):  # type: ignore[no-untyped-def]
    return f"/api/w/{ws.slug}/repositories/{repo.pk}/releases{tail}"


def publish(api, ws, repo, settings, preview=None, **extra):  # type: ignore[no-untyped-def]
    preview = preview or api.get(url(ws, repo, "/preview")).json()
    body = {"settings": settings, "head": preview["head"], "fingerprint": preview["fingerprint"], **extra}
    return api.post(url(ws, repo), body, format="json")


def test_preview_lists_baseline_candidates_with_coverage(api, workspace, repo, scored) -> None:  # type: ignore[no-untyped-def]
    p = api.get(url(workspace, repo, "/preview")).json()
    assert p["tasks"] == sorted(t.pk for t in scored)
    cover = {s["id"]: s["coverage"] for s in p["settings"]}
    assert cover == {A: {"tasks": 3, "of": 4}, B: {"tasks": 2, "of": 4}}  # the harness run is not a candidate
    assert p["unrunTasks"] == [scored[3].pk]
    assert len(p["fingerprint"]) == 64 and p["current"] is None


def test_publish_201_then_200_unchanged(api, workspace, repo, scored) -> None:  # type: ignore[no-untyped-def]
    r = publish(api, workspace, repo, [A, B])
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["taskIds"] == [scored[0].pk, scored[1].pk]  # the tasks both have a result on
    doc = body["document"]
    assert doc["tasks"] == 2 and {s["id"] for s in doc["settings"]} == {A, B}
    a = next(s for s in doc["settings"] if s["id"] == A)
    assert (a["passed"], a["accuracy"], a["costPerTaskUsd"], a["totalCostUsd"]) == (2, 100.0, 0.1, 0.2)
    assert "resultsByTask" not in doc and "taskList" not in doc  # both off by default
    again = publish(api, workspace, repo, [A, B])
    assert again.status_code == 200 and again.json()["unchanged"] is True and again.json()["id"] == body["id"]
    assert Release.objects.count() == 1


def test_publish_is_409_with_a_fresh_preview_when_results_moved(api, workspace, repo, lab, scored) -> None:  # type: ignore[no-untyped-def]
    stale = api.get(url(workspace, repo, "/preview")).json()
    lab.trial(scored[2], model="b", reward=1.0)
    r = publish(api, workspace, repo, [A, B], preview=stale)
    assert r.status_code == 409
    fresh = r.json()["preview"]
    assert fresh["fingerprint"] != stale["fingerprint"]
    assert publish(api, workspace, repo, [A, B], preview=fresh).status_code == 201


@pytest.mark.parametrize(
    "chosen",
    [[], ["nobody|x|y"], [H]],  # nothing, unknown, and a harness configuration (releases publish only the baseline)
)
def test_publish_rejects_invalid_settings(api, workspace, repo, scored, chosen) -> None:  # type: ignore[no-untyped-def]
    assert publish(api, workspace, repo, chosen).status_code == 400


def test_publish_rejects_settings_with_no_shared_task(api, workspace, repo, lab) -> None:  # type: ignore[no-untyped-def]
    t1, t2 = make_task(repository=repo), make_task(repository=repo)
    lab.trial(t1, model="a")
    lab.trial(t2, model="b")
    r = publish(api, workspace, repo, [A, B])
    assert r.status_code == 400 and "share no" in r.json()["detail"]


@pytest.mark.parametrize("kind", ["private", "local"])
def test_only_public_github_repositories_are_released(api, workspace, lab, kind) -> None:  # type: ignore[no-untyped-def]
    if kind == "private":
        repo = make_repository(workspace=workspace, private=True)
    else:
        repo = Repository.objects.create(workspace=workspace, kind=RepositoryKind.LOCAL, location="/srv/x")
    lab.trial(make_task(repository=repo), model="a")
    assert publish(api, workspace, repo, [A]).status_code == 400
    assert Release.objects.count() == 0


def test_publish_options_add_tasks_and_per_task_results(api, workspace, repo, scored) -> None:  # type: ignore[no-untyped-def]
    r = publish(api, workspace, repo, [A, B], publishTasks=True, publishResultsByTask=True)
    doc = r.json()["document"]
    row = doc["resultsByTask"][1]
    assert (row["taskId"], row["passed"]) == (scored[1].pk, {A: True, B: False})
    # Nothing recorded beyond the reward: no per-test outcomes, test output or transcript.
    assert row["results"][B] == {
        "passed": False,
        "grading": {"reward": 0.0, "rewards": None, "tests": None, "runs": None, "passedRuns": None},
        "testOutput": None,
        "transcript": None,
    }
    assert [t["taskId"] for t in doc["taskList"]] == [scored[0].pk, scored[1].pk]
    assert doc["taskList"][0]["tests"] == {"files": [], "failToPass": [], "passToPass": []}  # no files on disk
    assert doc["taskList"][0]["solution"] == {"goldPatch": None, "solveScript": None}


def test_publish_is_409_when_a_task_version_changed_since_the_preview(api, workspace, repo, scored) -> None:  # type: ignore[no-untyped-def]
    """Publish Tasks makes a task's files public, so the preview's fingerprint covers each task's version."""
    stale = api.get(url(workspace, repo, "/preview")).json()
    task = scored[0]
    Task.objects.filter(pk=task.pk).update(
        version=TaskVersion.objects.create(task=task, content_hash="f" * 64, verified_at=task.version.verified_at)
    )
    r = publish(api, workspace, repo, [A, B], preview=stale, publishTasks=True)
    assert r.status_code == 409 and r.json()["preview"]["fingerprint"] != stale["fingerprint"]


def test_withdraw_appends_a_row_and_the_line_falls_back(api, workspace, repo, lab, scored) -> None:  # type: ignore[no-untyped-def]
    first = publish(api, workspace, repo, [A]).json()
    lab.trial(scored[0], model="a", reward=0.0)
    second = publish(api, workspace, repo, [A]).json()
    assert second["id"] != first["id"]
    r = api.post(f"/api/w/{workspace.slug}/releases/{second['id']}/withdraw", {"reason": "oops"}, format="json")
    assert r.status_code == 200 and r.json()["withdrawn"] is True
    assert api.post(f"/api/w/{workspace.slug}/releases/{second['id']}/withdraw").status_code == 409
    preview = api.get(url(workspace, repo, "/preview")).json()
    assert preview["current"]["id"] == first["id"]
    assert {s["id"]: s["preselected"] for s in preview["settings"]} == {A: True, B: False}  # B was declined
    assert Release.objects.count() == 2 and ReleaseWithdrawal.objects.count() == 1


def test_read_keys_cannot_publish(client, read_key, workspace, repo, scored) -> None:  # type: ignore[no-untyped-def]
    r = client.post(
        url(workspace, repo),
        {"settings": [A]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {read_key}",
    )
    assert r.status_code == 403
