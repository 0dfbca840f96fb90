"""Schedule the janitor that recovers gates and authoring left behind by a killed worker (every 10 minutes)."""

from django.db import migrations

NAME = "tasks-recover-stale"


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=NAME,
        defaults={"func": "apps.tasks.jobs.tasks_recover_stale", "schedule_type": "I", "minutes": 10, "repeats": -1},
    )


def remove(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create, remove)]
