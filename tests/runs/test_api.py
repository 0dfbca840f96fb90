"""The Evaluate API as specified: routes, the start body's every rule and limit, the matrix, camelCase replies."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.runs.configurations import EnvironmentSnapshot, HarnessSnapshot, SubagentChoice
from apps.runs.models import Comparison, Evaluation, Trial, TrialArtifact, TrialStatus
from apps.tasks.models import TaskState
from selfbench import harbor_adapter
from tests.factories import make_workspace
from tests.runs.conftest import Setup
from tests.runs.factories import greeting_files, make_approved_task, make_credential, make_task

pytestmark = pytest.mark.django_db


def url(setup: Setup, path: str) -> str:
    return f"/api/w/{setup.workspace.slug}/{path}"


def start(api: APIClient, setup: Setup, body: dict[str, Any]) -> Any:
    return api.post(url(setup, "evaluations/comparisons"), body, format="json")


def test_catalog_lists_models_sandboxes_and_harness_options(api: APIClient, setup: Setup) -> None:
    r = api.get(url(setup, "evaluations/catalog"))
    assert r.status_code == 200
    data = r.json()
    gpt = next(m for m in data["models"] if m["id"] == "gpt-5-mini")
    assert "terminus-2" in gpt["harnesses"] and "codex" in gpt["harnesses"]
    assert gpt["thinkingLevels"] and gpt["defaultThinking"]
    podman = next(s for s in data["sandboxes"] if s["id"] == "podman")
    assert podman["available"] is True
    assert podman["networkEnforced"]["terminus-2"] is True
    # Installed agents are held to the gateway when the adapter runs them from the local toolchain (with a relay);
    # muse-code cannot run here at all, so nothing holds it.
    capabilities = harbor_adapter.agent_capabilities("podman")
    assert podman["networkEnforced"]["claude-code"] is capabilities["claude-code"].gateway_only_network
    assert podman["networkEnforced"]["muse-code"] is False
    assert set(data["harnessOptions"]) == {"pi", "codex", "claude-code", "mini-swe-agent", "terminus-2", "muse-code"}
    assert "reasoning_effort" in data["harnessOptions"]["codex"]["properties"]


def test_options_lists_only_approved_tasks_with_run_ids(api: APIClient, setup: Setup, tmp_path: Path) -> None:
    make_task(workspace=setup.workspace, files=greeting_files(tmp_path))
    r = api.get(url(setup, "evaluations/options"))
    assert r.status_code == 200
    assert [t["taskId"] for t in r.json()["tasks"]] == [t.pk for t in setup.tasks]
    assert r.json()["judgeVariables"] == []


def test_start_replies_202_with_one_evaluation_per_model_and_every_trial(api: APIClient, setup: Setup) -> None:
    body = setup.body(
        models=[
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2", "codex"]},
            {
                "catalogId": "claude-sonnet-4-5",
                "credentialId": str(setup.anthropic.pk),
                "harnesses": ["claude-code"],
                "thinking": "low",
            },
        ]
    )
    r = start(api, setup, body)
    assert r.status_code == 202, r.json()
    data = r.json()
    assert data["id"] == body["id"] and data["submissionError"] is None and data["status"] == "running"
    assert len(data["evaluationIds"]) == 2
    assert data["progress"]["total"] == 2 * 2 + 2  # 2 tasks × 2 agents, 2 tasks × 1 agent
    first = Evaluation.objects.get(pk=data["evaluationIds"][0])
    assert first.thinking == "high"  # the model's default when left out
    r = api.get(url(setup, f"evaluations/{first.pk}"))
    assert r.status_code == 200
    trials = r.json()["trials"]
    assert len(trials) == 4 and {t["agent"] for t in trials} == {"terminus-2", "codex"}
    assert trials[0]["configuration"] == "baseline" and trials[0]["status"] == "queued"
    assert trials[0]["costUsd"] is None and trials[0]["modelVerified"] is False
    assert api.get(url(setup, "evaluations")).json()[0]["counts"]["total"] in (2, 4)
    assert api.get(url(setup, "evaluations/comparisons")).json()[0]["id"] == body["id"]


def test_start_without_tasks_runs_every_approved_task(api: APIClient, setup: Setup) -> None:
    body = setup.body()
    del body["tasks"]
    r = start(api, setup, body)
    assert r.status_code == 202
    assert Comparison.objects.get().task_ids == [t.pk for t in setup.tasks]


def test_a_bad_body_is_a_400_listing_every_problem(api: APIClient, setup: Setup, tmp_path: Path) -> None:
    other = make_workspace()
    foreign = make_credential(workspace=other, kind="openai")
    unapproved = make_task(workspace=setup.workspace, files=greeting_files(tmp_path))
    foreign_task = make_approved_task(workspace=other, files=greeting_files(tmp_path))
    body = setup.body(
        models=[
            {"catalogId": "no-such-model", "credentialId": setup.openai.pk, "harnesses": ["terminus-2"]},
            {"catalogId": "gpt-5-mini", "credentialId": foreign.pk, "harnesses": ["terminus-2"]},
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["claude-code"]},
            {"catalogId": "gpt-5-mini", "credentialId": setup.anthropic.pk, "harnesses": ["codex"]},
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["codex"], "thinking": "max"},
            {"catalogId": "gpt-5-mini", "credentialId": "managed-model", "harnesses": ["codex"]},
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["codex"], "harness": "h-9"},
        ],
        sandbox="kubernetes-somewhere",
        tasks=[
            {"runId": None, "taskId": unapproved.pk},
            {"runId": None, "taskId": foreign_task.pk},
            {"runId": 999, "taskId": setup.tasks[0].pk},
        ],
        harnesses=["h-1"],
        environments=["e-1"],
        judgeCredentialId="424242",
    )
    r = start(api, setup, body)
    assert r.status_code == 400
    errors = r.json()["errors"]
    expected = [
        "models.0.catalogId: 'no-such-model' is not in the model catalog",
        "models.1.credentialId: credential",
        "models.2.harnesses: claude-code speaks anthropic_messages",
        "models.3.credentialId: a anthropic credential cannot serve gpt-5-mini",
        "models.4.thinking: gpt-5-mini takes",
        "models.5.credentialId: managed-model is not available",
        "models.6.harness: no saved harness 'h-9'",
        "sandbox: 'kubernetes-somewhere' is not a sandbox",
        f"tasks.0: task {unapproved.pk} is {TaskState.IN_REVIEW}, not approved",
        f"tasks.1: task {foreign_task.pk} is not a task of this workspace",
        f"tasks.2: task {setup.tasks[0].pk} belongs to run None, not 999",
        "harnesses: no saved harness 'h-1'",
        "environments: no environment 'e-1'",
        "judgeCredentialId: credential '424242' is not a credential of this workspace",
    ]
    for line in expected:
        assert any(e.startswith(line) for e in errors), (line, errors)
    assert Comparison.objects.count() == 0


def test_shape_problems_are_listed_together(api: APIClient, setup: Setup) -> None:
    body = setup.body(
        models=[{"catalogId": "gpt-5-mini", "credentialId": 1, "harnesses": ["terminus-2"]}] * 13,
        harnesses=["a", "b", "c", "d", "e"],
        environments=["a", "b", "c", "d", "e"],
        surprise=True,
    )
    body["models"][0] = {"catalogId": "x", "credentialId": 1, "harnesses": ["vim"], "thinking": "extreme", "typo": 1}
    body["id"] = "not-a-uuid"
    r = start(api, setup, body)
    assert r.status_code == 400
    errors = r.json()["errors"]
    assert set(errors) >= {"id", "models", "harnesses", "environments", "surprise"}
    assert "12" in str(errors["models"]) and "4" in str(errors["harnesses"]) and "4" in str(errors["environments"])
    # Within a row every problem is listed too, once the list length is fine.
    body["models"] = body["models"][:1]
    r = start(api, setup, body)
    row = r.json()["errors"]["models"]["0"]
    assert set(row) == {"harnesses", "thinking", "typo"}


@pytest.mark.parametrize("thinking", ["off", "minimal", "low", "medium", "high", "xhigh", "max"])
def test_thinking_levels_are_the_specs_and_the_models(api: APIClient, setup: Setup, thinking: str) -> None:
    body = setup.body(
        models=[
            {
                "catalogId": "claude-sonnet-4-5",
                "credentialId": setup.anthropic.pk,
                "harnesses": ["claude-code"],
                "thinking": thinking,
            }
        ]
    )
    r = start(api, setup, body)
    allowed = ("off", "low", "medium", "high", "max")  # the catalog's Anthropic levels
    assert r.status_code == (202 if thinking in allowed else 400), r.json()


def test_same_id_returns_the_same_comparison_and_another_body_is_a_409(api: APIClient, setup: Setup) -> None:
    body = setup.body()
    first = start(api, setup, body)
    again = start(api, setup, body)
    assert first.status_code == again.status_code == 202
    assert again.json()["evaluationIds"] == first.json()["evaluationIds"]
    assert Trial.objects.count() == 2
    changed = {**body, "skipCompleted": True}
    r = start(api, setup, changed)
    assert r.status_code == 409


def test_managed_model_is_accepted_when_the_deployment_has_the_key(api: APIClient, setup: Setup, settings: Any) -> None:
    settings.MANAGED_OPENAI_API_KEY = "sk-managed-0000000000000000"
    body = setup.body(models=[{"catalogId": "gpt-5", "credentialId": "managed-model", "harnesses": ["codex"]}])
    r = start(api, setup, body)
    assert r.status_code == 202, r.json()
    evaluation = Evaluation.objects.get()
    assert evaluation.managed and evaluation.credential is None
    assert api.get(url(setup, f"evaluations/{evaluation.pk}")).json()["credentialId"] == "managed-model"


def _harness(hid: str, agent: str = "terminus-2", **kw: Any) -> HarnessSnapshot:
    return HarnessSnapshot(id=hid, name=f"Harness {hid}", agent=agent, **kw)


def test_matrix_runs_each_harness_environment_and_pair_beside_the_baseline(
    api: APIClient, setup: Setup, saved: Callable[..., None]
) -> None:
    t1, _ = setup.tasks
    saved(
        harnesses=[_harness("h1", options={"max_turns": 5}), _harness("h2", agent="codex")],
        environments=[EnvironmentSnapshot("e1", "No AGENTS.md", {t1.pk: Path("/built/e1/t1")})],
    )
    body = setup.body(
        models=[{"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2", "codex"]}],
        harnesses=["h1", "h2"],
        environments=["e1"],
    )
    r = start(api, setup, body)
    assert r.status_code == 202, r.json()
    rows = set(Trial.objects.values_list("agent", "configuration_label", "task_id"))
    labels = {(a, c) for a, c, _ in rows}
    assert labels == {
        ("terminus-2", "Baseline"),
        ("codex", "Baseline"),
        ("terminus-2", "Harness h1"),  # a harness runs only on its agent
        ("codex", "Harness h2"),
        ("terminus-2", "No AGENTS.md"),
        ("codex", "No AGENTS.md"),
        ("terminus-2", "Harness h1 · No AGENTS.md"),
        ("codex", "Harness h2 · No AGENTS.md"),
    }
    # The environment built only t1: its configurations leave t2 out.
    env_tasks = {t for a, c, t in rows if "No AGENTS.md" in c}
    assert env_tasks == {t1.pk}
    assert Trial.objects.filter(configuration_label="No AGENTS.md", agent="codex").get().task_dir == "/built/e1/t1"
    assert Trial.objects.count() == 2 * 2 + 2 + 2 + 2 + 2


def test_trials_keep_tabs_newlines_and_backslashes_in_names_paths_and_specs(
    api: APIClient, setup: Setup, saved: Callable[..., None]
) -> None:
    # The trials go in through COPY's text format, where these characters must be escaped.
    t1, _ = setup.tasks
    name = "Tabs\there \\N and\nnewlines \\ é"
    instructions = 'C:\\path\\to "quoted"\r\nline two\t\\N'
    built = Path("/built/e\\1/t\t1 dir")
    saved(
        harnesses=[HarnessSnapshot(id="odd\\id", name=name, agent="terminus-2", instructions=instructions)],
        environments=[EnvironmentSnapshot("e\t1", "Env\\N", {t1.pk: built})],
    )
    body = setup.body(harnesses=["odd\\id"], environments=["e\t1"])
    assert start(api, setup, body).status_code == 202
    trial = Trial.objects.get(configuration_label=f"{name} · Env\\N", task=t1)
    assert trial.harness_id == "odd\\id" and trial.environment_id == "e\t1"
    assert trial.task_dir == str(built)
    assert trial.spec["harness"]["instructions"] == instructions
    assert trial.spec["harness"]["harnessName"] == name
    assert trial.spec["environment"] == {"id": "e\t1", "name": "Env\\N"}
    assert trial.status == TrialStatus.QUEUED and trial.attempt == 1 and trial.rewards is None
    assert trial.timings == {} and trial.cost_usd is None and trial.reward_valid is False


def test_baseline_false_leaves_the_tasks_as_they_are_out(
    api: APIClient, setup: Setup, saved: Callable[..., None]
) -> None:
    saved(harnesses=[_harness("h1")])
    r = start(api, setup, setup.body(harnesses=["h1"], baseline=False))
    assert r.status_code == 202, r.json()
    assert set(Trial.objects.values_list("configuration_label", flat=True)) == {"Harness h1"}
    r = start(api, setup, setup.body(baseline=False))
    assert r.status_code == 400 and "baseline" in r.json()["errors"][0]


def test_more_than_12_configurations_besides_the_baseline_are_refused(
    api: APIClient, setup: Setup, saved: Callable[..., None]
) -> None:
    saved(
        harnesses=[_harness(f"h{i}") for i in range(3)],
        environments=[EnvironmentSnapshot(f"e{i}", f"E{i}") for i in range(3)],
    )
    ok = setup.body(harnesses=["h0", "h1"], environments=["e0", "e1"])  # 2 + 2 + 4 = 8
    assert start(api, setup, ok).status_code == 202
    too_many = setup.body(harnesses=["h0", "h1", "h2"], environments=["e0", "e1", "e2"])  # 3 + 3 + 9 = 15
    r = start(api, setup, too_many)
    assert r.status_code == 400
    assert any("15 configurations besides the baseline; at most 12" in e for e in r.json()["errors"])


def test_a_harness_whose_agent_no_model_runs_is_refused(
    api: APIClient, setup: Setup, saved: Callable[..., None]
) -> None:
    saved(harnesses=[_harness("cc", agent="claude-code")])
    r = start(api, setup, setup.body(harnesses=["cc"]))
    assert r.status_code == 400
    assert "runs on claude-code, which no picked model runs on" in r.json()["errors"][0]


def test_two_harnesses_that_change_the_same_things_are_one_configuration(
    api: APIClient, setup: Setup, saved: Callable[..., None]
) -> None:
    saved(harnesses=[_harness("a", options={"max_turns": 3}), _harness("b", options={"max_turns": 3})])
    r = start(api, setup, setup.body(harnesses=["a", "b"]))
    assert r.status_code == 202
    assert Trial.objects.exclude(configuration_key="baseline").values("configuration_key").distinct().count() == 1


def test_row_harness_runs_in_place_of_the_agent_and_must_be_the_rows(
    api: APIClient, setup: Setup, saved: Callable[..., None]
) -> None:
    saved(harnesses=[_harness("mine"), _harness("cx", agent="codex")])
    body = setup.body(
        models=[
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2"], "harness": "mine"}
        ]
    )
    assert start(api, setup, body).status_code == 202
    assert set(Trial.objects.values_list("configuration_label", flat=True)) == {"Harness mine"}
    body = setup.body(
        models=[
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2"], "harness": "cx"}
        ]
    )
    r = start(api, setup, body)
    assert r.status_code == 400 and "its agent is codex" in r.json()["errors"][0]


def test_subagent_rules(api: APIClient, setup: Setup, saved: Callable[..., None]) -> None:
    saved(
        harnesses=[
            _harness("ok", agent="codex", subagent=SubagentChoice("gpt-5", str(setup.openai.pk))),
            _harness("bad-agent", agent="terminus-2", subagent=SubagentChoice("gpt-5", str(setup.openai.pk))),
            _harness("self", agent="codex", subagent=SubagentChoice("gpt-5-mini", "")),
        ]
    )
    models = [{"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2", "codex"]}]
    r = start(api, setup, setup.body(models=models, harnesses=["bad-agent"]))
    assert r.status_code == 400 and "claude-code or codex only" in r.json()["errors"][0]
    r = start(api, setup, setup.body(models=models, harnesses=["ok", "self"]))
    assert r.status_code == 202, r.json()
    labels = set(Trial.objects.values_list("agent", "configuration_label"))
    # "self" delegates to the row's own model, so the row skips it.
    assert labels == {("terminus-2", "Baseline"), ("codex", "Baseline"), ("codex", "Harness ok")}
    ok_trial = Trial.objects.filter(configuration_label="Harness ok").first()
    assert ok_trial is not None and ok_trial.spec["subagent"]["catalogId"] == "gpt-5"
    # Legacy per-row subagent: the same model twice is refused; another model is its own configuration.
    same = [dict(models[0], subagent={"catalogId": "gpt-5-mini", "credentialId": str(setup.openai.pk)})]
    r = start(api, setup, setup.body(models=same))
    assert r.status_code == 400 and "another catalog model" in r.json()["errors"][0]
    other = [dict(models[0], subagent={"catalogId": "gpt-5", "credentialId": str(setup.openai.pk)})]
    r = start(api, setup, setup.body(models=other))
    assert r.status_code == 202
    evaluation = Evaluation.objects.get(pk=r.json()["evaluationIds"][0])
    keys = dict(Trial.objects.filter(evaluation=evaluation).values_list("agent", "configuration_key").distinct())
    assert keys["terminus-2"] == "baseline" and keys["codex"].startswith("subagent:gpt-5:")


def test_conditions_the_older_form_name_each_pair(api: APIClient, setup: Setup, saved: Callable[..., None]) -> None:
    saved(harnesses=[_harness("h1")], environments=[EnvironmentSnapshot("e1", "E1", {setup.tasks[0].pk: Path("/x")})])
    body = setup.body(
        conditions=[
            {"saved": "h1"},
            {"environment": "e1"},
            {"agent": "terminus-2", "name": "Terse", "instructions": "Be terse."},
        ]
    )
    r = start(api, setup, body)
    assert r.status_code == 202, r.json()
    labels = set(Trial.objects.values_list("configuration_label", flat=True))
    assert labels == {"Baseline", "Harness h1", "E1", "Terse"}
    r = start(api, setup, setup.body(conditions=[{"saved": "nope"}]))
    assert r.status_code == 400


def test_sandbox_credentials(api: APIClient, setup: Setup, settings: Any) -> None:
    r = start(api, setup, setup.body(sandboxCredentialId=setup.openai.pk))
    assert r.status_code == 400 and "takes no credential" in r.json()["errors"][0]
    settings.RUNS_SANDBOXES = ["podman", "e2b"]
    r = start(api, setup, setup.body(sandbox="e2b"))
    assert r.status_code == 400 and "needs a e2b credential" in r.json()["errors"][0]
    e2b = make_credential(workspace=setup.workspace, kind="e2b")
    assert start(api, setup, setup.body(sandbox="e2b", sandboxCredentialId=e2b.pk)).status_code == 202


def test_skip_completed_skips_pairs_with_a_scored_result(api: APIClient, setup: Setup) -> None:
    start(api, setup, setup.body())
    scored = Trial.objects.get(task=setup.tasks[0])
    Trial.objects.filter(pk=scored.pk).update(
        status=TrialStatus.COMPLETED, reward=0.0, model_verified=True, cost_usd="0.01", cost_complete=True
    )
    unscored = Trial.objects.get(task=setup.tasks[1])
    Trial.objects.filter(pk=unscored.pk).update(status=TrialStatus.COMPLETED, reward=1.0, model_verified=False)
    r = start(api, setup, setup.body(skipCompleted=True))
    assert r.status_code == 202
    new = Trial.objects.filter(evaluation_id=r.json()["evaluationIds"][0])
    assert list(new.values_list("task_id", flat=True)) == [setup.tasks[1].pk]
    # A different thinking level is another pair: nothing skipped.
    other = setup.body(skipCompleted=True)
    other["models"][0]["thinking"] = "low"
    r = start(api, setup, other)
    assert Trial.objects.filter(evaluation_id=r.json()["evaluationIds"][0]).count() == 2


def test_an_evaluation_with_every_pair_skipped_completes_and_so_does_its_comparison(
    api: APIClient, setup: Setup, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        r = start(api, setup, setup.body())
    assert r.json()["status"] == "running"
    assert Evaluation.objects.get().status == "queued"
    Trial.objects.update(
        status=TrialStatus.COMPLETED, reward=1.0, model_verified=True, cost_usd="0.01", cost_complete=True
    )
    with django_capture_on_commit_callbacks(execute=True):
        r = start(api, setup, setup.body(skipCompleted=True))
    evaluation = Evaluation.objects.get(pk=r.json()["evaluationIds"][0])
    assert evaluation.trials_total == 0 and evaluation.status == "completed"
    assert Comparison.objects.get(client_id=r.json()["id"]).status == "done"


def test_a_failed_submission_writes_no_trial_and_resume_reuses_the_evaluations(
    api: APIClient, setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.runs import services

    real = services._trials_insert
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        real(*args, **kwargs)
        if calls["n"] == 1:  # every trial is written, then the submission fails before its commit
            raise RuntimeError("database went away mid-submission")

    monkeypatch.setattr(services, "_trials_insert", flaky)
    body = setup.body(
        models=[
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2"]},
            {"catalogId": "gpt-5", "credentialId": setup.openai.pk, "harnesses": ["terminus-2", "codex"]},
        ]
    )
    r = start(api, setup, body)
    assert r.status_code == 202
    assert r.json()["submissionError"] == "RuntimeError: database went away mid-submission"
    assert r.json()["status"] == "submitting"
    ids = r.json()["evaluationIds"]
    assert Trial.objects.count() == 0  # nothing half-written
    assert list(Evaluation.objects.order_by("position").values_list("trials_total", flat=True)) == [0, 0]
    # Retrying the POST returns the same comparison, still asking for a resume.
    assert start(api, setup, body).json()["submissionError"]
    r = api.post(url(setup, f"evaluations/comparisons/{body['id']}/resume"))
    assert r.status_code == 202, r.json()
    assert r.json()["submissionError"] is None and r.json()["status"] == "running"
    assert r.json()["evaluationIds"] == ids
    assert Trial.objects.count() == 2 + 4
    assert Trial.objects.values("evaluation", "task", "agent", "configuration_key").distinct().count() == 6
    assert list(Evaluation.objects.order_by("position").values_list("trials_total", flat=True)) == [2, 4]
    # Resuming again submits nothing.
    api.post(url(setup, f"evaluations/comparisons/{body['id']}/resume"))
    assert Trial.objects.count() == 6


def test_cancel_stops_queued_trials_and_delete_removes_an_evaluation(api: APIClient, setup: Setup) -> None:
    body = setup.body(
        models=[
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2"]},
            {"catalogId": "gpt-5", "credentialId": setup.openai.pk, "harnesses": ["terminus-2"]},
        ]
    )
    ids = start(api, setup, body).json()["evaluationIds"]
    r = api.post(url(setup, f"evaluations/{ids[0]}/cancel"))
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert set(Trial.objects.filter(evaluation_id=ids[0]).values_list("status", flat=True)) == {"cancelled"}
    assert set(Trial.objects.filter(evaluation_id=ids[1]).values_list("status", flat=True)) == {"queued"}
    r = api.post(url(setup, f"evaluations/comparisons/{body['id']}/cancel"))
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert r.json()["progress"]["cancelled"] == 4 and r.json()["progress"]["finished"] is True
    r = api.post(url(setup, f"evaluations/comparisons/{body['id']}/resume"))
    assert r.status_code == 409
    r = api.post(url(setup, f"evaluations/{ids[1]}/delete"))
    assert r.status_code == 204
    assert not Evaluation.objects.filter(pk=ids[1]).exists() and not Trial.objects.filter(evaluation_id=ids[1]).exists()


def test_artifacts_are_served_by_name(api: APIClient, setup: Setup) -> None:
    ids = start(api, setup, setup.body()).json()["evaluationIds"]
    trial = Trial.objects.filter(evaluation_id=ids[0]).first()
    assert trial is not None
    TrialArtifact.objects.create(trial=trial, name="agent/trajectory.json", size=12, content='{"steps": []}')
    detail = api.get(url(setup, f"evaluations/{ids[0]}")).json()
    names = [a["name"] for t in detail["trials"] for a in t["artifacts"]]
    assert names == [f"{trial.uuid}/agent/trajectory.json"]
    r = api.get(url(setup, f"evaluations/{ids[0]}/artifacts"), {"name": names[0]})
    assert r.status_code == 200 and r.content == b'{"steps": []}'
    assert api.get(url(setup, f"evaluations/{ids[0]}/artifacts"), {"name": "nope/x"}).status_code == 404


def test_other_workspaces_see_nothing(api: APIClient, setup: Setup) -> None:
    body = setup.body()
    ids = start(api, setup, body).json()["evaluationIds"]
    from tests.factories import make_api_key

    other = make_workspace()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(workspace=other).raw}")
    base = f"/api/w/{other.slug}/"
    assert client.get(base + f"evaluations/{ids[0]}").status_code == 404
    assert client.get(base + f"evaluations/comparisons/{body['id']}").status_code == 404
    assert client.get(base + "evaluations/comparisons/not-a-uuid").status_code == 404
    assert client.get(base + "evaluations").json() == []


def test_read_keys_cannot_start(setup: Setup, read_key: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {read_key}")
    r = client.post(url(setup, "evaluations/comparisons"), setup.body(), format="json")
    assert r.status_code == 403
    assert uuid.UUID(setup.body()["id"])
