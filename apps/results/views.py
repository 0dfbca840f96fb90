"""Results: a repository's configurations with Wilson intervals, accuracy against cost with the Pareto frontier,
and the paired comparison of two configurations. Every number comes from `apps.results.queries`."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from apps.accounts.pages import WorkspaceRequest, workspace_page
from apps.repositories import queries as repository_queries
from apps.repositories.models import Repository
from apps.results import forms, queries


def _chart(results: queries.Results) -> dict[str, Any]:
    """Points for the chart: accuracy (%) against cost per task (USD); incomplete cost is listed, never plotted at 0."""
    points, unpriced = [], []
    for c in results.configurations:
        if c.accuracy is None:
            continue
        point = {"id": c.id, "name": forms.configuration_name(c), "accuracy": round(c.accuracy * 100, 1)}
        if c.cost_per_task_usd is None:
            unpriced.append(point)
        else:
            points.append({**point, "cost": float(c.cost_per_task_usd), "frontier": c.on_frontier})
    return {"points": points, "unpriced": unpriced}


def _repository(request: WorkspaceRequest, repositories: list[Repository]) -> Repository:
    wanted = request.GET.get("repository", "")
    return next((r for r in repositories if str(r.pk) == wanted), repositories[0])


@require_GET
@vary_on_headers("HX-Request")
@workspace_page
def results_index(request: WorkspaceRequest) -> HttpResponse:
    """One repository's results (its approved tasks count), narrowed by the filters; the same URL for every filter."""
    repositories = list(repository_queries.repositories_of(request.workspace))
    if not repositories:
        return render(request, "results/results.html", {"repositories": []})
    repository = _repository(request, repositories)
    counted = queries.repository_tasks(repository)
    everything = queries.configuration_results(counted=counted)
    form = forms.ResultsForm(request.GET or None, repositories=repositories, configurations=everything.configurations)
    filters = form.filters()
    results = (
        everything if filters == queries.Filters() else queries.configuration_results(counted=counted, filters=filters)
    )
    pair = form.pair()
    context = {
        "repositories": repositories,
        "repository": repository,
        "form": form,
        "results": results,
        "rows": [(c, forms.configuration_name(c)) for c in results.configurations],
        "chart": _chart(results),
        "paired": queries.paired(counted=counted, a=pair[0], b=pair[1]) if pair else None,
        "pair_names": [dict(form.fields["a"].choices).get(x) for x in pair] if pair else None,  # type: ignore[attr-defined]
    }
    template = "results/partials/results_section.html" if request.htmx else "results/results.html"
    return render(request, template, context)
