"""How an ablation changes a task's files: only the Dockerfile (a RUN step with the script) and the script file."""

from __future__ import annotations

import pytest

from apps.ablations import building

FILES = {
    "task.toml": b'schema_version = "1.4"\n',
    "instruction.md": b"Fix it.\n",
    "environment/Dockerfile": b"FROM base\nWORKDIR /app\nCOPY . /app/\n",
    "tests/test.sh": b"#!/bin/bash\n",
    "solution/solve.sh": b"#!/bin/bash\n",
}


def test_the_dockerfile_runs_the_script_in_app_and_nothing_else_changes() -> None:
    out = building.ablate(FILES, name="No AGENTS.md", script="rm -f AGENTS.md\r\n")
    assert {
        k: v for k, v in out.items() if k not in ("environment/Dockerfile", "environment/selfbench-ablation.sh")
    } == {k: v for k, v in FILES.items() if k != "environment/Dockerfile"}
    dockerfile = out["environment/Dockerfile"].decode()
    assert dockerfile.startswith("FROM base\nWORKDIR /app\nCOPY . /app/\n")
    assert "COPY selfbench-ablation.sh /tmp/selfbench-ablation.sh" in dockerfile
    assert "RUN cd /app && bash -e /tmp/selfbench-ablation.sh && rm -f /tmp/selfbench-ablation.sh" in dockerfile
    assert "commit -q --amend" in dockerfile  # a git /app shows the agent a clean tree
    assert "USER" not in dockerfile
    assert out["environment/selfbench-ablation.sh"] == b"#!/bin/bash\nrm -f AGENTS.md\n"


def test_a_dockerfile_that_switches_user_runs_the_script_as_root_and_switches_back() -> None:
    files = {**FILES, "environment/Dockerfile": b"FROM base\nUSER agent\nWORKDIR /app\n"}
    text = building.ablate(files, name="x", script="true")["environment/Dockerfile"].decode()
    lines = text.splitlines()
    assert lines.index("USER root") < next(i for i, line in enumerate(lines) if line.startswith("RUN cd /app"))
    assert lines[-1] == "USER agent"


def test_a_task_without_a_dockerfile_cannot_take_a_script() -> None:
    files = {k: v for k, v in FILES.items() if k != "environment/Dockerfile"}
    with pytest.raises(building.AblationError, match="has no environment/Dockerfile"):
        building.ablate(files, name="x", script="true")


def test_the_script_hash_ignores_line_endings_and_surrounding_space() -> None:
    assert building.script_hash("rm -f a\r\n") == building.script_hash("  rm -f a")
    assert building.script_hash("rm -f a") != building.script_hash("rm -f b")
