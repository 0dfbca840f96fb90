"""Trial-key lookup for the serving path, cached in-process for a few seconds.

Async request handling never touches the ORM directly: a cache miss loads the key in a worker thread. The cache
holds expiry, so expiry is exact; a revocation done in another process takes effect within the cache TTL
(GATEWAY_KEY_CACHE_SECONDS), and at once in this process (`forget`).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from apps.accounts.models import AuthKind
from apps.gateway.catalog import CatalogModel, catalog_model
from apps.gateway.models import GatewayKey

KEY_PREFIX = "sbg_"


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class RouteGrant:
    """One model a key may call, with what the gateway needs to reach its upstream."""

    model: CatalogModel
    role: str
    kind: str  # openai | anthropic | openrouter | custom: which upstream
    auth_kind: str
    secret: str  # empty for managed routes: read from settings at call time
    base_url: str
    credential_id: int | None

    @property
    def managed(self) -> bool:
        return self.credential_id is None

    @property
    def billable(self) -> bool:
        return self.auth_kind == AuthKind.API_KEY


@dataclass(frozen=True)
class KeyGrant:
    key_id: int
    workspace_id: int
    subject: str
    expires_at: float  # epoch seconds
    revoked: bool
    routes: dict[str, RouteGrant]  # by catalog model id

    def usable(self, now: float) -> bool:
        return not self.revoked and now < self.expires_at


_cache: dict[str, tuple[float, KeyGrant | None]] = {}


def load_grant(key_hash: str) -> KeyGrant | None:
    """Read a key and its routes from the database (sync; called in a worker thread)."""
    try:
        return _load_grant(key_hash)
    finally:
        # Lookups are rare (cached) and run on whichever pool thread is free: hold no connection between them.
        connection.close()


def _load_grant(key_hash: str) -> KeyGrant | None:
    key = GatewayKey.objects.filter(key_hash=key_hash).first()
    if key is None:
        return None
    routes: dict[str, RouteGrant] = {}
    for route in key.routes.select_related("credential"):
        model = catalog_model(route.model_id)
        if model is None:
            continue
        credential = route.credential
        routes[model.id] = RouteGrant(
            model=model,
            role=route.role,
            kind=credential.kind if credential else model.provider,
            auth_kind=credential.auth_kind if credential else AuthKind.API_KEY,
            secret=credential.secret if credential else "",
            base_url=credential.base_url if credential else "",
            credential_id=credential.pk if credential else None,
        )
    return KeyGrant(
        key_id=key.pk,
        workspace_id=key.workspace_id,
        subject=key.subject,
        expires_at=key.expires_at.timestamp(),
        revoked=key.revoked_at is not None,
        routes=routes,
    )


async def grant_for(raw_key: str) -> KeyGrant | None:
    """The grant for a raw key, from the cache when fresh."""
    if not raw_key.startswith(KEY_PREFIX):
        return None
    digest = hash_key(raw_key)
    now = time.monotonic()
    hit = _cache.get(digest)
    if hit is not None and hit[0] > now:
        return hit[1]
    grant = await asyncio.to_thread(load_grant, digest)
    ttl = float(settings.GATEWAY_KEY_CACHE_SECONDS)
    if len(_cache) > 10_000:  # trial keys are short-lived; bound the cache instead of tracking them
        _cache.clear()
    _cache[digest] = (now + ttl, grant)
    return grant


def forget(key_hashes: list[str]) -> None:
    """Drop keys from this process's cache (after a revocation)."""
    for digest in key_hashes:
        _cache.pop(digest, None)
