"""Static checks before any container: path safety, tests apart from the gold, private imports, tier rules."""

from __future__ import annotations

from apps.tasks import checks, patches


def diff(path: str, added: list[str], *, mode: str | None = None) -> str:
    header = f"diff --git a/{path} b/{path}\n"
    if mode:
        header += f"new file mode {mode}\n"
    body = "".join(f"+{line}\n" for line in added)
    return f"{header}--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{len(added)} @@\n{body}"


def test_unsafe_paths_and_links_out_of_the_tree_are_refused() -> None:
    files = patches.split_files(
        diff("../etc/passwd", ["x"])
        + diff(".git/hooks/pre-commit", ["x"])
        + diff("pkg/link", ["../../etc"], mode="120000")
    )
    reasons = patches.unsafe_path_reasons(files)
    assert "unsafe path in patch: ../etc/passwd" in reasons
    assert "unsafe path in patch: .git/hooks/pre-commit" in reasons
    assert "link out of the tree in patch: pkg/link -> ../../etc" in reasons
    assert patches.unsafe_path_reasons(patches.split_files(diff("pkg/ok", ["../other"], mode="120000"))) == []


def test_held_out_tests_may_not_import_private_names_the_gold_adds() -> None:
    gold = patches.split_files(
        diff("calc/core.py", ["def _helper(x):", "    return x", "def public(x):", "_CACHE = {}"])
    )
    tests = patches.split_files(diff("tests/test_core.py", ["from calc.core import _helper, public"]))
    sources = {"tests/test_core.py": "from calc.core import _helper, public\nimport calc.core\ncalc.core._CACHE\n"}
    reasons = checks.check_patches(gold=gold, tests=tests, held_out_sources=sources)
    assert reasons == ["tests/test_core.py uses private names the reference patch adds: _CACHE, _helper"]


def test_tests_sharing_a_file_with_the_gold_are_refused() -> None:
    same = patches.split_files(diff("tests/helpers.py", ["x = 1"]))
    assert "held-out tests share files with the reference patch: tests/helpers.py" in checks.check_patches(
        gold=same, tests=same, held_out_sources={}
    )


def test_tier_rules_count_fail_to_pass_and_pass_to_pass() -> None:
    assert checks.check_tier(tier="easy", fail_to_pass=["a"], pass_to_pass=[]) == []
    assert checks.check_tier(tier="easy", fail_to_pass=[], pass_to_pass=["b"]) == [
        "easy needs 1+ fail-to-pass tests; the held-out tests have 0"
    ]
    assert checks.check_tier(tier="hard", fail_to_pass=["a"], pass_to_pass=["b"]) == [
        "hard needs 2+ pass-to-pass tests; found 1"
    ]
    assert checks.check_tier(tier=None, fail_to_pass=["a"], pass_to_pass=[])


def test_the_tier_is_the_hardest_reached_up_to_the_request() -> None:
    big = patches.split_files(
        diff("a.py", [f"x{i} = {i}" for i in range(40)]) + diff("b.py", [f"y{i} = {i}" for i in range(20)])
    )
    assert patches.reached_tier(big, "hard") == "medium"
    assert patches.reached_tier(big, "easy") == "easy"
    assert patches.reached_tier(patches.split_files(diff("a.py", ["x = 1"])), "hard") is None


def test_tests_of_a_file_that_fails_to_import_before_the_gold_patch_are_fail_to_pass() -> None:
    from apps.tasks.authoring import select_tests

    before = {
        "tests/test_calc.py": "error",
        "tests/test_other.py::test_add": "passed",
        "tests/test_x.py::test_y": "failed",
    }
    after = {
        "tests/test_calc.py::test_multiply": "passed",
        "tests/test_calc.py::test_divide": "passed",
        "tests/test_other.py::test_add": "passed",
        "tests/test_x.py::test_y": "passed",
        "tests/test_new.py::test_z": "passed",  # its file had no outcome before: not selected
    }
    f2p, p2p = select_tests(before, after)
    assert f2p == ["tests/test_calc.py::test_divide", "tests/test_calc.py::test_multiply", "tests/test_x.py::test_y"]
    assert p2p == ["tests/test_other.py::test_add"]
