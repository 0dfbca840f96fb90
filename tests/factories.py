"""Typed factories: explicit `make_*` functions, one per model."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from apps.accounts import services as account_services
from apps.accounts.models import Workspace
from apps.accounts.services import IssuedKey

_seq = itertools.count(1)

PASSWORD = "correct-horse-battery"


def make_user(**overrides: Any) -> User:
    n = next(_seq)
    username = overrides.pop("username", f"user{n}")
    user = get_user_model().objects.create_user(
        username=username, password=overrides.pop("password", PASSWORD), **overrides
    )
    return user


def make_workspace(*, owner: User | None = None, slug: str | None = None) -> Workspace:
    n = next(_seq)
    return account_services.workspace_create(slug=slug or f"ws-{n}", name=f"Workspace {n}", owner=owner or make_user())


def make_api_key(*, workspace: Workspace, scope: str = "write", created_by: User | None = None) -> IssuedKey:
    if created_by is None:
        owner_membership = workspace.memberships.filter(role="owner").select_related("user").first()
        created_by = owner_membership.user if owner_membership else None
    return account_services.api_key_create(workspace=workspace, name="test key", scope=scope, created_by=created_by)
