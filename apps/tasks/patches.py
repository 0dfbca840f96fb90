"""Unified diffs of a pull request: split into files, classify, measure, and check that their paths are safe."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from apps.repositories.analysis import FileKind, Tier, cap_tier, classify_path, tier_reached

_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$")

# Files the verifier always protects, whatever the classifier says (task_scripts/verify.py::is_test_path).
TEST_FILES = frozenset({"conftest.py", "pytest.ini", "tox.ini"})


def is_test_path(path: str) -> bool:
    """Held out from the agent: the repositories app's test classification, plus pytest's own config files."""
    return classify_path(path) == FileKind.TEST or path.split("/")[-1] in TEST_FILES


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


# Fail-to-pass / pass-to-pass minimums per tier (the acceptance rules); line and path rules live in analysis.
TEST_MINIMUMS: dict[str, tuple[int, int]] = {"easy": (1, 0), "medium": (1, 1), "hard": (1, 2)}


def reached_tier(gold: list[FileDiff], requested: str) -> str | None:
    """The hardest tier the reference patch's implementation files reach, up to the requested one."""
    impl = [f for f in gold if classify_path(f.path) == FileKind.IMPLEMENTATION]
    reached = tier_reached(lines=sum(f.changed_lines for f in impl), paths=len({f.path for f in impl}))
    capped = cap_tier(reached, Tier(requested))
    return str(capped) if capped is not None else None
