"""Results API: results, paired comparison and reliability; releases; task exports; registry grants; public results."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.http import FileResponse, Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.auth import workspace_of
from apps.repositories.models import Repository
from apps.results import public, queries, releases, serializers, services
from apps.results.models import RegistryGrant, Release, TaskExport
from apps.results.throttling import PublicResultsThrottle


def _person(request: Request) -> AbstractBaseUser | None:
    user = request.user
    return user if isinstance(user, AbstractBaseUser) and user.is_authenticated else None


def _repository(request: Request, repository_id: int) -> Repository:
    if repository_id > serializers.ID_MAX:
        raise Http404("no such repository")
    repository = Repository.objects.filter(workspace=workspace_of(request), pk=repository_id).first()
    if repository is None:
        raise Http404("no such repository")
    return repository


def _valid(serializer_class: type[Any], data: Any) -> dict[str, Any]:
    s = serializer_class(data=data)
    s.is_valid(raise_exception=True)
    validated: dict[str, Any] = s.validated_data
    return validated


# --- results --------------------------------------------------------------------------------------------------------


class ResultsApi(APIView):
    @extend_schema(parameters=[serializers.ResultsInput], responses=OpenApiTypes.OBJECT, operation_id="results_list")
    def get(self, request: Request, slug: str) -> Response:
        f = _valid(serializers.ResultsInput, request.query_params)
        repository = _repository(request, f["repository"])
        results = queries.configuration_results(
            counted=queries.repository_tasks(repository),
            filters=queries.Filters(
                configuration=f.get("configuration"),
                model=f.get("model"),
                agent=f.get("agent"),
                harness=f.get("harness"),
                environment=f.get("environment"),
            ),
        )
        return Response(
            {
                "repository": {"id": repository.pk, "name": repository.name},
                "countedTasks": results.counted_tasks,
                "configurations": [serializers.configuration_output(c) for c in results.configurations],
                "frontier": results.frontier,
            }
        )


class PairedApi(APIView):
    @extend_schema(parameters=[serializers.PairedInput], responses=OpenApiTypes.OBJECT, operation_id="results_paired")
    def get(self, request: Request, slug: str) -> Response:
        f = _valid(serializers.PairedInput, request.query_params)
        repository = _repository(request, f["repository"])
        r = queries.paired(counted=queries.repository_tasks(repository), a=f["a"], b=f["b"])
        return Response(
            {
                "a": f["a"],
                "b": f["b"],
                "tasks": r.tasks,
                "wins": r.wins,
                "losses": r.losses,
                "tiesPassed": r.ties_passed,
                "tiesFailed": r.ties_failed,
                "pValue": r.p_value,
            }
        )


class ReliabilityApi(APIView):
    @extend_schema(
        parameters=[serializers.ReliabilityInput], responses=OpenApiTypes.OBJECT, operation_id="results_reliability"
    )
    def get(self, request: Request, slug: str) -> Response:
        f = _valid(serializers.ReliabilityInput, request.query_params)
        repository = _repository(request, f["repository"])
        rel = queries.reliability(counted=queries.repository_tasks(repository), configuration=f["configuration"])
        tasks = [t for t in rel.tasks if t.flaky or not f["flakyOnly"]]
        return Response(
            {
                "configuration": rel.configuration,
                "tasks": len(rel.tasks),
                "repeatedTasks": rel.repeated_tasks,
                "flakyTasks": rel.flaky_tasks,
                "meanPassRate": rel.mean_pass_rate,
                "perTask": [
                    {
                        "taskId": t.task_id,
                        "attempts": t.attempts,
                        "passed": t.passed,
                        "passRate": t.pass_rate,
                        "flaky": t.flaky,
                    }
                    for t in tasks
                ],
            }
        )


# --- releases -------------------------------------------------------------------------------------------------------


def preview_output(p: releases.Preview) -> dict[str, Any]:
    counted = len(p.task_ids)
    return {
        "repository": {"id": p.repository.pk, "fullName": p.repository.full_name},
        "tasks": p.task_ids,
        "settings": [
            {
                **serializers.configuration_output(c.result),
                "coverage": {"tasks": len(c.covered), "of": counted},
                "preselected": c.preselected,
            }
            for c in p.candidates
        ],
        "unrunTasks": p.unrun_task_ids,
        "removedTasks": p.removed_task_ids,
        "fingerprint": p.fingerprint,
        "head": p.head,
        "current": None if p.current is None else serializers.ReleaseOutput(p.current).data,
    }


class ReleasePreviewApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="releases_preview")
    def get(self, request: Request, slug: str, repository_id: int) -> Response:
        return Response(preview_output(releases.preview(_repository(request, repository_id))))


class ReleaseListPublishApi(APIView):
    @extend_schema(responses=serializers.ReleaseOutput(many=True), operation_id="releases_list")
    def get(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = _repository(request, repository_id)
        rows = Release.objects.filter(repository=repository).select_related("withdrawal")
        return Response(serializers.ReleaseOutput(rows, many=True).data)

    @extend_schema(
        request=serializers.PublishInput,
        responses={201: serializers.ReleaseOutput, 200: serializers.ReleaseOutput, 409: OpenApiTypes.OBJECT},
        operation_id="releases_publish",
    )
    def post(self, request: Request, slug: str, repository_id: int) -> Response:
        repository = _repository(request, repository_id)
        f = _valid(serializers.PublishInput, request.data)
        try:
            release, created = services.release_publish(
                repository=repository,
                settings_chosen=f["settings"],
                head=f["head"],
                fingerprint=f["fingerprint"],
                publish_tasks=f["publishTasks"],
                publish_results_by_task=f["publishResultsByTask"],
                by=_person(request),
            )
        except services.ReleaseStale as exc:
            body = {"error": exc.code, "detail": exc.message, "preview": preview_output(exc.preview)}
            return Response(body, status=409)
        data = dict(serializers.ReleaseOutput(release).data)
        data["unchanged"] = not created
        return Response(data, status=201 if created else 200)


class ReleaseWithdrawApi(APIView):
    @extend_schema(
        request=serializers.WithdrawInput, responses=serializers.ReleaseOutput, operation_id="releases_withdraw"
    )
    def post(self, request: Request, slug: str, release_id: int) -> Response:
        release_id = min(release_id, serializers.ID_MAX)
        release = Release.objects.filter(workspace=workspace_of(request), pk=release_id).first()
        if release is None:
            raise Http404("no such release")
        f = _valid(serializers.WithdrawInput, request.data)
        services.release_withdraw(release=release, by=_person(request), reason=f["reason"])
        release = Release.objects.select_related("withdrawal").get(pk=release.pk)
        return Response(serializers.ReleaseOutput(release).data)


# --- exports --------------------------------------------------------------------------------------------------------


def _export(request: Request, export_id: str) -> TaskExport:
    row = TaskExport.objects.filter(workspace=workspace_of(request), uuid=export_id).first()
    if row is None:
        raise Http404("no such export")
    return row


class ExportCreateApi(APIView):
    @extend_schema(
        request=serializers.ExportInput, responses={201: serializers.ExportOutput}, operation_id="exports_create"
    )
    def post(self, request: Request, slug: str) -> Response:
        f = _valid(serializers.ExportInput, request.data)
        repository = None if f.get("repository") is None else _repository(request, f["repository"])
        row = services.export_create(
            workspace=workspace_of(request), task_ids=f["tasks"], repository=repository, by=_person(request)
        )
        return Response(serializers.ExportOutput(row).data, status=201)


class ExportDetailApi(APIView):
    @extend_schema(responses=serializers.ExportOutput, operation_id="exports_get")
    def get(self, request: Request, slug: str, export_id: str) -> Response:
        return Response(serializers.ExportOutput(_export(request, export_id)).data)


class ExportDownloadApi(APIView):
    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY}, operation_id="exports_download")
    def get(self, request: Request, slug: str, export_id: str) -> FileResponse:
        row = _export(request, export_id)
        response = FileResponse(
            open(row.path, "rb"),
            as_attachment=True,
            filename=f"selfbench-export-{row.uuid}.tar.gz",
            content_type="application/gzip",
        )
        response["X-Content-SHA256"] = row.sha256
        response["X-SelfBench-Warning"] = serializers.EXPORT_WARNING
        return response


# --- registry grants ------------------------------------------------------------------------------------------------


def _grant_output(request: Request, grant: RegistryGrant) -> dict[str, Any]:
    """The grant, the registry host and, once it is ready, the pull references by digest."""
    data = dict(serializers.GrantOutput(grant).data)
    data["registry"] = request.build_absolute_uri("/v2/").removesuffix("/v2/").split("://", 1)[-1]
    data["pull"] = [f"{data['registry']}/{i['repository']}@{i['digest']}" for i in data["images"] if i["digest"]]
    return data


class GrantListCreateApi(APIView):
    @extend_schema(responses=serializers.GrantOutput(many=True), operation_id="grants_list")
    def get(self, request: Request, slug: str) -> Response:
        rows = RegistryGrant.objects.filter(workspace=workspace_of(request))[:200]
        return Response(serializers.GrantOutput(rows, many=True).data)

    @extend_schema(request=serializers.GrantInput, responses={202: OpenApiTypes.OBJECT}, operation_id="grants_create")
    def post(self, request: Request, slug: str) -> Response:
        f = _valid(serializers.GrantInput, request.data)
        grant, token = services.grant_create(
            workspace=workspace_of(request),
            task_ids=f["tasks"],
            ttl_seconds=f.get("ttlSeconds"),
            note=f["note"],
            by=_person(request),
        )
        data = _grant_output(request, grant)
        data["username"] = "selfbench"
        data["password"] = token
        location = reverse("results-api:grant", kwargs={"slug": slug, "grant_id": grant.uuid})
        return Response(data, status=202, headers={"Location": location})


class GrantDetailApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="grants_get")
    def get(self, request: Request, slug: str, grant_id: str) -> Response:
        grant = services.grant_lookup(workspace=workspace_of(request), grant_id=grant_id)
        return Response(_grant_output(request, grant))


class GrantCancelApi(APIView):
    @extend_schema(request=None, responses=serializers.GrantOutput, operation_id="grants_cancel")
    def post(self, request: Request, slug: str, grant_id: str) -> Response:
        grant = services.grant_cancel(grant=services.grant_lookup(workspace=workspace_of(request), grant_id=grant_id))
        return Response(serializers.GrantOutput(grant).data)


# --- public results (no login) --------------------------------------------------------------------------------------


def _cached_json(request: Request, key: str, build: Any) -> HttpResponse:
    """Serve `build()` (None = 404) from a short shared snapshot, with an ETag and Cache-Control."""
    body: bytes | None = cache.get(key)
    if body is None:
        document = build()
        body = b"" if document is None else json.dumps(document, separators=(",", ":"), default=str).encode()
        cache.set(key, body, settings.PUBLIC_RESULTS_SNAPSHOT_SECONDS)
    if not body:
        raise Http404("nothing released")
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    response: HttpResponse
    if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(body, content_type="application/json")
    response["ETag"] = etag
    response["Cache-Control"] = "public, max-age=60, s-maxage=10"
    return response


class PublicResultsApi(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    throttle_classes = [PublicResultsThrottle]

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="public_results_list", auth=[])
    def get(self, request: Request) -> HttpResponse:
        return _cached_json(request, "results:public:cards", public.cards)


class PublicRepositoryResultsApi(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    throttle_classes = [PublicResultsThrottle]

    @extend_schema(
        parameters=[
            OpenApiParameter("owner", str, OpenApiParameter.PATH),
            OpenApiParameter("name", str, OpenApiParameter.PATH),
        ],
        responses=OpenApiTypes.OBJECT,
        operation_id="public_results_repository",
        auth=[],
    )
    def get(self, request: Request, owner: str, name: str) -> HttpResponse:
        full_name = f"{owner}/{name}"
        if "\x00" in full_name:
            raise Http404("nothing released")
        key = "results:public:repo:" + hashlib.sha256(full_name.lower().encode()).hexdigest()
        return _cached_json(request, key, lambda: public.repository_lines(full_name))
