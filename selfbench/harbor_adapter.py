"""The one module that imports Harbor (harbor==0.25.0).

Gates and evaluation trials go through `run_trial`. It builds a Harbor `TrialConfig` from plain
arguments, runs `Trial.create(...).run()` in one event loop and maps Harbor's `TrialResult` to
`TrialOutcome`, which is typed and has no Harbor types in it. A Harbor upgrade should only touch
this file. Facts about Harbor: ../shared/notes/harbor.md.

Harbor is imported lazily inside the functions. Importing its agents pulls in LiteLLM (about
10 s), which web processes and `manage.py doctor` don't need.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

# Both must be set before Harbor (and through it LiteLLM) is imported anywhere in the process:
# Harbor's telemetry would phone home and LiteLLM would fetch its price map from GitHub, with retries.
os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

if TYPE_CHECKING:
    from harbor.environments.base import BaseEnvironment
    from harbor.models.agent.context import AgentContext
    from harbor.models.trial.result import TrialResult

# The harnesses whose Harbor options we expose (the Run page and the harness settings use them).
HARNESSES: tuple[str, ...] = ("pi", "codex", "claude-code", "mini-swe-agent", "terminus-2", "muse-code")
# Agents that need no model: the gates use them.
MODELLESS_AGENTS: tuple[str, ...] = ("oracle", "nop", "command")
COMMAND_AGENT_IMPORT_PATH = "selfbench.harbor_adapter:CommandAgent"

# Engines on this machine, where agents installed in the sandbox run from the pinned agents toolchain
# (`bash scripts/containers.sh --agents`, sandbox/agents/): Harbor's own installers fetch from vendor hosts
# (downloads.claude.ai, nvm from GitHub, astral.sh, dev.meta.ai) that these machines cannot reach.
LOCAL_ENGINES: tuple[str, ...] = ("podman", "docker")
TOOLCHAIN_AGENTS: tuple[str, ...] = ("claude-code", "codex", "pi", "mini-swe-agent")
# Harbor's classes with the install skipped when the pinned binary is on PATH (Harbor itself skips it only for
# claude-code and codex) and podman's CRLF output normalised: see _preinstalled_classes.
_PREINSTALLED_IMPORT_PATHS: dict[str, str] = {
    "claude-code": "selfbench.harbor_adapter:PreinstalledClaudeCode",
    "codex": "selfbench.harbor_adapter:PreinstalledCodex",
    "pi": "selfbench.harbor_adapter:PreinstalledPi",
    "mini-swe-agent": "selfbench.harbor_adapter:PreinstalledMiniSweAgent",
}
# Why an agent cannot run in a local sandbox here, whatever the toolchain holds.
_CANNOT_RUN_LOCALLY: dict[str, str] = {
    "muse-code": (
        "Meta's muse CLI is distributed only by its vendor installer (dev.meta.ai), which these machines cannot "
        "reach; it is on neither the npm registry nor PyPI (PyPI's muse-code-sdk and muse-code-openrouter drive "
        "an installed muse binary and do not ship it), and Harbor's adapter cannot pin a version."
    ),
}
AGENTS_MOUNT = "/opt/agents"  # where the toolchain is mounted read-only in the sandbox
_RELAY_MOUNT = "/run/selfbench-gateway"  # the worker's gateway relay socket, seen from the sandbox
DEFAULT_AGENTS_DIR = "/var/lib/selfbench/agents"

# Where the API key goes for each agent. Harbor is also told the variable's name
# (`model_api_key_name`), so its connection resolver uses exactly this key and not something
# from the worker's environment.
_API_KEY_VARIABLE: dict[str, str] = {
    "claude-code": "ANTHROPIC_API_KEY",
    "codex": "OPENAI_API_KEY",
    "muse-code": "META_API_KEY",
    "pi": "OPENAI_API_KEY",
    "mini-swe-agent": "OPENAI_API_KEY",
    "terminus-2": "OPENAI_API_KEY",
}

# Caps on text copied into TrialOutcome (the full files stay in the trial directory).
OUTPUT_CAP_CHARS = 64_000


@dataclass(frozen=True)
class AgentSpec:
    """What runs in the agent phase of a trial."""

    name: str  # "oracle", "nop", "command", "terminus-2", "claude-code", "codex", "pi", "mini-swe-agent", "muse-code"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None  # put into the agent's env under the right variable for that agent
    model_api_format: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # Harbor agent kwargs; "command": {"command": "..."}
    env: dict[str, str] = field(default_factory=dict)
    timeout_sec: float | None = None
    # Local skill directories (a SKILL.md each, or a root of such); Harbor installs them for the agent.
    skills: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrialOutcome:
    """What a trial produced, with None wherever Harbor did not know (never 0 for unknown)."""

    trial_name: str
    trial_dir: Path
    reward: float | None
    rewards: dict[str, float] | None
    failure_cause: str | None
    exception_type: str | None
    exception_message: str | None
    started_at: datetime | None
    finished_at: datetime | None
    timings: dict[str, float | None]  # environment_setup, agent_setup, agent_execution, verifier (seconds)
    n_input_tokens: int | None
    n_cache_tokens: int | None
    n_output_tokens: int | None
    cost_usd: float | None
    agent_exit_code: int | None
    agent_output: str | None
    verifier_output: str | None  # test-stdout.txt (size-capped)
    trajectory_path: Path | None
    agent_log_dir: Path | None
    raw: dict[str, Any]  # result.json
    # Added fields (defaults keep the constructor compatible).
    reward_valid: bool = False  # Harbor's verdict: rewards exist and no infrastructure failure spoiled them
    agent_version: str | None = None


class TrialSetupError(ValueError):
    """The trial could not be configured (unknown agent, invalid options, bad task dir)."""


@dataclass(frozen=True)
class AgentCapability:
    """Whether a harness can run in a sandbox type on this deployment, and why (not)."""

    name: str
    runs: bool
    reason: str  # how it runs, or why it cannot
    version: str | None  # the pinned version that runs (None: not pinned here, or not applicable)
    model_calls_from: str  # "worker" (terminus-2's loop runs in the Harbor process) or "sandbox"
    # True when run_trial itself holds the sandbox to the gateway: toolchain agents on a local engine get
    # `network_mode: none` plus the relay. terminus-2 needs no network in the sandbox (the caller may cut it).
    gateway_only_network: bool = False


# --- the "command" agent --------------------------------------------------------------------------


def _command_agent_class() -> type[Any]:
    """Build the CommandAgent class on first use so importing this module stays Harbor-free."""
    from harbor.agents.base import BaseAgent
    from harbor.agents.capabilities import AgentCapabilities
    from harbor.agents.options import AgentOptions
    from pydantic import Field

    class CommandAgentOptions(AgentOptions):
        command: str = Field(description="Shell command run with bash -c in the task's workdir.")
        cwd: str | None = Field(default=None, description="Working directory (default: the task's workdir).")
        user: str | None = Field(default=None, description="User to run as (default: the task's agent user).")

    class CommandAgent(BaseAgent):
        """Runs one shell command in the environment and records its exit code and output.

        The gates use it for smoke checks: "does the environment work for an agent?". A non-zero exit
        code is a result, not an error, so the trial still runs the verifier unless disabled.
        """

        capabilities = AgentCapabilities()
        options_model = CommandAgentOptions
        options: CommandAgentOptions

        @staticmethod
        def name() -> str:
            return "command"

        def version(self) -> str:
            return "1.0.0"

        async def setup(self, environment: BaseEnvironment) -> None:
            return None

        async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
            result = await environment.exec(self.options.command, cwd=self.options.cwd, user=self.options.user)
            # podman exec allocates a TTY here, so lines end in CRLF; store plain newlines.
            output = ((result.stdout or "") + (result.stderr or "")).replace("\r\n", "\n")
            self.logs_dir.mkdir(parents=True, exist_ok=True)
            (self.logs_dir / "command.txt").write_text(output)
            (self.logs_dir / "command-exit-code.txt").write_text(f"{result.return_code}\n")
            context.metadata = {
                "command": self.options.command,
                "exit_code": result.return_code,
                "output": _tail(output, OUTPUT_CAP_CHARS),
            }

    CommandAgent.__module__ = __name__
    CommandAgent.__qualname__ = "CommandAgent"
    return CommandAgent


def __getattr__(name: str) -> Any:
    # Harbor loads custom agents by import path ("selfbench.harbor_adapter:CommandAgent"); a module
    # __getattr__ lets that work while the class is only built when Harbor is imported anyway.
    if name == "CommandAgent":
        return _cached_command_agent()
    if name.startswith("Preinstalled") and name in _preinstalled_classes():
        return _preinstalled_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _cached_command_agent() -> type[Any]:
    return _command_agent_class()


# --- agents that run from the pinned toolchain -----------------------------------------------------


class _TtyOutputMixin:
    """Plain newlines in the output of the agent's own commands.

    podman-compose's `exec` allocates a TTY, so output lines end in CRLF, and Harbor's parsers anchored at line
    ends miss them (codex's `^CODEX_RUNTIME_ID ([0-9]+) ([0-9]+)$` fails the trial before codex starts).
    """

    async def _exec(self, *args: Any, **kwargs: Any) -> Any:
        result = await super()._exec(*args, **kwargs)  # type: ignore[misc]
        if result.stdout:
            result.stdout = result.stdout.replace("\r\n", "\n")
        if result.stderr:
            result.stderr = result.stderr.replace("\r\n", "\n")
        return result


@functools.cache
def _preinstalled_classes() -> dict[str, type[Any]]:
    """Harbor's agent classes for the toolchain agents, as they run in a local sandbox here.

    Harbor's Pi and MiniSweAgent reinstall on every trial (nvm + npm from GitHub; uv from astral.sh); these skip
    that when the pinned CLI is already on PATH (claude-code and codex already do at the pinned version). Without
    the binary (another sandbox type) they install as Harbor does. All four read their commands' output with
    plain newlines (see _TtyOutputMixin).
    """
    from harbor.agents.installed.claude_code import ClaudeCode
    from harbor.agents.installed.codex import Codex
    from harbor.agents.installed.mini_swe_agent import MiniSweAgent
    from harbor.agents.installed.pi import Pi

    async def present(environment: BaseEnvironment, check: str) -> bool:
        result = await environment.exec(command=check)
        return result.return_code == 0

    class PreinstalledClaudeCode(_TtyOutputMixin, ClaudeCode):
        pass

    class PreinstalledCodex(_TtyOutputMixin, Codex):
        pass

    class PreinstalledPi(_TtyOutputMixin, Pi):
        async def install(self, environment: BaseEnvironment) -> None:
            wanted = self.options.version
            check = "command -v pi >/dev/null && pi --version"
            if wanted and await present(environment, f"{check} | tr -d '\\r' | grep -qxF {wanted}"):
                self.logger.debug("pi %s is preinstalled", wanted)
                return
            await super().install(environment)

    class PreinstalledMiniSweAgent(_TtyOutputMixin, MiniSweAgent):
        async def install(self, environment: BaseEnvironment) -> None:
            wanted = self.options.version
            check = (
                "command -v mini-swe-agent >/dev/null && "
                '"$(dirname "$(readlink -f "$(command -v mini-swe-agent)")")/python" -c '
                "'import importlib.metadata as m; print(m.version(\"mini-swe-agent\"))'"
            )
            if wanted and await present(environment, f"{check} | tr -d '\\r' | grep -qxF {wanted}"):
                self.logger.debug("mini-swe-agent %s is preinstalled", wanted)
                return
            await super().install(environment)

    classes: dict[str, type[Any]] = {
        "PreinstalledClaudeCode": PreinstalledClaudeCode,
        "PreinstalledCodex": PreinstalledCodex,
        "PreinstalledPi": PreinstalledPi,
        "PreinstalledMiniSweAgent": PreinstalledMiniSweAgent,
    }
    for cls_name, cls in classes.items():
        cls.__module__ = __name__
        cls.__qualname__ = cls_name
    return classes


@dataclass(frozen=True)
class AgentsToolchain:
    """The unpacked agents tree (`scripts/containers.sh --agents`) and the versions it pins."""

    path: Path
    versions: dict[str, str]


def agents_toolchain() -> AgentsToolchain | None:
    """The current agents toolchain on this machine, or None when it has not been built."""
    from django.conf import settings

    root = Path(getattr(settings, "SANDBOX_AGENTS_DIR", DEFAULT_AGENTS_DIR)) / "current"
    versions_file = root / "versions.json"
    if not versions_file.is_file():
        return None
    versions = json.loads(versions_file.read_text())
    return AgentsToolchain(path=root.resolve(), versions={str(k): str(v) for k, v in versions.items()})


# --- public API -----------------------------------------------------------------------------------


def harbor_version() -> str:
    """Installed Harbor version, read from package metadata (no Harbor import)."""
    return importlib.metadata.version("harbor")


def ensure_compose_on_path() -> str | None:
    """Make the venv's podman-compose win on PATH; return the podman-compose Harbor will use.

    Harbor 0.25's podman runtime (`environments/docker/runtime.py::resolve_podman_runtime`) uses
    `podman compose` only when podman has that subcommand (>= 4.7; Debian bookworm has 4.3), else
    `shutil.which("podman-compose")`. A worker started as `.venv/bin/python manage.py qcluster`
    has no activated venv, and Debian's podman-compose 1.0 lacks `--in-pod`, so the venv's bin
    directory goes first.
    """
    venv_bin = Path(sys.executable).parent
    if (venv_bin / "podman-compose").exists():
        path = os.environ.get("PATH", "")
        parts = path.split(os.pathsep) if path else []
        if not parts or parts[0] != str(venv_bin):
            os.environ["PATH"] = os.pathsep.join([str(venv_bin), *[p for p in parts if p != str(venv_bin)]])
    return shutil.which("podman-compose")


def agent_option_schemas() -> dict[str, dict[str, Any]]:
    """JSON schema of each harness's Harbor options model, keyed by harness name."""
    return {name: dict(_option_schema(name)) for name in HARNESSES}


@functools.cache
def _option_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = _agent_class(name).options_schema()
    return schema


def validate_agent_options(name: str, options: dict[str, Any]) -> list[str]:
    """Problems with `options` for agent `name` (unknown option, wrong type); [] when valid."""
    try:
        cls = _agent_class(name)
    except TrialSetupError as exc:
        return [str(exc)]
    if cls.options_model is None:
        return [f"Agent '{name}' takes no options; got {', '.join(sorted(options))}."] if options else []
    try:
        # env={} keeps the worker's own environment variables out of the verdict as far as Harbor allows.
        cls.parse_options(dict(options), {})
    except ValueError as exc:
        lines = [line.strip() for line in str(exc).splitlines()[1:] if line.strip()]
        problems = [line for line in lines if not line.startswith("See harbor agent schema")]
        return problems or [str(exc)]
    return []


def agent_capabilities(environment_type: str | None = None) -> dict[str, AgentCapability]:
    """For each harness: whether it runs in `environment_type` (default settings.SANDBOX_ENVIRONMENT) here, and why.

    Local engines run agents installed in the sandbox from the pinned toolchain, with the sandbox's network
    held to the gateway through the worker's relay. Other sandbox types install agents the way Harbor does
    (vendor installers), so whether that works depends on their network, not on this machine.
    """
    from django.conf import settings

    engine = environment_type or settings.SANDBOX_ENVIRONMENT
    local = engine in LOCAL_ENGINES
    toolchain = agents_toolchain() if local else None
    capabilities: dict[str, AgentCapability] = {}
    for name in HARNESSES:
        where = "worker" if name == "terminus-2" else "sandbox"
        if name == "terminus-2":
            capability = AgentCapability(
                name, True, "The model loop runs in the worker; the sandbox needs only tmux.", harbor_version(), where
            )
        elif not local:
            capability = AgentCapability(
                name, True, f"Installed by Harbor's own installer inside the {engine} sandbox.", None, where
            )
        elif name in _CANNOT_RUN_LOCALLY:
            capability = AgentCapability(name, False, _CANNOT_RUN_LOCALLY[name], None, where)
        elif toolchain is None:
            capability = AgentCapability(
                name,
                False,
                "The agents toolchain is not built on this machine: run `bash scripts/containers.sh --agents`.",
                None,
                where,
            )
        elif name not in toolchain.versions:
            capability = AgentCapability(name, False, f"The agents toolchain has no {name}.", None, where)
        else:
            capability = AgentCapability(
                name,
                True,
                f"Pinned {name} {toolchain.versions[name]} from the agents toolchain, mounted read-only at "
                f"{AGENTS_MOUNT}; the sandbox has no network but a relay to the gateway.",
                toolchain.versions[name],
                where,
                gateway_only_network=True,
            )
        capabilities[name] = capability
    return capabilities


def lint_task(task_dir: Path) -> list[str]:
    """Harbor's task linter (default rules), one line per finding: "rule: path: message"."""
    from harbor.lint import lint_task as harbor_lint_task
    from harbor.lint.models import DEFAULT_RULES

    task_dir = Path(task_dir)
    if not task_dir.is_dir():
        return [f"invalid-task-files: {task_dir}: not a directory"]
    problems = []
    for finding in harbor_lint_task(task_dir, selected_rules=set(DEFAULT_RULES)):
        path = Path(finding.path) if finding.path else None
        shown = str(path.relative_to(task_dir.resolve())) if path and path.is_relative_to(task_dir.resolve()) else path
        problems.append(f"{finding.rule}: {shown or task_dir}: {finding.message}")
    return problems


def trial_containers_remove(*, trial_name: str, environment_type: str | None = None) -> int:
    """Remove every container of a running trial now (its job was cancelled); returns how many were removed.

    Harbor names a trial's compose projects after the trial (lower-cased), so each of its containers, a separate
    verifier's included, carries the trial name. The trial's own run then fails its next step and tears down. Only
    local engines (podman, docker) have containers here; for other sandbox types this removes nothing and returns 0.
    """
    from django.conf import settings

    engine = environment_type or settings.SANDBOX_ENVIRONMENT
    binary = shutil.which(engine) if engine in LOCAL_ENGINES else None
    if binary is None:
        return 0
    names = _trial_containers(binary, trial_name, running_only=False)
    if names:
        subprocess.run([binary, "rm", "-f", "-t", "0", *names], capture_output=True, timeout=120, check=False)
    return len(names)


def trial_stop(
    runner: threading.Thread,
    trial_name: str,
    *,
    environment_type: str | None = None,
    grace_seconds: float,
    poll_seconds: float = 1.0,
    on_ended: Callable[[], None] | None = None,
) -> None:
    """Stop a running trial whose Harbor run is in the thread `runner`: remove its containers until the run has
    ended (it may still be starting one, e.g. a sandbox coming up or a separate verifier). After `grace_seconds` a
    background thread keeps doing so. `on_ended` runs once the run has ended (here or in that thread)."""
    deadline = time.monotonic() + grace_seconds
    while True:
        trial_containers_remove(trial_name=trial_name, environment_type=environment_type)
        runner.join(min(1.0, poll_seconds))
        if not runner.is_alive():
            if on_ended is not None:
                on_ended()
            return
        if time.monotonic() > deadline:
            break

    def reap() -> None:
        while runner.is_alive():
            trial_containers_remove(trial_name=trial_name, environment_type=environment_type)
            runner.join(5.0)
        trial_containers_remove(trial_name=trial_name, environment_type=environment_type)
        if on_ended is not None:
            on_ended()

    threading.Thread(target=reap, name=f"reap-{trial_name}", daemon=True).start()


def trial_containers_running(*, trial_name: str, environment_type: str | None = None) -> bool | None:
    """Whether the trial's sandbox container is up on a local engine (None when the engine is not local, so this
    cannot be told here)."""
    from django.conf import settings

    engine = environment_type or settings.SANDBOX_ENVIRONMENT
    binary = shutil.which(engine) if engine in LOCAL_ENGINES else None
    if binary is None:
        return None
    return bool(_trial_containers(binary, trial_name, running_only=True))


def _trial_containers(binary: str, trial_name: str, *, running_only: bool) -> list[str]:
    wanted = trial_name.lower()
    listed = subprocess.run(
        [binary, "ps", *([] if running_only else ["-a"]), "--format", "{{.Names}}", "--filter", f"name={wanted}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return [n for n in listed.stdout.split() if wanted in n]


def run_trial(
    *,
    task_dir: Path,
    agent: AgentSpec,
    trial_name: str,
    trials_dir: Path | None = None,
    environment_type: str | None = None,
    environment_kwargs: dict[str, Any] | None = None,
    extra_instructions: list[str] | None = None,
    disable_verifier: bool = False,
    verifier_timeout_sec: float | None = None,
    delete: bool = True,
) -> TrialOutcome:
    """Run one Harbor trial synchronously and return its outcome.

    `environment_type` defaults to settings.SANDBOX_ENVIRONMENT ("podman", "docker", a Harbor cloud
    type, or an import path "pkg.mod:Class"). `environment_kwargs` keys that are Harbor
    EnvironmentConfig fields (override_cpus, force_build, env, ...) are set there, the rest go to the
    provider's constructor. Call it from synchronous code (a django-q2 job), never from a running loop.
    A previous trial directory of the same name is replaced. Raises TrialSetupError when the trial
    cannot be configured; failures during the trial are reported in the outcome (failure_cause,
    exception_*).
    """
    from django.conf import settings

    engine = environment_type or settings.SANDBOX_ENVIRONMENT
    environment_kwargs = dict(environment_kwargs or {})
    plan = _sandbox_agent_plan(agent, engine) if engine in LOCAL_ENGINES else None
    try:
        if plan is not None:
            agent = plan.agent
            environment_kwargs["extra_docker_compose"] = [
                *environment_kwargs.get("extra_docker_compose", []),
                plan.overlay,
            ]
        config = _trial_config(
            task_dir=Path(task_dir),
            agent=agent,
            trial_name=trial_name,
            trials_dir=Path(trials_dir) if trials_dir is not None else Path(settings.HARBOR_TRIALS_DIR),
            environment_type=engine,
            environment_kwargs=environment_kwargs,
            extra_instructions=extra_instructions or [],
            disable_verifier=disable_verifier,
            verifier_timeout_sec=verifier_timeout_sec,
            delete=delete,
            import_path=plan.import_path if plan is not None else None,
        )
        config.trials_dir.mkdir(parents=True, exist_ok=True)
        trial_dir = config.trials_dir / config.trial_name
        if trial_dir.exists():
            # A retried job reuses its trial name; Harbor would mix the old run's files (verifier output,
            # command output) into the new one, so start from an empty directory.
            shutil.rmtree(trial_dir)
        result = _run_to_completion(_create_and_run(config, relay=plan))
    finally:
        if plan is not None:
            shutil.rmtree(plan.workdir, ignore_errors=True)
    return _outcome(result, trial_dir=trial_dir)


# --- internals ------------------------------------------------------------------------------------


def _run_to_completion[T](coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop, even when the calling thread already has one running.

    ``run_trial`` is synchronous; its callers are jobs, management commands and tests, but a caller inside an event
    loop (an async view, a test process where Playwright's sync API keeps a loop running) must not break it, so
    then the trial's loop gets a thread of its own and this one waits for it.
    """
    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running:  # outside the except block, so the trial's own errors carry no "no running event loop" context
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    runner = threading.Thread(target=target, name="harbor-trial", daemon=True)
    runner.start()
    runner.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _agent_class(name: str) -> Any:
    from harbor.agents.factory import AgentFactory
    from harbor.models.agent.name import AgentName

    if name == "command":
        return _cached_command_agent()
    if name not in AgentName.values():
        known = ", ".join((*MODELLESS_AGENTS, *HARNESSES))
        raise TrialSetupError(f"Unknown agent '{name}' (known here: {known}).")
    return AgentFactory.get_agent_class(AgentName(name))


def _api_format(value: str | None) -> str | None:
    # Harbor's ModelApiFormat values use underscores ("openai_responses"); accept the hyphenated
    # spelling pi and the API docs use ("openai-responses") too.
    return value.replace("-", "_") if value is not None else None


def _api_key_variable(agent: AgentSpec) -> str:
    variable = _API_KEY_VARIABLE.get(agent.name, "OPENAI_API_KEY")
    # LiteLLM-based harnesses pick the provider from the model prefix or the forced wire format.
    if agent.name in ("terminus-2", "mini-swe-agent", "pi") and (
        _api_format(agent.model_api_format) == "anthropic_messages" or (agent.model or "").startswith("anthropic/")
    ):
        variable = "ANTHROPIC_API_KEY"
    return variable


def _trial_config(
    *,
    task_dir: Path,
    agent: AgentSpec,
    trial_name: str,
    trials_dir: Path,
    environment_type: str,
    environment_kwargs: dict[str, Any],
    extra_instructions: list[str],
    disable_verifier: bool,
    verifier_timeout_sec: float | None,
    delete: bool,
    import_path: str | None = None,
) -> Any:
    from harbor.models.task.task import Task
    from harbor.models.trial.config import (
        AgentConfig,
        EnvironmentConfig,
        TaskConfig,
        TrialConfig,
        VerifierConfig,
    )
    from pydantic import ValidationError

    if not Task.is_valid_dir(task_dir):
        raise TrialSetupError(f"{task_dir} is not a Harbor task directory (task.toml, instruction.md, ...).")
    problems = validate_agent_options(agent.name, agent.options)
    if problems:
        raise TrialSetupError(f"Invalid options for agent '{agent.name}': " + "; ".join(problems))

    env = dict(agent.env)
    agent_fields: dict[str, Any] = {}
    if agent.name == "command":
        agent_fields["import_path"] = COMMAND_AGENT_IMPORT_PATH
    elif import_path is not None:
        agent_fields["import_path"] = import_path
    else:
        agent_fields["name"] = agent.name
    if agent.api_key is not None:
        variable = _api_key_variable(agent)
        env[variable] = agent.api_key
        agent_fields["model_api_key_name"] = variable
    if agent.base_url is not None:
        agent_fields["base_url"] = agent.base_url
    if agent.model_api_format is not None:
        agent_fields["model_api_format"] = _api_format(agent.model_api_format)

    env_fields = set(EnvironmentConfig.model_fields) - {"type", "import_path", "kwargs", "delete"}
    environment: dict[str, Any] = {
        "delete": delete,
        "kwargs": {k: v for k, v in environment_kwargs.items() if k not in env_fields},
        **{k: v for k, v in environment_kwargs.items() if k in env_fields},
    }
    if ":" in environment_type:
        environment["import_path"] = environment_type
    else:
        environment["type"] = environment_type
        if environment_type == "podman":
            ensure_compose_on_path()

    try:
        return TrialConfig(
            task=TaskConfig(path=task_dir.resolve()),
            trial_name=trial_name,
            trials_dir=trials_dir.resolve(),
            agent=AgentConfig(
                model_name=agent.model,
                kwargs=dict(agent.options),
                env=env,
                override_timeout_sec=agent.timeout_sec,
                skills=[str(Path(p).resolve()) for p in agent.skills],
                **agent_fields,
            ),
            environment=EnvironmentConfig(**environment),
            verifier=VerifierConfig(disable=disable_verifier, override_timeout_sec=verifier_timeout_sec),
            extra_instructions=extra_instructions,
        )
    except ValidationError as exc:
        raise TrialSetupError(f"Invalid trial configuration: {exc}") from exc


async def _create_and_run(config: Any, relay: _SandboxAgentPlan | None = None) -> TrialResult:
    from harbor.trial.trial import Trial

    server = None
    if relay is not None and relay.gateway is not None:
        server = await _serve_gateway_relay(relay.socket, *relay.gateway)
    try:
        # Create and run in one loop, as Harbor's CLI does: the trial holds loop-bound resources.
        trial = await Trial.create(config)
        return await trial.run()
    finally:
        if server is not None:
            server.close()
            with suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)


@dataclass(frozen=True)
class _SandboxAgentPlan:
    """How an agent installed in a local sandbox runs: from the toolchain mount, behind the gateway relay."""

    agent: AgentSpec  # the caller's spec with the pinned version and the toolchain's PATH hook
    import_path: str | None  # a Preinstalled* subclass, or None for Harbor's own class
    workdir: Path  # per-trial scratch: the compose overlay and the relay socket (removed after the trial)
    overlay: Path
    socket: Path
    gateway: tuple[str, int] | None  # where the relay carries connections (the base URL's host and port)


def _sandbox_agent_plan(agent: AgentSpec, engine: str) -> _SandboxAgentPlan | None:
    """The plan for an agent installed in a local engine's sandbox; None for agents that need none.

    The toolchain (scripts/containers.sh --agents) is bind-mounted read-only at /opt/agents and put on PATH for
    the agent phase only (BASH_ENV, set in the agent's env). The sandbox gets `network_mode: none`; a relay in
    it listens on 127.0.0.1:<the base URL's port> and carries each connection over a Unix socket to this
    process, which carries it on to the gateway. The base URL's host is mapped to 127.0.0.1 in the sandbox,
    so the agent uses the URL unchanged and can reach nothing else.
    """
    if agent.name in _CANNOT_RUN_LOCALLY:
        raise TrialSetupError(f"{agent.name} cannot run in a {engine} sandbox here: {_CANNOT_RUN_LOCALLY[agent.name]}")
    if agent.name not in TOOLCHAIN_AGENTS:
        return None
    # Bad options are the caller's mistake whatever this machine has built; say that first.
    problems = validate_agent_options(agent.name, agent.options)
    if problems:
        raise TrialSetupError(f"Invalid options for agent '{agent.name}': " + "; ".join(problems))
    toolchain = agents_toolchain()
    if toolchain is None or agent.name not in toolchain.versions:
        raise TrialSetupError(
            f"{agent.name} needs the agents toolchain in a {engine} sandbox: run `bash scripts/containers.sh --agents`."
        )
    pinned = toolchain.versions[agent.name]
    asked = agent.options.get("version")
    if asked is not None and str(asked) != pinned:
        raise TrialSetupError(
            f"{agent.name} {asked} is not installable here; the agents toolchain pins {pinned} "
            "(change sandbox/agents and rerun scripts/containers.sh --agents)."
        )
    options = {**agent.options, "version": pinned}
    env = {**agent.env, "BASH_ENV": f"{AGENTS_MOUNT}/env.sh"}

    gateway: tuple[str, int] | None = None
    host: str | None = None
    if agent.base_url:
        url = urlsplit(agent.base_url)
        if url.hostname is None:
            raise TrialSetupError(f"The agent's base URL {agent.base_url!r} has no host.")
        host = url.hostname
        gateway = (host, url.port or (443 if url.scheme == "https" else 80))

    workdir = Path(tempfile.mkdtemp(prefix="sb-agent-"))
    workdir.chmod(0o755)  # the sandbox's user (maybe not root) must reach the socket
    socket = workdir / "gateway.sock"
    command = "exec sleep infinity"
    if gateway is not None:
        relay = f"{AGENTS_MOUNT}/bin/node {AGENTS_MOUNT}/lib/gateway-relay.js {gateway[1]} {_RELAY_MOUNT}/gateway.sock"
        command = f"{relay} & exec sleep infinity"
    overlay: dict[str, Any] = {
        "network_mode": "none",
        "command": ["sh", "-c", command],
        "volumes": [f"{toolchain.path}:{AGENTS_MOUNT}:ro", f"{workdir}:{_RELAY_MOUNT}"],
    }
    if host is not None and not _is_ip_literal(host):
        overlay["extra_hosts"] = [f"{host}:127.0.0.1"]
    overlay_path = workdir / "agent-sandbox.yaml"
    # JSON is YAML: no YAML writer needed for this small overlay.
    overlay_path.write_text(json.dumps({"services": {"main": overlay}}, indent=2) + "\n")
    return _SandboxAgentPlan(
        agent=dataclasses.replace(agent, options=options, env=env),
        import_path=_PREINSTALLED_IMPORT_PATHS.get(agent.name),
        workdir=workdir,
        overlay=overlay_path,
        socket=socket,
        gateway=gateway,
    )


def _is_ip_literal(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _serve_gateway_relay(socket: Path, host: str, port: int) -> asyncio.AbstractServer:
    """Serve `socket`, carrying each connection to host:port (the gateway, as this process reaches it)."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            pass

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        finally:
            for w in (writer, upstream_writer):
                with suppress(Exception):
                    w.close()

    server = await asyncio.start_unix_server(handle, path=str(socket))
    socket.chmod(0o666)
    return server


def _seconds(timing: Any) -> float | None:
    if timing is None or timing.started_at is None or timing.finished_at is None:
        return None
    return float((timing.finished_at - timing.started_at).total_seconds())


def _tail(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return f"[... {len(text) - cap} characters cut ...]\n" + text[-cap:]


def _read_capped(path: Path) -> str | None:
    if not path.is_file():
        return None
    return _tail(path.read_text(errors="replace"), OUTPUT_CAP_CHARS)


def _outcome(result: TrialResult, *, trial_dir: Path) -> TrialOutcome:
    raw: dict[str, Any]
    result_file = trial_dir / "result.json"
    raw = json.loads(result_file.read_text()) if result_file.is_file() else result.model_dump(mode="json")

    rewards: dict[str, float] | None = None
    if result.verifier_result is not None and result.verifier_result.rewards:
        rewards = {k: float(v) for k, v in result.verifier_result.rewards.items()}
    reward: float | None = None
    if rewards:
        reward = rewards.get("reward", next(iter(rewards.values())) if len(rewards) == 1 else None)

    exception = result.exception_info
    if exception is None:
        exception = next((s.exception_info for s in result.step_results or [] if s.exception_info), None)
    failure_cause = result.failure_cause
    n_input, n_cache, n_output, cost = result.compute_token_cost_totals()

    exit_code: int | None = None
    agent_output: str | None = None
    metadata = result.agent_result.metadata if result.agent_result is not None else None
    if metadata:
        if isinstance(metadata.get("exit_code"), int):
            exit_code = metadata["exit_code"]
        if isinstance(metadata.get("output"), str):
            agent_output = metadata["output"]
    agent_dir = trial_dir / "agent"
    if exit_code is None and (agent_dir / "command-exit-code.txt").is_file():
        exit_code = int((agent_dir / "command-exit-code.txt").read_text().strip())
    if agent_output is None:
        agent_output = _read_capped(agent_dir / "command.txt")

    trajectory = agent_dir / "trajectory.json"
    return TrialOutcome(
        trial_name=result.trial_name,
        trial_dir=trial_dir,
        reward=reward,
        rewards=rewards,
        failure_cause=str(failure_cause) if failure_cause is not None else None,
        exception_type=exception.exception_type if exception else None,
        exception_message=exception.exception_message if exception else None,
        started_at=result.started_at,
        finished_at=result.finished_at,
        timings={
            "environment_setup": _seconds(result.environment_setup),
            "agent_setup": _seconds(result.agent_setup),
            "agent_execution": _seconds(result.agent_execution),
            "verifier": _seconds(result.verifier),
        },
        n_input_tokens=n_input,
        n_cache_tokens=n_cache,
        n_output_tokens=n_output,
        cost_usd=cost,
        agent_exit_code=exit_code,
        agent_output=agent_output,
        verifier_output=_read_capped(trial_dir / "verifier" / "test-stdout.txt"),
        trajectory_path=trajectory if trajectory.is_file() else None,
        agent_log_dir=agent_dir if agent_dir.is_dir() else None,
        raw=raw,
        reward_valid=result.reward_valid,
        agent_version=result.agent_info.version if result.agent_info else None,
    )
