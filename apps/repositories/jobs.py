"""django-q2 entry points for repositories: ids in, one service call, no logic of their own."""

from __future__ import annotations

from datetime import datetime

from django_q.models import Schedule
from django_q.tasks import async_task, schedule


def enqueue_batch_run(batch_id: int) -> None:
    """Queue a batch's listing and discovery. Call only from transaction.on_commit."""
    async_task("apps.repositories.jobs.batch_run", batch_id, task_name=f"batch-{batch_id}", group="repositories")


def enqueue_batch_resume(batch_id: int, at: datetime) -> None:
    """Resume a batch parked on GitHub's rate limit once the limit resets."""
    schedule(
        "apps.repositories.jobs.batch_run",
        batch_id,
        name=f"batch-{batch_id}-resume-{int(at.timestamp())}",
        schedule_type=Schedule.ONCE,
        next_run=at,
        repeats=1,
    )


def batch_run(batch_id: int) -> None:
    from apps.repositories import discovery

    discovery.batch_run(batch_id=batch_id)
