"""What a release makes public beyond aggregate scores, and only when asked (reference §1.5 "Publish options";
seeds/how-it-works.md "Sharing Tasks"; both options are off by default):

- **Publish Tasks**: each released task's instruction, its held-out tests (the files under `tests/held_out/` and the
  fail-to-pass / pass-to-pass selection) and its reference solution (`solution/gold.patch` and `solution/solve.sh`).
  Never read: `environment/` (the repository snapshot and build files, where environment secrets would live),
  `task.toml`, `tests/base.tar`, the verifier scripts, or any file reached through a link.
- **Publish Results by Task**: for each chosen baseline configuration, its latest scored trial on each released task:
  pass/fail, the grading (reward and per-test outcomes from the verifier's `outcomes.json`, when recorded), the
  verifier's stdout and the solver's transcript. Harbor logs and the trial's other artifacts are never read, and
  endpoint hosts (gateway and provider base URLs, internal hosts, IP addresses) and host paths are stripped.

Every text is capped, passed through `selfbench.redaction.redact`, and counted against one budget per release, so a
release document stays far below PostgreSQL's jsonb limit however many tasks it has; a text past the budget is
replaced by a marker. Reading is deterministic (sorted files, fixed order), so publishing the same thing twice gives
the same document and the same content hash.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from django.conf import settings

from apps.runs.models import Trial, TrialArtifact
from apps.tasks.models import Task, TaskVersion
from selfbench.redaction import redact

INSTRUCTION_CAP = 64 * 1024
TEST_FILE_CAP = 64 * 1024
TEST_FILES_MAX = 200
GOLD_PATCH_CAP = 256 * 1024
SOLVE_SCRIPT_CAP = 16 * 1024
TEST_OUTPUT_CAP = 16 * 1024
TRANSCRIPT_CAP = 64 * 1024
TEST_NAMES_MAX = 2000
# All public text of one release (characters). Far below jsonb's 255 MB, and what one public response should carry.
RELEASE_TEXT_BUDGET = 32 * 1024 * 1024
OVER_BUDGET = "[... left out: this release's public text limit was reached ...]"

HELD_OUT_DIR = "tests/held_out"
GOLD_PATCH_FILES = ("solution/gold.patch", "gold.patch")
SOLVE_SCRIPT = "solution/solve.sh"
TEST_OUTPUT_ARTIFACT = "verifier/test-stdout.txt"
OUTCOMES_ARTIFACT = "verifier/outcomes.json"


class TextBudget:
    """The public text a release may still carry; `fit` hands a text back while it lasts, then a marker."""

    def __init__(self, chars: int = RELEASE_TEXT_BUDGET) -> None:
        self.remaining = chars

    def fit(self, text: str | None) -> str | None:
        if text is None:
            return None
        if len(text) > self.remaining:
            self.remaining = 0
            return OVER_BUDGET
        self.remaining -= len(text)
        return text


def cut(text: str, cap: int, *, keep: Literal["tail", "ends"]) -> str:
    """`text` within `cap` characters, saying how much was cut: keep its tail (test output ends with the verdict) or
    both ends (a transcript's start has the plan, its end the outcome)."""
    if len(text) <= cap:
        return text
    marker = f"[... {len(text) - cap} characters cut ...]"
    if keep == "tail":
        return f"{marker}\n{text[-cap:]}"
    half = cap // 2
    return f"{text[:half]}\n{marker}\n{text[-(cap - half) :]}"


# --- endpoint hosts and host paths -----------------------------------------------------------------------------------

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?::\d{{1,5}})?(?!\.?\w)")
# Compressed (`fd00::1`) or full IPv6 with a digit somewhere: `tests/x.py::test_y` and `std::vector` stay.
_IPV6 = re.compile(
    r"(?<![\w:.])(?=[0-9A-Fa-f:]*\d)"
    r"(?:(?:[0-9A-Fa-f]{1,4}:){1,7}(?::[0-9A-Fa-f]{1,4}){1,7}|(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|::1)"
    r"(?![\w:])"
)
_IPV6_BRACKETED = re.compile(r"\[[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\](?::\d{1,5})?")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s\"'<>`)\]}]+")
_INTERNAL_HOST = re.compile(r"(?<![\w.\-])[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.internal(?::\d{1,5})?(?:/[^\s\"'<>`]*)?")
# `OPENAI_BASE_URL=…`, `"api_base": "…"`, `DB_HOST=db.corp:5432`: the value is an endpoint whatever its host.
_ENDPOINT_ASSIGNMENT = re.compile(
    r"(?i)\b[A-Z0-9_]*(?:BASE_URL|API_BASE|API_URL|ENDPOINT|_HOST)[\"']?\s*[=:]\s*[\"']?"
    r"(?P<value>(?:[a-z][a-z0-9+.\-]*://|[\w.\-]+:\d{2,5}\b)[^\s\"',;)<>]*)"
)
_INTERNAL_SUFFIXES = (".internal", ".local", ".localhost", ".localdomain", ".lan", ".home.arpa", ".svc")
_LOG_PATH = re.compile(r"(?<![\w.\-])/logs/(?:agent|verifier|artifacts)\b[^\s\"'<>`,;]*")
_TRIAL_NAME = re.compile(r"\bsb-trial-[0-9a-f]{16}-\d+\b")

