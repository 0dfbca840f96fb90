from django.urls import URLPattern, URLResolver, path

from apps.authoring import api, views

app_name = "authoring"

# The authoring sandbox's verify and submit (authenticated by the round's gateway key), at the site root, and the
# authoring pages (workspace pages live under w/<slug:slug>/).
urlpatterns: list[URLPattern | URLResolver] = [
    path("authoring/sandbox/verify", api.sandbox_verify, name="sandbox-verify"),
    path("authoring/sandbox/submit", api.sandbox_submit, name="sandbox-submit"),
    path("w/<slug:slug>/repositories/<int:repository_id>/start-batch/", views.batch_start, name="batch_start"),
    path(
        "w/<slug:slug>/repositories/<int:repository_id>/vibe-evals/",
        views.repository_vibe_evals,
        name="repository_vibe_evals",
    ),
    path("w/<slug:slug>/evals/", views.eval_list, name="evals"),
    path("w/<slug:slug>/evals/<int:eval_id>/", views.eval_detail, name="eval"),
]

# JSON API, mounted under /api/w/<slug>/ with the namespace "authoring-api".
api_urlpatterns: list[URLPattern | URLResolver] = [
    path("batches/<int:batch_id>/authoring-settings", api.BatchSettingsApi.as_view(), name="batch-settings"),
    path("evals", api.EvalListApi.as_view(), name="evals"),
    path("evals/<int:eval_id>/vibe-evals", api.EvalVibeEvalCreateApi.as_view(), name="eval-vibe-evals"),
    path("evals/<int:eval_id>/release", api.EvalReleaseApi.as_view(), name="eval-release"),
    path(
        "repositories/<int:repository_id>/vibe-evals",
        api.RepositoryVibeEvalCreateApi.as_view(),
        name="repository-vibe-evals",
    ),
    path("vibe-evals/<int:vibe_id>", api.VibeEvalDetailApi.as_view(), name="vibe-eval"),
    path("tasks/<int:task_id>/rounds", api.TaskRoundsApi.as_view(), name="task-rounds"),
]
