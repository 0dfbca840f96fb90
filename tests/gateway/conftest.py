"""Gateway fixtures: the scripted upstream and the real ASGI app under uvicorn, each in a thread on 127.0.0.1.

Tests that call the served gateway use `transactional_db` (through `gw`), so the server thread's own database
connection sees the keys the test made, and the ledger writer's rows are visible to the test.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn

from apps.accounts import services as account_services
from apps.accounts.models import Credential, Workspace
from apps.gateway import services
from apps.gateway.ledger import writer
from apps.gateway.models import GatewayCall
from tests.doubles.llm_upstream import UpstreamServer
from tests.factories import make_workspace

UPSTREAM_SECRETS = {
    "openai": "sk-upstream-openai-0000000000",
    "anthropic": "sk-ant-upstream-0000000000",
    "openrouter": "sk-or-upstream-0000000000",
    "custom": "sk-custom-upstream-0000000000",
}


@pytest.fixture(scope="session")
def upstream() -> Iterator[UpstreamServer]:
    server = UpstreamServer().start()
    yield server
    server.stop()


class _ServerThread:
    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, lifespan="on", log_level="warning", loop="asyncio", http="h11")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture(scope="session")
def gateway_server(django_db_setup: None) -> Iterator[str]:
    """The project's ASGI application (selfbench.asgi) on a real uvicorn; yields its root URL."""
    from selfbench.asgi import application

    thread = _ServerThread(application)
    thread.start()
    yield f"http://127.0.0.1:{thread.port}"
    thread.stop()


@dataclass
class Gateway:
    url: str
    upstream: UpstreamServer
    workspace: Workspace
    credentials: dict[str, Credential]

    @property
    def openai_base(self) -> str:
        return f"{self.url}/gateway/openai/v1"

    @property
    def anthropic_base(self) -> str:
        return f"{self.url}/gateway/anthropic"

    def mint(
        self,
        model_id: str,
        via: str = "",
        *,
        subagent: tuple[str, str] | None = None,
        subject: str = "",
        ttl: int = 600,
    ) -> tuple[str, str]:
        """Mint a trial key for `model_id` paid by the workspace's `via` credential (default: its provider's;
        "managed" for managed-model). Returns (subject, raw key)."""
        from apps.gateway.catalog import catalog_model

        def cred(model: str, kind: str) -> Credential | str:
            model_entry = catalog_model(model)
            assert model_entry is not None
            kind = kind or model_entry.provider
            return services.MANAGED if kind == "managed" else self.credentials[kind]

        routes = [services.ModelRoute(model_id, cred(model_id, via))]  # type: ignore[arg-type]
        if subagent:
            routes.append(services.ModelRoute(subagent[0], cred(*subagent), role="subagent"))  # type: ignore[arg-type]
        subject = subject or f"trial:{time.monotonic_ns()}"
        _, raw = services.trial_key_mint(workspace=self.workspace, subject=subject, models=routes, ttl_seconds=ttl)
        return subject, raw

    def rows(self, subject: str, count: int = 1, timeout: float = 5.0) -> list[GatewayCall]:
        """The subject's ledger rows, waiting for the writer (rows land after the response ends)."""
        deadline = time.monotonic() + timeout
        while True:
            writer.flush(timeout)
            rows = list(GatewayCall.objects.filter(subject=subject).order_by("started_at"))
            if len(rows) >= count or time.monotonic() > deadline:
                return rows
            time.sleep(0.05)


@pytest.fixture
def gw(transactional_db: None, gateway_server: str, upstream: UpstreamServer, settings: Any) -> Iterator[Gateway]:
    settings.OPENAI_BASE_URL = upstream.url
    settings.ANTHROPIC_BASE_URL = upstream.url
    settings.OPENROUTER_BASE_URL = upstream.url + "/api"
    settings.MANAGED_OPENAI_API_KEY = "sk-managed-openai-000000"
    settings.MANAGED_ANTHROPIC_API_KEY = "sk-ant-managed-000000"
    settings.MANAGED_OPENROUTER_API_KEY = "sk-or-managed-000000"
    workspace = make_workspace()
    owner = workspace.memberships.get(role="owner")
    credentials = {}
    for kind, secret in UPSTREAM_SECRETS.items():
        credentials[kind] = account_services.credential_create(
            workspace=workspace,
            by=owner,
            name=f"{kind} key",
            kind=kind,
            secret=secret,
            base_url=f"{upstream.url}/custom/v1" if kind == "custom" else "",
        )
    yield Gateway(gateway_server, upstream, workspace, credentials)
    writer.flush(10)


@pytest.fixture
def last_upstream_request(upstream: UpstreamServer) -> Callable[[], Any]:
    return lambda: upstream.requests[-1]
