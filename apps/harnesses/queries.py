"""Reads of saved harnesses shared by the API, the pages and apps.runs."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import QuerySet

from apps.accounts.models import Workspace
from apps.harnesses import services
from apps.harnesses.models import Harness


def harnesses_of(workspace: Workspace) -> QuerySet[Harness]:
    return Harness.objects.filter(workspace=workspace).select_related("workspace")


def harness_get(*, workspace: Workspace, harness_id: int | str) -> Harness | None:
    try:
        pk = int(harness_id)
    except (TypeError, ValueError):
        return None
    return harnesses_of(workspace).filter(pk=pk).first()


def same_configuration(harnesses: list[Harness]) -> dict[int, list[int]]:
    """For each harness, the other harnesses of its workspace with the same fingerprint (one configuration)."""
    if not harnesses:
        return {}
    workspace_ids = {h.workspace_id for h in harnesses}
    fingerprints = {h.fingerprint for h in harnesses}
    groups: dict[tuple[int, str], list[int]] = defaultdict(list)
    rows = Harness.objects.filter(workspace_id__in=workspace_ids, fingerprint__in=fingerprints).order_by("pk")
    for pk, workspace_id, fp in rows.values_list("pk", "workspace_id", "fingerprint"):
        groups[(workspace_id, fp)].append(pk)
    return {h.pk: [pk for pk in groups[(h.workspace_id, h.fingerprint)] if pk != h.pk] for h in harnesses}


def harness_snapshots(*, workspace: Workspace, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Frozen snapshots (services.harness_snapshot) of the workspace's harnesses with these ids, keyed by the id as
    given; ids that are not this workspace's harnesses are simply absent."""
    wanted: dict[int, str] = {}
    for raw in ids:
        try:
            wanted[int(raw)] = str(raw)
        except (TypeError, ValueError):
            continue
    rows = harnesses_of(workspace).filter(pk__in=list(wanted))
    return {wanted[h.pk]: services.harness_snapshot(h) for h in rows}
