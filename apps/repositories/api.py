"""Repositories, batches and candidates over the API (one view per resource/action, services do the work)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.auth import workspace_of
from apps.repositories import queries, serializers, services
from apps.repositories.models import Batch, Repository


def _repository(request: Request, repository_id: int) -> Repository:
    return get_object_or_404(queries.repositories_of(workspace_of(request)), pk=repository_id)


def _batch(request: Request, batch_id: int) -> Batch:
    return get_object_or_404(queries.batches_of(workspace_of(request)), pk=batch_id)


def _batch_data(batch: Batch) -> dict[str, object]:
    return dict(serializers.BatchOutput(queries.with_stage_counts([batch])[0]).data)


class RepositoryListCreateApi(APIView):
    @extend_schema(responses=serializers.RepositoryOutput(many=True), operation_id="repositories_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = queries.repositories_of(workspace_of(request))
        return Response(serializers.RepositoryOutput(rows, many=True).data)

    @extend_schema(
        request=serializers.RepositoryCreateInput,
        responses={201: serializers.RepositoryOutput},
        operation_id="repositories_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        s = serializers.RepositoryCreateInput(data=request.data)
        s.is_valid(raise_exception=True)
        repository = services.repository_create(workspace=workspace_of(request), **s.validated_data)
        return Response(serializers.RepositoryOutput(repository).data, status=201)


class RepositoryDetailApi(APIView):
    @extend_schema(responses=serializers.RepositoryOutput, operation_id="repositories_get")
    def get(self, request: Request, slug: str, repository_id: int) -> Response:
        return Response(serializers.RepositoryOutput(_repository(request, repository_id)).data)

    @extend_schema(
        request=serializers.RepositoryUpdateInput,
        responses=serializers.RepositoryOutput,
        operation_id="repositories_update",
    )
    def patch(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = _repository(request, repository_id)
        s = serializers.RepositoryUpdateInput(data=request.data)
        s.is_valid(raise_exception=True)
        repository = services.repository_update(repository=repository, **s.validated_data)
        return Response(serializers.RepositoryOutput(repository).data)

    @extend_schema(responses={204: None}, operation_id="repositories_delete")
    def delete(self, request: Request, slug: str, repository_id: int) -> Response:
        services.repository_delete(repository=_repository(request, repository_id))
        return Response(status=204)


class BatchListCreateApi(APIView):
    @extend_schema(responses=serializers.BatchOutput(many=True), operation_id="batches_list")
    def get(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = _repository(request, repository_id)
        rows = queries.with_stage_counts(repository.batches.all()[:100])
        return Response(serializers.BatchOutput(rows, many=True).data)

    @extend_schema(
        request=serializers.BatchCreateInput, responses={202: serializers.BatchOutput}, operation_id="batches_create"
    )
    def post(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = _repository(request, repository_id)
        s = serializers.BatchCreateInput(data=request.data)
        s.is_valid(raise_exception=True)
        batch = services.batch_create(
            repository=repository, created_by=request.user, **s.validated_data["candidateCounts"]
        )
        return Response(_batch_data(batch), status=202)


class AddPrsApi(APIView):
    @extend_schema(request=serializers.AddPrsInput, responses={202: serializers.BatchOutput}, operation_id="prs_add")
    def post(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = _repository(request, repository_id)
        s = serializers.AddPrsInput(data=request.data)
        s.is_valid(raise_exception=True)
        batch = services.batch_add_prs(repository=repository, numbers=s.validated_data["prs"], created_by=request.user)
        return Response(_batch_data(batch), status=202)


class BatchDetailApi(APIView):
    @extend_schema(responses=serializers.BatchOutput, operation_id="batches_get")
    def get(self, request: Request, slug: str, batch_id: int) -> Response:
        return Response(_batch_data(_batch(request, batch_id)))


class BatchCancelApi(APIView):
    @extend_schema(request=None, responses=serializers.BatchOutput, operation_id="batches_cancel")
    def post(self, request: Request, slug: str, batch_id: int) -> Response:
        batch = services.batch_cancel(batch=_batch(request, batch_id))
        return Response(_batch_data(batch))


class BatchCandidatesApi(APIView):
    @extend_schema(responses=serializers.CandidateOutput(many=True), operation_id="batches_candidates")
    def get(self, request: Request, slug: str, batch_id: int) -> Response:
        rows = queries.candidates_of(_batch(request, batch_id))
        return Response(serializers.CandidateOutput(rows, many=True).data)
