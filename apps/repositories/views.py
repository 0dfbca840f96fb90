"""Repository and batch pages: connect a repository, start a batch or Add PRs, watch a batch's progress live."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseStopPolling

from apps.accounts.pages import WorkspaceRequest, current_user, go_to, workspace_page
from apps.repositories import forms, queries, services
from apps.repositories.models import CANDIDATE_PIPELINE, Batch, BatchStatus, CandidateState, Repository
from selfbench.errors import DomainError


def _with_stages(batches: Iterable[Batch]) -> list[Batch]:
    """Candidate counts per stage, in pipeline order with their labels, for display (one query for all batches):
    `stages` lists the states that occur; `pipeline` also has authoring, gates, review and approval at zero."""
    rows = queries.with_stage_counts(batches)
    for batch in rows:
        counts: dict[str, int] = batch.stage_counts  # type: ignore[attr-defined]
        batch.stages = [(value, label, counts[value]) for value, label in CandidateState.choices if value in counts]  # type: ignore[attr-defined]
        batch.pipeline = [  # type: ignore[attr-defined]
            (value, label, counts.get(value, 0))
            for value, label in CandidateState.choices
            if value in counts or value in CANDIDATE_PIPELINE
        ]
        batch.candidate_total = sum(counts.values())  # type: ignore[attr-defined]
    return rows


# --- repositories ---------------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@workspace_page
def repository_list(request: WorkspaceRequest) -> HttpResponse:
    """The workspace's repositories and the form that connects one."""
    form = forms.RepositoryConnectForm(request.POST or None, workspace=request.workspace)
    if request.method == "POST" and form.is_valid():
        try:
            repository = services.repository_create(workspace=request.workspace, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, reverse("repositories:detail", args=[request.workspace.slug, repository.pk]))
    if request.htmx:  # the form again, with its errors, at 200
        return render(request, "repositories/partials/connect_form.html", {"form": form})
    rows = queries.repositories_of(request.workspace).annotate(batch_count=Count("batches"))
    return render(request, "repositories/repository_list.html", {"form": form, "rows": rows})


def _repository_page(
    request: WorkspaceRequest,
    repository: Repository,
    batch_form: forms.BatchStartForm | None = None,
    prs_form: forms.AddPrsForm | None = None,
) -> HttpResponse:
    batches = _with_stages(repository.batches.all()[:50])
    context = {
        "repository": repository,
        "batches": batches,
        "batch_form": batch_form or forms.BatchStartForm(),
        "prs_form": prs_form or forms.AddPrsForm(),
    }
    return render(request, "repositories/repository_detail.html", context)


@require_GET
@workspace_page
def repository_detail(request: WorkspaceRequest, repository_id: int) -> HttpResponse:
    repository = get_object_or_404(queries.repositories_of(request.workspace), pk=repository_id)
    return _repository_page(request, repository)


@require_POST
@workspace_page
def batch_start(request: WorkspaceRequest, repository_id: int) -> HttpResponse:
    """Start a discovery batch with counts per tier."""
    repository = get_object_or_404(queries.repositories_of(request.workspace), pk=repository_id)
    form = forms.BatchStartForm(request.POST)
    if form.is_valid():
        try:
            batch = services.batch_create(repository=repository, created_by=current_user(request), **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, reverse("repositories:batch", args=[request.workspace.slug, batch.pk]))
    if request.htmx:
        return render(request, "repositories/partials/batch_start_form.html", {"repository": repository, "form": form})
    return _repository_page(request, repository, batch_form=form)


@require_POST
@workspace_page
def prs_add(request: WorkspaceRequest, repository_id: int) -> HttpResponse:
    """Author chosen PRs directly (an add-PRs batch, no discovery)."""
    repository = get_object_or_404(queries.repositories_of(request.workspace), pk=repository_id)
    form = forms.AddPrsForm(request.POST)
    if form.is_valid():
        try:
            batch = services.batch_add_prs(
                repository=repository, numbers=form.cleaned_data["prs"], created_by=current_user(request)
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return go_to(request, reverse("repositories:batch", args=[request.workspace.slug, batch.pk]))
    if request.htmx:
        return render(request, "repositories/partials/add_prs_form.html", {"repository": repository, "form": form})
    return _repository_page(request, repository, prs_form=form)


# --- batches --------------------------------------------------------------------------------------------------------


@require_GET
@vary_on_headers("HX-Request")
@workspace_page
def batch_list(request: WorkspaceRequest) -> HttpResponse:
    """Every batch of the workspace, newest first, optionally narrowed to one status (same URL for the filter)."""
    status = request.GET.get("status", "")
    rows = queries.batches_of(request.workspace).select_related("repository")
    if status in BatchStatus.values:
        rows = rows.filter(status=status)
    context = {"batches": _with_stages(rows[:100]), "status": status, "statuses": BatchStatus.choices}
    template = "repositories/partials/batch_section.html" if request.htmx else "repositories/batch_list.html"
    return render(request, template, context)


def _batch(request: WorkspaceRequest, batch_id: int) -> Batch:
    batch = get_object_or_404(queries.batches_of(request.workspace).select_related("repository"), pk=batch_id)
    return _with_stages([batch])[0]


def _progress_context(batch: Batch) -> dict[str, Any]:
    return {"batch": batch, "candidates": queries.candidates_of(batch)}


@require_GET
@workspace_page
def batch_detail(request: WorkspaceRequest, batch_id: int) -> HttpResponse:
    batch = _batch(request, batch_id)
    return render(request, "repositories/batch_detail.html", _progress_context(batch))


@require_GET
@workspace_page
def batch_progress(request: WorkspaceRequest, batch_id: int) -> HttpResponse:
    """The live part of the batch page. It polls while discovery runs or any candidate still moves through authoring,
    gates or review; once everything has settled, htmx gets the last state and stops polling."""
    batch = _batch(request, batch_id)
    html = render_to_string("repositories/partials/batch_progress.html", _progress_context(batch), request=request)
    if request.htmx and not batch.is_live:  # type: ignore[attr-defined]
        return HttpResponseStopPolling(html)
    return HttpResponse(html)


@require_POST
@workspace_page
def batch_cancel(request: WorkspaceRequest, batch_id: int) -> HttpResponse:
    batch = services.batch_cancel(batch=_batch(request, batch_id))
    return go_to(request, reverse("repositories:batch", args=[request.workspace.slug, batch.pk]))
