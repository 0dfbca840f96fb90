"""Shared fixtures. Tests run on real PostgreSQL (DATABASE_URL); SQLite only with SELFBENCH_ALLOW_SQLITE_TESTS=1."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.factories import make_api_key, make_user, make_workspace


@pytest.fixture(scope="session", autouse=True)
def _require_postgresql(django_db_setup: None, django_db_blocker: object) -> Iterator[None]:
    if connection.vendor != "postgresql" and os.environ.get("SELFBENCH_ALLOW_SQLITE_TESTS") != "1":
        pytest.exit(
            f"tests need PostgreSQL (got {connection.vendor}); set DATABASE_URL=postgres://… "
            "or SELFBENCH_ALLOW_SQLITE_TESTS=1 for a quick local loop",
            returncode=3,
        )
    yield


@pytest.fixture
def user(db: None):  # type: ignore[no-untyped-def]
    return make_user()


@pytest.fixture
def workspace(db: None, user):  # type: ignore[no-untyped-def]
    return make_workspace(owner=user)


@pytest.fixture
def write_key(workspace) -> str:  # type: ignore[no-untyped-def]
    return make_api_key(workspace=workspace, scope="write").raw


@pytest.fixture
def read_key(workspace) -> str:  # type: ignore[no-untyped-def]
    return make_api_key(workspace=workspace, scope="read").raw


@pytest.fixture
def api(write_key: str) -> APIClient:
    """An API client authenticated with a write key of `workspace`."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {write_key}")
    return client
