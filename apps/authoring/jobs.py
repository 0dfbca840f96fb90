"""django-q2 entry points: load rows, call a service. Enqueued only from transaction.on_commit."""

from __future__ import annotations

from django_q.tasks import async_task


def enqueue_round(round_id: int) -> None:
    async_task("apps.authoring.jobs.authoring_round", round_id, task_name=f"authoring-{round_id}", group="authoring")


def enqueue_review(round_id: int) -> None:
    async_task("apps.authoring.jobs.review_round", round_id, task_name=f"review-{round_id}", group="authoring")


def authoring_round(round_id: int) -> None:
    from apps.authoring import services

    services.round_run(round_id=round_id)


def review_round(round_id: int) -> None:
    from apps.authoring import services

    services.review_run(round_id=round_id)


def candidates_start(batch_id: int | None = None) -> None:
    """Scheduled every minute: start authoring the proposed candidates of finished discovery runs."""
    from apps.authoring import services

    services.candidates_start(batch_id=batch_id)
