"""Pure PR analysis: classify changed files, count changed lines, apply the size gate and the tier rule.

No database, no network: functions over a file list (GitHub's `pulls/N/files`, `git diff --numstat`) or a unified
diff, so the tasks app can reuse them when it splits a PR into its reference patch and its held-out tests.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath


class FileKind(enum.StrEnum):
    TEST = "test"
    IMPLEMENTATION = "implementation"
    # Docs, lockfiles, CI config, generated files: part of the change but neither a test nor an implementation path.
    OTHER = "other"


class Tier(enum.StrEnum):
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


TIER_ORDER: tuple[Tier, ...] = (Tier.EASY, Tier.MEDIUM, Tier.HARD)

# The difficulty table of how-it-works: a reference patch of ≥ lines across ≥ implementation paths reaches the tier.
TIER_RULES: dict[Tier, tuple[int, int]] = {Tier.EASY: (20, 1), Tier.MEDIUM: (50, 2), Tier.HARD: (100, 3)}

# The size gate's ceiling: bigger PRs are vendored code, renames or generated churn, not a task an author can reduce.
MAX_CHANGED_LINES = 3000
MAX_CHANGED_FILES = 100


@dataclass(frozen=True)
class FileChange:
    """One changed file: path, lines added and deleted, and whether git saw it as binary."""

    path: str
    additions: int = 0
    deletions: int = 0
    binary: bool = False
    status: str = "modified"
    previous_path: str = ""

    @property
    def changed_lines(self) -> int:
        return self.additions + self.deletions


@dataclass(frozen=True)
class Analysis:
    """What a PR's change consists of, the hardest tier it reaches, and why the size gate refused it (or "")."""

    implementation_paths: tuple[str, ...]
    test_paths: tuple[str, ...]
    other_paths: tuple[str, ...]
    binary_paths: tuple[str, ...]
    implementation_lines: int
    test_lines: int
    total_lines: int
    tier: Tier | None
    gate_reason: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def passes_gate(self) -> bool:
        return not self.gate_reason


# --- classification -------------------------------------------------------------------------------------------------

_TEST_DIRS = {"test", "tests", "__tests__", "spec", "specs", "testing", "e2e", "integration-tests", "testdata"}
_DOC_SUFFIXES = {".md", ".mdx", ".rst", ".txt", ".adoc"}
_LOCKFILES = {
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "Cargo.lock",
    "go.sum",
    "composer.lock",
    "Gemfile.lock",
    "bun.lockb",
}
_SOURCE_SUFFIXES = {
    ".py",
    ".pyi",
    ".js",
    ".jsx",
    ".mjs",
    ".cjs",
    ".ts",
    ".tsx",
    ".mts",
    ".cts",
    ".vue",
    ".svelte",
    ".go",
    ".rs",
    ".java",
    ".kt",
    ".kts",
    ".scala",
    ".rb",
    ".php",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".cs",
    ".swift",
    ".m",
    ".ex",
    ".exs",
    ".sql",
    ".sh",
    ".html",
    ".css",
    ".scss",
}
# Per-ecosystem test file names (the directory rules above catch the rest).
_TEST_NAME_RULES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^test_.*\.py$"),  # Python (pytest/unittest)
    re.compile(r".*_test\.py$"),
    re.compile(r"^conftest\.py$"),
    re.compile(r".*\.(test|spec)\.[cm]?[jt]sx?$"),  # JS/TS (jest, vitest, mocha)
    re.compile(r".*_test\.go$"),  # Go
    re.compile(r".*(Test|Tests|IT|TestCase)\.(java|kt)$"),  # Java / Kotlin (JUnit, Surefire/Failsafe names)
    re.compile(r"^Test.*\.(java|kt)$"),
    re.compile(r".*_spec\.rb$"),  # Ruby
    re.compile(r".*_test\.rb$"),
    re.compile(r".*Test\.php$"),  # PHP
    re.compile(r".*_test\.exs$"),  # Elixir
    re.compile(r".*Tests?\.cs$"),  # C#
)


def classify_path(path: str) -> FileKind:
    """Test, implementation or other, by per-ecosystem conventions (Python, JS/TS, Go, Rust, Java, Ruby, PHP, …)."""
    p = PurePosixPath(path)
    name = p.name
    parts = [part.lower() for part in p.parts[:-1]]
    if any(rule.match(name) for rule in _TEST_NAME_RULES):
        return FileKind.TEST
    # Rust: integration tests live in `tests/`, benches are not tests; Java/Kotlin: `src/test/…` (caught by "test").
    if any(part in _TEST_DIRS for part in parts):
        # Fixtures and snapshots under a test dir are test material too.
        return FileKind.TEST
    if name in _LOCKFILES or p.suffix.lower() in _DOC_SUFFIXES or name.lower() in {"license", "changelog", "authors"}:
        return FileKind.OTHER
    if any(part in {".github", ".circleci", "docs", "doc"} for part in parts):
        return FileKind.OTHER
    if p.suffix.lower() in _SOURCE_SUFFIXES:
        return FileKind.IMPLEMENTATION
    return FileKind.OTHER


# --- diffs ----------------------------------------------------------------------------------------------------------

_DIFF_HEADER = re.compile(r"^diff --git a/(?P<a>.+?) b/(?P<b>.+)$")


