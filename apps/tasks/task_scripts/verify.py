"""SelfBench verifier, run by tests/test.sh inside the task's container after the agent has finished.

1. Extract the base snapshot (tests/base.tar) into a clean directory.
2. Apply the agent's changes to /app onto it, file by file, dropping every test path (any `tests/` or `test/`
   directory, test_*.py, *_test.py, conftest.py, pytest.ini, tox.ini, and every held-out file) and links that
   leave the tree.
3. Restore the held-out tests listed in config.json (never whatever else sits in /tests).
4. Run run-tests.sh in the clean tree `runs` times; reward 1 only if every selected test passed every time.
A patch that edits tests, adds a conftest.py or writes a reward file therefore gains nothing: the result is a tree
the agent could have written directly. In "discover" mode it runs the held-out test files on base + tests and on
base + tests + gold and records every outcome (used by the author to pick fail-to-pass and pass-to-pass tests).
Standard library only; Python >= 3.8.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

SKIP_DIRS = {".git", "__pycache__", ".pytest_cache"}
TEST_DIRS = {"tests", "test", "testing"}
TEST_FILES = {"conftest.py", "pytest.ini", "tox.ini"}


def is_test_path(rel: str, held_out: set[str]) -> bool:
    if rel in held_out:
        return True
    parts = rel.split("/")
    name = parts[-1]
    if name in TEST_FILES or any(p in TEST_DIRS for p in parts[:-1]):
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def tree_entries(root: Path) -> dict[str, Path]:
    """Files and symlinks under root by posix relative path (never following links into directories)."""
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        keep = []
        for d in dirnames:
            p = here / d
            if d in SKIP_DIRS:
                continue
            if p.is_symlink():
                out[p.relative_to(root).as_posix()] = p
            else:
                keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            if f.endswith(".pyc"):
                continue
            p = here / f
            out[p.relative_to(root).as_posix()] = p
    return out


def link_stays_inside(rel: str, target: str) -> bool:
    if os.path.isabs(target):
        return False
    depth = len(rel.split("/")) - 1
    for part in Path(target).parts:
        depth = depth - 1 if part == ".." else depth + (part != ".")
        if depth < 0:
            return False
    return True


def same(a: Path, b: Path) -> bool:
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    if not b.exists() or not a.is_file() or not b.is_file():
        return False
    if bool(a.stat().st_mode & stat.S_IXUSR) != bool(b.stat().st_mode & stat.S_IXUSR):
        return False
    return filecmp.cmp(a, b, shallow=False)


def remove(p: Path) -> None:
    if p.is_symlink() or p.is_file():
        p.unlink()
    elif p.is_dir():
        shutil.rmtree(p)


def place(src: Path, dst: Path) -> None:
    for parent in reversed(dst.relative_to(dst.anchor).parents):
        q = Path(dst.anchor) / parent
        if q.is_symlink() or q.is_file():
            q.unlink()
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() or dst.is_symlink():
        remove(dst)
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copy2(src, dst)


def overlay_agent_changes(app: Path, clean: Path, held_out: set[str]) -> dict[str, list[str]]:
    """Copy what the agent changed in app onto clean, minus test paths and escaping links."""
    applied: list[str] = []
    dropped: list[str] = []
    app_entries = tree_entries(app)
    clean_entries = tree_entries(clean)
    for rel, src in sorted(app_entries.items()):
        base = clean / rel
        if same(src, base):
            continue
        if is_test_path(rel, held_out):
            dropped.append(rel)
            continue
        if src.is_symlink() and not link_stays_inside(rel, os.readlink(src)):
            dropped.append(rel)
            continue
        if not (src.is_symlink() or src.is_file()):
            continue
        place(src, base)
        applied.append(rel)
    for rel in sorted(set(clean_entries) - set(app_entries)):
        if is_test_path(rel, held_out):
            dropped.append("-" + rel)
            continue
        remove(clean / rel)
        applied.append("-" + rel)
    return {"applied": applied, "dropped": dropped}


def restore_held_out(tests: Path, clean: Path, config: dict[str, Any]) -> None:
    for rel in config.get("held_out", []):
        place(tests / "held_out" / rel, clean / rel)
    for rel in config.get("held_out_deleted", []):
        target = clean / rel
        if target.exists() or target.is_symlink():
            remove(target)


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def kill_strays() -> None:
    """Stop processes the agent left running (they could rewrite the reward after us). Containers only.

    Spared: this process's ancestors, and PID 1 with whatever started alongside it (the container's own command,
    e.g. `sh -c "sleep infinity"`, whose end would stop the container)."""
    if not (Path("/run/.containerenv").exists() or Path("/.dockerenv").exists()):
        return
    keep = {1}
    pid = os.getpid()
    while pid > 1:
        keep.add(pid)
        try:
            pid = int(_stat(pid)[1])
        except (OSError, IndexError, ValueError):
            break
    try:
        boot = int(_stat(1)[19])
    except (OSError, IndexError, ValueError):
        return
    grace = 3 * os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in keep:
            continue
        try:
            if int(_stat(int(entry.name))[19]) - boot <= grace:
                continue
            os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, IndexError, ValueError):
            pass


def run_selected(tests: Path, tree: Path, out: Path) -> dict[str, str]:
    proc = subprocess.run(
        ["bash", str(tests / "run-tests.sh"), str(tree), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sys.stdout.write(proc.stdout)
    try:
        return json.loads(out.read_text())["outcomes"]
    except (OSError, ValueError, KeyError):
        return {}


def run_files(tests: Path, tree: Path, out: Path, files: list[str]) -> dict[str, str]:
    python = os.environ.get("SB_PYTHON", "python3")
    proc = subprocess.run(
        [python, "-P", str(tests / "sb_pytest.py"), "--tree", str(tree), "--out", str(out), "--files", *files],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sys.stdout.write(proc.stdout)
    try:
        return json.loads(out.read_text())["outcomes"]
    except (OSError, ValueError, KeyError):
        return {}


def apply_patch(tree: Path, patch: Path) -> bool:
    if not patch.exists() or patch.stat().st_size == 0:
        return True
    proc = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=tree)
    return proc.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", default="/tests")
    parser.add_argument("--app", default="/app")
    parser.add_argument("--logs", default="/logs/verifier")
    parser.add_argument("--work", default="/tmp/selfbench-verify")  # noqa: S108 - inside the container
    parser.add_argument("--kill-strays", action="store_true")
    args = parser.parse_args()
    tests, app, logs, work = Path(args.tests), Path(args.app), Path(args.logs), Path(args.work)
    if args.kill_strays:
        kill_strays()
    config = json.loads((tests / "config.json").read_text())
    held_out = set(config.get("held_out", [])) | set(config.get("held_out_deleted", []))
    runs = max(1, int(os.environ.get("SB_RUNS") or config.get("runs", 1)))

    if work.exists():
        shutil.rmtree(work)
    clean = work / "clean"
    clean.mkdir(parents=True)
    with tarfile.open(tests / "base.tar") as tar:
        tar.extractall(clean)  # noqa: S202 - our own archive, written by the author
    report: dict[str, Any] = {"mode": config.get("mode", "verify"), "runs": []}
    report.update(overlay_agent_changes(app, clean, held_out))
    restore_held_out(tests, clean, config)

    reward = 0.0
    if config.get("mode") == "discover":
        files = config.get("test_files", [])
        report["before"] = run_files(tests, clean, work / "before.json", files)
        report["gold_applied"] = apply_patch(clean, tests / "gold.patch")
        report["after"] = run_files(tests, clean, work / "after.json", files) if report["gold_applied"] else {}
        reward = 1.0
    else:
        selected = list(config.get("fail_to_pass", [])) + list(config.get("pass_to_pass", []))
        passed_runs = 0
        for i in range(runs):
            outcomes = run_selected(tests, clean, work / f"run-{i}.json")
            ok = bool(selected) and all(outcomes.get(t) == "passed" for t in selected)
            passed_runs += ok
            report["runs"].append({"passed": ok, "outcomes": outcomes})
        reward = 1.0 if passed_runs == runs else 0.0
        report["flake_rate"] = 0.0 if passed_runs in (0, runs) else (runs - passed_runs) / runs

    # Written last, after anything the tests ran: a planted reward.json would take precedence over reward.txt.
    logs.mkdir(parents=True, exist_ok=True)
    report["reward"] = reward
    (logs / "outcomes.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    for name in ("reward.json",):
        if (logs / name).exists() or (logs / name).is_symlink():
            remove(logs / name)
    (logs / "reward.txt").write_text(f"{reward}\n")
    print(f"SB-REWARD {reward}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
