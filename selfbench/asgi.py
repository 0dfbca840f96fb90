"""ASGI entry point (uvicorn). One process serves the Django site and the model gateway.

`/gateway/…` goes straight to the gateway's own ASGI app: no Django middleware (all sync, so each request would
hop to a thread), no URL resolver, no request object. Everything else is Django as usual.
"""

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "selfbench.settings")
django_application = get_asgi_application()

from apps.gateway.server import application as gateway_application  # noqa: E402  (needs the app registry)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"].startswith("/gateway/"):
        await gateway_application(scope, receive, send)
    elif scope["type"] == "websocket":
        # Nothing here speaks WebSocket. Some agents (codex) try a Responses WebSocket first and fall back to HTTP:
        # refuse the handshake cleanly (403) instead of letting Django raise and log a traceback.
        await receive()
        await send({"type": "websocket.close", "code": 1008})
    elif scope["type"] == "lifespan":
        # Django has no lifespan support; the gateway uses shutdown to close its client and flush the ledger.
        await gateway_application.lifespan(scope, receive, send)
    else:
        await django_application(scope, receive, send)
