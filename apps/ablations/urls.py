from django.urls import URLPattern, URLResolver, path

from apps.ablations import api

app_name = "ablations"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = []

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
