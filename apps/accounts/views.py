"""Login, the workspace home, API keys and members pages."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts import forms, services
from apps.accounts.models import ApiKey, Credential, Membership
from apps.accounts.pages import current_user, workspace_page
from selfbench.errors import DomainError


@require_http_methods(["GET", "POST"])
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The landing page: go to the user's first workspace, or create one."""
    form = forms.WorkspaceCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            workspace = services.workspace_create(
                slug=form.cleaned_data["slug"], name=form.cleaned_data["name"], owner=current_user(request)
            )
        except DomainError as exc:
            form.add_error("slug", exc.message)
        else:
            return redirect("accounts:dashboard", slug=workspace.slug)
    memberships = Membership.objects.select_related("workspace").filter(user=current_user(request))
    if request.method == "GET" and len(memberships) == 1:
        return redirect("accounts:dashboard", slug=memberships[0].workspace.slug)
    return render(request, "accounts/home.html", {"memberships": memberships, "form": form})


@require_GET
@workspace_page
def dashboard(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/dashboard.html", {})


@require_http_methods(["GET", "POST"])
@workspace_page
def api_keys(request: HttpRequest) -> HttpResponse:
    form = forms.ApiKeyCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            issued = services.api_key_create(
                workspace=request.workspace,  # type: ignore[attr-defined]
                name=form.cleaned_data["name"],
                scope=form.cleaned_data["scope"],
                created_by=current_user(request),
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            # Post/redirect/get, with the key kept in the session for exactly one display: a reload neither
            # creates a second key nor shows this one again.
            request.session["issued_key"] = issued.raw
            return redirect("accounts:api_keys", slug=request.workspace.slug)  # type: ignore[attr-defined]
    issued_raw = request.session.pop("issued_key", None) if request.method == "GET" else None
    keys = ApiKey.objects.filter(workspace=request.workspace).select_related("created_by")  # type: ignore[attr-defined]
    return render(request, "accounts/api_keys.html", {"form": form, "keys": keys, "issued_raw": issued_raw})


@require_POST
@workspace_page
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    api_key = get_object_or_404(ApiKey, pk=key_id, workspace=request.workspace)  # type: ignore[attr-defined]
    services.api_key_revoke(api_key=api_key)
    return redirect("accounts:api_keys", slug=request.workspace.slug)  # type: ignore[attr-defined]


@require_http_methods(["GET", "POST"])
@workspace_page
def members(request: HttpRequest) -> HttpResponse:
    form = forms.MemberAddForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = get_user_model().objects.filter(username=form.cleaned_data["username"]).first()
        if user is None:
            form.add_error("username", "no user with that username")
        else:
            try:
                services.membership_set(
                    workspace=request.workspace,  # type: ignore[attr-defined]
                    user=user,
                    role=form.cleaned_data["role"],
                    by=request.membership,  # type: ignore[attr-defined]
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                return redirect("accounts:members", slug=request.workspace.slug)  # type: ignore[attr-defined]
    rows = Membership.objects.filter(workspace=request.workspace).select_related("user")  # type: ignore[attr-defined]
    return render(request, "accounts/members.html", {"form": form, "rows": rows})


@require_http_methods(["GET", "POST"])
@workspace_page
def credentials(request: HttpRequest) -> HttpResponse:
    """List credentials (never their secrets) and, for owners and admins, add one."""
    form = forms.CredentialCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.credential_create(
                workspace=request.workspace,  # type: ignore[attr-defined]
                by=request.membership,  # type: ignore[attr-defined]
                **form.cleaned_data,
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return redirect("accounts:credentials", slug=request.workspace.slug)  # type: ignore[attr-defined]
    rows = Credential.objects.filter(workspace=request.workspace)  # type: ignore[attr-defined]
    return render(request, "accounts/credentials.html", {"form": form, "rows": rows})


@require_POST
@workspace_page
def credential_delete(request: HttpRequest, credential_id: int) -> HttpResponse:
    credential = get_object_or_404(Credential, pk=credential_id, workspace=request.workspace)  # type: ignore[attr-defined]
    try:
        services.credential_delete(credential=credential, by=request.membership)  # type: ignore[attr-defined]
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status)
    return redirect("accounts:credentials", slug=request.workspace.slug)  # type: ignore[attr-defined]
