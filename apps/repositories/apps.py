from django.apps import AppConfig


class RepositoriesConfig(AppConfig):
    name = "apps.repositories"
    label = "repositories"
    default_auto_field = "django.db.models.BigAutoField"
