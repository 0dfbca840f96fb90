"""Gate cost bench: the five gates' wall time against running the task's test command once in the same image.

    DEBUG=1 .venv/bin/python bench/gates_bench.py [--runs N] [--json out.json]

Authors the "good" PR of the generated calc repository (tests/tasks/gitrepo.py) with the heuristic author, runs the
discovery trial and the five gates through the Harbor adapter on real podman, then times
`podman run <same image> bash /tests/run-tests.sh` (gold applied) as the baseline. Reports each gate's wall time,
the ratio gates / baseline, and tasks verified per hour per worker (authoring + gates, one worker, sequential).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "selfbench.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from apps.tasks import authoring, gates, storage  # noqa: E402
from tests.tasks.gitrepo import make_calc_repo  # noqa: E402


def baseline(task_dir: Path, image: str) -> float:
    subprocess.run(
        ["podman", "build", "-q", "-t", image, str(task_dir / "environment")], check=True, capture_output=True
    )
    command = "cd /app && git apply /solution/gold.patch && bash /tests/run-tests.sh /app /tmp/outcomes.json"
    started = time.monotonic()
    proc = subprocess.run(
        [
            "podman",
            "run",
            "--rm",
            "-v",
            f"{task_dir / 'tests'}:/tests:ro",
            "-v",
            f"{task_dir / 'solution'}:/solution:ro",
            image,
            "bash",
            "-c",
            command,
        ],
        capture_output=True,
        text=True,
    )
    elapsed = time.monotonic() - started
    if proc.returncode != 0 or "SB-OUTCOME failed" in proc.stdout:
        raise SystemExit(f"baseline run failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="determinism reruns (default 3)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="selfbench-gates-bench-"))
    settings.MEDIA_ROOT = work / "media"
    settings.HARBOR_TRIALS_DIR = work / "trials"
    repo, prs = make_calc_repo(work)
    pr = prs["good"]
    source = authoring.PullRequestSource(repo, pr.base_sha, pr.head_sha, pr.title, pr.body, pr.number, "acme/calc")

    timings: dict[str, float] = {}
    started = time.monotonic()
    draft = authoring.draft(source=source, tier_requested="easy", base_image=settings.BASE_IMAGE)
    _, draft_dir = storage.store(draft.files, kind="task-drafts")
    disc = gates.run_discovery(draft_dir, "bench-discovery")
    assert disc.status == gates.PASSED, disc.log
    files, definition = authoring.finalize(draft=draft, before=disc.details["before"], after=disc.details["after"])
    _, task_dir = storage.store(files)
    timings["authoring"] = time.monotonic() - started

    f2p, p2p = definition["failToPass"], definition["passToPass"]
    runners = {
        "build": lambda n: gates.run_build(task_dir, n),
        "smoke": lambda n: gates.run_smoke(task_dir, n),
        "nop": lambda n: gates.run_nop(task_dir, n, fail_to_pass=f2p, pass_to_pass=p2p),
        "oracle": lambda n: gates.run_oracle(task_dir, n),
        "determinism": lambda n: gates.run_oracle(task_dir, n, runs=args.runs),
    }
    results = {}
    retries = 0
    for name, runner in runners.items():
        # Like the services: an infrastructure error is retried (up to 3 attempts); its time is not counted.
        for attempt in range(1, 4):
            result = runner(f"bench-{name}-{attempt}")
            if result.status != gates.INFRA:
                break
            retries += 1
        assert result.status == gates.PASSED, f"{name}: {result.reason}\n{result.log}"
        results[name] = result
        timings[name] = result.duration_sec
    gates_total = sum(timings[g] for g in results)
    base = baseline(task_dir, f"localhost/selfbench-bench:{task_dir.name[:12]}")
    per_task = timings["authoring"] + gates_total
    report = {
        "task": str(task_dir),
        "determinismRuns": args.runs,
        "infrastructureRetries": retries,
        "secondsPerGate": {k: round(v, 2) for k, v in timings.items()},
        "gatesTotalSec": round(gates_total, 2),
        "baselineTestRunSec": round(base, 2),
        "ratioGatesToBaseline": round(gates_total / base, 1),
        "authoringPlusGatesSec": round(per_task, 2),
        "tasksVerifiedPerHourPerWorker": round(3600 / per_task, 1),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
