from django.urls import URLPattern, URLResolver

app_name = "results"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = []

# JSON API, mounted under /api/w/<slug>/ with the namespace "results-api".
api_urlpatterns: list[URLPattern | URLResolver] = []
