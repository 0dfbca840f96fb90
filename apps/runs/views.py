"""The Run page (start a comparison), comparisons with live progress per evaluation and configuration, and trials."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from apps.accounts.pages import WorkspaceRequest, go_to, workspace_page
from apps.runs import forms, queries, sandboxes, serializers, services
from apps.runs.models import Comparison, Trial
from selfbench.api import summarise_errors
from selfbench.errors import DomainError

TRIALS_SHOWN = 200


def _start(request: WorkspaceRequest, form: forms.RunForm, rows: Any, action: str) -> Comparison | None:
    """Build the API's body from the page, check its shape with the API's serializer, call the API's service."""
    if not (form.is_valid() and rows.is_valid()):
        return None
    # Skip removed rows and blank extra ones (a formset leaves an unchanged extra row's cleaned_data empty).
    chosen = [row.row() for row in rows if row.cleaned_data and not row.cleaned_data.get("DELETE")]
    s = serializers.ComparisonStartInput(data=form.body(chosen, skip_completed=action == "missing"))
    if not s.is_valid():
        form.add_error(None, summarise_errors(s.errors))
        return None
    try:
        return services.comparison_start(workspace=request.workspace, body=s.validated_data, created_by=request.user)
    except DomainError as exc:
        for problem in exc.errors if isinstance(exc.errors, list) else [exc.message]:
            form.add_error(None, str(problem))
    return None


def _one_more_row(request: WorkspaceRequest) -> Any:
    """'Add a model row' without JavaScript: the same inputs, bound again with one more (blank) row."""
    data = request.POST.copy()
    total = data.get("models-TOTAL_FORMS", "")
    data["models-TOTAL_FORMS"] = str(min(int(total) + 1, 12) if total.isdigit() else 1)
    return forms.ModelRowFormSet(data, form_kwargs={"workspace": request.workspace}, prefix="models")


@require_http_methods(["GET", "POST"])
@workspace_page
def run_page(request: WorkspaceRequest) -> HttpResponse:
    """The Run page: model rows, sandbox and tasks; Run Full Comparison or Run Missing Tasks (skipCompleted)."""
    tasks = list(queries.runnable_tasks(workspace=request.workspace))
    form = forms.RunForm(request.POST or None, workspace=request.workspace, tasks=tasks)
    rows = forms.ModelRowFormSet(request.POST or None, form_kwargs={"workspace": request.workspace}, prefix="models")
    action = request.POST.get("action", "")
    if action == "add_row":
        rows = _one_more_row(request)
    elif request.method == "POST":
        comparison = _start(request, form, rows, action)
        if comparison is not None:
            return go_to(request, reverse("runs:comparison", args=[request.workspace.slug, comparison.client_id]))
    context = {"form": form, "rows": rows, "sandboxes": sandboxes.SANDBOXES, "tasks": tasks}
    return render(request, "runs/partials/run_form.html" if request.htmx else "runs/run_page.html", context)


@require_GET
@workspace_page
def comparison_list(request: WorkspaceRequest) -> HttpResponse:
    rows = queries.comparisons(workspace=request.workspace).select_related("created_by")[:100]
    return render(request, "runs/comparison_list.html", {"comparisons": rows})


def _comparison_context(request: WorkspaceRequest, comparison_id: uuid.UUID) -> dict[str, Any]:
    comparison = get_object_or_404(queries.comparisons(workspace=request.workspace), client_id=comparison_id)
    trials = Trial.objects.filter(evaluation__comparison=comparison).select_related("task", "evaluation")
    # The fragment is re-rendered every 2 s: a 24,000-trial comparison lists its first trials, not all of them.
    return {
        "comparison": comparison,
        "progress": queries.comparison_progress(comparison),
        "trials": trials[:TRIALS_SHOWN],
        "trials_shown": TRIALS_SHOWN,
    }


@require_GET
@workspace_page
def comparison_detail(request: WorkspaceRequest, comparison_id: uuid.UUID) -> HttpResponse:
    return render(request, "runs/comparison_detail.html", _comparison_context(request, comparison_id))


@require_GET
@workspace_page
def comparison_progress(request: WorkspaceRequest, comparison_id: uuid.UUID) -> HttpResponse:
    """The live part of the comparison page; htmx gets the last state with 286 (stop polling) once it has ended."""
    context = _comparison_context(request, comparison_id)
    html = render_to_string("runs/partials/comparison_progress.html", context, request=request)
    if request.htmx and context["comparison"].is_terminal:
        return HttpResponseStopPolling(html)
    return HttpResponse(html)


@require_POST
@workspace_page
def comparison_cancel(request: WorkspaceRequest, comparison_id: uuid.UUID) -> HttpResponse:
    comparison = get_object_or_404(Comparison, workspace=request.workspace, client_id=comparison_id)
    services.comparison_cancel(comparison=comparison)
    return go_to(request, reverse("runs:comparison", args=[request.workspace.slug, comparison_id]))


@require_GET
@workspace_page
def trial_detail(request: WorkspaceRequest, trial_id: uuid.UUID) -> HttpResponse:
    trial = get_object_or_404(
        Trial.objects.select_related("task", "evaluation__comparison").prefetch_related("artifacts"),
        workspace=request.workspace,
        uuid=trial_id,
    )
    return render(request, "runs/trial_detail.html", {"trial": trial})
