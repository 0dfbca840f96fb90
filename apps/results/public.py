"""What the public results API serves: only released documents (`Release.document`), never live results.

A line is one workspace × one GitHub repository; it shows its newest release that is not withdrawn. `endorsed`
stays false: SelfBench cannot yet verify that a publisher speaks for the repository's owner.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef
from django.db.models.fields.json import KeyTransform

from apps.results.models import Release


def _lines(releases: list[Release]) -> list[dict[str, Any]]:
    return [
        {
            "release": {
                **{k: v for k, v in r.document.items()},
                "releaseId": r.pk,
                "releasedAt": r.created_at.isoformat(),
            },
            "endorsed": False,
        }
        for r in releases
    ]


def _current() -> Any:
    """Each line's newest release that is not withdrawn: no newer unwithdrawn release on the same line."""
    newer = Release.objects.filter(
        workspace_id=OuterRef("workspace_id"),
        github_id=OuterRef("github_id"),
        withdrawal__isnull=True,
        created_at__gt=OuterRef("created_at"),
    )
    return (
        Release.objects.filter(withdrawal__isnull=True)
        .exclude(Exists(newer))
        .only("pk", "document", "created_at", "full_name", "workspace_id", "github_id")
    )


def repository_lines(full_name: str) -> dict[str, Any] | None:
    """`{lines}` for one repository, newest release first; None when nothing is released. One query."""
    rows = sorted(_current().filter(full_name__iexact=full_name), key=lambda r: r.created_at, reverse=True)
    return {"lines": _lines(rows)} if rows else None


def _picks(settings: list[dict[str, Any]]) -> list[dict[str, str]]:
    priced = [s for s in settings if s.get("costPerTaskUsd") is not None and s.get("accuracy") is not None]
    rated = [s for s in settings if s.get("accuracy") is not None]
    picks = []
    if priced:
        picks.append({"role": "cheapest", "id": min(priced, key=lambda s: (s["costPerTaskUsd"], -s["accuracy"]))["id"]})
    if rated:
        best = max(rated, key=lambda s: (s["accuracy"], -(s.get("costPerTaskUsd") or float("inf"))))
        picks.append({"role": "mostAccurate", "id": best["id"]})
    return picks


# What a card reads of each document: a release with per-task results can be large, and the list never loads it.
_CARD_KEYS = ("repository", "publisher", "tasks", "settings", "frontier")


def cards(*, limit: int = 500) -> dict[str, Any]:
    """`{cards}`: one per released repository, from its newest line (the default one). One query, which reads only
    the document keys a card shows."""
    by_repo: dict[str, list[dict[str, Any]]] = {}
    keys = {f"doc_{k}": KeyTransform(k, "document") for k in _CARD_KEYS}
    for row in _current().values("pk", "created_at", "full_name", **keys):
        r = {**row, **{k: row[f"doc_{k}"] for k in _CARD_KEYS}}
        by_repo.setdefault(r["full_name"].lower(), []).append(r)
    out = []
    for lines in by_repo.values():
        lines.sort(key=lambda r: r["created_at"], reverse=True)
        head = lines[0]
        out.append(
            {
                "repository": head["repository"],
                "publisher": head["publisher"],
                "tasks": head["tasks"],
                "settings": len(head["settings"]),
                "picks": _picks(head["settings"]),
                "frontier": head["frontier"],
                "endorsed": False,
                "defaultLine": head["pk"],
                "lines": len(lines),
                "releasedAt": head["created_at"].isoformat(),
            }
        )
    out.sort(key=lambda c: c["releasedAt"], reverse=True)
    return {"cards": out[:limit]}
