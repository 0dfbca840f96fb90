"""Routes: HTML pages at the root, the API under /api/w/<slug>/ (the spec's {scope}), the schema and its docs."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView

from apps.ablations import urls as ablations_urls
from apps.accounts import urls as accounts_urls
from apps.authoring import urls as authoring_urls
from apps.gateway import urls as gateway_urls
from apps.harnesses import urls as harnesses_urls
from apps.repositories import urls as repositories_urls
from apps.results import urls as results_urls
from apps.runs import urls as runs_urls
from apps.tasks import urls as tasks_urls

_APPS = [
    ("accounts", accounts_urls),
    ("repositories", repositories_urls),
    ("tasks", tasks_urls),
    ("harnesses", harnesses_urls),
    ("ablations", ablations_urls),
    ("runs", runs_urls),
    ("results", results_urls),
    ("gateway", gateway_urls),
    ("authoring", authoring_urls),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/public/", include((results_urls.public_urlpatterns, "results-public"))),
    path("v2/", include((results_urls.registry_urlpatterns, "registry"))),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularRedocView.as_view(url_name="schema"), name="api-docs"),
]
for label, module in _APPS:
    urlpatterns.append(path("api/w/<slug:slug>/", include((module.api_urlpatterns, f"{label}-api"))))
for label, module in _APPS:
    urlpatterns.append(path("", include((module.urlpatterns, label))))
