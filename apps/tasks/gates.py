"""The five gates (and the authoring discovery run), each one Harbor trial in a real container via the adapter.

Pure of the database: each function takes a task directory and returns a GateResult; services record it.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apps.tasks.authoring import VERIFY_ENV_RUNS
from selfbench import harbor_adapter
from selfbench.harbor_adapter import AgentSpec, TrialOutcome

PASSED = "passed"
FAILED = "failed"
INFRA = "infrastructure_error"

# Causes that say nothing about the task: the sandbox, Harbor or the worker broke. Retried, then infrastructure_failed.
INFRA_CAUSES = frozenset({"sandbox_failed", "harbor_failed", "cancelled", "unclassified"})
# A Dockerfile step that failed on its own (a RUN command's exit status, a COPY source missing from the context):
# the task's environment is wrong and retrying will not help. Anything else while building (storage races, a killed
# buildah) is infrastructure.
BUILD_ERROR_PATTERNS = (
    re.compile(r'building at STEP "RUN .*(exit status|returned a non-zero code)', re.S),
    re.compile(r'building at STEP "(COPY|ADD) .*checking on sources', re.S),
)
LOG_CAP = 60_000
SMOKE_COMMAND = "bash /opt/selfbench/smoke.sh"

_env_lock = threading.Lock()


@dataclass
class GateResult:
    status: str
    reason: str
    log: str
    duration_sec: float
    trial_name: str = ""
    reward: float | None = None
    runs: int = 1
    flake_rate: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def trial_name(task_id: int, gate: str, attempt: int) -> str:
    return f"task{task_id}-{gate}-{attempt}-{uuid.uuid4().hex[:8]}"


def _tail(text: str | None, cap: int) -> str:
    text = text or ""
    return text if len(text) <= cap else "…" + text[-cap:]


def outcome_log(outcome: TrialOutcome) -> str:
    parts = [f"trial {outcome.trial_name}: reward={outcome.reward} cause={outcome.failure_cause}"]
    timings = ", ".join(f"{k}={v:.1f}s" for k, v in outcome.timings.items() if v is not None)
    if timings:
        parts.append(f"timings: {timings}")
    if outcome.exception_type:
        parts.append(f"exception {outcome.exception_type}: {_tail(outcome.exception_message, 8000)}")
    if outcome.agent_output:
        parts.append(f"--- agent (exit {outcome.agent_exit_code}) ---\n{_tail(outcome.agent_output, 15000)}")
    if outcome.verifier_output:
        parts.append(f"--- verifier ---\n{_tail(outcome.verifier_output, 30000)}")
    return _tail("\n".join(parts), LOG_CAP)


def verifier_report(outcome: TrialOutcome) -> dict[str, Any]:
    path = outcome.trial_dir / "verifier" / "outcomes.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        return {}


def is_infrastructure(outcome: TrialOutcome) -> bool:
    return outcome.exception_type is not None and (outcome.failure_cause or "unclassified") in INFRA_CAUSES


@contextmanager
def verify_runs(n: int) -> Iterator[None]:
    """Harbor resolves the task's [verifier.env] from the worker's environment when the verifier starts."""
    with _env_lock:
        old = os.environ.get(VERIFY_ENV_RUNS)
        os.environ[VERIFY_ENV_RUNS] = str(n)
        try:
            yield
        finally:
            if old is None:
                os.environ.pop(VERIFY_ENV_RUNS, None)
            else:
                os.environ[VERIFY_ENV_RUNS] = old


def _run(task_dir: Path, agent: AgentSpec, name: str, **kwargs: Any) -> tuple[TrialOutcome | None, str, float]:
    started = time.monotonic()
    try:
        outcome = harbor_adapter.run_trial(task_dir=task_dir, agent=agent, trial_name=name, **kwargs)
    except harbor_adapter.TrialSetupError as exc:
        return None, f"trial setup failed: {exc}", time.monotonic() - started
    return outcome, "", time.monotonic() - started


def _infra(name: str, log: str, duration: float, reason: str) -> GateResult:
    return GateResult(INFRA, reason, log, duration, trial_name=name)


def run_build(task_dir: Path, name: str) -> GateResult:
    """The image builds and a container starts (nop agent, no verifier)."""
    outcome, error, duration = _run(task_dir, AgentSpec(name="nop"), name, disable_verifier=True)
    if outcome is None:
        return GateResult(FAILED, error, error, duration, trial_name=name)
    log = outcome_log(outcome)
    if outcome.exception_type is None:
        return GateResult(PASSED, "the image builds and starts", log, duration, name, details=_timings(outcome))
    message = outcome.exception_message or ""
    if any(pattern.search(message) for pattern in BUILD_ERROR_PATTERNS):
        return GateResult(FAILED, f"the image does not build: {_tail(message, 400)}", log, duration, name)
    return _infra(name, log, duration, f"{outcome.exception_type}: {_tail(message, 400)}")


def run_smoke(task_dir: Path, name: str) -> GateResult:
    """smoke.sh succeeds as the agent would run it (a command agent in the agent's environment)."""
    agent = AgentSpec(name="command", options={"command": SMOKE_COMMAND})
    outcome, error, duration = _run(task_dir, agent, name, disable_verifier=True)
    if outcome is None:
        return GateResult(FAILED, error, error, duration, trial_name=name)
    log = outcome_log(outcome)
    if is_infrastructure(outcome) and outcome.agent_exit_code is None:
        return _infra(name, log, duration, f"{outcome.exception_type}: {_tail(outcome.exception_message, 400)}")
    if outcome.agent_exit_code == 0:
        return GateResult(PASSED, "smoke.sh succeeded", log, duration, name, details=_timings(outcome))
    return GateResult(FAILED, f"smoke.sh exited {outcome.agent_exit_code}", log, duration, name)


def _selected(report: dict[str, Any], run: int = 0) -> dict[str, str]:
    runs = report.get("runs") or []
    return dict(runs[run]["outcomes"]) if len(runs) > run else {}


def run_nop(task_dir: Path, name: str, *, fail_to_pass: list[str], pass_to_pass: list[str]) -> GateResult:
    """Harbor's nop agent: the fail-to-pass tests fail on the base, the pass-to-pass tests pass, reward 0."""
    outcome, error, duration = _run(task_dir, AgentSpec(name="nop"), name)
    if outcome is None:
        return GateResult(FAILED, error, error, duration, trial_name=name)
    log = outcome_log(outcome)
    report = verifier_report(outcome)
    if is_infrastructure(outcome) or not report:
        return _infra(name, log, duration, f"no verifier report ({outcome.exception_type or 'missing outcomes'})")
    outcomes = _selected(report)
    problems = [f"{t} passes without the change" for t in fail_to_pass if outcomes.get(t) == "passed"]
    problems += [
        f"{t} is {outcomes.get(t, 'missing')} on the base" for t in pass_to_pass if outcomes.get(t) != "passed"
    ]
    if outcome.reward != 0.0:
        problems.append(f"reward is {outcome.reward}, expected 0")
    details = {"outcomes": outcomes, **_timings(outcome)}
    if problems:
        return GateResult(FAILED, "; ".join(problems), log, duration, name, outcome.reward, details=details)
    return GateResult(
        PASSED, "new tests fail on the base, old ones pass", log, duration, name, outcome.reward, details=details
    )


def run_oracle(task_dir: Path, name: str, *, runs: int = 1) -> GateResult:
    """Harbor's oracle agent applies gold.patch; every selected test passes in each of `runs` runs, reward 1."""
    with verify_runs(runs):
        outcome, error, duration = _run(task_dir, AgentSpec(name="oracle"), name)
    if outcome is None:
        return GateResult(FAILED, error, error, duration, trial_name=name)
    log = outcome_log(outcome)
    report = verifier_report(outcome)
    if is_infrastructure(outcome) or not report:
        return _infra(name, log, duration, f"no verifier report ({outcome.exception_type or 'missing outcomes'})")
    run_reports = report.get("runs") or []
    failing: dict[str, str] = {}
    passed_runs = 0
    for item in run_reports:
        passed_runs += bool(item.get("passed"))
        for test, result in (item.get("outcomes") or {}).items():
            if result != "passed":
                failing.setdefault(test, result)
    flake = report.get("flake_rate")
    details = {"runs": [r.get("outcomes", {}) for r in run_reports], "passedRuns": passed_runs, **_timings(outcome)}
    ok = outcome.reward == 1.0 and len(run_reports) == runs and passed_runs == runs
    if ok:
        reason = "the reference patch passes every selected test" + (f" in all {runs} runs" if runs > 1 else "")
        return GateResult(PASSED, reason, log, duration, name, outcome.reward, runs, flake, details)
    listed = ", ".join(f"{t} ({r})" for t, r in sorted(failing.items())[:10]) or f"reward {outcome.reward}"
    if runs > 1:
        rate = f"{flake:.2f}" if flake is not None else "n/a"
        reason = f"passed {passed_runs} of {runs} runs (flake rate {rate}): {listed}"
    else:
        reason = f"the reference patch does not make the selected tests pass: {listed}"
    return GateResult(FAILED, reason, log, duration, name, outcome.reward, runs, flake, details)


def run_discovery(task_dir: Path, name: str) -> GateResult:
    """The authoring run: held-out test files on base + tests and on base + tests + gold (nop agent)."""
    outcome, error, duration = _run(task_dir, AgentSpec(name="nop"), name)
    if outcome is None:
        return GateResult(FAILED, error, error, duration, trial_name=name)
    log = outcome_log(outcome)
    report = verifier_report(outcome)
    if is_infrastructure(outcome) or not report:
        return _infra(name, log, duration, f"no discovery report ({outcome.exception_type or 'missing outcomes'})")
    details = {"before": report.get("before", {}), "after": report.get("after", {}), **_timings(outcome)}
    if not report.get("gold_applied", False):
        return GateResult(FAILED, "gold.patch does not apply to the base", log, duration, name, details=details)
    return GateResult(PASSED, "discovered test outcomes", log, duration, name, details=details)


def _timings(outcome: TrialOutcome) -> dict[str, Any]:
    return {"timings": outcome.timings}
