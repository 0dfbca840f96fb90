"""Writes for workspaces, memberships and API keys."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.keys import generate_key, hash_key
from apps.accounts.models import ApiKey, KeyScope, Membership, Role, Workspace
from selfbench.errors import Conflict, InvalidInput, PermissionDenied


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key: `raw` is the only time the key itself exists outside the caller's hands."""

    api_key: ApiKey
    raw: str


@transaction.atomic
def workspace_create(*, slug: str, name: str = "", owner: AbstractBaseUser) -> Workspace:
    """Create a workspace with `owner` as its owner."""
    clean = slugify(slug)
    if not clean or clean != slug:
        raise InvalidInput(f"workspace slug {slug!r} must be lowercase letters, digits and hyphens")
    if Workspace.objects.filter(slug=clean).exists():
        raise Conflict(f"workspace {clean!r} already exists")
    try:
        workspace = Workspace.objects.create(slug=clean, name=name or clean)
    except IntegrityError as exc:
        raise Conflict(f"workspace {clean!r} already exists") from exc
    Membership.objects.create(workspace=workspace, user=owner, role=Role.OWNER)
    return workspace


def membership_set(*, workspace: Workspace, user: AbstractBaseUser, role: str, by: Membership | None) -> Membership:
    """Add `user` to `workspace` with `role`, or change their role. Only owners and admins may; only owners make owners."""
    if role not in Role.values:
        raise InvalidInput(f"role must be one of {', '.join(Role.values)}")
    if by is not None:
        if not by.is_admin:
            raise PermissionDenied("only workspace owners and admins manage members")
        if role == Role.OWNER and by.role != Role.OWNER:
            raise PermissionDenied("only an owner can make another owner")
    membership, _ = Membership.objects.update_or_create(workspace=workspace, user=user, defaults={"role": role})
    return membership


def api_key_create(
    *, workspace: Workspace, name: str, scope: str = KeyScope.WRITE, created_by: AbstractBaseUser | None = None
) -> IssuedKey:
    """Mint a key for `workspace`. The raw key is returned once; only its SHA-256 is stored."""
    if scope not in KeyScope.values:
        raise InvalidInput(f"scope must be one of {', '.join(KeyScope.values)}")
    if not name.strip():
        raise InvalidInput("a key needs a name")
    raw = generate_key()
    api_key = ApiKey.objects.create(
        workspace=workspace,
        name=name.strip()[:100],
        prefix=raw[:10],
        key_hash=hash_key(raw),
        scope=scope,
        created_by=created_by,
    )
    return IssuedKey(api_key=api_key, raw=raw)


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revoke a key; it stops working at once."""
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at", "updated_at"])
    return api_key


@transaction.atomic
def bootstrap(*, workspace_slug: str, username: str, password: str | None, email: str = "") -> tuple[Workspace, IssuedKey]:
    """Create (or reuse) a user and a workspace they own, and mint a write key. Used by the shell command."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    if password:
        user.set_password(password)
        user.save()
    elif created:
        user.set_unusable_password()
        user.save()
    workspace = Workspace.objects.filter(slug=workspace_slug).first()
    if workspace is None:
        workspace = workspace_create(slug=workspace_slug, name=workspace_slug, owner=user)
    else:
        Membership.objects.get_or_create(workspace=workspace, user=user, defaults={"role": Role.OWNER})
    issued = api_key_create(workspace=workspace, name=f"{username} (bootstrap)", scope=KeyScope.WRITE, created_by=user)
    return workspace, issued
