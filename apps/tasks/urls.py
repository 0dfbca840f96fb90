from django.urls import URLPattern, URLResolver

app_name = "tasks"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = []

# JSON API, mounted under /api/w/<slug>/ with the namespace "tasks-api".
api_urlpatterns: list[URLPattern | URLResolver] = []
