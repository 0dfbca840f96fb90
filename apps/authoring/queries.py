"""Reads shared by the authoring pages: evals with their task counts per state, and vibe evals with their tasks."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Prefetch, QuerySet

from apps.accounts.models import Workspace
from apps.authoring.models import Attachment, Eval, VibeEval
from apps.repositories.models import Repository
from apps.tasks.models import TaskState


def evals_of(workspace: Workspace) -> list[Eval]:
    """The workspace's evals, each with `task_count` and `states` ([(label, n)] in pipeline order); two queries."""
    rows: list[Eval] = list(Eval.objects.filter(workspace=workspace).annotate(task_count=Count("vibe_evals")))
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    grouped = VibeEval.objects.filter(eval__in=rows).values("eval_id", "task__state").annotate(n=Count("pk")).order_by()
    for row in grouped:
        counts[row["eval_id"]][row["task__state"]] = row["n"]
    for found in rows:
        by_state = counts.get(found.pk, {})
        found.states = [(label, by_state[value]) for value, label in TaskState.choices if value in by_state]  # type: ignore[attr-defined]
    return rows


def vibe_evals_in(*, eval: Eval | None = None, repository: Repository | None = None) -> QuerySet[VibeEval]:
    """An eval's or a repository's vibe evals, newest first, with their tasks, settings and attachments (names and
    sizes only: the content stays in the database); three queries however many rows."""
    files = Prefetch("attachments", queryset=Attachment.objects.defer("content").order_by("name"))
    rows = VibeEval.objects.select_related("task", "settings").prefetch_related(files)
    return rows.filter(eval=eval) if eval is not None else rows.filter(repository=repository)
