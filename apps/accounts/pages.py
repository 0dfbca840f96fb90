"""Access for HTML pages: a decorator that resolves the workspace in the URL for a logged-in member."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from apps.accounts.models import Membership, Workspace


def workspace_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Login required; `slug` must name a workspace the user belongs to (else 404).

    Sets request.workspace and request.membership.
    """

    @login_required
    @functools.wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
        membership = (
            Membership.objects.select_related("workspace")
            .filter(workspace__slug=slug, user=current_user(request))
            .first()
        )
        if membership is None:
            raise Http404("no such workspace")
        request.workspace = membership.workspace  # type: ignore[attr-defined]
        request.membership = membership  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapper


def current_user(request: HttpRequest) -> User:
    """The logged-in user of a page behind `login_required`."""
    user = request.user
    if not isinstance(user, User):
        raise Http404("login required")
    return user


class WorkspaceRequest(HttpRequest):
    """A request through `@workspace_page` and django-htmx's middleware."""

    htmx: HtmxDetails
    workspace: Workspace
    membership: Membership


def go_to(request: WorkspaceRequest, url: str) -> HttpResponse:
    """After a successful action: a full redirect, which htmx must do itself rather than swap the target page in."""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
