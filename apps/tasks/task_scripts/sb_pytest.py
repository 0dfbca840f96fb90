"""Run only the selected tests of a SelfBench task in one tree and record each test's outcome.

Shipped inside every task (tests/sb_pytest.py) and run by run-tests.sh with `python3 -P`, so neither the current
directory nor /tests is on sys.path. The tree is appended *after* the standard library and site-packages: a module the
agent writes (pytest.py, json.py) cannot shadow the test runner. Standard library only; Python >= 3.8.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


class Recorder:
    """A pytest plugin that keeps one outcome per node id: passed, failed, skipped, error."""

    def __init__(self, selected: set[str]) -> None:
        self.selected = selected
        self.outcomes: dict[str, str] = {}

    def pytest_collection_modifyitems(self, session, config, items):  # type: ignore[no-untyped-def]
        if not self.selected:
            return
        keep = [item for item in items if item.nodeid in self.selected]
        dropped = [item for item in items if item.nodeid not in self.selected]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    def pytest_collectreport(self, report):  # type: ignore[no-untyped-def]
        if report.failed:
            self.outcomes[report.nodeid] = "error"

    def pytest_runtest_logreport(self, report):  # type: ignore[no-untyped-def]
        if report.when == "call":
            self.outcomes[report.nodeid] = report.outcome
        elif report.failed:
            # A failing fixture or teardown makes the test unusable whatever its body did.
            self.outcomes[report.nodeid] = "error"
        elif report.skipped and report.when == "setup":
            self.outcomes[report.nodeid] = "skipped"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--files", nargs="*", default=[], help="test files to collect")
    parser.add_argument("--ids", nargs="*", default=[], help="node ids to keep (all collected when empty)")
    args = parser.parse_args()

    tree = os.path.abspath(args.tree)
    sys.path.append(tree)
    import pytest

    os.chdir(tree)
    recorder = Recorder(set(args.ids))
    files = args.files or sorted({nodeid.split("::", 1)[0] for nodeid in args.ids})
    files = [f for f in files if os.path.exists(os.path.join(tree, f))]
    code = 5
    if files:
        code = pytest.main(
            ["-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", tree, "-q", "-rN", *files],
            plugins=[recorder],
        )
    outcomes = dict(recorder.outcomes)
    for nodeid in args.ids:
        outcomes.setdefault(nodeid, "missing")
    with open(args.out, "w") as fh:
        json.dump({"exit_code": int(code), "outcomes": outcomes}, fh, indent=1, sort_keys=True)
    for nodeid, outcome in sorted(outcomes.items()):
        print(f"SB-OUTCOME {outcome} {nodeid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
