"""Authoring pages: start a batch with its author and reviewer, the workspace's evals and their vibe evals."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.pages import WorkspaceRequest, current_user, go_to, workspace_page
from apps.authoring import forms, queries, services
from apps.authoring.models import Eval
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


# --- evals and vibe evals ---------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@workspace_page
def eval_list(request: WorkspaceRequest) -> HttpResponse:
    """The workspace's evals with their task counts per state, and the form that creates one."""
    form = forms.EvalCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            created = services.eval_create(workspace=request.workspace, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, reverse("authoring:eval", args=[request.workspace.slug, created.pk]))
    if request.htmx:
        return render(request, "authoring/partials/eval_form.html", {"form": form})
    return render(request, "authoring/eval_list.html", {"form": form, "evals": queries.evals_of(request.workspace)})


def _vibe_form(request: WorkspaceRequest, form_class: type[forms.VibeEvalForm]) -> forms.VibeEvalForm:
    agents = services.runnable_author_agents()
    return form_class(request.POST or None, request.FILES or None, workspace=request.workspace, agents=agents)


@require_http_methods(["GET", "POST"])
@workspace_page
def eval_detail(request: WorkspaceRequest, eval_id: int) -> HttpResponse:
    """An eval's vibe evals and the form that adds one from a description."""
    found = get_object_or_404(Eval.objects.filter(workspace=request.workspace), pk=eval_id)
    form = _vibe_form(request, forms.VibeEvalForm)
    if request.method == "POST" and form.is_valid():
        try:
            services.vibe_eval_author(workspace=request.workspace, eval=found, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, reverse("authoring:eval", args=[request.workspace.slug, found.pk]))
    action = reverse("authoring:eval", args=[request.workspace.slug, found.pk])
    if request.htmx:
        return render(request, "authoring/partials/vibe_eval_form.html", {"form": form, "action": action})
    context = {"eval": found, "form": form, "action": action, "vibe_evals": queries.vibe_evals_in(eval=found)}
    return render(request, "authoring/eval_detail.html", context)


@require_http_methods(["GET", "POST"])
@workspace_page
def repository_vibe_evals(request: WorkspaceRequest, repository_id: int) -> HttpResponse:
    """A repository's vibe evals (tasks written from a description at a pinned commit) and the form that adds one."""
    repository = get_object_or_404(repository_queries.repositories_of(request.workspace), pk=repository_id)
    form = _vibe_form(request, forms.RepositoryVibeEvalForm)
    action = reverse("authoring:repository_vibe_evals", args=[request.workspace.slug, repository.pk])
    if request.method == "POST" and form.is_valid():
        try:
            services.vibe_eval_author(workspace=request.workspace, repository=repository, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, action)
    if request.htmx:
        return render(request, "authoring/partials/vibe_eval_form.html", {"form": form, "action": action})
    context = {
        "repository": repository,
        "form": form,
        "action": action,
        "vibe_evals": queries.vibe_evals_in(repository=repository),
    }
    return render(request, "authoring/repository_vibe_evals.html", context)
