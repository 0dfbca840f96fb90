"""The Evaluate API (seeds/api-evaluate.md): catalog, options, comparisons, evaluations, artifacts, cancel, delete."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.auth import workspace_of
from apps.gateway.catalog import catalog_models
from apps.runs import network, queries, sandboxes, serializers, services
from apps.runs.models import Comparison, Evaluation
from selfbench import harbor_adapter


def _comparison(request: Request, comparison_id: str) -> Comparison:
    try:
        return get_object_or_404(Comparison, workspace=workspace_of(request), client_id=comparison_id)
    except Exception as exc:  # a malformed uuid is a missing comparison
        raise Http404("no such comparison") from exc


def _comparison_body(comparison: Comparison) -> dict[str, Any]:
    data = dict(serializers.ComparisonOutput(comparison).data)
    data["progress"] = queries.comparison_progress(comparison)
    return data


class CatalogApi(APIView):
    @extend_schema(responses=dict, operation_id="evaluations_catalog")
    def get(self, request: Request, slug: str) -> Response:
        models = [
            {
                "id": m.id,
                "name": m.name,
                "provider": m.provider,
                "harnesses": list(m.harnesses),
                "thinkingLevels": list(m.thinking_levels),
                "defaultThinking": m.default_thinking,
                "wireFormats": list(m.wire_formats),
                "priced": m.price is not None,
            }
            for m in catalog_models()
        ]
        boxes = [
            {
                "id": s.id,
                "name": s.name,
                "available": s.available,
                "credentialKind": s.credential_kind,
                "networkEnforced": network.enforced_for(sandbox_id=s.id),
                "network": s.network,
            }
            for s in sandboxes.SANDBOXES
        ]
        return Response({"models": models, "sandboxes": boxes, "harnessOptions": harbor_adapter.agent_option_schemas()})


class OptionsApi(APIView):
    @extend_schema(responses=dict, operation_id="evaluations_options")
    def get(self, request: Request, slug: str) -> Response:
        tasks = queries.runnable_tasks(workspace=workspace_of(request))
        return Response(
            {
                "tasks": [
                    {
                        "runId": t.batch_id,
                        "taskId": t.pk,
                        "title": t.title,
                        "tier": t.tier,
                        "repository": t.repository.full_name if t.repository else t.source_repository,
                    }
                    for t in tasks
                ],
                # No task here is judge-scored, so there are no judge variables to fill in.
                "judgeVariables": [],
            }
        )


class ComparisonListStartApi(APIView):
    @extend_schema(responses=serializers.ComparisonOutput(many=True), operation_id="comparisons_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = queries.comparisons(workspace=workspace_of(request))[:200]
        return Response(serializers.ComparisonOutput(rows, many=True).data)

    @extend_schema(
        request=serializers.ComparisonStartInput,
        responses={202: serializers.ComparisonOutput},
        operation_id="comparisons_start",
    )
    def post(self, request: Request, slug: str) -> Response:
        s = serializers.ComparisonStartInput(data=request.data)
        s.is_valid(raise_exception=True)
        comparison = services.comparison_start(
            workspace=workspace_of(request), body=s.validated_data, created_by=request.user
        )
        return Response(_comparison_body(comparison), status=202)


class ComparisonDetailApi(APIView):
    @extend_schema(responses=serializers.ComparisonOutput, operation_id="comparisons_get")
    def get(self, request: Request, slug: str, comparison_id: str) -> Response:
        return Response(_comparison_body(_comparison(request, comparison_id)))


class ComparisonResumeApi(APIView):
    @extend_schema(request=None, responses={202: serializers.ComparisonOutput}, operation_id="comparisons_resume")
    def post(self, request: Request, slug: str, comparison_id: str) -> Response:
        comparison = services.comparison_resume(comparison=_comparison(request, comparison_id))
        return Response(_comparison_body(comparison), status=202)


class ComparisonCancelApi(APIView):
    @extend_schema(request=None, responses=serializers.ComparisonOutput, operation_id="comparisons_cancel")
    def post(self, request: Request, slug: str, comparison_id: str) -> Response:
        comparison = services.comparison_cancel(comparison=_comparison(request, comparison_id))
        return Response(_comparison_body(comparison))


class EvaluationListApi(APIView):
    @extend_schema(responses=serializers.EvaluationOutput(many=True), operation_id="evaluations_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = list(queries.evaluations(workspace=workspace_of(request))[:200])
        counts = queries.evaluation_counts([e.pk for e in rows])
        return Response(serializers.EvaluationOutput(rows, many=True, context={"counts": counts}).data)


def _evaluation(request: Request, evaluation_id: int) -> Evaluation:
    return get_object_or_404(Evaluation, workspace=workspace_of(request), pk=evaluation_id)


class EvaluationDetailApi(APIView):
    @extend_schema(responses=serializers.EvaluationDetailOutput, operation_id="evaluations_get")
    def get(self, request: Request, slug: str, evaluation_id: int) -> Response:
        evaluation = queries.evaluation_with_trials(workspace=workspace_of(request), evaluation_id=evaluation_id)
        if evaluation is None:
            raise Http404("no such evaluation")
        counts = queries.evaluation_counts([evaluation.pk])
        return Response(serializers.EvaluationDetailOutput(evaluation, context={"counts": counts}).data)


class EvaluationArtifactApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("name", str, required=True, description="`<trial id>/<path>`")],
        responses={(200, "text/plain"): str},
        operation_id="evaluations_artifact",
    )
    def get(self, request: Request, slug: str, evaluation_id: int) -> HttpResponse:
        evaluation = _evaluation(request, evaluation_id)
        artifact = queries.artifact(evaluation=evaluation, name=request.query_params.get("name", ""))
        if artifact is None:
            raise Http404("no such artifact")
        response = HttpResponse(artifact.content, content_type="text/plain; charset=utf-8")
        response["X-Artifact-Size"] = str(artifact.size)
        response["X-Artifact-Truncated"] = "true" if artifact.truncated else "false"
        return response


class EvaluationCancelApi(APIView):
    @extend_schema(request=None, responses=serializers.EvaluationOutput, operation_id="evaluations_cancel")
    def post(self, request: Request, slug: str, evaluation_id: int) -> Response:
        evaluation = services.evaluation_cancel(evaluation=_evaluation(request, evaluation_id))
        counts = queries.evaluation_counts([evaluation.pk])
        return Response(serializers.EvaluationOutput(evaluation, context={"counts": counts}).data)


class EvaluationDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None}, operation_id="evaluations_delete")
    def post(self, request: Request, slug: str, evaluation_id: int) -> Response:
        services.evaluation_delete(evaluation=_evaluation(request, evaluation_id))
        return Response(status=204)
