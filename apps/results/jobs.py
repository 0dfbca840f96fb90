"""django-q2 entry points: load rows, call a service. Enqueued only from transaction.on_commit."""

from __future__ import annotations

from django_q.tasks import async_task


def enqueue_grant_build(grant_id: int) -> None:
    async_task("apps.results.jobs.grant_build", grant_id, task_name=f"grant-build-{grant_id}", group="results")


def grant_build(grant_id: int) -> None:
    from apps.results import services
    from apps.results.models import RegistryGrant

    grant = RegistryGrant.objects.filter(pk=grant_id).first()
    if grant is not None:
        services.grant_build(grant=grant)
