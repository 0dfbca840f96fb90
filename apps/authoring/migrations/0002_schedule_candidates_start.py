"""Schedule the job that turns proposed candidates into tasks being authored (every minute)."""

from django.db import migrations

NAME = "authoring: start proposed candidates"


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=NAME,
        defaults={"func": "apps.authoring.jobs.candidates_start", "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def remove(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [("authoring", "0001_initial"), ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more")]
    operations = [migrations.RunPython(create, remove)]