ENDPOINT = "[REDACTED:endpoint]"
PATH = "[REDACTED:path]"


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _configured_hosts() -> set[str]:
    """The deployment's own hosts and the provider base URLs it hands agents."""
    urls = [
        settings.GATEWAY_PUBLIC_URL,
        settings.OPENAI_BASE_URL,
        settings.ANTHROPIC_BASE_URL,
        settings.OPENROUTER_BASE_URL,
    ]
    hosts = {_host(u) for u in urls}
    hosts |= {h.lower().lstrip(".") for h in settings.ALLOWED_HOSTS if h and h != "*"}
    hosts.discard("")
    return hosts


def _private_host(host: str, configured: set[str]) -> bool:
    host = host.strip("[]").rstrip(".")
    if not host or "." not in host or host == "localhost" or ":" in host:  # single label, localhost or IPv6
        return True
    if host.endswith(_INTERNAL_SUFFIXES) or _IPV4.fullmatch(host):
        return True
    return any(host == c or host.endswith("." + c) for c in configured)


# Paths every sandbox has: never taken for the deployment's own, or every `/app/…` in a transcript would go.
_SANDBOX_PATHS = {"", "/app", "/tests", "/logs", "/solution", "/tmp", "/root", "/home", "/srv", "/work", "/usr"}  # noqa: S108


def _host_paths() -> list[str]:
    """The deployment's media, trials and code directories (longest first)."""
    paths = {str(settings.MEDIA_ROOT), str(settings.HARBOR_TRIALS_DIR), str(settings.BASE_DIR)}
    return sorted((p.rstrip("/") for p in paths if p.rstrip("/") not in _SANDBOX_PATHS), key=len, reverse=True)


def strip_endpoints(text: str) -> str:
    """`text` without endpoint hosts (gateway and provider base URLs, internal hosts, IP addresses), Harbor's log and
    artifact paths, the deployment's own paths and trial names. Only for public copies: it is deliberately broad."""
    configured = _configured_hosts()
    gateway_path = urlsplit(settings.GATEWAY_PUBLIC_URL).path.rstrip("/")
    gateway_paths = [f"{p}/" for p in {"/gateway", gateway_path} if p]

    def url(match: re.Match[str]) -> str:
        found = match.group(0)
        if _private_host(_host(found), configured) or any(p in found for p in gateway_paths):
            return ENDPOINT
        return found

    text = _ENDPOINT_ASSIGNMENT.sub(lambda m: m.group(0)[: m.start("value") - m.start()] + ENDPOINT, text)
    text = _URL.sub(url, text)
    for host in sorted(configured, key=len, reverse=True):
        bare = rf"(?<![\w.\-]){re.escape(host)}(?::\d{{1,5}})?(?:/[^\s\"'<>`]*)?(?![\w\-])"
        text = re.sub(bare, ENDPOINT, text, flags=re.IGNORECASE)
    text = _INTERNAL_HOST.sub(ENDPOINT, text)
    text = _IPV4.sub(ENDPOINT, text)
    text = _IPV6_BRACKETED.sub(ENDPOINT, text)
    text = _IPV6.sub(ENDPOINT, text)
    for prefix in _host_paths():
        text = re.sub(rf"{re.escape(prefix)}(?:/[^\s\"'<>`,;]*)?", PATH, text)
    text = _LOG_PATH.sub(PATH, text)
    return _TRIAL_NAME.sub("[REDACTED:trial]", text)


def public_text(text: str) -> str:
    """A trial's text as it may go public: credentials redacted, endpoints and host paths stripped."""
    return strip_endpoints(redact(text))


# --- Publish Tasks ----------------------------------------------------------------------------------------------------


def _read_text(path: Path, cap: int) -> tuple[str, int] | None:
    """(text of a regular file under its task directory, size in bytes), at most `cap` bytes read; None for a link,
    a binary file or nothing there."""
    if path.is_symlink() or not path.is_file():
        return None
    size = path.stat().st_size
    with path.open("rb") as fh:
        data = fh.read(cap + 1)
    if b"\x00" in data[:8192]:
        return None
    text = data[:cap].decode("utf-8", errors="replace")
    if size > cap:
        text += f"\n[... {size - cap} bytes cut ...]"
    return text, size


def _held_out_files(root: Path) -> list[Path]:
    """Regular files under tests/held_out, sorted, never following a link (a link could lead out of the task)."""
    base = root / HELD_OUT_DIR
    if base.is_symlink() or not base.is_dir():
        return []
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not (here / d).is_symlink())
        found.extend(here / f for f in filenames if not (here / f).is_symlink())
    return sorted(found)[:TEST_FILES_MAX]


def _public_file(path: Path, cap: int, budget: TextBudget) -> str | None:
    read = _read_text(path, cap)
    return budget.fit(redact(read[0])) if read is not None else None


