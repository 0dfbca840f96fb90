"""Static checks that run before any container starts: path safety, held-out tests apart from the gold patch,
no imports of the gold's private helpers, and the tier's rules."""

from __future__ import annotations

import ast
import re

from apps.tasks.patches import TEST_MINIMUMS, FileDiff, unsafe_path_reasons

_PRIVATE_DEF = re.compile(r"^\s*(?:async\s+def|def|class)\s+(_[A-Za-z0-9]\w*)|^\s*(_[A-Za-z0-9]\w*)\s*(?::[^=]+)?=[^=]")


def gold_private_names(gold: list[FileDiff]) -> set[str]:
    """Private (single underscore, not dunder) names that the gold patch's added Python lines define."""
    names: set[str] = set()
    for f in gold:
        if not f.new_path.endswith(".py"):
            continue
        for line in f.text.splitlines():
            if not line.startswith("+") or line.startswith("+++"):
                continue
            m = _PRIVATE_DEF.match(line[1:])
            if m:
                name = m.group(1) or m.group(2)
                if not name.startswith("__"):
                    names.add(name)
    return names


def private_imports(source: str, private: set[str]) -> set[str]:
    """Names from `private` that a test module imports or reaches as an attribute."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            used.update(alias.name for alias in node.names if alias.name in private)
        elif isinstance(node, ast.Attribute) and node.attr in private:
            used.add(node.attr)
    return used


def check_patches(*, gold: list[FileDiff], tests: list[FileDiff], held_out_sources: dict[str, str]) -> list[str]:
    """Reasons the split PR cannot become a task (empty when it can)."""
    reasons = unsafe_path_reasons(gold + tests)
    if not gold:
        reasons.append("the pull request changes no implementation file (nothing for the reference patch)")
    if not tests:
        reasons.append("the pull request changes no test file (nothing to hold out)")
    shared = {f.path for f in gold} & {f.path for f in tests}
    if shared:
        reasons.append(f"held-out tests share files with the reference patch: {', '.join(sorted(shared))}")
    private = gold_private_names(gold)
    for path, source in sorted(held_out_sources.items()):
        if path.endswith(".py"):
            hits = private_imports(source, private)
            if hits:
                reasons.append(f"{path} uses private names the reference patch adds: {', '.join(sorted(hits))}")
    return reasons


def check_tier(*, tier: str | None, fail_to_pass: list[str], pass_to_pass: list[str]) -> list[str]:
    if tier is None:
        return ["the reference patch reaches no tier (easy needs 20+ changed lines in 1+ implementation file)"]
    min_f2p, min_p2p = TEST_MINIMUMS[tier]
    reasons = []
    if len(fail_to_pass) < min_f2p:
        reasons.append(f"{tier} needs {min_f2p}+ fail-to-pass tests; the held-out tests have {len(fail_to_pass)}")
    if len(pass_to_pass) < min_p2p:
        reasons.append(f"{tier} needs {min_p2p}+ pass-to-pass tests; found {len(pass_to_pass)}")
    return reasons
