"""Repo ablations ("environments") over the API: CRUD, Build Missing Tasks, build status per task."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.ablations import queries, serializers, services
from apps.ablations.models import Environment
from apps.accounts.auth import workspace_of
from apps.repositories.models import Repository


def _environment(request: Request, environment_id: int) -> Environment:
    environment = queries.environment_get(workspace=workspace_of(request), environment_id=environment_id)
    if environment is None:
        raise Http404("no such environment in this workspace")
    return environment


def _out(environment: Environment) -> dict[str, object]:
    counts = queries.build_counts([environment])
    return dict(serializers.EnvironmentOutput(environment, context={"counts": counts}).data)


def _list(rows: list[Environment]) -> Response:
    counts = queries.build_counts(rows)
    return Response(serializers.EnvironmentOutput(rows, many=True, context={"counts": counts}).data)


class RepositoryEnvironmentsApi(APIView):
    @extend_schema(responses=serializers.EnvironmentOutput(many=True), operation_id="repository_environments_list")
    def get(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = get_object_or_404(Repository, pk=repository_id, workspace=workspace_of(request))
        return _list(list(queries.environments_of(workspace_of(request)).filter(repository=repository)))

    @extend_schema(
        request=serializers.EnvironmentCreateInput,
        responses={201: serializers.EnvironmentOutput},
        operation_id="repository_environments_create",
    )
    def post(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = get_object_or_404(Repository, pk=repository_id, workspace=workspace_of(request))
        s = serializers.EnvironmentCreateInput(data=request.data)
        s.is_valid(raise_exception=True)
        environment = services.environment_create(repository=repository, created_by=request.user, **s.validated_data)
        return Response(_out(environment), status=201)


class EnvironmentListApi(APIView):
    @extend_schema(responses=serializers.EnvironmentOutput(many=True), operation_id="environments_list")
    def get(self, request: Request, slug: str) -> Response:
        return _list(list(queries.environments_of(workspace_of(request))))


class EnvironmentDetailApi(APIView):
    @extend_schema(responses=serializers.EnvironmentOutput, operation_id="environments_get")
    def get(self, request: Request, slug: str, environment_id: int) -> Response:
        return Response(_out(_environment(request, environment_id)))

    @extend_schema(
        request=serializers.EnvironmentUpdateInput,
        responses=serializers.EnvironmentOutput,
        operation_id="environments_update",
    )
    def patch(self, request: Request, slug: str, environment_id: int) -> Response:
        environment = _environment(request, environment_id)
        s = serializers.EnvironmentUpdateInput(data=request.data)
        s.is_valid(raise_exception=True)
        environment = services.environment_update(environment=environment, **s.validated_data)
        return Response(_out(environment))

    @extend_schema(responses={204: None}, operation_id="environments_delete")
    def delete(self, request: Request, slug: str, environment_id: int) -> Response:
        services.environment_delete(environment=_environment(request, environment_id))
        return Response(status=204)


class EnvironmentBuildMissingApi(APIView):
    @extend_schema(
        request=None, responses={202: serializers.BuildMissingOutput}, operation_id="environments_build_missing"
    )
    def post(self, request: Request, slug: str, environment_id: int) -> Response:
        builds = services.environment_build_missing(environment=_environment(request, environment_id))
        return Response({"queued": [b.task_id for b in builds]}, status=202)


class EnvironmentTasksApi(APIView):
    @extend_schema(responses=serializers.TaskBuildOutput(many=True), operation_id="environments_tasks")
    def get(self, request: Request, slug: str, environment_id: int) -> Response:
        rows = queries.build_status(_environment(request, environment_id))
        return Response(serializers.TaskBuildOutput(rows, many=True).data)
