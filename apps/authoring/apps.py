from django.apps import AppConfig


class AuthoringConfig(AppConfig):
    name = "apps.authoring"
    label = "authoring"
    default_auto_field = "django.db.models.BigAutoField"
