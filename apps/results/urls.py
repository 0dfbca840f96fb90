from django.urls import URLPattern, URLResolver, path

from apps.results import api, registry_api, views

app_name = "results"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("w/<slug:slug>/results/", views.results_index, name="index"),
    path("w/<slug:slug>/releases/", views.release_list, name="releases"),
    path(
        "w/<slug:slug>/repositories/<int:repository_id>/releases/publish/",
        views.release_publish,
        name="release_publish",
    ),
    path("w/<slug:slug>/releases/<int:release_id>/withdraw/", views.release_withdraw, name="release_withdraw"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "results-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("results", api.ResultsApi.as_view(), name="list"),
    path("results/paired", api.PairedApi.as_view(), name="paired"),
    path("results/reliability", api.ReliabilityApi.as_view(), name="reliability"),
    path("repositories/<int:repository_id>/releases", api.ReleaseListPublishApi.as_view(), name="releases"),
    path("repositories/<int:repository_id>/releases/preview", api.ReleasePreviewApi.as_view(), name="release_preview"),
    path("releases/<int:release_id>/withdraw", api.ReleaseWithdrawApi.as_view(), name="release_withdraw"),
    path("exports", api.ExportCreateApi.as_view(), name="exports"),
    path("exports/<uuid:export_id>", api.ExportDetailApi.as_view(), name="export"),
    path("exports/<uuid:export_id>/download", api.ExportDownloadApi.as_view(), name="export_download"),
    path("registry-grants", api.GrantListCreateApi.as_view(), name="grants"),
    path("registry-grants/<uuid:grant_id>", api.GrantDetailApi.as_view(), name="grant"),
    path("registry-grants/<uuid:grant_id>/cancel", api.GrantCancelApi.as_view(), name="grant_cancel"),
]

# Public results (no login), mounted under /api/public/ with the namespace "results-public".
public_urlpatterns: list[URLPattern | URLResolver] = [
    path("results", api.PublicResultsApi.as_view(), name="list"),
    path("results/<str:owner>/<str:name>", api.PublicRepositoryResultsApi.as_view(), name="repository"),
]

# The read-only OCI registry for granted task images, mounted at /v2/ with the namespace "registry".
registry_urlpatterns: list[URLPattern | URLResolver] = [
    path("", registry_api.base, name="base"),
    path("<path:name>/manifests/<str:reference>", registry_api.manifest, name="manifest"),
    path("<path:name>/blobs/<str:digest>", registry_api.blob, name="blob"),
]
