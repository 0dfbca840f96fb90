"""The heuristic author: deterministic, no model. From a pull request (a git repository with its base and head
commits, the redacted title and body) it writes a Harbor task: instruction, gold.patch, held-out tests, a Dockerfile
from the Python template, run-tests.sh, test.sh, solve.sh and smoke.sh. The model-driven author reuses all of it.

Two steps: `draft()` builds a discovery task (its verifier runs the held-out test files on base + tests and on
base + tests + gold); `finalize()` turns the discovered outcomes into the fail-to-pass / pass-to-pass selection.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from apps.tasks import checks, patches
from apps.tasks.storage import TaskFiles

AUTHOR_NAME = "heuristic-v1"
VERIFY_ENV_RUNS = "SELFBENCH_VERIFY_RUNS"


@dataclass(frozen=True)
class PullRequestSource:
    """What the author needs to know about one PR, as primitives (no models)."""

    repo_path: Path
    base_sha: str
    head_sha: str
    title: str
    body: str
    number: int | None = None
    repository: str = ""


@dataclass
class Draft:
    source: PullRequestSource
    tier_requested: str
    gold: list[patches.FileDiff]
    tests: list[patches.FileDiff]
    tier: str | None
    held_out: dict[str, bytes]
    held_out_deleted: list[str]
    test_files: list[str]
    files: TaskFiles
    reasons: list[str] = field(default_factory=list)


def script(name: str) -> bytes:
    return (resources.files("apps.tasks") / "task_scripts" / name).read_bytes()


def slug(source: PullRequestSource) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", (source.repository or source.repo_path.name).lower()).strip("-") or "repo"
    return f"{base}-pr-{source.number}" if source.number is not None else f"{base}-{source.head_sha[:10]}"


def instruction(source: PullRequestSource) -> str:
    body = source.body.strip() or "(The pull request has no description.)"
    return (
        f"# {source.title.strip()}\n\n{body}\n\n---\n\n"
        "The repository is in `/app` (a git repository at the commit before this change). Make the change described "
        "above in the repository's code. Hidden tests check the behaviour through the project's public interface; "
        "you will not see them, and changes you make to test files are discarded.\n"
    )


def python_packages(tree: list[str]) -> list[str]:
    """Top-level importable names of the base tree (packages and modules, not tests or build scripts)."""
    names: set[str] = set()
    for path in tree:
        parts = path.split("/")
        if patches.is_test_path(path):
            continue
        if len(parts) == 2 and parts[1] == "__init__.py":
            names.add(parts[0])
        elif len(parts) == 3 and parts[0] == "src" and parts[2] == "__init__.py":
            names.add(parts[1])
        elif len(parts) == 1 and parts[0].endswith(".py") and parts[0] not in {"setup.py", "conftest.py"}:
            names.add(parts[0][:-3])
    return sorted(n for n in names if n.isidentifier())


def dockerfile(*, base_image: str, tree: list[str]) -> str:
    lines = [
        f"FROM {base_image}",
        "ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 DEBIAN_FRONTEND=noninteractive",
        "WORKDIR /app",
        "ADD repo.tar /app/",
    ]
    has = set(tree)
    if has & {"requirements.txt", "pyproject.toml", "setup.py"}:
        lines.append("RUN command -v pip3 >/dev/null || (apt-get update -qq && apt-get install -y -qq python3-pip)")
    if "requirements.txt" in has:
        lines.append("RUN pip3 install --no-cache-dir --break-system-packages -r requirements.txt")
    if "pyproject.toml" in has or "setup.py" in has:
        lines.append("RUN pip3 install --no-cache-dir --break-system-packages -e .")
    lines += [
        # The agent gets a git repository at the base so it can diff its own work.
        "RUN git init -q && git add -A && git -c user.name=selfbench -c user.email=selfbench@localhost "
        "commit -q --allow-empty -m base",
        "COPY smoke.sh /opt/selfbench/smoke.sh",
        "",
    ]
    return "\n".join(lines)


def smoke_script(*, tree: list[str]) -> str:
    imports = "; ".join(f"import {name}" for name in python_packages(tree)) or "pass"
    return (
        "#!/bin/bash\n"
        "# The environment works for an agent: the repository is there and writable, git, Python and pytest run,\n"
        "# and the project's own modules import.\n"
        "set -euo pipefail\n"
        "cd /app\n"
        "git rev-parse --verify HEAD >/dev/null\n"
        "git status --porcelain >/dev/null\n"
        "touch .selfbench-smoke && rm .selfbench-smoke\n"
        "python3 --version\n"
        "python3 -c \"import pytest; print('pytest', pytest.__version__)\"\n"
        f"python3 -c \"import sys; sys.path.insert(0, '/app'); {imports}\"\n"
        "echo smoke-ok\n"
    )


def task_toml(*, name: str, tier: str | None, source: PullRequestSource, author: str = AUTHOR_NAME) -> str:
    return (
        'schema_version = "1.4"\n'
        # The verifier runs in a fresh container of the same image with only /app carried over from the agent's:
        # processes, site-packages edits and files outside /app left by the agent never reach the tests.
        'artifacts = ["/app"]\n\n'
        "[task]\n"
        f'name = "selfbench/{name}"\n\n'
        "[metadata]\n"
        f'difficulty = "{tier or "unrated"}"\n'
        f'source_commit = "{source.base_sha}"\n'
        f'author = "{author}"\n\n'
        "[verifier]\n"
        "timeout_sec = 600.0\n"
        'environment_mode = "separate"\n\n'
        "[verifier.env]\n"
        # How many times the determinism gate reruns the tests; a host variable so the task files never change.
        f'SB_RUNS = "${{{VERIFY_ENV_RUNS}:-1}}"\n\n'
        "[agent]\n"
        "timeout_sec = 1800.0\n\n"
        "[environment]\n"
        "build_timeout_sec = 900.0\n"
        'workdir = "/app"\n'
    )


def draft(*, source: PullRequestSource, tier_requested: str, base_image: str) -> Draft:
    """Split the PR, run the static patch checks and build the discovery task."""
    diff = patches.pr_diff(repo=source.repo_path, base_sha=source.base_sha, head_sha=source.head_sha)
    files = patches.split_files(diff)
    tests = [f for f in files if patches.is_test_path(f.path)]
    gold = [f for f in files if not patches.is_test_path(f.path)]
    held_out: dict[str, bytes] = {}
    deleted: list[str] = []
    for f in tests:
        if f.deleted:
            deleted.append(f.path)
        else:
            held_out[f.new_path] = patches.git_bytes(source.repo_path, "show", f"{source.head_sha}:{f.new_path}")
    sources = {p: b.decode("utf-8", "replace") for p, b in held_out.items()}
    reasons = checks.check_patches(gold=gold, tests=tests, held_out_sources=sources)
    tier = patches.reached_tier(gold, tier_requested)
    test_files = sorted(
        p
        for p in held_out
        if p.endswith(".py") and p.split("/")[-1] not in patches.TEST_FILES and patches.is_test_path(p)
    )
    tree = patches.git(source.repo_path, "ls-tree", "-r", "--name-only", source.base_sha).splitlines()
    base_tar = patches.git_bytes(source.repo_path, "archive", "--format=tar", source.base_sha)
    name = slug(source)
    common: TaskFiles = {
        "task.toml": task_toml(name=name, tier=tier, source=source).encode(),
        "instruction.md": instruction(source).encode(),
        "environment/Dockerfile": dockerfile(base_image=base_image, tree=tree).encode(),
        "environment/repo.tar": base_tar,
        "environment/smoke.sh": smoke_script(tree=tree).encode(),
        "tests/test.sh": script("test.sh"),
        "tests/run-tests.sh": script("run-tests.sh"),
        "tests/sb_pytest.py": script("sb_pytest.py"),
        "tests/verify.py": script("verify.py"),
        "tests/base.tar": base_tar,
        "solution/solve.sh": script("solve.sh"),
        "solution/gold.patch": patches.join(gold).encode(),
        "gold.patch": patches.join(gold).encode(),
        "test.patch": patches.join(tests).encode(),
        "smoke.sh": smoke_script(tree=tree).encode(),
    }
    for path, data in held_out.items():
        common[f"tests/held_out/{path}"] = data
    config = {
        "mode": "discover",
        "held_out": sorted(held_out),
        "held_out_deleted": sorted(deleted),
        "test_files": test_files,
        "fail_to_pass": [],
        "pass_to_pass": [],
    }
    discovery = dict(common)
    discovery["tests/config.json"] = json.dumps(config, indent=1, sort_keys=True).encode()
    discovery["tests/gold.patch"] = patches.join(gold).encode()
    if not test_files:
        reasons.append("the held-out tests contain no Python test module to run")
    return Draft(source, tier_requested, gold, tests, tier, held_out, sorted(deleted), test_files, discovery, reasons)


def select_tests(before: dict[str, str], after: dict[str, str]) -> tuple[list[str], list[str]]:
    """Fail-to-pass: held-out tests that do not pass on base + tests (the behaviour the PR adds), including the tests
    of a file that fails to import there; the oracle gate then proves the gold makes them pass. Pass-to-pass: tests
    that pass on base + tests and still pass with gold."""
    f2p_ids = {t for t, o in before.items() if o != "passed" and "::" in t}
    # A test file that could not even be collected on base + tests (it imports what the PR adds) has only a file-level
    # outcome before; its tests are the ones collected after the gold patch.
    broken_files = {t for t, o in before.items() if o != "passed" and "::" not in t}
    f2p_ids |= {t for t in after if "::" in t and t not in before and t.split("::", 1)[0] in broken_files}
    f2p = sorted(f2p_ids)
    p2p = sorted(t for t, o in before.items() if o == "passed" and after.get(t) == "passed")
    return f2p, p2p


def finalize(*, draft: Draft, before: dict[str, str], after: dict[str, str]) -> tuple[TaskFiles, dict[str, Any]]:
    """The final task files and its definition, given the discovery outcomes."""
    f2p, p2p = select_tests(before, after)
    files = {k: v for k, v in draft.files.items() if k not in {"tests/config.json", "tests/gold.patch"}}
    config = {
        "mode": "verify",
        "held_out": sorted(draft.held_out),
        "held_out_deleted": draft.held_out_deleted,
        "fail_to_pass": f2p,
        "pass_to_pass": p2p,
    }
    files["tests/config.json"] = json.dumps(config, indent=1, sort_keys=True).encode()
    definition: dict[str, Any] = {
        "author": AUTHOR_NAME,
        "source": {
            "repository": draft.source.repository,
            "number": draft.source.number,
            "baseSha": draft.source.base_sha,
            "headSha": draft.source.head_sha,
        },
        "tierRequested": draft.tier_requested,
        "tier": draft.tier,
        "failToPass": f2p,
        "passToPass": p2p,
        "heldOut": sorted(draft.held_out),
        "testCommand": "bash /tests/run-tests.sh /app",
        "smokeCommand": "bash /opt/selfbench/smoke.sh",
        "discovery": {"before": before, "after": after},
        "goldLines": sum(f.changed_lines for f in draft.gold),
        "goldPaths": sorted({f.path for f in draft.gold}),
    }
    files["definition.json"] = json.dumps(definition, indent=1, sort_keys=True).encode()
    return files, definition


# --- files written by a model-driven author ---------------------------------------------------------------------------

# What a model-driven author writes into its authoring workdir (paths relative to it). `held_out/<repo path>` are the
# held-out test files; `start/` (workspace vibe evals only) is the tree the agent starts from in /app.
AUTHORED_REQUIRED = ("instruction.md", "gold.patch", "Dockerfile", "smoke.sh", "run-tests.sh")
HELD_OUT_PREFIX = "held_out/"
START_PREFIX = "start/"


def tar_of(files: dict[str, bytes]) -> bytes:
    """A deterministic tar of `files` (the starting tree of a task that has no repository)."""
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(path)
            info.size = len(files[path])
            info.mode = 0o755 if path.endswith(".sh") else 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(files[path]))
    return buffer.getvalue()


def _held_out_diff(path: str, before: bytes | None, after: bytes) -> patches.FileDiff:
    import difflib

    old = before.decode("utf-8", "replace").splitlines(keepends=True) if before is not None else []
    new = after.decode("utf-8", "replace").splitlines(keepends=True)
    header = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if before is None else "")
    body = "".join(difflib.unified_diff(old, new, "/dev/null" if before is None else f"a/{path}", f"b/{path}", n=3))
    added = sum(1 for line in new if line not in old) if before is not None else len(new)
    removed = sum(1 for line in old if line not in new)
    return patches.FileDiff(path, path, header + body, added, removed, False, None, False, None)


def draft_from_files(
    *,
    source: PullRequestSource,
    authored: dict[str, bytes],
    tier_requested: str,
    author: str,
    base_tree: dict[str, bytes] | None = None,
    tier_rules: bool = True,
) -> Draft:
    """The discovery task for files a model-driven author wrote, checked by the same static checks as `draft`.

    The base is the source's `base_sha` (a repository), or `base_tree` (a workspace vibe eval: the author's starting
    files). `tier_rules=False` (vibe evals) keeps the reached tier informational."""
    reasons = [f"{name} is missing" for name in AUTHORED_REQUIRED if not authored.get(name, b"").strip()]
    held_out = {
        path[len(HELD_OUT_PREFIX) :]: data for path, data in authored.items() if path.startswith(HELD_OUT_PREFIX)
    }
    if base_tree is None:
        tree = patches.git(source.repo_path, "ls-tree", "-r", "--name-only", source.base_sha).splitlines()
        base_tar = patches.git_bytes(source.repo_path, "archive", "--format=tar", source.base_sha)

        def base_file(path: str) -> bytes | None:
            if path not in tree:
                return None
            return patches.git_bytes(source.repo_path, "show", f"{source.base_sha}:{path}")
    else:
        tree = sorted(base_tree)
        base_tar = tar_of(base_tree)

        def base_file(path: str) -> bytes | None:
            return base_tree.get(path)

    gold = patches.split_files(authored.get("gold.patch", b"").decode("utf-8", "replace"))
    tests = [_held_out_diff(path, base_file(path), data) for path, data in sorted(held_out.items())]
    not_tests = sorted(p for p in held_out if not patches.is_test_path(p))
    if not_tests:
        reasons.append(f"held-out files must be test files: {', '.join(not_tests)}")
    sources = {p: b.decode("utf-8", "replace") for p, b in held_out.items()}
    reasons += checks.check_patches(gold=gold, tests=tests, held_out_sources=sources)
    reached = patches.reached_tier(gold, tier_requested)
    tier = reached if tier_rules else (reached or tier_requested)
    test_files = sorted(
        p
        for p in held_out
        if p.endswith(".py") and p.split("/")[-1] not in patches.TEST_FILES and patches.is_test_path(p)
    )
    if not test_files:
        reasons.append("the held-out tests contain no Python test module to run")
    name = slug(source)
    smoke = authored.get("smoke.sh", b"")
    files: TaskFiles = {
        "task.toml": task_toml(name=name, tier=tier, source=source, author=author).encode(),
        "instruction.md": authored.get("instruction.md", b""),
        "environment/Dockerfile": authored.get("Dockerfile", b""),
        "environment/repo.tar": base_tar,
        "environment/smoke.sh": smoke,
        "tests/test.sh": script("test.sh"),
        "tests/run-tests.sh": authored.get("run-tests.sh", b""),
        "tests/sb_pytest.py": script("sb_pytest.py"),
        "tests/verify.py": script("verify.py"),
        "tests/base.tar": base_tar,
        "solution/solve.sh": script("solve.sh"),
        "solution/gold.patch": patches.join(gold).encode(),
        "gold.patch": patches.join(gold).encode(),
        "test.patch": patches.join(tests).encode(),
        "smoke.sh": smoke,
    }
    for path, data in held_out.items():
        files[f"tests/held_out/{path}"] = data
    config = {
        "mode": "discover",
        "held_out": sorted(held_out),
        "held_out_deleted": [],
        "test_files": test_files,
        "fail_to_pass": [],
        "pass_to_pass": [],
    }
    files["tests/config.json"] = json.dumps(config, indent=1, sort_keys=True).encode()
    files["tests/gold.patch"] = patches.join(gold).encode()
    return Draft(source, tier_requested, gold, tests, tier, held_out, [], test_files, files, reasons)


def starting_templates(*, base_image: str, tree: list[str]) -> dict[str, bytes]:
    """The heuristic author's Dockerfile, smoke.sh and run-tests.sh for a base tree: a model author's starting point."""
    return {
        "Dockerfile": dockerfile(base_image=base_image, tree=tree).encode(),
        "smoke.sh": smoke_script(tree=tree).encode(),
        "run-tests.sh": script("run-tests.sh"),
    }
