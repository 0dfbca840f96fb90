"""Template context: the current workspace, the workspaces the user can switch to, and the workspace navigation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from apps.accounts.models import Workspace

# (label, URL name). An area whose page does not exist yet is left out of the navigation, never a dead link.
WORKSPACE_NAV = [
    ("Repositories", "repositories:list"),
    ("Batches", "repositories:batches"),
    ("Tasks", "tasks:list"),
    ("Evals", "authoring:evals"),
    ("Harnesses", "harnesses:list"),
    ("Environments", "ablations:list"),
    ("Runs", "runs:list"),
    ("Results", "results:index"),
    ("Releases", "results:releases"),
    ("Credentials", "accounts:credentials"),
]


def _nav_items(slug: str) -> list[dict[str, str]]:
    items = []
    for label, name in WORKSPACE_NAV:
        try:
            items.append({"label": label, "url": reverse(name, kwargs={"slug": slug})})
        except NoReverseMatch:
            continue
    return items


def workspace_nav(request: HttpRequest) -> dict[str, Any]:
    workspace = getattr(request, "workspace", None)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"workspace": workspace}
    return {
        "workspace": workspace,
        "membership": getattr(request, "membership", None),
        "nav_items": _nav_items(workspace.slug) if workspace is not None else [],
        "nav_workspaces": Workspace.objects.filter(memberships__user=user).only("slug", "name"),
    }