def _tests(version: TaskVersion, budget: TextBudget) -> dict[str, Any]:
    base = version.path / HELD_OUT_DIR
    files = []
    for path in _held_out_files(version.path):
        read = _read_text(path, TEST_FILE_CAP)
        files.append(
            {
                "path": redact(path.relative_to(base).as_posix()),
                "size": path.stat().st_size,
                "content": budget.fit(redact(read[0])) if read is not None else None,  # None: binary
            }
        )
    return {
        "files": files,
        "failToPass": [redact(t) for t in version.fail_to_pass],
        "passToPass": [redact(t) for t in version.pass_to_pass],
    }


def _solution(version: TaskVersion, budget: TextBudget) -> dict[str, Any]:
    gold = next((p for p in (version.path / f for f in GOLD_PATCH_FILES) if p.is_file() and not p.is_symlink()), None)
    return {
        "goldPatch": _public_file(gold, GOLD_PATCH_CAP, budget) if gold is not None else None,
        "solveScript": _public_file(version.path / SOLVE_SCRIPT, SOLVE_SCRIPT_CAP, budget),
    }


def public_task(task: Task, budget: TextBudget) -> dict[str, Any]:
    """One released task as Publish Tasks makes it public (its version loaded with it)."""
    version = task.version
    return {
        "taskId": task.pk,
        "title": task.title,
        "pullRequest": task.pr_number,
        "tier": task.tier,
        "baseSha": task.base_sha or None,
        "contentHash": version.content_hash if version is not None else None,
        "instruction": (
            _public_file(version.path / "instruction.md", INSTRUCTION_CAP, budget) if version is not None else None
        ),
        "tests": _tests(version, budget) if version is not None else None,
        "solution": _solution(version, budget) if version is not None else None,
    }


# --- Publish Results by Task ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outcomes:
    tests: dict[str, str]
    runs: int
    passed_runs: int


def _outcomes(report_text: str | None) -> _Outcomes | None:
    """Per-test outcomes from the verifier's report (`{"runs": [{"passed", "outcomes": {test: outcome}}]}`): a test
    is `passed` only if it passed on every run, otherwise its first other outcome. None when nothing was recorded."""
    if not report_text:
        return None
    try:
        report = json.loads(report_text)
    except ValueError:
        return None
    runs = report.get("runs") if isinstance(report, dict) else None
    if not isinstance(runs, list):
        return None
    merged: dict[str, str] = {}
    n = passed = 0
    for run in runs:
        outcomes = run.get("outcomes") if isinstance(run, dict) else None
        if not isinstance(outcomes, dict):
            continue
        n += 1
        passed += run.get("passed") is True
        for name, outcome in outcomes.items():
            if isinstance(name, str) and isinstance(outcome, str) and merged.get(name, "passed") == "passed":
                merged[name] = outcome
    tests = {public_text(k)[:500]: public_text(v)[:32] for k, v in sorted(merged.items())[:TEST_NAMES_MAX]}
    return _Outcomes(tests=tests, runs=n, passed_runs=passed)


def _rewards(rewards: Any) -> dict[str, float] | None:
    if not isinstance(rewards, dict):
        return None
    return {public_text(str(k))[:100]: float(v) for k, v in sorted(rewards.items()) if isinstance(v, int | float)}


def trial_results(trial_ids: Iterable[int], budget: TextBudget) -> dict[int, dict[str, Any]]:
    """trial id → what Publish Results by Task shows of it, in the order given (the budget is spent in that order).
    Two queries: the trials' grading and transcript, and only their verifier stdout and outcomes artifacts."""
    ids = list(dict.fromkeys(trial_ids))
    trials = Trial.objects.filter(pk__in=ids).only("pk", "reward", "rewards", "transcript").in_bulk()
    artifacts: dict[tuple[int, str], str] = {
        (trial_id, name): content
        for trial_id, name, content in TrialArtifact.objects.filter(
            trial_id__in=ids, name__in=[TEST_OUTPUT_ARTIFACT, OUTCOMES_ARTIFACT]
        ).values_list("trial_id", "name", "content")
    }
    out: dict[int, dict[str, Any]] = {}
    for pk in ids:
        trial = trials.get(pk)
        if trial is None:
            continue
        outcomes = _outcomes(artifacts.get((pk, OUTCOMES_ARTIFACT)))
        stdout = artifacts.get((pk, TEST_OUTPUT_ARTIFACT))
        out[pk] = {
            "grading": {
                "reward": trial.reward,
                "rewards": _rewards(trial.rewards),
                "tests": outcomes.tests if outcomes is not None else None,
                "runs": outcomes.runs if outcomes is not None else None,
                "passedRuns": outcomes.passed_runs if outcomes is not None else None,
            },
            "testOutput": budget.fit(cut(public_text(stdout), TEST_OUTPUT_CAP, keep="tail")) if stdout else None,
            "transcript": (
                budget.fit(cut(public_text(trial.transcript), TRANSCRIPT_CAP, keep="ends"))
                if trial.transcript
                else None
            ),
        }
    return out
