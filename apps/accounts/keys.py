"""API key material: generation and hashing (no database access)."""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "sbk_"


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()
