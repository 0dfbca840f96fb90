"""The Harbor adapter: real trials on podman, option schemas and validation, task lint."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from selfbench import harbor_adapter
from selfbench.harbor_adapter import AgentSpec, TrialOutcome, TrialSetupError
from tests.harbor.tasks import BASE_IMAGE, write_task


def _require_containers() -> None:
    """Skip only on a developer machine without podman; in CI a missing engine or image fails."""
    if shutil.which("podman") is None:
        if os.environ.get("CI"):
            pytest.fail("podman is missing in CI: run `bash scripts/containers.sh` before the tests")
        pytest.skip("podman is not installed (run `bash scripts/containers.sh`); CI runs these tests")
    if subprocess.run(["podman", "image", "exists", BASE_IMAGE], check=False).returncode != 0:
        pytest.fail(f"base image {BASE_IMAGE} is missing: run `bash scripts/containers.sh`")


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task(tmp_path_factory.mktemp("harbor-task") / "fix-greeting")


def _run(task_dir: Path, tmp_path: Path, agent: AgentSpec, **kwargs: object) -> TrialOutcome:
    _require_containers()
    return harbor_adapter.run_trial(
        task_dir=task_dir,
        agent=agent,
        trial_name=f"test-{agent.name}",
        trials_dir=tmp_path / "trials",
        environment_type="podman",
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.containers
def test_oracle_agent_scores_one_on_podman(task_dir: Path, tmp_path: Path) -> None:
    # Leftovers of an earlier run under the same trial name (a retried job) must not leak in.
    stale = tmp_path / "trials" / "test-oracle" / "agent" / "command.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("stale output")

    outcome = _run(task_dir, tmp_path, AgentSpec(name="oracle"))

    assert outcome.exception_type is None, outcome.exception_message
    assert outcome.reward == 1.0
    assert outcome.rewards == {"reward": 1.0}
    assert outcome.reward_valid is True
    assert outcome.failure_cause is None
    assert outcome.trial_dir == (tmp_path / "trials" / "test-oracle").resolve()
    assert outcome.raw["trial_name"] == "test-oracle"
    assert outcome.verifier_output is not None and "1 passed" in outcome.verifier_output
    assert outcome.timings["environment_setup"] is not None and outcome.timings["environment_setup"] > 0
    assert outcome.timings["verifier"] is not None
    assert outcome.started_at is not None and outcome.finished_at is not None
    # The oracle calls no model: unknown usage stays None, never 0.
    assert outcome.cost_usd is None
    assert outcome.n_input_tokens is None and outcome.n_output_tokens is None
    assert not stale.exists() and outcome.agent_output is None


@pytest.mark.containers
def test_nop_agent_scores_zero_on_podman(task_dir: Path, tmp_path: Path) -> None:
    outcome = _run(task_dir, tmp_path, AgentSpec(name="nop"))

    assert outcome.exception_type is None, outcome.exception_message
    assert outcome.reward == 0.0
    assert outcome.verifier_output is not None and "1 failed" in outcome.verifier_output
    assert outcome.agent_exit_code is None


@pytest.mark.containers
def test_command_agent_reports_exit_code_and_output(task_dir: Path, tmp_path: Path) -> None:
    agent = AgentSpec(
        name="command",
        options={"command": "bash /app/smoke.sh && echo $SMOKE_FLAG && exit 3"},
        env={"SMOKE_FLAG": "flag-from-env"},
    )

    outcome = _run(task_dir, tmp_path, agent, disable_verifier=True)

    assert outcome.exception_type is None, outcome.exception_message
    assert outcome.agent_exit_code == 3
    assert outcome.agent_output is not None
    assert "smoke-ok" in outcome.agent_output
    assert "flag-from-env" in outcome.agent_output
    assert "\r" not in outcome.agent_output
    # The verifier was disabled, so there is no reward at all (not 0).
    assert outcome.reward is None and outcome.rewards is None
    assert outcome.agent_log_dir is not None and (outcome.agent_log_dir / "command.txt").is_file()


def test_validate_agent_options_rejects_an_unknown_option() -> None:
    problems = harbor_adapter.validate_agent_options("claude-code", {"max_turns": 5, "warp_speed": True})

    assert problems == ["Unknown option 'warp_speed'."]
    assert harbor_adapter.validate_agent_options("claude-code", {"max_turns": 5}) == []


def test_validate_agent_options_rejects_a_wrong_type_and_unknown_agents() -> None:
    assert harbor_adapter.validate_agent_options("codex", {"reasoning_effort": "enormous"}) != []
    assert harbor_adapter.validate_agent_options("no-such-agent", {}) != []
    assert harbor_adapter.validate_agent_options("oracle", {"x": 1}) != []
    assert harbor_adapter.validate_agent_options("command", {}) != []  # "command" is required
    assert harbor_adapter.validate_agent_options("command", {"command": "true"}) == []


def test_agent_option_schemas_cover_every_harness() -> None:
    schemas = harbor_adapter.agent_option_schemas()

    assert set(schemas) == {"pi", "codex", "claude-code", "mini-swe-agent", "terminus-2", "muse-code"}
    for name, schema in schemas.items():
        assert schema["type"] == "object", name
        assert "properties" in schema, name
    assert "max_turns" in schemas["claude-code"]["properties"]
    assert "model_api" in schemas["pi"]["properties"]


def test_api_key_goes_to_the_agents_own_variable(task_dir: Path, tmp_path: Path) -> None:
    cases = [
        (AgentSpec(name="claude-code", model="anthropic/claude-sonnet-4-5", api_key="k1"), "ANTHROPIC_API_KEY"),
        (AgentSpec(name="codex", model="openai/gpt-5", api_key="k2"), "OPENAI_API_KEY"),
        (AgentSpec(name="muse-code", model="meta/muse", api_key="k3"), "META_API_KEY"),
        (AgentSpec(name="terminus-2", model="anthropic/claude-haiku-4-5", api_key="k4"), "ANTHROPIC_API_KEY"),
    ]
    for spec, variable in cases:
        config = harbor_adapter._trial_config(
            task_dir=task_dir,
            agent=spec,
            trial_name="t",
            trials_dir=tmp_path,
            environment_type="docker",
            environment_kwargs={"override_cpus": 1, "some_provider_flag": "x"},
            extra_instructions=["Be brief."],
            disable_verifier=False,
            verifier_timeout_sec=30.0,
            delete=True,
        )
        assert config.agent.env[variable] == spec.api_key, spec.name
        assert config.agent.model_api_key_name == variable
        assert config.environment.override_cpus == 1
        assert config.environment.kwargs == {"some_provider_flag": "x"}
        assert config.verifier.override_timeout_sec == 30.0
        assert config.extra_instructions == ["Be brief."]


def test_run_trial_refuses_invalid_options_before_starting_anything(task_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(TrialSetupError, match="warp_speed"):
        harbor_adapter.run_trial(
            task_dir=task_dir,
            agent=AgentSpec(name="claude-code", options={"warp_speed": True}),
            trial_name="bad",
            trials_dir=tmp_path,
        )
    with pytest.raises(TrialSetupError, match="not a Harbor task directory"):
        harbor_adapter.run_trial(task_dir=tmp_path, agent=AgentSpec(name="oracle"), trial_name="bad")


def test_lint_task_reports_findings_with_relative_paths(task_dir: Path, tmp_path: Path) -> None:
    problems = harbor_adapter.lint_task(task_dir)

    # The test task deliberately shares the verifier's sandbox, which Harbor's linter flags.
    assert any(p.startswith("shared-verifier: task.toml:") for p in problems)
    assert harbor_adapter.lint_task(tmp_path / "missing")[0].startswith("invalid-task-files")


def test_harbor_version_is_pinned() -> None:
    assert harbor_adapter.harbor_version() == "0.25.0"
