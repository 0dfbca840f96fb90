from django.urls import URLPattern, URLResolver, path

from apps.tasks import api, views

app_name = "tasks"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("w/<slug:slug>/tasks/", views.task_list, name="list"),
    path("w/<slug:slug>/tasks/<int:task_id>/", views.task_detail, name="detail"),
    path("w/<slug:slug>/tasks/<int:task_id>/approve/", views.task_approve, name="approve"),
    path("w/<slug:slug>/tasks/<int:task_id>/reject/", views.task_reject, name="reject"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "tasks-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("tasks", api.TaskListApi.as_view(), name="list"),
    path("tasks/export", api.TaskExportApprovedApi.as_view(), name="export_approved"),
    path("tasks/<int:task_id>", api.TaskDetailApi.as_view(), name="detail"),
    path("tasks/<int:task_id>/approve", api.TaskApproveApi.as_view(), name="approve"),
    path("tasks/<int:task_id>/reject", api.TaskRejectApi.as_view(), name="reject"),
    path("tasks/<int:task_id>/cancel", api.TaskCancelApi.as_view(), name="cancel"),
    path("tasks/<int:task_id>/export", api.TaskExportApi.as_view(), name="export"),
]
