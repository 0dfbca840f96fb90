"""Saved harnesses: list them, save one (every rule checked by the service), delete one."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.pages import WorkspaceRequest, current_user, go_to, workspace_page
from apps.harnesses import forms, queries, services
from selfbench.errors import DomainError


@require_http_methods(["GET", "POST"])
@workspace_page
def harness_list(request: WorkspaceRequest) -> HttpResponse:
    form = forms.HarnessForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.harness_create(
                workspace=request.workspace, created_by=current_user(request), **form.service_fields()
            )
        except DomainError as exc:
            for problem in exc.errors if isinstance(exc.errors, list) else [exc.message]:
                form.add_error(None, str(problem))
        else:
            return go_to(request, reverse("harnesses:list", args=[request.workspace.slug]))
    if request.htmx:
        return render(request, "harnesses/partials/harness_form.html", {"form": form})
    rows = queries.harnesses_of(request.workspace).order_by("name")
    return render(request, "harnesses/harness_list.html", {"form": form, "rows": rows})


@require_POST
@workspace_page
def harness_delete(request: WorkspaceRequest, harness_id: int) -> HttpResponse:
    harness = get_object_or_404(queries.harnesses_of(request.workspace), pk=harness_id)
    services.harness_delete(harness=harness)
    return go_to(request, reverse("harnesses:list", args=[request.workspace.slug]))
