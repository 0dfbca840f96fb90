"""API access: `sbk_` keys (Bearer or X-API-Key) and the workspace scope every API route lives under.

Anything of another workspace answers 404 (its existence is not revealed); a read key on a write route 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q
from django.http import Http404
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from apps.accounts.keys import KEY_PREFIX, hash_key
from apps.accounts.models import ApiKey, KeyScope, Membership, Role, Workspace


def _raw_key(request: Request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header.lower().startswith("bearer "):
        token = header[7:].strip()
        if token.startswith(KEY_PREFIX):
            return token
    x_key = request.META.get("HTTP_X_API_KEY", "").strip()
    return x_key or None


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        raw = _raw_key(request)
        if raw is None:
            return None
        api_key = (
            ApiKey.objects.select_related("workspace", "created_by")
            .filter(key_hash=hash_key(raw), revoked_at__isnull=True)
            .first()
        )
        if api_key is None:
            raise exceptions.AuthenticationFailed("invalid or revoked API key")
        now = timezone.now()
        if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        user = api_key.created_by if api_key.created_by is not None else AnonymousUser()
        return (user, api_key)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="selfbench"'


class WorkspaceAccess(BasePermission):
    """Resolves `request.workspace` from the URL's `slug` and checks the caller may act in it."""

    def has_permission(self, request: Request, view: Any) -> bool:
        api_key = request.auth if isinstance(request.auth, ApiKey) else None
        if api_key is None and not request.user.is_authenticated:
            raise exceptions.NotAuthenticated("send an API key (Authorization: Bearer sbk_… or X-API-Key) or log in")
        slug = view.kwargs.get("slug") if hasattr(view, "kwargs") else None
        if slug is None:
            return True
        if api_key is not None:
            if api_key.workspace.slug != slug:
                raise Http404("no such workspace")
            workspace = api_key.workspace
            membership = (
                Membership.objects.filter(workspace=workspace, user=api_key.created_by).first()
                if api_key.created_by_id
                else None
            )
            if api_key.scope == KeyScope.READ and request.method not in SAFE_METHODS:
                raise exceptions.PermissionDenied("this API key is read-only; use a write key for this route")
        else:
            user_id = request.user.pk or 0
            membership = (
                Membership.objects.select_related("workspace").filter(workspace__slug=slug, user_id=user_id).first()
            )
            if membership is None:
                raise Http404("no such workspace")
            workspace = membership.workspace
        request.workspace = workspace  # type: ignore[attr-defined]
        request.membership = membership  # type: ignore[attr-defined]
        return True


def workspace_of(request: Request) -> Workspace:
    """The workspace WorkspaceAccess resolved for this request."""
    workspace: Workspace = request.workspace  # type: ignore[attr-defined]
    return workspace


def is_admin(request: Any) -> bool:
    """Owners and admins; an API key acts with the role of the member who made it."""
    membership: Membership | None = getattr(request, "membership", None)
    return membership is not None and membership.role in (Role.OWNER, Role.ADMIN)


def require_admin(request: Any) -> None:
    if not is_admin(request):
        raise exceptions.PermissionDenied("only workspace owners and admins can do this")


def member_workspaces(user: Any) -> Any:
    return Workspace.objects.filter(Q(memberships__user=user)).distinct()
