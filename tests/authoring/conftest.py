"""Authoring fixtures: the real gateway (uvicorn) with scripted models, a git repository with one PR, and Harbor's
run_trial (the container boundary) replaced by a scripted authoring agent and scripted gate outcomes.

The scripted agent does what an agent in the sandbox would: calls its model through the gateway with the round's
key, writes files into its workdir, and runs the real `verify` / `submit` script, which reaches SelfBench's route
over the relay socket the worker mounts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from apps.authoring import jobs, sandbox, services
from apps.runs import sandboxes
from selfbench import harbor_adapter
from tests.doubles.authoring_models import ReviewerModel
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401

CALC = "def add(a, b):\n    return a + b\n"
MULTIPLY = (
    CALC
    + "".join(f"\n\ndef multiply_{i}(a, b):\n    '''Multiply, variant {i}.'''\n    return a * b\n" for i in range(5))
    + "\n\ndef multiply(a, b):\n    return a * b\n"
)
TEST = "from calc import multiply\n\n\ndef test_multiply():\n    assert multiply(3, 4) == 12\n"


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


@dataclass
class Repo:
    path: Path
    base: str
    head: str
    gold: str


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    path = tmp_path / "calc"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "calc.py").write_text(CALC)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    base = git(path, "rev-parse", "HEAD").strip()
    (path / "calc.py").write_text(MULTIPLY)
    (path / "tests").mkdir()
    (path / "tests" / "test_calc.py").write_text(TEST)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "Add multiply")
    head = git(path, "rev-parse", "HEAD").strip()
    gold = git(path, "diff", "--full-index", base, head, "--", "calc.py")
    return Repo(path, base, head, gold)


@pytest.fixture
def reviewer(gw: Gateway, settings: Any) -> Iterator[ReviewerModel]:  # noqa: F811
    server = ReviewerModel().start()
    settings.OPENAI_BASE_URL = server.url
    settings.GATEWAY_PUBLIC_URL = f"{gw.url}/gateway"
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _media(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    media = tmp_path_factory.mktemp("media")
    settings.MEDIA_ROOT = media
    settings.HARBOR_TRIALS_DIR = media / "trials"
    settings.SANDBOX_ENVIRONMENT = "podman"
    settings.AUTHORING_POLL_SECONDS = 0.2
    settings.TASKS_DETERMINISM_RUNS = 2
    settings.TASKS_CANCEL_GRACE_SECONDS = 2.0


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    queue: list[tuple[str, int]] = []
    monkeypatch.setattr(jobs, "async_task", lambda func, arg, **kw: queue.append((func, arg)))
    return queue


def drain(queue: list[tuple[str, int]], limit: int = 20) -> None:
    """Run the enqueued authoring jobs the way the worker would, until none is left."""
    for _ in range(limit):
        if not queue:
            return
        func, arg = queue.pop(0)
        getattr(jobs, func.rsplit(".", 1)[1])(arg)
    raise AssertionError("authoring did not settle")


# --- the scripted authoring agent and the gates' outcomes (the Harbor boundary) ---------------------------------------


Step = Callable[["Sandbox"], None]


@dataclass
class Sandbox:
    """What the scripted agent sees: its workdir, its model connection and the verify/submit commands."""

    workdir: Path
    run_dir: Path
    spec: harbor_adapter.AgentSpec
    outputs: list[str] = field(default_factory=list)

    def ask_model(self) -> None:
        request = urllib.request.Request(  # noqa: S310
            f"{self.spec.base_url}/chat/completions",
            data=json.dumps({"model": "gpt-5-mini", "messages": [{"role": "user", "content": "go"}]}).encode(),
            headers={"Authorization": f"Bearer {self.spec.api_key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            response.read()

    def write(self, files: dict[str, str]) -> None:
        for rel, text in files.items():
            target = self.workdir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def command(self, name: str) -> str:
        script = self.workdir.parent / name
        script.write_bytes(sandbox.script_bytes())
        env = {**os.environ, "SELFBENCH_AUTHORING_DIR": str(self.workdir), "SELFBENCH_AUTHORING_RUN": str(self.run_dir)}
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
        self.outputs.append(done.stdout + done.stderr)
        return done.stdout + done.stderr


def _outcome(trial_dir: Path, name: str, **kw: Any) -> harbor_adapter.TrialOutcome:
    fields: dict[str, Any] = {
        "trial_name": name,
        "trial_dir": trial_dir,
        "reward": None,
        "rewards": None,
        "failure_cause": None,
        "exception_type": None,
        "exception_message": None,
        "started_at": None,
        "finished_at": None,
        "timings": {},
        "n_input_tokens": None,
        "n_cache_tokens": None,
        "n_output_tokens": None,
        "cost_usd": None,
        "agent_exit_code": None,
        "agent_output": None,
        "verifier_output": None,
        "trajectory_path": None,
        "agent_log_dir": None,
        "raw": {},
    }
    fields.update(kw)
    return harbor_adapter.TrialOutcome(**fields)


def _report(trial_dir: Path, report: dict[str, Any]) -> None:
    (trial_dir / "verifier").mkdir(parents=True, exist_ok=True)
    (trial_dir / "verifier" / "outcomes.json").write_text(json.dumps(report))


@dataclass
class Harbor:
    """Scripted Harbor: authoring trials run `agents` in turn; gates pass as a correct task's would."""

    agents: list[Step]
    sandboxes: list[Sandbox] = field(default_factory=list)
    gate_trials: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def run_trial(self, **kw: Any) -> harbor_adapter.TrialOutcome:
        agent: harbor_adapter.AgentSpec = kw["agent"]
        name: str = kw["trial_name"]
        task_dir = Path(kw["task_dir"])
        trial_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "sb-authoring-tests" / name
        trial_dir.mkdir(parents=True, exist_ok=True)
        if agent.name == "terminus-2":
            overlay = Path(kw["environment_kwargs"]["extra_docker_compose"][0])
            workdir = trial_dir / "authoring"
            for path in (task_dir / "environment" / "authoring").rglob("*"):
                if path.is_file():
                    target = workdir / path.relative_to(task_dir / "environment" / "authoring")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(path.read_bytes())
            box = Sandbox(workdir, overlay.parent, agent)
            self.sandboxes.append(box)
            self.agents.pop(0)(box)
            return _outcome(trial_dir, name)
        self.gate_trials.append(name)
        config = json.loads((task_dir / "tests" / "config.json").read_text())
        tests = [f"{p}::test_multiply" for p in config["held_out"] if p.endswith(".py")]
        if agent.name == "command":
            return _outcome(trial_dir, name, agent_exit_code=0, agent_output="smoke-ok")
        if agent.name == "nop" and kw.get("disable_verifier"):
            return _outcome(trial_dir, name)
        if agent.name == "nop" and config["mode"] == "discover":
            _report(
                trial_dir,
                {"before": {t: "failed" for t in tests}, "after": {t: "passed" for t in tests}, "gold_applied": True},
            )
            return _outcome(trial_dir, name)
        if agent.name == "nop":
            _report(trial_dir, {"runs": [{"outcomes": {t: "failed" for t in config["fail_to_pass"]}}]})
            return _outcome(trial_dir, name, reward=0.0)
        runs = int(os.environ.get("SELFBENCH_VERIFY_RUNS", "1"))
        run = {"outcomes": {t: "passed" for t in config["fail_to_pass"]}, "passed": True}
        _report(trial_dir, {"runs": [run] * runs, "flake_rate": 0.0})
        return _outcome(trial_dir, name, reward=1.0)


