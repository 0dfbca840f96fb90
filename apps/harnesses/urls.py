from django.urls import URLPattern, URLResolver, path

from apps.harnesses import api, views

app_name = "harnesses"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("w/<slug:slug>/harnesses/", views.harness_list, name="list"),
    path("w/<slug:slug>/harnesses/<int:harness_id>/delete/", views.harness_delete, name="delete"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "harnesses-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("harnesses", api.HarnessListCreateApi.as_view(), name="list"),
    path("harnesses/<int:harness_id>", api.HarnessDetailApi.as_view(), name="detail"),
]
