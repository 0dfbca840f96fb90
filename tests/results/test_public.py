"""Public results: no login, the reference shape, ETag/304, Cache-Control, 404, 429 — and nothing unpublished."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from apps.results import services
from tests.results.factories import make_task

A, B = "a|terminus-2|medium", "b|terminus-2|medium"


@pytest.fixture
def released(api, workspace, repo, lab):  # type: ignore[no-untyped-def]
    tasks = [make_task(repository=repo, title=f"SECRET-TITLE-{i}") for i in range(3)]
    for task in tasks:
        lab.trial(task, model="a", reward=1.0, cost="0.10")
        lab.trial(task, model="b", reward=0.0, cost="0.01")
        lab.trial(task, model="secret-model", reward=1.0)  # not chosen: must never appear
        lab.trial(task, model="a", key="harness:h", harness_id="9")  # not baseline: must never appear
    unreleased = make_task(repository=repo, title="SECRET-UNRUN")
    lab.trial(unreleased, model="a")  # run only by a: outside the shared set
    p = api.get(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases/preview").json()
    r = api.post(
        f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases",
        {"settings": [A, B], "head": p["head"], "fingerprint": p["fingerprint"]},
        format="json",
    )
    assert r.status_code == 201
    cache.clear()
    return r.json()


def test_repository_results_need_no_login_and_have_the_reference_shape(repo, released) -> None:  # type: ignore[no-untyped-def]
    r = APIClient().get(f"/api/public/results/{repo.full_name}")
    assert r.status_code == 200
    line = r.json()["lines"][0]
    release = line["release"]
    assert release["releaseId"] == released["id"] and release["schemaVersion"] == 1
    assert release["repository"]["fullName"] == repo.full_name and release["tasks"] == 3
    a = next(s for s in release["settings"] if s["id"] == A)
    assert {"model", "harness", "reasoningLevel", "provider", "custom", "tasks", "passed", "accuracy"} <= set(a)
    assert (a["accuracy"], a["costPerTaskUsd"], a["totalCostUsd"], a["onFrontier"]) == (100.0, 0.1, 0.3, True)
    assert set(release["frontier"]) == {A, B} and line["endorsed"] is False
    assert r["Cache-Control"] == "public, max-age=60, s-maxage=10" and r["ETag"]


def test_nothing_unpublished_leaks(repo, released, lab) -> None:  # type: ignore[no-untyped-def]
    lab.trial(make_task(repository=repo, title="SECRET-LATER"), model="later-model")  # after the release
    client = APIClient()
    text = client.get(f"/api/public/results/{repo.full_name}").content.decode()
    text += client.get("/api/public/results").content.decode()
    for secret in (
        "secret-model",
        "harness:h",
        "SECRET",
        "later-model",
        "transcript",
        "costUsd",
        str(repo.workspace.slug),
    ):
        assert secret not in text, secret


def test_etag_gives_304(repo, released) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    first = client.get(f"/api/public/results/{repo.full_name}")
    again = client.get(f"/api/public/results/{repo.full_name}", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again["ETag"] == first["ETag"]


def test_404_when_nothing_released_or_withdrawn(repo, released) -> None:  # type: ignore[no-untyped-def]
    from apps.results.models import Release

    client = APIClient()
    assert client.get("/api/public/results/nobody/nothing").status_code == 404
    services.release_withdraw(release=Release.objects.get(pk=released["id"]))
    cache.clear()
    assert client.get(f"/api/public/results/{repo.full_name}").status_code == 404
    assert client.get("/api/public/results").json() == {"cards": []}


def test_cards_list_released_repositories(repo, released) -> None:  # type: ignore[no-untyped-def]
    cards = APIClient().get("/api/public/results").json()["cards"]
    assert len(cards) == 1
    card = cards[0]
    assert card["repository"]["fullName"] == repo.full_name and card["settings"] == 2 and card["tasks"] == 3
    assert {p["role"]: p["id"] for p in card["picks"]} == {"cheapest": B, "mostAccurate": A}
    assert card["defaultLine"] == released["id"]


def test_rate_limit_answers_429_with_retry_after(settings, repo, released) -> None:  # type: ignore[no-untyped-def]
    settings.PUBLIC_RESULTS_BURST = 3
    settings.PUBLIC_RESULTS_RATE_PER_MINUTE = 6
    client = APIClient()
    codes = [client.get("/api/public/results").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    r = client.get("/api/public/results")
    assert r.status_code == 429 and int(r["Retry-After"]) >= 1
    other = APIClient(REMOTE_ADDR="10.9.9.9")
    assert other.get("/api/public/results").status_code == 200


def give_files(task, files: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """Write the task's version files (a Harbor task directory) where the release reads them."""
    for name, text in files.items():
        path = task.version.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def harbor_task(i: str) -> dict[str, str]:
    return {
        "instruction.md": f"Make greet() return hello (INSTRUCTION-{i}).\n",
        "task.toml": "[verifier]\ntimeout_sec = 120.0\n",
        "environment/Dockerfile": f"FROM base\nCOPY repo.tar /app/ # ENVIRONMENT-{i}\n",
        "tests/test_greeting.py": f"def test_greet(): assert greet() == 'hello'  # HIDDEN-TEST-{i}\n",
        "tests/run-tests.sh": f"pytest /tests  # HIDDEN-RUNNER-{i}\n",
        "solution/solve.sh": f"echo fixed  # REFERENCE-SOLUTION-{i}\n",
        "solution/gold.patch": f"+return 'hello'  # GOLD-PATCH-{i}\n",
    }


