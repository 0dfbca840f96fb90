from django.urls import URLPattern, URLResolver, path

from apps.results import views

app_name = "results"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("w/<slug:slug>/results/", views.results_index, name="index"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "results-api".
api_urlpatterns: list[URLPattern | URLResolver] = []
