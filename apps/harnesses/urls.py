from django.urls import URLPattern, URLResolver, path

from apps.harnesses import api

app_name = "harnesses"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = []

# JSON API, mounted under /api/w/<slug>/ with the namespace "harnesses-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("harnesses", api.HarnessListCreateApi.as_view(), name="list"),
    path("harnesses/<int:harness_id>", api.HarnessDetailApi.as_view(), name="detail"),
]