def test_publish_tasks_makes_instructions_public_and_never_tests_or_solutions(api, workspace, repo, lab) -> None:  # type: ignore[no-untyped-def]
    released = [make_task(repository=repo, title=f"Released {i}") for i in range(2)]
    outside = make_task(repository=repo, title="SECRET-OUTSIDE")  # approved, but only one setting ran it
    for i, task in enumerate(released):
        give_files(task, harbor_task(str(i)))
        lab.trial(task, model="a")
        lab.trial(task, model="b", reward=0.0)
    give_files(outside, harbor_task("OUTSIDE"))
    lab.trial(outside, model="a")
    p = api.get(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases/preview").json()
    body = {"settings": [A, B], "head": p["head"], "fingerprint": p["fingerprint"], "publishTasks": True}
    assert api.post(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases", body, format="json").status_code == 201
    cache.clear()
    client = APIClient()
    public = client.get(f"/api/public/results/{repo.full_name}")
    task_list = public.json()["lines"][0]["release"]["taskList"]
    assert [(t["taskId"], t["title"], t["instruction"]) for t in task_list] == [
        (task.pk, f"Released {i}", f"Make greet() return hello (INSTRUCTION-{i}).\n") for i, task in enumerate(released)
    ]
    assert (
        task_list[0]["baseSha"] == released[0].base_sha
        and task_list[0]["contentHash"] == released[0].version.content_hash
    )
    text = public.content.decode() + client.get("/api/public/results").content.decode()
    for secret in ("HIDDEN-TEST", "HIDDEN-RUNNER", "REFERENCE-SOLUTION", "GOLD-PATCH", "ENVIRONMENT", "OUTSIDE"):
        assert secret not in text, secret


def test_without_publish_tasks_no_task_text_is_public(api, workspace, repo, lab) -> None:  # type: ignore[no-untyped-def]
    task = make_task(repository=repo, title="SECRET-TITLE")
    give_files(task, harbor_task("0"))
    lab.trial(task, model="a")
    p = api.get(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases/preview").json()
    body = {"settings": [A], "head": p["head"], "fingerprint": p["fingerprint"]}
    assert api.post(f"/api/w/{workspace.slug}/repositories/{repo.pk}/releases", body, format="json").status_code == 201
    cache.clear()
    text = APIClient().get(f"/api/public/results/{repo.full_name}").content.decode()
    assert "taskList" not in text
    for secret in ("SECRET-TITLE", "INSTRUCTION", "HIDDEN-TEST", "REFERENCE-SOLUTION", "GOLD-PATCH"):
        assert secret not in text, secret