@pytest.fixture
def harbor(monkeypatch: pytest.MonkeyPatch) -> Harbor:
    fake = Harbor(agents=[])
    monkeypatch.setattr(harbor_adapter, "run_trial", fake.run_trial)
    monkeypatch.setattr(
        harbor_adapter,
        "trial_containers_remove",
        lambda *, trial_name, environment_type=None: fake.removed.append(trial_name) or 1,
    )
    monkeypatch.setattr(sandboxes, "containers_running", lambda *, sandbox_id, trial_name: True)
    return fake


def author_settings(gw: Gateway, **kw: Any) -> Any:  # noqa: F811
    return services.settings_save(
        workspace=gw.workspace,
        author_agent="terminus-2",
        author_model="gpt-5-mini",
        author_credential_id=gw.credentials["openai"].pk,
        reasoning="low",
        reviewer_model="gpt-5",
        reviewer_credential_id=gw.credentials["openai"].pk,
        **kw,
    )


def wait_for(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def silent_agent(stop: threading.Event) -> Step:
    def step(box: Sandbox) -> None:
        stop.wait(30)

    return step


@pytest.fixture
def api_for() -> Callable[[Any], Any]:
    from rest_framework.test import APIClient

    from tests.factories import make_api_key

    def client(workspace: Any) -> APIClient:
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(workspace=workspace).raw}")
        return c

    return client
