"""Schedule the trial reaper: every minute it recovers trials whose worker died and re-dispatches stale jobs."""

from django.db import migrations


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name="runs-reap",
        defaults={"func": "apps.runs.jobs.trials_reap", "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def remove(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("django_q", "Schedule").objects.filter(name="runs-reap").delete()


class Migration(migrations.Migration):
    dependencies = [("runs", "0001_initial"), ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more")]
    operations = [migrations.RunPython(create, remove)]
