"""Results: a repository's configurations with Wilson intervals, accuracy against cost with the Pareto frontier,
and the paired comparison of two configurations. Every number comes from `apps.results.queries`."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from apps.accounts.pages import WorkspaceRequest, current_user, go_to, workspace_page
from apps.repositories import queries as repository_queries
from apps.repositories.models import Repository
from apps.results import forms, queries, releases, services
from apps.results.models import Release
from selfbench.errors import DomainError


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


# --- releases ---------------------------------------------------------------------------------------------------------


def _publish_form(preview: releases.Preview, data: Any = None) -> forms.ReleasePublishForm:
    initial = {
        "settings": [c.id for c in preview.candidates if c.preselected],
        "head": preview.head,
        "fingerprint": preview.fingerprint,
    }
    return forms.ReleasePublishForm(data, initial=initial, candidates=[c.result for c in preview.candidates])


def _release_context(
    request: WorkspaceRequest, repository: Repository, preview: releases.Preview, form: forms.ReleasePublishForm
) -> dict[str, Any]:
    rows = [(c, forms.configuration_name(c.result), len(c.covered)) for c in preview.candidates]
    return {"repository": repository, "preview": preview, "rows": rows, "form": form}


def _releases_url(request: WorkspaceRequest, repository: Repository) -> str:
    return f"{reverse('results:releases', args=[request.workspace.slug])}?repository={repository.pk}"


@require_GET
@vary_on_headers("HX-Request")
@workspace_page
def release_list(request: WorkspaceRequest) -> HttpResponse:
    """One repository's release preview, the publish form and its past releases (the same URL per repository)."""
    repositories = list(repository_queries.repositories_of(request.workspace))
    if not repositories:
        return render(request, "results/releases.html", {"repositories": []})
    repository = _repository(request, repositories)
    preview = releases.preview(repository)
    context = {
        **_release_context(request, repository, preview, _publish_form(preview)),
        "repositories": repositories,
        "past": queries.past_releases(repository),
    }
    template = "results/partials/release_section.html" if request.htmx else "results/releases.html"
    return render(request, template, context)


@require_POST
@workspace_page
def release_publish(request: WorkspaceRequest, repository_id: int) -> HttpResponse:
    """Publish the chosen configurations: 201 a new release, 200 unchanged, 409 stale (the fresh preview again)."""
    repository = get_object_or_404(repository_queries.repositories_of(request.workspace), pk=repository_id)
    preview = releases.preview(repository)
    form = _publish_form(preview, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            release, created = services.release_publish(
                repository=repository,
                settings_chosen=data["settings"],
                head=data["head"],
                fingerprint=data["fingerprint"],
                publish_tasks=data["publish_tasks"],
                publish_results_by_task=data["publish_results_by_task"],
                by=current_user(request),
            )
        except services.ReleaseStale as exc:
            form = _publish_form(exc.preview)
            form.initial["settings"] = data["settings"]  # keep what was chosen; the fresh numbers are shown
            form.stale = exc.message  # type: ignore[attr-defined]
            preview = exc.preview
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            if created:
                messages.success(request, f"Published release #{release.pk} of {repository.name}.")
            else:
                messages.info(request, f"Nothing changed: release #{release.pk} is already the current release.")
            return go_to(request, _releases_url(request, repository))
    context = _release_context(request, repository, preview, form)
    if request.htmx:
        return render(request, "results/partials/release_preview.html", context)
    past = queries.past_releases(repository)
    repositories = list(repository_queries.repositories_of(request.workspace))
    return render(request, "results/releases.html", {**context, "repositories": repositories, "past": past})


@require_POST
@workspace_page
def release_withdraw(request: WorkspaceRequest, release_id: int) -> HttpResponse:
    """Withdraw a release; its line falls back to the newest release not withdrawn."""
    release = get_object_or_404(
        Release.objects.select_related("repository"), workspace=request.workspace, pk=release_id
    )
    form = forms.ReleaseWithdrawForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        services.release_withdraw(release=release, by=current_user(request), reason=reason)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Withdrew release #{release.pk}.")
    return go_to(request, _releases_url(request, release.repository))
