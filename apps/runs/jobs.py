"""django-q2 entry points for runs: primitive ids in, one service call, no logic of their own."""

from __future__ import annotations

from typing import Any

from django_q.tasks import async_task


def trial_execute(trial_id: int) -> None:
    from apps.runs import services

    services.trial_execute(trial_id=trial_id)


def trials_dispatch() -> None:
    from apps.runs import services

    services.trials_dispatch()


def trials_reap() -> dict[str, Any]:
    from apps.runs import services

    return services.trials_reap()


def enqueue_trial_execute(trial_id: int) -> None:
    """Call from transaction.on_commit only: the worker must see the committed, dispatched trial."""
    async_task("apps.runs.jobs.trial_execute", trial_id, task_name=f"trial-{trial_id}", group="runs")
