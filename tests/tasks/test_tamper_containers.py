"""Tampering through a real Harbor trial on podman: an agent that edits the held-out tests, adds a conftest.py, plants
reward files and leaves a process rewriting them scores 0; the same agent writing the real change scores 1. Files the
agent deletes are deleted for the verifier too (its fresh container gets the agent's /app, not the image's)."""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path

import pytest

from apps.tasks import gates
from selfbench import harbor_adapter
from tests.tasks.gitrepo import make_calc_repo, make_removal_repo
from tests.tasks.test_verifier import author_locally

pytestmark = pytest.mark.containers

TAMPER = r"""
set -e
cd /app
cat > tests/test_core.py <<'PY'
def test_add(): pass
def test_subtract(): pass
def test_multiply(): pass
def test_divide(): pass
def test_clamp(): pass
PY
cat > conftest.py <<'PY'
import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
PY
cp conftest.py calc/conftest.py
mkdir -p /logs/verifier
echo 1 > /logs/verifier/reward.txt
echo '{"reward": 1}' > /logs/verifier/reward.json
cat > /tmp/rewarder.sh <<'SH'
while true; do echo 1 > /logs/verifier/reward.txt; echo '{"reward": 1}' > /logs/verifier/reward.json; sleep 0.2; done
SH
nohup sh /tmp/rewarder.sh >/dev/null 2>&1 &
echo tampered
"""


def run(task: Path, command: str, name: str, tmp_path: Path) -> harbor_adapter.TrialOutcome:
    agent = harbor_adapter.AgentSpec(name="command", options={"command": command})
    return harbor_adapter.run_trial(task_dir=task, agent=agent, trial_name=name, trials_dir=tmp_path / "trials")


def test_tampering_scores_zero_and_the_real_change_scores_one(tmp_path: Path) -> None:
    calc = make_calc_repo(tmp_path / "repo")
    task, _ = author_locally(calc, "good", tmp_path / "author")

    tampered = run(task, TAMPER, "tamper", tmp_path)
    assert tampered.agent_exit_code == 0 and "tampered" in (tampered.agent_output or "")
    assert tampered.reward == 0.0, tampered.verifier_output

    gold = (task / "solution" / "gold.patch").read_text()
    honest = run(task, f"cd /app && printf %s {shlex.quote(gold)} | git apply -", "honest", tmp_path)
    assert honest.reward == 1.0, honest.verifier_output


def test_files_the_agent_deletes_are_deleted_for_the_verifier(tmp_path: Path) -> None:
    """The verifier's fresh container starts from the image, where every base file exists: the agent's deletions
    must reach it too. Deleting a file the held-out tests need scores 0; a correct change that deletes one scores 1."""
    repo, pr = make_removal_repo(tmp_path / "repo")
    task, definition = author_locally((repo, {"removal": pr}), "removal", tmp_path / "author")
    assert "tests/test_core.py::test_legacy_module_is_gone" in definition["failToPass"]
    gold = (task / "solution" / "gold.patch").read_text()
    apply_gold = f"cd /app && printf %s {shlex.quote(gold)} | git apply -"
    unique = uuid.uuid4().hex[:8]  # another checkout's test run on the same engine must not share container names

    honest = run(
        task, apply_gold + " && test ! -e calc/legacy.py && echo applied", f"deletes-legacy-{unique}", tmp_path
    )
    assert "applied" in (honest.agent_output or ""), honest.agent_output
    assert honest.reward == 1.0, honest.verifier_output
    assert "-calc/legacy.py" in gates.verifier_report(honest)["applied"]

    broken = run(task, apply_gold + " && rm calc/__init__.py && echo removed", f"deletes-init-{unique}", tmp_path)
    assert "removed" in (broken.agent_output or ""), broken.agent_output
    assert broken.reward == 0.0, broken.verifier_output
    assert "-calc/__init__.py" in gates.verifier_report(broken)["applied"]
