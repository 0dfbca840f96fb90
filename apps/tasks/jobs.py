"""django-q2 entry points: load rows, call a service. Enqueued only from transaction.on_commit."""

from __future__ import annotations

from django_q.tasks import async_task


def enqueue_task_author(task_id: int) -> None:
    async_task("apps.tasks.jobs.task_author", task_id, task_name=f"task-{task_id}-author", group="tasks")


def enqueue_task_gate(task_id: int, gate: str) -> None:
    async_task("apps.tasks.jobs.task_gate", task_id, gate, task_name=f"task-{task_id}-{gate}", group="tasks")


def task_author(task_id: int) -> None:
    from apps.tasks import services
    from apps.tasks.models import Task

    task = Task.objects.filter(pk=task_id).first()
    if task is not None:
        services.task_author(task=task)


def task_gate(task_id: int, gate: str) -> None:
    from apps.tasks import services
    from apps.tasks.models import Task

    task = Task.objects.filter(pk=task_id).first()
    if task is not None:
        services.task_run_gate(task=task, gate=gate)


def tasks_recover_stale() -> None:
    from apps.tasks import services

    services.task_recover_stale()
