"""Results API: shape (camelCase), filters, paired comparison, reliability, workspace scoping."""

from __future__ import annotations

from tests.factories import make_workspace
from tests.results.factories import make_repository, make_task

BASE = "gpt-5|terminus-2|medium"


def test_results_api_shape_and_incomplete_cost(api, workspace, lab, repo) -> None:  # type: ignore[no-untyped-def]
    t1, t2 = make_task(repository=repo), make_task(repository=repo)
    lab.trial(t1, reward=1.0, cost="0.25")
    lab.trial(t2, reward=0.0, cost="0.75")
    lab.trial(t1, model="cheap", reward=1.0, cost=None)
    r = api.get(f"/api/w/{workspace.slug}/results", {"repository": repo.pk})
    assert r.status_code == 200
    body = r.json()
    assert body["countedTasks"] == 2
    by_id = {c["id"]: c for c in body["configurations"]}
    base = by_id[BASE]
    assert (base["tasks"], base["passed"], base["accuracy"]) == (2, 1, 0.5)
    assert base["costPerTaskUsd"] == "0.500000" and base["totalCostUsd"] == "1.000000"
    assert set(base["accuracyInterval"]) == {"low", "high"}
    assert base["tokens"]["input"] == 2000 and base["onFrontier"] is True
    cheap = by_id["cheap|terminus-2|medium"]
    assert cheap["costComplete"] is False and cheap["costPerTaskUsd"] is None and cheap["unpricedTasks"] == 1
    assert body["frontier"] == [BASE]


def test_results_api_filters(api, workspace, lab, repo) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo)
    lab.trial(task)
    lab.trial(task, key="environment:3", environment_id="3")
    url = f"/api/w/{workspace.slug}/results"
    ids = [c["id"] for c in api.get(url, {"repository": repo.pk, "environment": "3"}).json()["configurations"]]
    assert ids == ["gpt-5|terminus-2|medium|environment:3"]
    ids = [c["id"] for c in api.get(url, {"repository": repo.pk, "configuration": BASE}).json()["configurations"]]
    assert ids == [BASE]
    assert api.get(url, {"repository": repo.pk, "model": "other"}).json()["configurations"] == []
    assert api.get(url).status_code == 400


def test_results_of_another_workspaces_repository_are_404(api, workspace) -> None:  # type: ignore[no-untyped-def]
    other = make_repository(workspace=make_workspace())
    assert api.get(f"/api/w/{workspace.slug}/results", {"repository": other.pk}).status_code == 404


def test_results_need_a_key(client, workspace, repo) -> None:  # type: ignore[no-untyped-def]
    assert client.get(f"/api/w/{workspace.slug}/results", {"repository": repo.pk}).status_code in (401, 403)


def test_paired_and_reliability_api(api, workspace, lab, repo) -> None:  # type: ignore[no-untyped-def]
    tasks = [make_task(repository=repo) for _ in range(3)]
    for i, task in enumerate(tasks):
        lab.trial(task, model="a", reward=1.0)
        lab.trial(task, model="b", reward=1.0 if i == 0 else 0.0)
    lab.trial(tasks[1], model="a", reward=0.0)
    lab.trial(tasks[1], model="a", reward=1.0)
    r = api.get(
        f"/api/w/{workspace.slug}/results/paired",
        {"repository": repo.pk, "a": "a|terminus-2|medium", "b": "b|terminus-2|medium"},
    ).json()
    assert (r["tasks"], r["wins"], r["losses"], r["tiesPassed"], r["tiesFailed"]) == (3, 2, 0, 1, 0)
    assert r["pValue"] == 0.5
    rel = api.get(
        f"/api/w/{workspace.slug}/results/reliability",
        {"repository": repo.pk, "configuration": "a|terminus-2|medium", "flakyOnly": "true"},
    ).json()
    assert (rel["tasks"], rel["repeatedTasks"], rel["flakyTasks"]) == (3, 1, 1)
    assert rel["perTask"] == [{"taskId": tasks[1].pk, "attempts": 3, "passed": 2, "passRate": 2 / 3, "flaky": True}]


def test_results_api_query_count_is_constant(api, workspace, lab, repo, django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    for _ in range(5):
        task = make_task(repository=repo)
        for model in ("a", "b", "c"):
            lab.trial(task, model=model)
    api.get(f"/api/w/{workspace.slug}/results", {"repository": repo.pk})  # rebuilds the changed tasks once
    # key lookup, membership, repository, then the change check and one aggregate whatever the size
    with django_assert_max_num_queries(5):
        assert api.get(f"/api/w/{workspace.slug}/results", {"repository": repo.pk}).status_code == 200
