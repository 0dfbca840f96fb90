from django.apps import AppConfig


class HarnessesConfig(AppConfig):
    name = "apps.harnesses"
    label = "harnesses"
    default_auto_field = "django.db.models.BigAutoField"
