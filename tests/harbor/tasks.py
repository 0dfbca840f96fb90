"""A tiny Harbor task built FROM the local base image, written into a directory by the tests."""

from __future__ import annotations

import os
from pathlib import Path

BASE_IMAGE = os.environ.get("BASE_IMAGE", "localhost/selfbench-base:bookworm")

TASK_TOML = """\
schema_version = "1.4"

[task]
name = "selfbench/fix-greeting"

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 120.0

[environment]
build_timeout_sec = 300.0
workdir = "/app"
"""

INSTRUCTION = "Make `greet()` in /app/greeting.py return the string 'hello, world'.\n"

DOCKERFILE = f"""\
FROM {BASE_IMAGE}
WORKDIR /app
COPY greeting.py smoke.sh /app/
"""

GREETING = "def greet():\n    return 'hello'\n"

SMOKE = """\
#!/bin/bash
set -e
python3 --version
cd /app && python3 -c 'import greeting; print(greeting.greet())'
echo smoke-ok
"""

SOLVE = """\
#!/bin/bash
set -e
cat > /app/greeting.py <<'PY'
def greet():
    return 'hello, world'
PY
"""

TEST_SH = """\
#!/bin/bash
cd /app
mkdir -p /logs/verifier
if python3 -m pytest -q /tests/test_greeting.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""

TEST_PY = """\
import sys
sys.path.insert(0, "/app")
from greeting import greet


def test_greet():
    assert greet() == "hello, world"
"""


def write_task(root: Path) -> Path:
    """Write the task into `root` and return it."""
    files = {
        "task.toml": TASK_TOML,
        "instruction.md": INSTRUCTION,
        "environment/Dockerfile": DOCKERFILE,
        "environment/greeting.py": GREETING,
        "environment/smoke.sh": SMOKE,
        "solution/solve.sh": SOLVE,
        "tests/test.sh": TEST_SH,
        "tests/test_greeting.py": TEST_PY,
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if name.endswith(".sh"):
            path.chmod(0o755)
    return root
