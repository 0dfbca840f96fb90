"""Authoring pages: start a batch with its author and reviewer, the workspace's evals and their vibe evals."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.pages import WorkspaceRequest, current_user, go_to, workspace_page
from apps.authoring import forms, services
from apps.repositories import queries as repository_queries
from selfbench.errors import DomainError


@require_http_methods(["GET", "POST"])
@workspace_page
def batch_start(request: WorkspaceRequest, repository_id: int) -> HttpResponse:
    """A discovery batch with tier counts and, optionally, the models that author and review its tasks."""
    repository = get_object_or_404(repository_queries.repositories_of(request.workspace), pk=repository_id)
    agents = services.runnable_author_agents()
    form = forms.BatchAuthoringForm(request.POST or None, workspace=request.workspace, agents=agents)
    if request.method == "POST" and form.is_valid():
        try:
            batch = services.batch_create_with_authoring(
                repository=repository, created_by=current_user(request), **form.cleaned_data
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, reverse("repositories:batch", args=[request.workspace.slug, batch.pk]))
    context = {"repository": repository, "form": form, "agents": agents}
    template = "authoring/partials/batch_form.html" if request.htmx else "authoring/batch_start.html"
    return render(request, template, context)
