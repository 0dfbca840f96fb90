"""Saved harnesses and environments in comparisons (apps.runs through the real loaders): the rules at start,
configuration identity, each configuration's trials, and snapshot-on-run (editing or deleting changes no trial)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ablations import jobs as ablation_jobs
from apps.ablations import services as ablation_services
from apps.ablations.models import Environment, EnvironmentBuild
from apps.accounts.models import Credential, Workspace
from apps.harnesses import services
from apps.harnesses.models import Harness
from apps.repositories.models import Repository
from apps.runs import jobs as run_jobs
from apps.runs.models import Trial
from apps.tasks import gates
from apps.tasks.models import Task
from tests.runs.factories import greeting_files, make_approved_task


@pytest.fixture(autouse=True)
def _no_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_jobs, "async_task", lambda *a, **kw: None)
    monkeypatch.setattr(ablation_jobs, "async_task", lambda *a, **kw: None)


@pytest.fixture
def tasks(workspace: Workspace, tmp_path: Path) -> list[Task]:
    repository = Repository.objects.create(workspace=workspace, kind="local", location=str(tmp_path / "r"))
    files = greeting_files(tmp_path)
    return [make_approved_task(workspace=workspace, files=files, repository=repository) for _ in range(2)]


def _body(tasks: list[Task], credential: Credential, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "models": [{"catalogId": "gpt-5-mini", "credentialId": credential.pk, "harnesses": ["terminus-2"]}],
        "sandbox": "podman",
        "tasks": [{"runId": t.batch_id, "taskId": t.pk} for t in tasks],
    }
    body.update(overrides)
    return body


def _start(api: APIClient, workspace: Workspace, body: dict[str, Any]) -> Any:
    return api.post(f"/api/w/{workspace.slug}/evaluations/comparisons", body, format="json")


def _configs(comparison_client_id: str) -> dict[str, list[Trial]]:
    out: dict[str, list[Trial]] = {}
    for trial in Trial.objects.filter(evaluation__comparison__client_id=comparison_client_id).order_by("pk"):
        out.setdefault(trial.configuration_label, []).append(trial)
    return out


def test_a_harness_runs_beside_the_baseline_and_its_trials_keep_a_snapshot(
    api: APIClient, workspace: Workspace, tasks: list[Task], openai: Credential
) -> None:
    harness = services.harness_create(
        workspace=workspace, name="Careful", agent="terminus-2", instructions="Run the tests.", options={"max_turns": 7}
    )
    body = _body(tasks, openai, harnesses=[str(harness.pk)])
    r = _start(api, workspace, body)
    assert r.status_code == 202, r.json()
    configs = _configs(body["id"])
    assert {k: len(v) for k, v in configs.items()} == {"Baseline": 2, "Careful": 2}
    trial = configs["Careful"][0]
    assert trial.harness_id == str(harness.pk) and trial.configuration_key == f"harness:{harness.fingerprint[:16]}"
    assert trial.spec["harness"]["instructions"] == "Run the tests."
    assert trial.spec["harness"]["options"] == {"max_turns": 7}
    frozen = dict(trial.spec)

    services.harness_update(harness=harness, instructions="Skip the tests.", options={})
    services.harness_delete(harness=Harness.objects.get(pk=harness.pk))
    trial.refresh_from_db()
    assert trial.spec == frozen and trial.configuration_label == "Careful"
    evaluation = api.get(f"/api/w/{workspace.slug}/evaluations/{trial.evaluation_id}")
    assert evaluation.status_code == 200


def test_two_harnesses_with_the_same_changes_are_one_configuration(
    api: APIClient, workspace: Workspace, tasks: list[Task], openai: Credential
) -> None:
    a = services.harness_create(workspace=workspace, name="A", agent="terminus-2", instructions="Be brief.")
    b = services.harness_create(workspace=workspace, name="B", agent="terminus-2", instructions="Be brief.\n")
    body = _body(tasks, openai, harnesses=[str(a.pk), str(b.pk)])
    assert _start(api, workspace, body).status_code == 202
    configs = _configs(body["id"])
    assert sorted(len(v) for v in configs.values()) == [2, 2]  # baseline + one harness configuration, not two
    keys = {t.configuration_key for v in configs.values() for t in v}
    assert keys == {"baseline", f"harness:{a.fingerprint[:16]}"}


def test_a_harness_whose_agent_no_model_runs_is_refused(
    api: APIClient, workspace: Workspace, tasks: list[Task], openai: Credential
) -> None:
    harness = services.harness_create(workspace=workspace, name="Pi tweaks", agent="pi", instructions="x")
    r = _start(api, workspace, _body(tasks, openai, harnesses=[str(harness.pk)]))
    assert r.status_code == 400
    assert "harness 'Pi tweaks' runs on pi, which no picked model runs on" in r.json()["errors"]


def test_a_rows_own_harness_must_be_for_the_rows_agent_and_replaces_the_agent_as_it_is(
    api: APIClient, workspace: Workspace, tasks: list[Task], openai: Credential
) -> None:
    codex = services.harness_create(workspace=workspace, name="Codex", agent="codex", instructions="x")
    model = {"catalogId": "gpt-5-mini", "credentialId": openai.pk, "harnesses": ["terminus-2"], "harness": codex.pk}
    r = _start(api, workspace, _body(tasks, openai, models=[model]))
    assert r.status_code == 400
    assert "models.0.harness: its agent is codex, which this row does not run" in r.json()["errors"]

    own = services.harness_create(workspace=workspace, name="Own", agent="terminus-2", instructions="Mine.")
    body = _body(tasks, openai, models=[{**model, "harness": own.pk}])
    assert _start(api, workspace, body).status_code == 202
    assert {k: len(v) for k, v in _configs(body["id"]).items()} == {"Own": 2}  # in place of the agent as it is


def test_a_model_that_is_its_harnesss_subagent_model_is_skipped(
    api: APIClient, workspace: Workspace, tasks: list[Task], anthropic: Credential
) -> None:
    harness = services.harness_create(
        workspace=workspace, name="Haiku helpers", agent="claude-code", subagent={"catalogId": "claude-haiku-4-5"}
    )
    rows = [
        {"catalogId": m, "credentialId": anthropic.pk, "harnesses": ["claude-code"]}
        for m in ("claude-sonnet-4-6", "claude-haiku-4-5")
    ]
    body = _body(tasks, anthropic, models=rows, harnesses=[str(harness.pk)])
    r = _start(api, workspace, body)
    assert r.status_code == 202, r.json()
    by_model: dict[str, set[str]] = {}
    for trial in Trial.objects.filter(evaluation__comparison__client_id=body["id"]):
        by_model.setdefault(trial.evaluation.catalog_id, set()).add(trial.configuration_label)
    assert by_model == {"claude-sonnet-4-6": {"Baseline", "Haiku helpers"}, "claude-haiku-4-5": {"Baseline"}}
    spec = Trial.objects.filter(configuration_label="Haiku helpers").first().spec  # type: ignore[union-attr]
    assert spec["subagent"] == {
        "catalogId": "claude-haiku-4-5",
        "credentialId": str(anthropic.pk),  # the first of the workspace's that can serve it
        "prompt": services.DEFAULT_DELEGATION_PROMPT,
    }


def test_harness_and_environment_make_four_configurations_and_ablated_trials_run_built_versions(
    api: APIClient,
    workspace: Workspace,
    tasks: list[Task],
    openai: Credential,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    harness = services.harness_create(workspace=workspace, name="With Skills", agent="terminus-2", instructions="x")
    repository = tasks[0].repository
    assert repository is not None
    with django_capture_on_commit_callbacks(execute=True):
        environment = ablation_services.environment_create(
            repository=repository, name="No AGENTS.md", script="rm -f AGENTS.md"
        )
    # Only the first task is built and ready there; the second is left out of the environment's configurations.
    passed = gates.GateResult(gates.PASSED, "ok", "", 1.0)
    monkeypatch.setattr(gates, "run_build", lambda d, n: passed)
    monkeypatch.setattr(gates, "run_oracle", lambda d, n: passed)
    ablation_services.environment_build_run(build=EnvironmentBuild.objects.get(environment=environment, task=tasks[0]))
    body = _body(tasks, openai, harnesses=[str(harness.pk)], environments=[str(environment.pk)])
    r = _start(api, workspace, body)
    assert r.status_code == 202, r.json()
    configs = _configs(body["id"])
    assert {k: len(v) for k, v in configs.items()} == {
        "Baseline": 2,
        "With Skills": 2,
        "No AGENTS.md": 1,
        "With Skills · No AGENTS.md": 1,
    }
    built = EnvironmentBuild.objects.get(environment=environment, task=tasks[0]).version
    assert built is not None
    for label in ("No AGENTS.md", "With Skills · No AGENTS.md"):
        trial = configs[label][0]
        assert trial.task_id == tasks[0].pk and trial.environment_id == str(environment.pk)
        assert trial.task_version_id == built.pk and trial.task_dir == str(built.path)
    assert configs["Baseline"][0].task_version_id == tasks[0].version_id


def test_an_unknown_or_foreign_environment_is_refused(
    api: APIClient, workspace: Workspace, tasks: list[Task], openai: Credential
) -> None:
    from tests.factories import make_workspace

    other = make_workspace()
    repository = Repository.objects.create(workspace=other, kind="local", location="/x")
    foreign = Environment.objects.create(workspace=other, repository=repository, name="theirs", script="true")
    r = _start(api, workspace, _body(tasks, openai, environments=[str(foreign.pk)]))
    assert r.status_code == 400
    assert f"environments: no environment '{foreign.pk}' in this workspace" in r.json()["errors"]


def test_a_harnesss_skills_reach_the_agent_as_cached_directories(
    api: APIClient, workspace: Workspace, tasks: list[Task], openai: Credential, tmp_path: Path
) -> None:
    import subprocess

    from apps.runs import execution
    from selfbench import harbor_adapter

    repo = tmp_path / "skills-repo"
    (repo / "skills" / "tdd").mkdir(parents=True)
    (repo / "skills" / "tdd" / "SKILL.md").write_text("---\nname: tdd\n---\nWrite the test first.\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "skills"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=repo, check=True)
    harness = services.harness_create(
        workspace=workspace, name="TDD", agent="codex", skills=[f"file://{repo}@main"], instructions="x"
    )
    model = {"catalogId": "gpt-5-mini", "credentialId": openai.pk, "harnesses": ["codex"]}
    body = _body(tasks, openai, models=[model], harnesses=[str(harness.pk)])
    assert _start(api, workspace, body).status_code == 202
    trial = _configs(body["id"])["TDD"][0]
    assert trial.spec["harness"]["skills"] == [f"file://{repo}@main"]
    spec, _ = execution.agent_spec(trial, "sk-trial-key")
    (skills_dir,) = spec.skills
    assert (Path(skills_dir) / "tdd" / "SKILL.md").is_file()
    assert execution.agent_spec(trial, "sk-trial-key")[0].skills == spec.skills  # fetched once, then cached

    # An unreachable source fails the trial's setup with the reason, before any container starts.
    broken = services.harness_create(
        workspace=workspace, name="Gone", agent="codex", skills=[f"file://{tmp_path / 'gone'}"], instructions="y"
    )
    body = _body(tasks, openai, models=[model], harnesses=[str(broken.pk)])
    assert _start(api, workspace, body).status_code == 202
    trial = _configs(body["id"])["Gone"][0]
    with pytest.raises(harbor_adapter.TrialSetupError, match="harness skills: git ls-remote failed"):
        execution.agent_spec(trial, "sk-trial-key")
