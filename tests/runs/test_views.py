"""The Run page, comparison and trial pages: same body and service as the API, errors inline, live progress."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.runs import services
from apps.runs.models import Comparison, Trial, TrialStatus
from tests.factories import make_workspace
from tests.runs.conftest import Setup

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def post_data(setup: Setup, *rows: dict[str, Any], action: str = "full", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "sandbox": "podman",
        "sandbox_credential_id": "",
        "tasks": [str(t.pk) for t in setup.tasks],
        "action": action,
        "models-TOTAL_FORMS": str(len(rows)),
        "models-INITIAL_FORMS": "0",
        "models-MIN_NUM_FORMS": "1",
        "models-MAX_NUM_FORMS": "12",
    }
    for i, row in enumerate(rows):
        data.update({f"models-{i}-{k}": v for k, v in row.items()})
    data.update(extra)
    return data


def row(setup: Setup, **overrides: Any) -> dict[str, Any]:
    return {"catalog_id": "gpt-5-mini", "credential_id": str(setup.openai.pk), "harnesses": ["terminus-2"]} | overrides


def test_run_page_offers_models_credentials_sandboxes_and_approved_tasks(
    client: Client, setup: Setup, workspace: Any
) -> None:
    r = client.get(reverse("runs:start", args=[workspace.slug]))
    assert r.status_code == 200 and r.templates[0].name == "runs/run_page.html"
    page = r.content.decode()
    assert page.count('data-testid="model-row"') == 1
    assert 'value="gpt-5-mini"' in page and f'value="{setup.openai.pk}"' in page and 'value="managed-model"' in page
    assert 'value="terminus-2"' in page and "Podman (this machine)" in page
    for task in setup.tasks:
        assert f'value="{task.pk}"' in page and task.title in page
    assert "Run Full Comparison" in page and "Run Missing Tasks" in page


def test_run_page_without_approved_tasks_says_where_to_get_them(client: Client, workspace: Any) -> None:
    page = client.get(reverse("runs:start", args=[workspace.slug])).content.decode()
    assert "No approved tasks yet" in page and reverse("tasks:list", args=[workspace.slug]) in page


def test_run_full_comparison_starts_the_same_comparison_as_the_api(
    client: Client, setup: Setup, workspace: Any
) -> None:
    data = post_data(setup, row(setup), row(setup, catalog_id="gpt-5", harnesses=["terminus-2", "codex"]))
    r = client.post(reverse("runs:start", args=[workspace.slug]), data)
    comparison = Comparison.objects.get(workspace=workspace)
    assert r.status_code == 302
    assert r["Location"] == reverse("runs:comparison", args=[workspace.slug, comparison.client_id])
    assert str(comparison.client_id) == data["id"] and comparison.skip_completed is False
    assert [m["catalogId"] for m in comparison.body["models"]] == ["gpt-5-mini", "gpt-5"]
    assert comparison.body["tasks"] == [{"runId": None, "taskId": t.pk} for t in setup.tasks]
    # The API's serializer filled in its defaults, so the stored body is the API's normalized body.
    assert comparison.body["baseline"] is True and comparison.body["harnesses"] == []
    assert Trial.objects.filter(evaluation__comparison=comparison).count() == 2 * 1 + 2 * 2
    # Resubmitting the same page (same id, same body) does not start a second comparison.
    client.post(reverse("runs:start", args=[workspace.slug]), data)
    assert Comparison.objects.count() == 1


def test_the_same_model_twice_and_run_missing_tasks(client: Client, setup: Setup, workspace: Any) -> None:
    data = post_data(setup, row(setup), row(setup, thinking="low"), action="missing")
    assert client.post(reverse("runs:start", args=[workspace.slug]), data).status_code == 302
    comparison = Comparison.objects.get()
    assert comparison.skip_completed is True
    assert [e.catalog_id for e in comparison.evaluations.all()] == ["gpt-5-mini", "gpt-5-mini"]


def test_rule_errors_are_listed_inline_and_nothing_starts(client: Client, setup: Setup, workspace: Any) -> None:
    # An OpenAI credential cannot serve an Anthropic model: the service's rule, shown on the form.
    bad = row(setup, catalog_id="claude-sonnet-4-5")
    r = client.post(reverse("runs:start", args=[workspace.slug]), post_data(setup, bad), **HX)
    assert r.status_code == 200 and r.templates[0].name == "runs/partials/run_form.html"
    page = r.content.decode()
    assert b"<html" not in r.content and "The comparison was not started" in page and "models.0.credentialId" in page
    r = client.post(reverse("runs:start", args=[workspace.slug]), post_data(setup, bad))
    assert r.status_code == 200 and b"<html" in r.content and "models.0.credentialId" in r.content.decode()
    assert not Comparison.objects.exists()


def test_shape_errors_are_inline_too(client: Client, setup: Setup, workspace: Any) -> None:
    r = client.post(reverse("runs:start", args=[workspace.slug]), post_data(setup, row(setup, harnesses=[]), tasks=[]))
    assert r.status_code == 200
    assert r.content.decode().count("This field is required.") == 2  # the row's harnesses, the Tasks box
    assert not Comparison.objects.exists()


def test_add_a_model_row_keeps_what_was_entered(client: Client, setup: Setup, workspace: Any) -> None:
    data = post_data(setup, row(setup, catalog_id="gpt-5"), action="add_row")
    r = client.post(reverse("runs:start", args=[workspace.slug]), data, **HX)
    page = r.content.decode()
    assert r.status_code == 200 and page.count('data-testid="model-row"') == 2
    assert '<option value="gpt-5" selected>' in page and not Comparison.objects.exists()


def _start(setup: Setup) -> Comparison:
    return services.comparison_start(
        workspace=setup.workspace,
        body={
            "id": str(uuid.uuid4()),
            "models": [{"catalogId": "gpt-5-mini", "credentialId": str(setup.openai.pk), "harnesses": ["terminus-2"]}],
            "sandbox": "podman",
            "sandboxCredentialId": None,
            "tasks": [{"runId": None, "taskId": t.pk} for t in setup.tasks],
            "skipCompleted": False,
            "judgeCredentialId": None,
            "harnesses": [],
            "environments": [],
            "baseline": True,
            "conditions": None,
        },
        created_by=None,
    )


def test_comparison_page_shows_progress_and_the_fragment_stops_polling_when_it_ends(
    client: Client, setup: Setup, workspace: Any
) -> None:
    comparison = _start(setup)
    first = Trial.objects.filter(evaluation__comparison=comparison).first()
    assert first is not None
    Trial.objects.filter(pk=first.pk).update(status=TrialStatus.COMPLETED, reward=1.0)
    r = client.get(reverse("runs:comparison", args=[workspace.slug, comparison.client_id]))
    page = r.content.decode()
    assert r.status_code == 200 and "1 of 2 trials done" in page and "gpt-5-mini" in page
    assert 'aria-valuenow="1"' in page and "incomplete" in page  # no cost yet: never $0
    url = reverse("runs:comparison_progress", args=[workspace.slug, comparison.client_id])
    r = client.get(url, **HX)
    assert r.status_code == 200 and b"<html" not in r.content and b'hx-trigger="every 2s"' in r.content
    assert (
        client.post(reverse("runs:comparison_cancel", args=[workspace.slug, comparison.client_id])).status_code == 302
    )
    r = client.get(url, **HX)
    assert r.status_code == 286 and b"Cancelled" in r.content and b"every 2s" not in r.content


def test_trial_page_shows_reward_cost_tokens_and_model_check(client: Client, setup: Setup, workspace: Any) -> None:
    comparison = _start(setup)
    trial = Trial.objects.filter(evaluation__comparison=comparison).first()
    assert trial is not None
    url = reverse("runs:trial", args=[workspace.slug, trial.uuid])
    page = client.get(url).content.decode()
    assert "incomplete" in page and "$0" not in page and "not verified" in page
    Trial.objects.filter(pk=trial.pk).update(
        status=TrialStatus.COMPLETED,
        reward=1.0,
        cost_usd=Decimal("0.01234"),
        cost_complete=True,
        input_tokens=1200,
        output_tokens=80,
        model_verified=True,
        transcript="assistant: I fixed the greeting",
    )
    trial.artifacts.create(name="agent/terminus-2.log", size=12, content="step 1: ls")
    page = client.get(url).content.decode()
    assert "$0.0123" in page and "1200" in page and ">verified<" in page
    assert "I fixed the greeting" in page and "agent/terminus-2.log" in page and "step 1: ls" in page


def test_comparison_of_another_workspace_is_404(client: Client, workspace: Any, tmp_path: Any) -> None:
    from tests.runs.conftest import make_setup

    comparison = _start(make_setup(make_workspace(), tmp_path))
    assert client.get(reverse("runs:comparison", args=[workspace.slug, comparison.client_id])).status_code == 404


def test_comparison_list_runs_a_fixed_number_of_queries(
    client: Client, setup: Setup, workspace: Any, django_assert_num_queries: Any
) -> None:
    for _ in range(3):
        _start(setup)
    url = reverse("runs:list", args=[workspace.slug])
    client.get(url)
    with django_assert_num_queries(5):  # session, user, membership, comparisons (with created_by), evaluations
        r = client.get(url)
    assert r.status_code == 200 and r.content.decode().count("gpt-5-mini") == 3


def test_a_saved_harness_per_row_and_repo_ablations_go_into_the_body(
    client: Client, setup: Setup, workspace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.ablations import jobs as ablation_jobs
    from apps.ablations import services as ablation_services
    from apps.harnesses import services as harness_services
    from apps.repositories.models import Repository

    monkeypatch.setattr(ablation_jobs, "async_task", lambda *a, **kw: None)
    harness = harness_services.harness_create(workspace=workspace, name="Terse", agent="terminus-2", instructions="x")
    repository = Repository.objects.create(workspace=workspace, kind="local", location="/srv/repo")
    environment = ablation_services.environment_create(repository=repository, name="No notes", script="true")
    page = client.get(reverse("runs:start", args=[workspace.slug])).content.decode()
    assert "Terse (terminus-2)" in page and "No notes (/srv/repo)" in page
    data = post_data(setup, row(setup), row(setup, harness=str(harness.pk)), environments=[str(environment.pk)])
    r = client.post(reverse("runs:start", args=[workspace.slug]), data)
    assert r.status_code == 302, r.content.decode()
    comparison = Comparison.objects.get()
    assert [m["harness"] for m in comparison.body["models"]] == [None, str(harness.pk)]
    assert comparison.body["environments"] == [str(environment.pk)]


def test_blank_extra_rows_and_junk_counts_are_not_server_errors(client: Client, setup: Setup, workspace: Any) -> None:
    url = reverse("runs:start", args=[workspace.slug])
    data = post_data(setup, row(setup), {})  # a second row left blank
    assert client.post(url, data).status_code == 302
    assert len(Comparison.objects.get().body["models"]) == 1
    junk = post_data(setup, row(setup), action="add_row") | {"models-TOTAL_FORMS": "x"}
    assert client.post(url, junk).status_code == 200


def test_a_large_comparison_lists_only_its_first_trials(
    client: Client, setup: Setup, workspace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.runs import views

    monkeypatch.setattr(views, "TRIALS_SHOWN", 1)
    comparison = _start(setup)
    page = client.get(reverse("runs:comparison", args=[workspace.slug, comparison.client_id])).content.decode()
    assert "The first 1 of 2 trials" in page and page.count(">Trial</a>") == 1
