"""Secrets at rest: AES-256-GCM with keys from SECRETS_ENCRYPTION_KEYS, and a model field that uses it.

Stored form: ``v1:<key id>:<base64 nonce+ciphertext>``. The first configured key encrypts; every key decrypts,
so keys can be rotated by prepending a new one.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.db import models


class DecryptionError(Exception):
    pass


def _keys() -> list[tuple[str, bytes]]:
    out = []
    for raw in settings.SECRETS_ENCRYPTION_KEYS:
        key = hashlib.sha256(raw.encode()).digest()
        out.append((hashlib.sha256(key).hexdigest()[:8], key))
    return out


def encrypt(plaintext: str) -> str:
    key_id, key = _keys()[0]
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode(), key_id.encode())
    return f"v1:{key_id}:{base64.urlsafe_b64encode(nonce + sealed).decode()}"


def decrypt(token: str) -> str:
    try:
        version, key_id, payload = token.split(":", 2)
    except ValueError as exc:
        raise DecryptionError("not an encrypted value") from exc
    if version != "v1":
        raise DecryptionError(f"unknown format {version}")
    blob = base64.urlsafe_b64decode(payload)
    for kid, key in _keys():
        if kid == key_id:
            return AESGCM(key).decrypt(blob[:12], blob[12:], kid.encode()).decode()
    raise DecryptionError("no configured key can decrypt this value (was SECRETS_ENCRYPTION_KEYS changed?)")


class EncryptedTextField(models.TextField):  # type: ignore[type-arg]
    """A text field stored encrypted. Reads give plaintext; the database only ever sees ciphertext."""

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        if value is None or value == "":
            return value
        return encrypt(str(value))