def parse_unified_diff(diff: str) -> list[FileChange]:
    """The files of a `git diff` / GitHub `.diff`, with added and deleted lines counted and binaries flagged."""
    files: list[FileChange] = []
    current: dict[str, object] | None = None

    def flush() -> None:
        if current is not None:
            files.append(FileChange(**current))  # type: ignore[arg-type]

    in_hunk = False
    for line in diff.splitlines():
        header = _DIFF_HEADER.match(line)
        if header:
            flush()
            current = {"path": header["b"], "additions": 0, "deletions": 0, "binary": False, "status": "modified"}
            if header["a"] != header["b"]:
                current["previous_path"] = header["a"]
                current["status"] = "renamed"
            in_hunk = False
            continue
        if current is None:
            continue
        if line.startswith("@@"):
            in_hunk = True
        elif not in_hunk:
            if line.startswith("new file mode"):
                current["status"] = "added"
            elif line.startswith("deleted file mode"):
                current["status"] = "removed"
            elif line.startswith("Binary files ") or line == "GIT binary patch":
                current["binary"] = True
        elif line.startswith("+"):
            current["additions"] = int(current["additions"]) + 1  # type: ignore[call-overload]
        elif line.startswith("-"):
            current["deletions"] = int(current["deletions"]) + 1  # type: ignore[call-overload]
    flush()
    return files


def parse_numstat(output: str) -> list[FileChange]:
    """`git diff --numstat -z`-less plain output: `added<TAB>deleted<TAB>path`, `-` for binaries."""
    files = []
    for line in output.splitlines():
        if not line.strip():
            continue
        added, deleted, path = line.split("\t", 2)
        binary = added == "-" and deleted == "-"
        previous = ""
        if " => " in path:
            # Renames print `old => new` or `dir/{old => new}/file`.
            previous, path = _split_rename(path)
        files.append(
            FileChange(
                path=path,
                additions=0 if binary else int(added),
                deletions=0 if binary else int(deleted),
                binary=binary,
                status="renamed" if previous else "modified",
                previous_path=previous,
            )
        )
    return files


def _split_rename(path: str) -> tuple[str, str]:
    brace = re.match(r"^(?P<pre>.*)\{(?P<old>.*) => (?P<new>.*)\}(?P<post>.*)$", path)
    if brace:
        old = f"{brace['pre']}{brace['old']}{brace['post']}".replace("//", "/")
        new = f"{brace['pre']}{brace['new']}{brace['post']}".replace("//", "/")
        return old, new
    old, new = path.split(" => ", 1)
    return old, new


# --- tier rule and size gate ----------------------------------------------------------------------------------------


def tier_reached(*, lines: int, paths: int) -> Tier | None:
    """The hardest tier whose line and path thresholds both hold, or None below easy."""
    reached: Tier | None = None
    for tier in TIER_ORDER:
        min_lines, min_paths = TIER_RULES[tier]
        if lines >= min_lines and paths >= min_paths:
            reached = tier
    return reached


def cap_tier(reached: Tier | None, asked: Tier) -> Tier | None:
    """A task takes the hardest tier its patch reaches, up to the tier asked for; None if it reaches none."""
    if reached is None:
        return None
    return asked if TIER_ORDER.index(reached) > TIER_ORDER.index(asked) else reached


def analyse_files(
    files: Iterable[FileChange],
    *,
    max_lines: int = MAX_CHANGED_LINES,
    max_files: int = MAX_CHANGED_FILES,
) -> Analysis:
    """Classify `files`, count implementation lines and paths, pick the tier reached and apply the size gate."""
    files = list(files)
    impl: list[FileChange] = []
    tests: list[FileChange] = []
    other: list[FileChange] = []
    binary = [f.path for f in files if f.binary]
    for f in files:
        if f.binary:
            continue
        kind = classify_path(f.path)
        (impl if kind is FileKind.IMPLEMENTATION else tests if kind is FileKind.TEST else other).append(f)
    impl_lines = sum(f.changed_lines for f in impl)
    test_lines = sum(f.changed_lines for f in tests)
    total_lines = sum(f.changed_lines for f in files)
    tier = tier_reached(lines=impl_lines, paths=len(impl))
    reason = _gate_reason(files, impl, tests, binary, total_lines, max_lines, max_files)
    return Analysis(
        implementation_paths=tuple(f.path for f in impl),
        test_paths=tuple(f.path for f in tests),
        other_paths=tuple(f.path for f in other),
        binary_paths=tuple(binary),
        implementation_lines=impl_lines,
        test_lines=test_lines,
        total_lines=total_lines,
        tier=tier,
        gate_reason=reason,
    )


def _gate_reason(
    files: Sequence[FileChange],
    impl: Sequence[FileChange],
    tests: Sequence[FileChange],
    binary: Sequence[str],
    total_lines: int,
    max_lines: int,
    max_files: int,
) -> str:
    if not files:
        return "empty: the PR changes no files"
    if len(binary) == len(files):
        return f"binary-only: all {len(files)} changed files are binary"
    if len(files) > max_files:
        return f"huge diff: {len(files)} files changed (limit {max_files})"
    if total_lines > max_lines:
        return f"huge diff: {total_lines} lines changed (limit {max_lines})"
    if not tests:
        return "no tests: the PR changes no test files"
    if not impl:
        return "only tests: the PR changes no implementation files"
    return ""


def analyse_diff(diff: str, **limits: int) -> Analysis:
    """`analyse_files` over a unified diff."""
    return analyse_files(parse_unified_diff(diff), **limits)
