from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "apps.tasks"
    label = "tasks"
    default_auto_field = "django.db.models.BigAutoField"
