"""PR analysis: per-ecosystem file kinds, line counting from diffs and numstat, the tier rule and the size gate."""

from __future__ import annotations

import pytest

from apps.repositories.analysis import (
    FileChange,
    FileKind,
    Tier,
    analyse_diff,
    analyse_files,
    cap_tier,
    classify_path,
    parse_numstat,
    parse_unified_diff,
    tier_reached,
)

CLASSIFY = [
    # Python
    ("src/pkg/models.py", FileKind.IMPLEMENTATION),
    ("tests/test_models.py", FileKind.TEST),
    ("pkg/models_test.py", FileKind.TEST),
    ("pkg/tests/conftest.py", FileKind.TEST),
    ("pkg/test_utils/helpers.py", FileKind.IMPLEMENTATION),
    # JS / TS
    ("src/components/Button.tsx", FileKind.IMPLEMENTATION),
    ("src/components/Button.test.tsx", FileKind.TEST),
    ("src/lib/parse.spec.ts", FileKind.TEST),
    ("src/__tests__/parse.js", FileKind.TEST),
    ("packages/core/src/index.mjs", FileKind.IMPLEMENTATION),
    # Go
    ("internal/server/handler.go", FileKind.IMPLEMENTATION),
    ("internal/server/handler_test.go", FileKind.TEST),
    ("internal/server/testdata/golden.json", FileKind.TEST),
    # Rust
    ("src/lib.rs", FileKind.IMPLEMENTATION),
    ("tests/integration.rs", FileKind.TEST),
    # Java / Kotlin
    ("src/main/java/com/acme/Widget.java", FileKind.IMPLEMENTATION),
    ("src/test/java/com/acme/WidgetTest.java", FileKind.TEST),
    ("core/src/main/kotlin/Thing.kt", FileKind.IMPLEMENTATION),
    ("core/src/main/kotlin/ThingTests.kt", FileKind.TEST),
    # Others
    ("README.md", FileKind.OTHER),
    ("docs/guide/setup.py", FileKind.OTHER),
    ("package-lock.json", FileKind.OTHER),
    ("Cargo.lock", FileKind.OTHER),
    (".github/workflows/ci.yml", FileKind.OTHER),
    ("assets/logo.png", FileKind.OTHER),
]


@pytest.mark.parametrize(("path", "kind"), CLASSIFY, ids=[c[0] for c in CLASSIFY])
def test_classify_path_follows_each_ecosystems_conventions(path: str, kind: FileKind) -> None:
    assert classify_path(path) is kind


@pytest.mark.parametrize(
    ("lines", "paths", "tier"),
    [
        (19, 5, None),
        (20, 1, Tier.EASY),
        (49, 2, Tier.EASY),
        (50, 1, Tier.EASY),
        (50, 2, Tier.MEDIUM),
        (99, 3, Tier.MEDIUM),
        (100, 2, Tier.MEDIUM),
        (100, 3, Tier.HARD),
        (2000, 9, Tier.HARD),
    ],
)
def test_tier_reached_needs_both_lines_and_paths(lines: int, paths: int, tier: Tier | None) -> None:
    assert tier_reached(lines=lines, paths=paths) is tier


def test_cap_tier_keeps_the_hardest_reached_up_to_the_asked_tier() -> None:
    assert cap_tier(Tier.HARD, Tier.MEDIUM) is Tier.MEDIUM
    assert cap_tier(Tier.EASY, Tier.HARD) is Tier.EASY
    assert cap_tier(None, Tier.HARD) is None


DIFF = """\
diff --git a/src/app/core.py b/src/app/core.py
index 83db48f..bf269f4 100644
--- a/src/app/core.py
+++ b/src/app/core.py
@@ -1,3 +1,4 @@
 import os
-import sys
+import sys, json
+
 def main():
diff --git a/src/app/new.py b/src/app/new.py
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/src/app/new.py
@@ -0,0 +1,2 @@
+x = 1
+y = 2
diff --git a/tests/test_core.py b/tests/test_core.py
index 1111111..2222222 100644
--- a/tests/test_core.py
+++ b/tests/test_core.py
@@ -1 +1,2 @@
 def test_x(): pass
+def test_y(): pass
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..3333333
Binary files /dev/null and b/logo.png differ
diff --git a/src/app/old_name.py b/src/app/new_name.py
similarity index 90%
rename from src/app/old_name.py
rename to src/app/new_name.py
"""


def test_parse_unified_diff_counts_lines_and_flags_binaries_and_renames() -> None:
    files = {f.path: f for f in parse_unified_diff(DIFF)}
    assert (files["src/app/core.py"].additions, files["src/app/core.py"].deletions) == (2, 1)
    assert files["src/app/new.py"].status == "added" and files["src/app/new.py"].additions == 2
    assert files["logo.png"].binary
    assert files["src/app/new_name.py"].previous_path == "src/app/old_name.py"
    analysis = analyse_diff(DIFF)
    assert analysis.implementation_lines == 5
    assert set(analysis.implementation_paths) == {"src/app/core.py", "src/app/new.py", "src/app/new_name.py"}
    assert analysis.test_paths == ("tests/test_core.py",)
    assert analysis.binary_paths == ("logo.png",)


def test_parse_numstat_reads_binaries_and_brace_renames() -> None:
    files = parse_numstat("10\t2\tsrc/a.py\n-\t-\timg/x.png\n3\t1\tsrc/{old => new}/b.py\n")
    assert files[0] == FileChange(path="src/a.py", additions=10, deletions=2)
    assert files[1].binary and files[1].changed_lines == 0
    assert files[2].path == "src/new/b.py" and files[2].previous_path == "src/old/b.py"


def _files(*specs: tuple[str, int]) -> list[FileChange]:
    return [FileChange(path=p, additions=n) for p, n in specs]


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ([], "empty"),
        (_files(("src/a.py", 40)), "no tests"),
        (_files(("tests/test_a.py", 40)), "only tests"),
        ([FileChange(path="a.png", binary=True), FileChange(path="b.jar", binary=True)], "binary-only"),
        (_files(("src/a.py", 4000), ("tests/test_a.py", 5)), "huge diff: 4005 lines"),
        (_files(*[(f"src/m{i}.py", 1) for i in range(150)], ("tests/test_a.py", 5)), "huge diff: 151 files"),
    ],
)
def test_size_gate_records_why_it_skips(files: list[FileChange], reason: str) -> None:
    analysis = analyse_files(files)
    assert not analysis.passes_gate
    assert analysis.gate_reason.startswith(reason)


def test_docs_and_lockfiles_do_not_count_as_implementation_paths() -> None:
    analysis = analyse_files(
        _files(("src/a.py", 30), ("README.md", 200), ("poetry.lock", 900), ("tests/test_a.py", 10))
    )
    assert analysis.passes_gate
    assert analysis.implementation_paths == ("src/a.py",)
    assert analysis.tier is Tier.EASY
