"""Schemathesis against the published OpenAPI schema, with a real write key: no 5xx, no response off the schema.

Runs in-process over WSGI on the test database. Every route any app publishes is covered as the schema grows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import content_type_conformance, not_a_server_error, response_schema_conformance

from selfbench.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


@pytest.fixture
def keep_test_connection(db: None) -> Iterator[None]:
    # The WSGI handler closes the connection after each request; the test database lives in that connection's
    # transaction, so keep it open as Django's own test client does.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, keep_test_connection, workspace, write_key) -> None:  # type: ignore[no-untyped-def]
    if "slug" in (case.path_parameters or {}):
        case.path_parameters["slug"] = workspace.slug
    case.call_and_validate(
        headers={"Authorization": f"Bearer {write_key}"},
        checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
    )
