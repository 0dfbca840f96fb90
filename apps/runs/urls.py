from django.urls import URLPattern, URLResolver, path

from apps.runs import api, views

app_name = "runs"

# HTML pages, mounted at the site root (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("w/<slug:slug>/runs/", views.comparison_list, name="list"),
    path("w/<slug:slug>/runs/new/", views.run_page, name="start"),
    path("w/<slug:slug>/runs/<uuid:comparison_id>/", views.comparison_detail, name="comparison"),
    path("w/<slug:slug>/runs/<uuid:comparison_id>/progress/", views.comparison_progress, name="comparison_progress"),
    path("w/<slug:slug>/runs/<uuid:comparison_id>/cancel/", views.comparison_cancel, name="comparison_cancel"),
    path("w/<slug:slug>/trials/<uuid:trial_id>/", views.trial_detail, name="trial"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "runs-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("evaluations/catalog", api.CatalogApi.as_view(), name="catalog"),
    path("evaluations/options", api.OptionsApi.as_view(), name="options"),
    path("evaluations/comparisons", api.ComparisonListStartApi.as_view(), name="comparisons"),
    path("evaluations/comparisons/<str:comparison_id>", api.ComparisonDetailApi.as_view(), name="comparison"),
    path(
        "evaluations/comparisons/<str:comparison_id>/resume",
        api.ComparisonResumeApi.as_view(),
        name="comparison_resume",
    ),
    path(
        "evaluations/comparisons/<str:comparison_id>/cancel",
        api.ComparisonCancelApi.as_view(),
        name="comparison_cancel",
    ),
    path("evaluations", api.EvaluationListApi.as_view(), name="evaluations"),
    path("evaluations/<int:evaluation_id>", api.EvaluationDetailApi.as_view(), name="evaluation"),
    path("evaluations/<int:evaluation_id>/artifacts", api.EvaluationArtifactApi.as_view(), name="artifacts"),
    path("evaluations/<int:evaluation_id>/cancel", api.EvaluationCancelApi.as_view(), name="evaluation_cancel"),
    path("evaluations/<int:evaluation_id>/delete", api.EvaluationDeleteApi.as_view(), name="evaluation_delete"),
]
