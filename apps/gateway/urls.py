from django.urls import URLPattern, URLResolver, path

from apps.gateway import api

app_name = "gateway"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/). The serving routes
# (/gateway/…) are not Django URLs: selfbench/asgi.py hands them to apps.gateway.server before Django.
urlpatterns: list[URLPattern | URLResolver] = []

# JSON API, mounted under /api/w/<slug>/ with the namespace "gateway-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("models", api.ModelListApi.as_view(), name="models"),
]
