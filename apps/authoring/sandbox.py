"""The authoring sandbox: a Harbor task whose agent writes a task into /authoring and calls `verify` and `submit`.

The sandbox has no network (terminus-2's model loop runs in the worker). `verify` and `submit` reach SelfBench over
a Unix socket bind-mounted from the worker, which relays each connection to SelfBench's web address (the gateway's
host: the gateway is part of the same ASGI application), authenticated by the round's gateway key.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from apps.tasks import authoring as task_authoring
from apps.tasks.storage import TaskFiles
from selfbench import harbor_adapter

RUN_MOUNT = "/run/selfbench-authoring"
WORKDIR = "/authoring"
SUPPORTED_ENGINES = ("podman", "docker")

RULES = """\
## Rules for the task you write
- Held-out tests go under `held_out/<path in the repository>` (test files only: `tests/…`, `test_*.py`). They must share
  no file with `gold.patch`, must not import names the gold patch adds with a leading underscore, and must exercise a
  public API, command or persistence boundary: never pin internal SQL, query counts, private schemas, telemetry
  layout, incidental error wording or UI composition (the anti-coupling rule).
- `gold.patch` is a `git diff` against the starting tree (implementation files only); the new tests must fail
  without it and pass with it, twice in a row.
- `instruction.md` says what to change, as a careful person would ask for it, without revealing the tests.
- `Dockerfile` builds the environment (keep `ADD repo.tar /app/` and `COPY smoke.sh /opt/selfbench/smoke.sh`);
  `smoke.sh` proves the environment works for an agent; `run-tests.sh` runs the selected tests (the template
  in this directory does; keep its output format).
- Run `verify` to check the files (static checks, then build, smoke, nop, oracle and determinism gates). You have
  at most {max_verify} verify calls. When verify passes, run `submit` to end the round with those files.
"""


def base_url_host() -> tuple[str, int, str]:
    """SelfBench's web address as the worker reaches it: (host, port, Host header)."""
    url = urlsplit(settings.GATEWAY_PUBLIC_URL)
    if url.hostname is None:
        raise harbor_adapter.TrialSetupError("GATEWAY_PUBLIC_URL has no host")
    port = url.port or (443 if url.scheme == "https" else 80)
    return url.hostname, port, url.netloc


def script_bytes() -> bytes:
    return (resources.files("apps.authoring") / "sandbox_files" / "verify").read_bytes()


@dataclass(frozen=True)
class Brief:
    """What the authoring agent is told: the source and the previous review's feedback."""

    kind: str  # "pr" | "repository" | "workspace"
    title: str
    body: str
    diff: str
    feedback: str
    attachments: dict[str, bytes]
    max_verify: int


def instruction(brief: Brief) -> str:
    if brief.kind == "pr":
        what = (
            "Write a benchmark task from a merged pull request. The repository is in `/app` at the commit before the "
            "change. The pull request's title and body are below; its full diff is in "
            f"`{WORKDIR}/context/pr.diff`.\n\n# {brief.title}\n\n{brief.body}\n"
        )
    elif brief.kind == "repository":
        what = (
            "Write a benchmark task (a vibe eval) from the description below. The repository is in `/app` at the "
            f"chosen commit. Attached files, if any, are in `{WORKDIR}/context/attachments/`.\n\n{brief.body}\n"
        )
    else:
        what = (
            "Write a benchmark task (a workspace vibe eval) from the description below. There is no repository: write "
            f"the files the solving agent starts from under `{WORKDIR}/start/` (they become its /app), and tests that "
            "read only what the agent leaves in /app. Attached files, if any, are in "
            f"`{WORKDIR}/context/attachments/`.\n\n{brief.body}\n"
        )
    parts = [what, f"Write the task's files into `{WORKDIR}`.", RULES.format(max_verify=brief.max_verify)]
    if brief.feedback:
        parts.append(f"## The reviewer sent the previous round back\n\n{brief.feedback}\n")
    return "\n\n".join(parts)


def task_files(*, brief: Brief, base_tar: bytes, templates: dict[str, bytes], wall_clock: int, name: str) -> TaskFiles:
    """The Harbor task the authoring agent runs in: the base in /app, templates and context in /authoring."""
    verify = script_bytes()
    files: TaskFiles = {
        "task.toml": (
            'schema_version = "1.4"\n\n[task]\n'
            f'name = "selfbench-authoring/{name}"\n\n'
            f"[agent]\ntimeout_sec = {float(wall_clock)}\n\n"
            "[verifier]\ntimeout_sec = 60.0\n\n"
            '[environment]\nbuild_timeout_sec = 900.0\nworkdir = "/app"\n'
        ).encode(),
        "instruction.md": instruction(brief).encode(),
        "environment/Dockerfile": (
            f"FROM {settings.BASE_IMAGE}\n"
            "WORKDIR /app\n"
            "ADD repo.tar /app/\n"
            "RUN git init -q && git add -A && git -c user.name=selfbench -c user.email=selfbench@localhost "
            "commit -q --allow-empty -m base\n"
            f"COPY authoring/ {WORKDIR}/\n"
            "COPY verify /usr/local/bin/verify\n"
            "COPY verify /usr/local/bin/submit\n"
            "RUN chmod 755 /usr/local/bin/verify /usr/local/bin/submit\n"
        ).encode(),
        "environment/repo.tar": base_tar,
        "environment/verify": verify,
        "tests/test.sh": b"#!/bin/bash\nmkdir -p /logs/verifier && echo 0 > /logs/verifier/reward.txt\n",
    }
    for rel, data in templates.items():
        files[f"environment/authoring/{rel}"] = data
    files["environment/authoring/context/pr.md"] = f"# {brief.title}\n\n{brief.body}\n".encode()
    if brief.diff:
        files["environment/authoring/context/pr.diff"] = brief.diff.encode()
    for attachment, data in brief.attachments.items():
        files[f"environment/authoring/context/attachments/{attachment}"] = data
    return files


def empty_tar() -> bytes:
    return task_authoring.tar_of({})


class Relay:
    """A Unix socket in a per-round directory (mounted in the sandbox) relayed to SelfBench's web address."""

    def __init__(self, *, raw_key: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="sb-authoring-"))
        self.dir.chmod(0o755)
        host, port, header = base_url_host()
        (self.dir / "key").write_text(raw_key)
        (self.dir / "host").write_text(header)
        self._target = (host, port)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="authoring-relay")

    @property
    def socket(self) -> Path:
        return self.dir / "sb.sock"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            harbor_adapter._serve_gateway_relay(self.socket, *self._target)  # the adapter's relay, reused
        )
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()

    def start(self) -> Relay:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def overlay(self, *, no_network: bool) -> Path:
        """A compose overlay mounting the relay directory (and cutting the network for host-loop agents)."""
        service: dict[str, object] = {"volumes": [f"{self.dir}:{RUN_MOUNT}"]}
        if no_network:
            service["network_mode"] = "none"
        path = self.dir / "authoring-sandbox.yaml"
        path.write_text(json.dumps({"services": {"main": service}}, indent=2) + "\n")
        return path
