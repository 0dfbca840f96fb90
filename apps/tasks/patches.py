"""Unified diffs of a pull request: split into files, classify, measure, and check that their paths are safe."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$")

# Until apps.repositories.analysis provides the classifier, this mirrors the verifier's own rule
# (task_scripts/verify.py::is_test_path), so what the author holds out is exactly what the verifier protects.
TEST_DIRS = frozenset({"tests", "test", "testing"})
TEST_FILES = frozenset({"conftest.py", "pytest.ini", "tox.ini"})


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    if name in TEST_FILES or any(p in TEST_DIRS for p in parts[:-1]):
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


@dataclass(frozen=True)
class FileDiff:
    old_path: str
    new_path: str
    text: str
    added: int
    removed: int
    binary: bool
    new_mode: str | None
    deleted: bool
    link_target: str | None

    @property
    def path(self) -> str:
        return self.old_path if self.deleted else self.new_path

    @property
    def changed_lines(self) -> int:
        return self.added + self.removed


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def git_bytes(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True).stdout


def pr_diff(*, repo: Path, base_sha: str, head_sha: str) -> str:
    """The PR's change as one binary-safe unified diff of base → head (renames shown as delete + add)."""
    return git(repo, "diff", "--binary", "--no-renames", "--no-color", "--full-index", base_sha, head_sha)


def split_files(diff: str) -> list[FileDiff]:
    chunks: list[list[str]] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git "):
            chunks.append([])
        if chunks:
            chunks[-1].append(line)
    out: list[FileDiff] = []
    for chunk in chunks:
        m = _HEADER.match(chunk[0].rstrip("\n"))
        if not m:
            continue
        added = removed = 0
        binary = deleted = False
        new_mode: str | None = None
        in_hunk = False
        plus: list[str] = []
        for line in chunk[1:]:
            if line.startswith("@@"):
                in_hunk = True
            elif in_hunk and line.startswith("+"):
                added += 1
                plus.append(line[1:].rstrip("\n"))
            elif in_hunk and line.startswith("-"):
                removed += 1
            elif not in_hunk:
                if line.startswith(("new file mode ", "new mode ")):
                    new_mode = line.split()[-1]
                elif line.startswith("deleted file mode "):
                    deleted = True
                elif line.startswith(("GIT binary patch", "Binary files ")):
                    binary = True
        link_target = plus[0] if new_mode == "120000" and plus else None
        text = "".join(chunk)
        out.append(FileDiff(m.group(1), m.group(2), text, added, removed, binary, new_mode, deleted, link_target))
    return out


def join(files: list[FileDiff]) -> str:
    return "".join(f.text for f in files)


def unsafe_path_reasons(files: list[FileDiff]) -> list[str]:
    """Paths a patch may not touch: absolute, with `..`, inside .git, or links that point out of the tree."""
    reasons: list[str] = []
    for f in files:
        for path in {f.old_path, f.new_path}:
            p = PurePosixPath(path)
            if p.is_absolute() or ".." in p.parts or (p.parts and p.parts[0] == ".git") or "\\" in path:
                reasons.append(f"unsafe path in patch: {path}")
        if f.link_target is not None:
            target = PurePosixPath(f.link_target)
            depth = len(PurePosixPath(f.new_path).parts) - 1
            for part in target.parts:
                depth = depth - 1 if part == ".." else depth + (part != ".")
                if depth < 0:
                    break
            if target.is_absolute() or depth < 0:
                reasons.append(f"link out of the tree in patch: {f.new_path} -> {f.link_target}")
    return reasons


TIER_RULES: dict[str, tuple[int, int, int, int]] = {
    # tier: (min changed lines, min implementation paths, min fail-to-pass, min pass-to-pass)
    "easy": (20, 1, 1, 0),
    "medium": (50, 2, 1, 1),
    "hard": (100, 3, 1, 2),
}
TIER_ORDER = ["easy", "medium", "hard"]


def reached_tier(gold: list[FileDiff], requested: str) -> str | None:
    """The hardest tier the reference patch reaches, up to the requested one (None: not even easy)."""
    lines = sum(f.changed_lines for f in gold)
    paths = len({f.path for f in gold})
    best: str | None = None
    for tier in TIER_ORDER[: TIER_ORDER.index(requested) + 1]:
        min_lines, min_paths, _, _ = TIER_RULES[tier]
        if lines >= min_lines and paths >= min_paths:
            best = tier
    return best
