"""Release previews and the public release document (reads; `services.release_publish` writes).

Release rule (reference §1.5): candidates are baseline configurations with at least one scored result on a counted
task; the task set is every counted task all chosen configurations have a result for; accuracy and cost are
computed over that set only. The fingerprint covers the head, the counted tasks (with their versions, whose files
Publish Tasks makes public) and every candidate's results, so any change between preview and publish makes the
publish stale (409 with a fresh preview). The content hash covers the whole public document, the published task
files, grading, test output and transcripts included, so a republish that would show anything new is a new release.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from apps.gateway import catalog
from apps.repositories.models import Batch, Repository
from apps.results import publication, queries, stats
from apps.results.models import RELEASE_SCHEMA_VERSION, Release
from apps.results.queries import ConfigurationResult, CountedTasks, Filters


def current_release(repository: Repository) -> Release | None:
    """The line's newest release that is not withdrawn."""
    return Release.objects.filter(repository=repository, withdrawal__isnull=True).order_by("-created_at", "-pk").first()


def repository_head(repository: Repository) -> str:
    """The default-branch head the newest batch pinned ("" before any batch)."""
    head = (
        Batch.objects.filter(repository=repository)
        .exclude(head_sha="")
        .order_by("-created_at", "-pk")
        .values_list("head_sha", flat=True)
        .first()
    )
    return head or ""


@dataclass(frozen=True)
class Candidate:
    result: ConfigurationResult
    covered: frozenset[int]  # counted tasks it has a scored result on
    preselected: bool

    @property
    def id(self) -> str:
        return self.result.id


@dataclass(frozen=True)
class Preview:
    repository: Repository
    counted: CountedTasks
    task_ids: list[int]
    candidates: list[Candidate]
    unrun_task_ids: list[int]  # counted tasks no candidate has a result for
    removed_task_ids: list[int]  # tasks of the current release that are no longer counted
    head: str
    fingerprint: str
    current: Release | None

    def candidate(self, configuration: str) -> Candidate | None:
        return next((c for c in self.candidates if c.id == configuration), None)


def preview(repository: Repository) -> Preview:
    """What a release of this repository would contain now. Five queries, whatever the number of trials."""
    counted = queries.repository_tasks(repository)
    versions = sorted(counted.tasks.values_list("pk", "version__content_hash"))
    task_ids = [pk for pk, _ in versions]
    results = queries.configuration_results(counted=counted, filters=Filters(baseline_only=True))
    found = [c for c in results.configurations if c.tasks > 0]
    by_task = queries.latest_by_task(counted=counted, configurations=[c.id for c in found])
    current = current_release(repository)
    previous_tasks = set(current.task_ids) if current else set()
    declined = set(current.declined) if current else set()
    candidates = [
        Candidate(
            result=c,
            covered=frozenset(by_task.get(c.id, {})),
            preselected=current is not None and previous_tasks <= set(by_task.get(c.id, {})) and c.id not in declined,
        )
        for c in found
    ]
    covered_any = set().union(*(c.covered for c in candidates)) if candidates else set()
    head = repository_head(repository)
    fingerprint = hashlib.sha256(
        json.dumps(
            {"head": head, "tasks": versions, "results": sorted((c.id, c.result.checksum) for c in candidates)}
        ).encode()
    ).hexdigest()
    return Preview(
        repository=repository,
        counted=counted,
        task_ids=task_ids,
        candidates=candidates,
        unrun_task_ids=[t for t in task_ids if t not in covered_any],
        removed_task_ids=sorted(previous_tasks - set(task_ids)),
        head=head,
        fingerprint=fingerprint,
        current=current,
    )


def _money(value: Decimal | None) -> float | None:
    return None if value is None else float(round(value, 6))


def _setting(c: ConfigurationResult, on_frontier: bool) -> dict[str, Any]:
    model = catalog.catalog_model(c.model)
    interval = c.interval
    return {
        "id": c.id,
        "model": c.model,
        "harness": c.agent,
        "reasoningLevel": c.thinking,
        "provider": model.provider if model is not None else "custom",
        "custom": model is None,
        "tasks": c.tasks,
        "passed": c.passed,
        "accuracy": round(100 * c.accuracy, 2) if c.accuracy is not None else None,
        "accuracyInterval": None if interval is None else [round(100 * interval[0], 2), round(100 * interval[1], 2)],
        "costComplete": c.cost_complete,
        "costPerTaskUsd": _money(c.cost_per_task_usd),
        "totalCostUsd": _money(c.total_cost_usd),
        "onFrontier": on_frontier,
    }


def release_document(
    *,
    repository: Repository,
    chosen: list[str],
    task_ids: list[int],
    counted: CountedTasks,
    publish_tasks: bool,
    publish_results_by_task: bool,
) -> dict[str, Any]:
    """The public document (without releaseId / releasedAt, which the row adds): chosen settings over the shared
    task set, the frontier among them, and — only when asked — the tasks (instruction, held-out tests, reference
    solution) and per-task results (pass/fail, grading, test output, transcript), as `publication` reads them."""
    shared = queries.task_set(counted, task_ids)
    results = queries.configuration_results(counted=shared, filters=Filters(baseline_only=True))
    rows = [c for c in (results.get(cid) for cid in chosen) if c is not None]
    points = [
        stats.Point(c.id, c.accuracy, float(cost) if (cost := c.cost_per_task_usd) is not None else None)
        for c in rows
        if c.accuracy is not None
    ]
    frontier = stats.pareto_frontier(points)
    owner, _, name = repository.full_name.partition("/")
    document: dict[str, Any] = {
        "schemaVersion": RELEASE_SCHEMA_VERSION,
        "repository": {
            "owner": owner,
            "name": name,
            "fullName": repository.full_name,
            "githubId": repository.github_id,
        },
        "publisher": {"workspace": repository.workspace.name},
        "tasks": len(task_ids),
        "settings": [_setting(c, c.id in frontier) for c in rows],
        "frontier": sorted(frontier),
        "publishTasks": publish_tasks,
        "publishResultsByTask": publish_results_by_task,
    }
    budget = publication.TextBudget()  # one per release; the tasks' files come first
    if publish_tasks:
        tasks = shared.tasks.select_related("version").order_by("pk")
        document["taskList"] = [publication.public_task(t, budget) for t in tasks]
    if publish_results_by_task:
        document["resultsByTask"] = _results_by_task(shared, chosen, task_ids, budget)
    return document


def _results_by_task(
    shared: CountedTasks, chosen: list[str], task_ids: list[int], budget: publication.TextBudget
) -> list[dict[str, Any]]:
    """Per released task: pass/fail per chosen configuration and what its latest scored trial shows. Chosen
    configurations are baseline ones (the publish checks it), so no other configuration's trial is ever read."""
    latest = queries.latest_scored_by_task(counted=shared, configurations=chosen)
    order = [latest[cid][t][1] for t in task_ids for cid in chosen if t in latest.get(cid, {})]
    shown = publication.trial_results(order, budget)
    out = []
    for t in task_ids:
        scored = {cid: latest.get(cid, {}).get(t) for cid in chosen}
        out.append(
            {
                "taskId": t,
                "passed": {cid: s[0] if s is not None else None for cid, s in scored.items()},
                "results": {
                    cid: {"passed": s[0], **shown[s[1]]} if s is not None and s[1] in shown else None
                    for cid, s in scored.items()
                },
            }
        )
    return out


def content_hash(document: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()
