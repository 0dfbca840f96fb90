"""django-q2 entry points: load rows, call a service. Enqueued only from transaction.on_commit."""

from __future__ import annotations

from django_q.tasks import async_task


def enqueue_environment_build(build_id: int) -> None:
    async_task(
        "apps.ablations.jobs.environment_build",
        build_id,
        task_name=f"environment-build-{build_id}-{_nonce()}",
        group="ablations",
    )


def _nonce() -> str:
    import uuid

    return uuid.uuid4().hex[:8]


def environment_build(build_id: int) -> None:
    from apps.ablations import services
    from apps.ablations.models import EnvironmentBuild

    build = EnvironmentBuild.objects.filter(pk=build_id).first()
    if build is not None:
        services.environment_build_run(build=build)
