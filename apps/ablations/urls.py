from django.urls import URLPattern, URLResolver, path

from apps.ablations import api, views

app_name = "ablations"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("w/<slug:slug>/environments/", views.environment_list, name="list"),
    path(
        "w/<slug:slug>/environments/<int:environment_id>/build-missing/",
        views.environment_build_missing,
        name="build_missing",
    ),
    path("w/<slug:slug>/environments/<int:environment_id>/delete/", views.environment_delete, name="delete"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "ablations-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path(
        "repositories/<int:repository_id>/environments",
        api.RepositoryEnvironmentsApi.as_view(),
        name="repository_environments",
    ),
    path("environments", api.EnvironmentListApi.as_view(), name="list"),
    path("environments/<int:environment_id>", api.EnvironmentDetailApi.as_view(), name="detail"),
    path(
        "environments/<int:environment_id>/build-missing",
        api.EnvironmentBuildMissingApi.as_view(),
        name="build_missing",
    ),
    path("environments/<int:environment_id>/tasks", api.EnvironmentTasksApi.as_view(), name="tasks"),
]
