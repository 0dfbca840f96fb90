from django.apps import AppConfig


class AblationsConfig(AppConfig):
    name = "apps.ablations"
    label = "ablations"
    default_auto_field = "django.db.models.BigAutoField"
