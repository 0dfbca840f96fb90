"""The public results API's rate limit: a token bucket per client IP in the shared cache (steady rate + burst)."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle


class PublicResultsThrottle(BaseThrottle):
    """PUBLIC_RESULTS_RATE_PER_MINUTE per IP with bursts of PUBLIC_RESULTS_BURST; DRF answers 429 + Retry-After.
    The bucket's read-modify-write is not atomic, so concurrent bursts may slip a few requests through."""

    def __init__(self) -> None:
        self._wait = 0.0

    def _ident(self, request: Request) -> str:
        # Behind proxies, trust X-Forwarded-For only as DRF's NUM_PROXIES allows; otherwise the socket's address.
        if api_settings.NUM_PROXIES is None:
            return str(request.META.get("REMOTE_ADDR", ""))
        return self.get_ident(request)

    def allow_request(self, request: Request, view: Any) -> bool:
        rate = settings.PUBLIC_RESULTS_RATE_PER_MINUTE / 60.0
        burst = float(settings.PUBLIC_RESULTS_BURST)
        key = f"results:throttle:{self._ident(request)}"
        now = time.time()
        tokens, stamp = cache.get(key, (burst, now))
        tokens = min(burst, tokens + (now - stamp) * rate)
        ttl = int(burst / rate) + 1
        if tokens < 1.0:
            self._wait = (1.0 - tokens) / rate
            cache.set(key, (tokens, now), ttl)
            return False
        cache.set(key, (tokens - 1.0, now), ttl)
        return True

    def wait(self) -> float | None:
        return max(1.0, self._wait)
