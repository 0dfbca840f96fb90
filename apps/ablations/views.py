"""Repo ablations ("Environments"): list them with their build counts, create one, Build Missing Tasks, delete."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from apps.ablations import forms, queries, services
from apps.accounts.pages import WorkspaceRequest, current_user, go_to, workspace_page
from apps.repositories import queries as repository_queries
from selfbench.errors import DomainError


@require_http_methods(["GET", "POST"])
@workspace_page
def environment_list(request: WorkspaceRequest) -> HttpResponse:
    repositories = list(repository_queries.repositories_of(request.workspace))
    form = forms.EnvironmentForm(request.POST or None, repositories=repositories)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        repository = next(r for r in repositories if r.pk == data.pop("repository"))
        try:
            services.environment_create(repository=repository, created_by=current_user(request), **data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, reverse("ablations:list", args=[request.workspace.slug]))
    if request.htmx:
        return render(request, "ablations/partials/environment_form.html", {"form": form})
    environments = list(queries.environments_of(request.workspace).order_by("repository__full_name", "name"))
    counts = queries.build_counts(environments)
    context = {"form": form, "rows": [(e, counts[e.pk]) for e in environments], "repositories": repositories}
    return render(request, "ablations/environment_list.html", context)


@require_POST
@workspace_page
def environment_build_missing(request: WorkspaceRequest, environment_id: int) -> HttpResponse:
    environment = get_object_or_404(queries.environments_of(request.workspace), pk=environment_id)
    services.environment_build_missing(environment=environment)
    return go_to(request, reverse("ablations:list", args=[request.workspace.slug]))


@require_POST
@workspace_page
def environment_delete(request: WorkspaceRequest, environment_id: int) -> HttpResponse:
    environment = get_object_or_404(queries.environments_of(request.workspace), pk=environment_id)
    services.environment_delete(environment=environment)
    return go_to(request, reverse("ablations:list", args=[request.workspace.slug]))
