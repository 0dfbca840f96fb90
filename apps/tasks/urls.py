from django.urls import URLPattern, URLResolver, path

from apps.tasks import api

app_name = "tasks"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = []

# JSON API, mounted under /api/w/<slug>/ with the namespace "tasks-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("tasks", api.TaskListApi.as_view(), name="list"),
    path("tasks/export", api.TaskExportApprovedApi.as_view(), name="export_approved"),
    path("tasks/<int:task_id>", api.TaskDetailApi.as_view(), name="detail"),
    path("tasks/<int:task_id>/approve", api.TaskApproveApi.as_view(), name="approve"),
    path("tasks/<int:task_id>/reject", api.TaskRejectApi.as_view(), name="reject"),
    path("tasks/<int:task_id>/export", api.TaskExportApi.as_view(), name="export"),
]
