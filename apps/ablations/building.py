"""How a repo ablation changes a task's files: the Dockerfile runs the script in /app; nothing else changes.

Pure of the database. The script is written next to the Dockerfile and copied in, then run and removed in one RUN
step, so the agent's image has the script's effect but not the script. When /app is a git repository (as authored
tasks' are), the change is folded into its base commit, so `git status` shows the agent a clean tree.
"""

from __future__ import annotations

import hashlib
import re

from apps.tasks.storage import TaskFiles

DOCKERFILE = "environment/Dockerfile"
SCRIPT_FILE = "selfbench-ablation.sh"
SCRIPT_IN_IMAGE = "/tmp/selfbench-ablation.sh"  # noqa: S108 - a path inside the image, removed in the same step
_USER = re.compile(r"^\s*USER\s+(\S+)", re.IGNORECASE)


class AblationError(ValueError):
    """The task's files cannot take the script (no Dockerfile, or a file already named like ours)."""


def script_hash(script: str) -> str:
    return hashlib.sha256(normalize_script(script).encode()).hexdigest()


def normalize_script(script: str) -> str:
    return (script or "").replace("\r\n", "\n").strip() + "\n"


def ablate(files: TaskFiles, *, name: str, script: str) -> TaskFiles:
    """The task's files with the Dockerfile running `script` in /app (same instruction, tests and solution)."""
    if DOCKERFILE not in files:
        raise AblationError(f"the task has no {DOCKERFILE} to add the script to (a prebuilt image cannot be changed)")
    script_path = f"environment/{SCRIPT_FILE}"
    if script_path in files:
        raise AblationError(f"the task already has {script_path}")
    dockerfile = files[DOCKERFILE].decode("utf-8", "replace")
    last_user = None
    for line in dockerfile.splitlines():
        match = _USER.match(line)
        if match:
            last_user = match.group(1)
    title = " ".join(name.split())[:100]
    step = [
        "",
        f"# SelfBench repo ablation {title!r}: its script runs in /app as the image is built.",
        *(["USER root"] if last_user and last_user not in ("root", "0") else []),
        f"COPY {SCRIPT_FILE} {SCRIPT_IN_IMAGE}",
        f"RUN cd /app && bash -e {SCRIPT_IN_IMAGE} && rm -f {SCRIPT_IN_IMAGE} \\",
        "    && if git -C /app rev-parse -q --verify HEAD >/dev/null 2>&1; then "
        "git -C /app add -A && git -C /app -c user.name=selfbench -c user.email=selfbench@localhost "
        "commit -q --amend --allow-empty --no-edit; fi",
        *([f"USER {last_user}"] if last_user and last_user not in ("root", "0") else []),
        "",
    ]
    changed = dict(files)
    changed[DOCKERFILE] = (dockerfile.rstrip("\n") + "\n" + "\n".join(step)).encode()
    changed[script_path] = ("#!/bin/bash\n" + normalize_script(script)).encode()
    return changed
