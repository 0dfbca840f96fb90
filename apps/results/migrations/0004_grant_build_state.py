"""Grants are built by a job now: a build state, the failure reason and the build claim. Grants made before were built
inside the request, so they are ready (since they were created)."""

from django.conf import settings
from django.db import migrations, models


def existing_grants_are_ready(apps, schema_editor):
    RegistryGrant = apps.get_model("results", "RegistryGrant")
    RegistryGrant.objects.update(state="ready", ready_at=models.F("created_at"))


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_credential'),
        ('results', '0003_trial_change_triggers'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='registrygrant',
            name='build_attempts',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='registrygrant',
            name='build_started_at',
            field=models.DateTimeField(blank=True, help_text='When the current build claim was taken (a claim this old is lost).', null=True),
        ),
        migrations.AddField(
            model_name='registrygrant',
            name='failure_reason',
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name='registrygrant',
            name='ready_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='registrygrant',
            name='state',
            field=models.CharField(choices=[('building', 'Building'), ('ready', 'Ready'), ('failed', 'Failed')], default='building', max_length=16),
        ),
        migrations.RunPython(existing_grants_are_ready, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='registrygrant',
            name='images',
            field=models.JSONField(default=list, help_text='[{taskId, repository, versionId, contentHash, digest}]: the images it may pull ("" digest until ready).'),
        ),
        migrations.AddConstraint(
            model_name='registrygrant',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['building', 'ready', 'failed'])), name='results_grant_state_valid'),
        ),
        migrations.AddConstraint(
            model_name='registrygrant',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('state', 'ready'), _negated=True), ('ready_at__isnull', False), _connector='OR'), name='results_grant_ready_has_ready_at'),
        ),
        migrations.AddConstraint(
            model_name='registrygrant',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('state', 'failed'), _negated=True), models.Q(('failure_reason', ''), _negated=True), _connector='OR'), name='results_grant_failed_has_reason'),
        ),
    ]
