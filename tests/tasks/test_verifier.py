"""The verifier shipped in every task, run on the host (no container): discovery, selection, and tamper-proofing."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from apps.tasks import authoring
from apps.tasks.storage import TaskFiles, write_tree
from tests.tasks.gitrepo import make_calc_repo


def run_verifier(task: Path, app: Path, work: Path, *, runs: int = 1) -> dict:
    logs = work / "logs"
    subprocess.run(
        [
            sys.executable,
            "-P",
            str(task / "tests" / "verify.py"),
            "--tests",
            str(task / "tests"),
            "--app",
            str(app),
            "--logs",
            str(logs),
            "--work",
            str(work / "verify"),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "SB_RUNS": str(runs), "SB_PYTHON": sys.executable},
    )
    report = json.loads((logs / "outcomes.json").read_text())
    report["reward_txt"] = (logs / "reward.txt").read_text().strip()
    report["reward_json_exists"] = (logs / "reward.json").exists()
    return report


def materialise(files: TaskFiles, root: Path) -> Path:
    write_tree(files, root)
    return root


def base_app(task: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    with tarfile.open(task / "tests" / "base.tar") as tar:
        tar.extractall(dest, filter="data")
    return dest


def apply(app: Path, patch: bytes) -> None:
    subprocess.run(["git", "apply", "-"], input=patch, cwd=app, check=True)


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return make_calc_repo(tmp_path_factory.mktemp("repo"))


def author_locally(calc, kind: str, tmp: Path) -> tuple[Path, dict]:  # type: ignore[no-untyped-def]
    repo, prs = calc
    pr = prs[kind]
    source = authoring.PullRequestSource(repo, pr.base_sha, pr.head_sha, pr.title, pr.body, pr.number, "acme/calc")
    draft = authoring.draft(source=source, tier_requested="easy", base_image="localhost/selfbench-base:bookworm")
    assert draft.reasons == []
    disc = materialise(draft.files, tmp / "draft")
    report = run_verifier(disc, base_app(disc, tmp / "disc-app"), tmp / "disc")
    files, definition = authoring.finalize(draft=draft, before=report["before"], after=report["after"])
    return materialise(files, tmp / "task"), definition


@pytest.fixture(scope="module")
def good(calc, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[no-untyped-def]
    return author_locally(calc, "good", tmp_path_factory.mktemp("good"))


def test_discovery_selects_fail_to_pass_and_pass_to_pass(good) -> None:  # type: ignore[no-untyped-def]
    _, definition = good
    assert definition["failToPass"] == [
        "tests/test_core.py::test_clamp",
        "tests/test_core.py::test_divide",
        "tests/test_core.py::test_multiply",
    ]
    assert definition["passToPass"] == ["tests/test_core.py::test_add", "tests/test_core.py::test_subtract"]
    assert definition["tier"] == "easy"


def test_base_scores_zero_and_gold_scores_one(good, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task, _ = good
    nop = run_verifier(task, base_app(task, tmp_path / "nop"), tmp_path / "v-nop")
    assert nop["reward"] == 0.0 and nop["reward_txt"] == "0.0"
    assert nop["runs"][0]["outcomes"]["tests/test_core.py::test_multiply"] == "failed"
    assert nop["runs"][0]["outcomes"]["tests/test_core.py::test_add"] == "passed"
    app = base_app(task, tmp_path / "oracle")
    apply(app, (task / "solution" / "gold.patch").read_bytes())
    oracle = run_verifier(task, app, tmp_path / "v-oracle")
    assert oracle["reward"] == 1.0 and oracle["applied"] == ["calc/core.py"]


def test_editing_the_held_out_tests_gains_nothing(good, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task, _ = good
    app = base_app(task, tmp_path / "app")
    # The agent writes tests that pass against the unchanged code, under the held-out names.
    (app / "tests" / "test_core.py").write_text(
        "def test_add():\n    pass\n\ndef test_subtract():\n    pass\n\ndef test_multiply():\n    pass\n\n"
        "def test_divide():\n    pass\n\ndef test_clamp():\n    pass\n"
    )
    report = run_verifier(task, app, tmp_path / "v")
    assert report["reward"] == 0.0
    assert "tests/test_core.py" in report["dropped"]


def test_a_conftest_that_passes_every_test_gains_nothing(good, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task, _ = good
    app = base_app(task, tmp_path / "app")
    hook = (
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    rep = outcome.get_result()\n    rep.outcome = 'passed'\n"
    )
    (app / "conftest.py").write_text(hook)
    (app / "calc" / "conftest.py").write_text(hook)
    (app / "pytest.ini").write_text("[pytest]\naddopts = -p calc.evil\n")
    report = run_verifier(task, app, tmp_path / "v")
    assert report["reward"] == 0.0
    assert {"conftest.py", "calc/conftest.py", "pytest.ini"} <= set(report["dropped"])


def test_writing_a_reward_file_gains_nothing(good, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task, _ = good
    app = base_app(task, tmp_path / "app")
    logs = tmp_path / "v" / "logs"
    # Code that runs during the tests plants both reward files; reward.json would win in Harbor.
    (app / "calc" / "__init__.py").write_text(
        f"import os\nos.makedirs({str(logs)!r}, exist_ok=True)\n"
        f"open(os.path.join({str(logs)!r}, 'reward.json'), 'w').write('{{\"reward\": 1}}')\n"
        f"open(os.path.join({str(logs)!r}, 'reward.txt'), 'w').write('1')\n"
    )
    report = run_verifier(task, app, tmp_path / "v")
    assert report["reward"] == 0.0 and report["reward_txt"] == "0.0"
    assert report["reward_json_exists"] is False


def test_a_module_shadowing_pytest_gains_nothing(good, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task, _ = good
    app = base_app(task, tmp_path / "app")
    (app / "pytest.py").write_text("import sys\ndef main(*a, **k):\n    sys.exit(0)\n")
    report = run_verifier(task, app, tmp_path / "v")
    assert report["reward"] == 0.0


def test_a_link_out_of_the_tree_is_dropped(good, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task, _ = good
    app = base_app(task, tmp_path / "app")
    (app / "calc" / "core.py").unlink()
    (app / "calc" / "core.py").symlink_to("/etc/hostname")
    report = run_verifier(task, app, tmp_path / "v")
    assert "calc/core.py" in report["dropped"]


def test_the_flaky_test_fails_when_run_again(calc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task, definition = author_locally(calc, "flaky", tmp_path)
    assert "tests/test_cache.py::test_cache_warms_once" in definition["failToPass"]
    app = base_app(task, tmp_path / "app")
    apply(app, (task / "solution" / "gold.patch").read_bytes())
    marker = Path("/tmp/calc-cache-warmed")
    marker.unlink(missing_ok=True)
    try:
        report = run_verifier(task, app, tmp_path / "v", runs=3)
    finally:
        marker.unlink(missing_ok=True)
    assert [r["passed"] for r in report["runs"]] == [True, False, False]
    assert report["reward"] == 0.0 and report["flake_rate"] == pytest.approx(2 / 3)
