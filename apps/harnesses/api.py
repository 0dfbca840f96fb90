"""Saved harnesses over the API: list, create, get, update, delete (services do the work)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.auth import workspace_of
from apps.harnesses import queries, serializers, services
from apps.harnesses.models import Harness


def _harness(request: Request, harness_id: int) -> Harness:
    harness = queries.harness_get(workspace=workspace_of(request), harness_id=harness_id)
    if harness is None:
        raise Http404("no such harness in this workspace")
    return harness


def _out(harness: Harness) -> dict[str, object]:
    same = queries.same_configuration([harness])
    return dict(serializers.HarnessOutput(harness, context={"same": same}).data)


class HarnessListCreateApi(APIView):
    @extend_schema(responses=serializers.HarnessOutput(many=True), operation_id="harnesses_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = list(queries.harnesses_of(workspace_of(request)))
        same = queries.same_configuration(rows)
        return Response(serializers.HarnessOutput(rows, many=True, context={"same": same}).data)

    @extend_schema(
        request=serializers.HarnessCreateInput,
        responses={201: serializers.HarnessOutput},
        operation_id="harnesses_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        s = serializers.HarnessCreateInput(data=request.data)
        s.is_valid(raise_exception=True)
        harness = services.harness_create(workspace=workspace_of(request), created_by=request.user, **s.to_service())
        return Response(_out(harness), status=201)


class HarnessDetailApi(APIView):
    @extend_schema(responses=serializers.HarnessOutput, operation_id="harnesses_get")
    def get(self, request: Request, slug: str, harness_id: int) -> Response:
        return Response(_out(_harness(request, harness_id)))

    @extend_schema(
        request=serializers.HarnessUpdateInput, responses=serializers.HarnessOutput, operation_id="harnesses_update"
    )
    def patch(self, request: Request, slug: str, harness_id: int) -> Response:
        harness = _harness(request, harness_id)
        s = serializers.HarnessUpdateInput(data=request.data)
        s.is_valid(raise_exception=True)
        harness = services.harness_update(harness=harness, **s.to_service())
        return Response(_out(harness))

    @extend_schema(responses={204: None}, operation_id="harnesses_delete")
    def delete(self, request: Request, slug: str, harness_id: int) -> Response:
        services.harness_delete(harness=_harness(request, harness_id))
        return Response(status=204)
