from django.urls import URLPattern, URLResolver, path

from apps.repositories import api, views

app_name = "repositories"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("w/<slug:slug>/repositories/", views.repository_list, name="list"),
    path("w/<slug:slug>/repositories/<int:repository_id>/", views.repository_detail, name="detail"),
    path("w/<slug:slug>/repositories/<int:repository_id>/batches/", views.batch_start, name="batch_start"),
    path("w/<slug:slug>/repositories/<int:repository_id>/prs/", views.prs_add, name="prs_add"),
    path("w/<slug:slug>/batches/", views.batch_list, name="batches"),
    path("w/<slug:slug>/batches/<int:batch_id>/", views.batch_detail, name="batch"),
    path("w/<slug:slug>/batches/<int:batch_id>/progress/", views.batch_progress, name="batch_progress"),
    path("w/<slug:slug>/batches/<int:batch_id>/cancel/", views.batch_cancel, name="batch_cancel"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "repositories-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("repositories", api.RepositoryListCreateApi.as_view(), name="list"),
    path("repositories/<int:repository_id>", api.RepositoryDetailApi.as_view(), name="detail"),
    path("repositories/<int:repository_id>/batches", api.BatchListCreateApi.as_view(), name="batches"),
    path("repositories/<int:repository_id>/prs", api.AddPrsApi.as_view(), name="add_prs"),
    path("batches/<int:batch_id>", api.BatchDetailApi.as_view(), name="batch"),
    path("batches/<int:batch_id>/cancel", api.BatchCancelApi.as_view(), name="batch_cancel"),
    path("batches/<int:batch_id>/candidates", api.BatchCandidatesApi.as_view(), name="batch_candidates"),
]
