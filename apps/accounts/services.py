"""Writes for workspaces, memberships and API keys."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.keys import generate_key, hash_key
from apps.accounts.models import ApiKey, AuthKind, Credential, CredentialKind, KeyScope, Membership, Role, Workspace
from selfbench.errors import Conflict, InvalidInput, PermissionDenied


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key: `raw` is the only time the key itself exists outside the caller's hands."""

    api_key: ApiKey
    raw: str


@transaction.atomic
def workspace_create(*, slug: str, name: str = "", owner: User) -> Workspace:
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


def membership_set(*, workspace: Workspace, user: User, role: str, by: Membership | None) -> Membership:
    """Add `user` to `workspace` with `role`, or change their role.

    Only owners and admins may; only owners make owners.
    """
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
    *, workspace: Workspace, name: str, scope: str = KeyScope.WRITE, created_by: User | None = None
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
def bootstrap(
    *, workspace_slug: str, username: str, password: str | None, email: str = ""
) -> tuple[Workspace, IssuedKey]:
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


def _check_credential_values(*, kind: str, auth_kind: str, secret: str, base_url: str) -> None:
    problems = []
    if kind not in CredentialKind.values:
        problems.append(f"kind must be one of {', '.join(CredentialKind.values)}")
    if auth_kind not in AuthKind.values:
        problems.append(f"authKind must be one of {', '.join(AuthKind.values)}")
    if not secret.strip():
        problems.append("secret must not be empty")
    if kind == CredentialKind.CUSTOM and not base_url:
        problems.append("a custom credential needs baseUrl (an OpenAI-compatible endpoint)")
    if kind != CredentialKind.CUSTOM and base_url:
        problems.append("baseUrl is only for custom credentials")
    if auth_kind == AuthKind.SIGN_IN and kind not in (CredentialKind.OPENAI, CredentialKind.ANTHROPIC):
        problems.append("sign-in credentials exist only for openai (ChatGPT) and anthropic (Claude)")
    if problems:
        raise InvalidInput("; ".join(problems), errors=problems)


@transaction.atomic
def credential_create(
    *,
    workspace: Workspace,
    by: Membership | None,
    name: str,
    kind: str,
    secret: str,
    auth_kind: str = AuthKind.API_KEY,
    base_url: str = "",
) -> Credential:
    """Save a new encrypted credential. Only owners and admins may."""
    if by is None or not by.is_admin:
        raise PermissionDenied("only workspace owners and admins manage credentials")
    _check_credential_values(kind=kind, auth_kind=auth_kind, secret=secret, base_url=base_url)
    if Credential.objects.filter(workspace=workspace, name=name).exists():
        raise Conflict(f"a credential named {name!r} already exists")
    return Credential.objects.create(
        workspace=workspace,
        name=name,
        kind=kind,
        auth_kind=auth_kind,
        secret=secret.strip(),
        base_url=base_url,
        created_by=by.user,
    )


@transaction.atomic
def credential_update(
    *,
    credential: Credential,
    by: Membership | None,
    name: str | None = None,
    secret: str | None = None,
    base_url: str | None = None,
) -> Credential:
    """Rename a credential, replace its secret or change its base URL. Only owners and admins may."""
    if by is None or not by.is_admin:
        raise PermissionDenied("only workspace owners and admins manage credentials")
    new_name = credential.name if name is None else name
    new_secret = credential.secret if secret is None else secret.strip()
    new_base = credential.base_url if base_url is None else base_url
    _check_credential_values(kind=credential.kind, auth_kind=credential.auth_kind, secret=new_secret, base_url=new_base)
    if (
        new_name != credential.name
        and Credential.objects.filter(workspace=credential.workspace, name=new_name).exists()
    ):
        raise Conflict(f"a credential named {new_name!r} already exists")
    credential.name, credential.secret, credential.base_url = new_name, new_secret, new_base
    credential.save()
    return credential


def credential_delete(*, credential: Credential, by: Membership | None) -> None:
    """Delete a credential. Only owners and admins may."""
    if by is None or not by.is_admin:
        raise PermissionDenied("only workspace owners and admins manage credentials")
    credential.delete()
