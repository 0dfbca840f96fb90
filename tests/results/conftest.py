"""Results fixtures: a lab that writes trials, a public GitHub repository, files under a temp MEDIA_ROOT."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from tests.results.factories import Lab, make_repository


@pytest.fixture(autouse=True)
def _media_and_cache(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.clear()


@pytest.fixture
def lab(workspace):  # type: ignore[no-untyped-def]
    return Lab(workspace=workspace)


@pytest.fixture
def repo(workspace):  # type: ignore[no-untyped-def]
    return make_repository(workspace=workspace)
